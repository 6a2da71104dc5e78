"""Constant curve: one gene for every layer (the uniform-scaling baseline)."""

from __future__ import annotations

from ...registry import CURVES
from .base import Curve


@CURVES.plugin
class ConstantCurve(Curve):
    def gene_count(self, n_layers: int) -> int:
        return 1

    def shape(self, genes, t):
        return genes[0].expand(len(t))
