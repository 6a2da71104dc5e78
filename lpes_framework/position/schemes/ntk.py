"""NTK-aware scaling with a per-layer base (dynamic beyond the trained window)."""

from __future__ import annotations

import torch

from ...registry import SCHEMES
from .base import RopeParams, as_factor, check_factor, is_one, scaled


def ntk_alpha(factor, seq_len: int, max_position: int) -> torch.Tensor:
    """Per-layer NTK scale: the layer factor inside the trained window, the dynamic rule beyond it.

    Transformers' dynamic NTK uses ``factor * L / L_train - (factor - 1)`` once ``L > L_train`` and does
    nothing inside the window. Here the layer factor acts everywhere; the dynamic term takes over once
    it exceeds the factor, so the scale is continuous in L and equals the reference rule far out.
    """
    factor = as_factor(factor)
    dynamic = factor * seq_len / max_position - (factor - 1)
    return torch.maximum(factor, dynamic)


@SCHEMES.plugin
def ntk(rope: RopeParams, factor: float, seq_len: int, *, wavelength_low=None, wavelength_high=None):
    """Dynamic NTK with a per-layer base: base_l = base * alpha^(d / (d - 2)).

    In frequency terms dimension i (of d/2) is divided by alpha^(2i / (d - 2)): the highest frequency is
    untouched and the lowest is divided by alpha, which is why NTK degrades local order less than PI.
    """
    check_factor(factor)
    alpha = ntk_alpha(factor, seq_len, rope.max_position)
    if is_one(alpha):
        return rope.inv_freq, rope.attention_scaling
    half = rope.inv_freq.numel()
    exponent = torch.arange(half, dtype=torch.float32) * 2 / max(2 * half - 2, 1)
    per_dim = alpha.pow(exponent.double()).float()
    return scaled(rope, per_dim, wavelength_low, wavelength_high), rope.attention_scaling


ntk.length_note = ("dynamic NTK: a layer factor below 1 is raised by its dynamic term as the input grows, and every "
                   "factor beyond the trained window")
