"""YaRN (as transformers computes it) with the layer factor inside its interpolation factor."""

from __future__ import annotations

import math

import torch

from ...errors import LpesError, is_number
from ...registry import SCHEMES
from .base import RopeParams, as_factor, check_factor, straight_through, traced


def yarn_mscale(scale: float) -> float:
    """YaRN's cos/sin multiplier for a total interpolation factor (1 when nothing is interpolated)."""
    return 0.1 * math.log(scale) + 1.0 if scale > 1 else 1.0


def _mscale(total: torch.Tensor):
    """``yarn_mscale`` as transformers computes it (``math.log``), with torch's gradient when traced."""
    value = yarn_mscale(total.item())
    if not traced(total) or total.item() <= 1:  # constant 1 below: no gradient to carry
        return value
    return straight_through(value, 0.1 * torch.log(total) + 1.0)


def yarn_ramp(rope: RopeParams, beta_fast: float, beta_slow: float, truncate: bool = True) -> torch.Tensor:
    """Share of interpolation each rotary dimension takes under YaRN, ramped in dimension index as
    transformers does: dimension i turns ``L_train / (2 pi inv_freq_i)`` times over the trained window;
    those turning more than ``beta_fast`` times keep their frequency, fewer than ``beta_slow`` are
    interpolated fully."""
    dim = 2 * rope.inv_freq.numel()
    log_base = math.log(rope.rope_theta)

    def correction_dim(rotations: float) -> float:
        return dim * math.log(rope.max_position / (rotations * 2 * math.pi)) / (2 * log_base)

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # transformers' guard against a zero-width ramp
    return ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)


@SCHEMES.plugin
def yarn(rope: RopeParams, factor: float, seq_len: int, *, global_factor=1.0, beta_fast=32.0, beta_slow=1.0,
         truncate=True, attention_factor=None):
    """YaRN with the layer factor inside it: s = global_factor * layer factor is YaRN's ``factor``.

    Frequencies are recomputed from ``rope_theta`` and blended exactly as transformers' ``yarn`` rope
    type does (interpolated by s where the ramp is 1, untouched where it is 0), so a schedule with the
    same factor on every layer equals ``rope_type: yarn`` with ``factor: s``. The ramp depends only on
    the trained window and the betas, not on s; the attention factor follows s.
    """
    if attention_factor is not None and not (is_number(attention_factor) and 0 < attention_factor < math.inf):
        raise LpesError(f"yarn: attention_factor must be a positive finite number (or null: YaRN's own), got "
                        f"{attention_factor!r}")
    if not 0 < beta_slow < beta_fast:
        raise LpesError(f"yarn needs 0 < beta_slow < beta_fast, got {beta_slow}, {beta_fast}")
    check_factor(factor)
    check_factor(global_factor)
    total = as_factor(global_factor) * as_factor(factor)
    dim = 2 * rope.inv_freq.numel()
    pos_freqs = rope.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (total.to(pos_freqs.dtype) * pos_freqs)
    keep = 1 - yarn_ramp(rope, beta_fast, beta_slow, truncate)
    inv_freq = interpolation * (1 - keep) + extrapolation * keep
    if total.item() == 1.0 and attention_factor is None:
        # the model's own frequencies (a llama3-type model's are not rope_theta's), with the gradient of
        # the blend where the factor is traced
        return straight_through(rope.inv_freq, inv_freq), rope.attention_scaling
    scale = _mscale(total) if attention_factor is None else float(attention_factor)
    return inv_freq, rope.attention_scaling * scale
