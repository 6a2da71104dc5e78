"""Plain RoPE with a per-layer factor: layer l sees positions m / s_l."""

from __future__ import annotations

from ...registry import SCHEMES
from .base import RopeParams
from .pi import pi


@SCHEMES.plugin
def rope(params: RopeParams, factor: float, seq_len: int, *, wavelength_low=None, wavelength_high=None):
    """Plain RoPE with the layer factor: layer sees positions m / factor."""
    return pi(params, factor, seq_len, global_factor=1.0, wavelength_low=wavelength_low, wavelength_high=wavelength_high)
