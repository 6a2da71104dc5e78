"""Curves over the layer index: one module per curve (see ``base``), found by the ``CURVES`` registry."""

from ...registry import CURVES
from .base import Curve, build_curve, layer_grid, uniform_scaling

__all__ = ["CURVES", "Curve", "build_curve", "layer_grid"]
