"""Position interpolation: positions / (global_factor * layer factor)."""

from __future__ import annotations

import torch

from ...registries import SCHEMES
from . import RopeSpec, check_factor, scaled


@SCHEMES.plugin
def pi(spec: RopeSpec, factor: float, seq_len: int, *, global_factor=1.0, wavelength_low=None, wavelength_high=None):
    """Position interpolation: positions / (global_factor * layer factor). global_factor extends the context."""
    check_factor(factor)
    check_factor(global_factor)
    total = global_factor * factor
    if total == 1.0:
        return spec.inv_freq, spec.attention_scaling
    per_dim = torch.full_like(spec.inv_freq, total)
    return scaled(spec, per_dim, wavelength_low, wavelength_high), spec.attention_scaling
