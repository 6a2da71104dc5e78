"""Linear curve: a straight line from the first gene (layer 0) to the second (last layer)."""

from __future__ import annotations

from ...registry import CURVES
from .base import Curve


@CURVES.plugin
class LinearCurve(Curve):
    def gene_count(self, n_layers: int) -> int:
        return 2

    def shape(self, genes, t):
        return genes[0] + (genes[1] - genes[0]) * t
