"""Bezier curve: B(t) = sum_k C(n, k) (1 - t)^(n - k) t^k P_k with n + 1 = control_points (4: cubic)."""

from __future__ import annotations

from math import comb

import torch

from ...registry import CURVES
from .base import Curve


def bernstein(control: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    n = len(control) - 1
    basis = torch.stack([comb(n, k) * (1 - t) ** (n - k) * t ** k for k in range(n + 1)])
    return control @ basis


@CURVES.plugin
class BezierCurve(Curve):
    def __init__(self, *, n_layers: int, control_points: int = 4, low: float = 1.0, high: float = 2.0, monotone=None,
                 bands: int = 1):
        self.control_points = control_points
        super().__init__(n_layers=n_layers, low=low, high=high, monotone=monotone, bands=bands)

    def gene_count(self, n_layers: int) -> int:
        return self.control_points

    def shape(self, genes, t):
        return bernstein(genes, t)
