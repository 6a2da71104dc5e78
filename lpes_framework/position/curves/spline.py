"""PCHIP spline (monotone cubic Hermite) through ``control_points`` genes at equally spaced layer depths.

The slopes are Fritsch-Carlson's as SciPy's ``PchipInterpolator`` computes them on an even grid: zero
where neighbouring secants change sign, their harmonic mean elsewhere, a one-sided three-point slope
at the ends (clipped to keep the shape). Written in torch so the gradient optimizer can differentiate
it; ``tests/test_curves.py`` checks it against SciPy.
"""

from __future__ import annotations

import torch

from ...registry import CURVES
from .bezier import BezierCurve


def _end_slope(m0: torch.Tensor, m1: torch.Tensor) -> torch.Tensor:
    d = (3 * m0 - m1) / 2
    if torch.sign(d) != torch.sign(m0):
        return d * 0
    if torch.sign(m0) != torch.sign(m1) and torch.abs(d) > torch.abs(3 * m0):
        return 3 * m0
    return d


def pchip(control: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    n = len(control)
    if n == 1:
        return control[0].expand(len(t))
    h = 1.0 / (n - 1)
    m = (control[1:] - control[:-1]) / h  # secants
    if n == 2:
        slopes = torch.stack([m[0], m[0]])
    else:
        inner = [2 / (1 / m[k - 1] + 1 / m[k]) if float((m[k - 1] * m[k]).detach()) > 0 else m[k] * 0 for k in range(1, n - 1)]
        slopes = torch.stack([_end_slope(m[0], m[1]), *inner, _end_slope(m[-1], m[-2])])
    k = torch.clamp((t / h).long(), max=n - 2)
    s = (t - k.to(t.dtype) * h) / h
    h00, h10 = 2 * s ** 3 - 3 * s ** 2 + 1, s ** 3 - 2 * s ** 2 + s
    h01, h11 = -2 * s ** 3 + 3 * s ** 2, s ** 3 - s ** 2
    return h00 * control[k] + h10 * h * slopes[k] + h01 * control[k + 1] + h11 * h * slopes[k + 1]


@CURVES.plugin
class SplineCurve(BezierCurve):  # same genes as the Bezier curve, interpolated instead of approximated
    def shape(self, genes, t):
        return pchip(genes, t)
