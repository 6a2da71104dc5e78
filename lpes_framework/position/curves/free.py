"""Free curve: one gene per layer (the search space the paper's curves shrink)."""

from __future__ import annotations

from ...registry import CURVES
from .base import Curve


@CURVES.plugin
class FreeCurve(Curve):
    def gene_count(self, n_layers: int) -> int:
        return n_layers

    def shape(self, genes, t):
        return genes.clone()
