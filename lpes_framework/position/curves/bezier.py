"""Bezier curve: B(t) = sum_k C(n, k) (1 - t)^(n - k) t^k P_k with n + 1 = control_points (4: cubic)."""

from __future__ import annotations

import torch

from ...registry import CURVES
from .base import Curve


def bernstein(control: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    # The basis in log space: C(n, k) as a float overflows past n ~ 1030 control points and t^k underflows long
    # before, while every basis value itself lies in [0, 1]; xlogy keeps 0 * log 0 = 0 at the curve's ends.
    n = len(control) - 1
    k = torch.arange(n + 1, dtype=torch.float64)[:, None]
    t = torch.as_tensor(t, dtype=torch.float64)[None, :]
    log_basis = (torch.lgamma(torch.tensor(n + 1.0, dtype=torch.float64)) - torch.lgamma(k + 1) - torch.lgamma(n - k + 1)
                 + torch.xlogy(k, t) + torch.xlogy(n - k, 1 - t))
    return control @ log_basis.exp().to(control.dtype)


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
