"""Position interpolation: positions / (global_factor * layer factor)."""

from __future__ import annotations

from ...registry import SCHEMES
from .base import RopeParams, as_factor, check_factor, is_one, scaled


@SCHEMES.plugin
def pi(rope: RopeParams, factor: float, seq_len: int, *, global_factor=1.0, wavelength_low=None, wavelength_high=None):
    """Position interpolation: positions / (global_factor * layer factor). global_factor extends the context."""
    check_factor(factor)
    check_factor(global_factor)
    total = as_factor(global_factor) * as_factor(factor)
    if is_one(total):
        return rope.inv_freq, rope.attention_scaling
    per_dim = total.to(rope.inv_freq.dtype).expand_as(rope.inv_freq)
    return scaled(rope, per_dim, wavelength_low, wavelength_high), rope.attention_scaling
