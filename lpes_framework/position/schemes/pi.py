"""Position interpolation: positions / (global_factor * layer factor)."""

from __future__ import annotations

from ...registry import SCHEMES
from .base import RopeSpec, as_factor, check_factor, is_one, scaled


@SCHEMES.plugin
def pi(spec: RopeSpec, factor: float, seq_len: int, *, global_factor=1.0, wavelength_low=None, wavelength_high=None):
    """Position interpolation: positions / (global_factor * layer factor). global_factor extends the context."""
    check_factor(factor)
    check_factor(global_factor)
    total = as_factor(global_factor) * as_factor(factor)
    if is_one(total):
        return spec.inv_freq, spec.attention_scaling
    per_dim = total.to(spec.inv_freq.dtype).expand_as(spec.inv_freq)
    return scaled(spec, per_dim, wavelength_low, wavelength_high), spec.attention_scaling
