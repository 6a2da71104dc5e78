"""PCHIP spline (monotone cubic Hermite) through ``control_points`` genes at equally spaced layer depths."""

from __future__ import annotations

import numpy as np
from scipy.interpolate import PchipInterpolator

from ..registries import CURVES
from .bezier import BezierCurve


def pchip(control: np.ndarray, t: np.ndarray) -> np.ndarray:
    if len(control) == 1:
        return np.full_like(t, control[0])
    return PchipInterpolator(np.linspace(0, 1, len(control)), control)(t)


@CURVES.plugin
class SplineCurve(BezierCurve):  # same genes as the Bezier curve, interpolated instead of approximated
    def shape(self, genes, t):
        return pchip(genes, t)
