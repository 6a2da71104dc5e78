"""Position schemes: pure functions (rope spec, layer factor, sequence length) -> (inv_freq, attention scaling).

Every scheme turns the model's own RoPE frequencies ``inv_freq`` (one per rotary dimension pair) into
the frequencies one decoder layer uses. Dividing ``inv_freq`` by ``s`` is the same as showing the layer
positions ``m / s``. Each scheme computes a per-dimension factor ``f_d``; the shared wavelength ramp
``r_d`` in [0, 1] then decides how much of it each dimension takes::

    inv_freq'_d = inv_freq_d / (1 + (f_d - 1) * r_d)

``r_d = 1`` everywhere (the default) scales every dimension. With ``wavelength_low`` set, dimensions
whose wavelength ``2*pi / inv_freq_d`` is at most ``wavelength_low`` tokens stay untouched (they encode
local order; scaling them is what wrecks small models), dimensions at or above ``wavelength_high``
take the full factor, and the ones between follow a linear ramp (YaRN's "by parts" idea, in tokens).
Without ``wavelength_high`` the ramp is a step at ``wavelength_low``. A factor of exactly 1 returns the
model's frequencies unchanged, so an all-ones schedule is bit-identical to the unpatched model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Callable

import torch

from ..errors import LpesError
from ..registry import Registry


@dataclass(frozen=True, eq=False)
class RopeSpec:
    """What a scheme needs to know about one layer's RoPE (read off the model by ``patch.rope_layout``)."""

    inv_freq: torch.Tensor  # the model's own frequencies, float32, shape (rotary_dim / 2,)
    attention_scaling: float  # the model's own cos/sin multiplier (1.0 for plain RoPE)
    max_position: int  # trained context length
    rope_theta: float  # the base the frequencies come from (YaRN recomputes them from it, as transformers does)
    key: str = "default"  # layer type: Gemma3 has 'sliding_attention' and 'full_attention'


# (spec, layer factor, sequence length) -> (inv_freq, attention scaling). The result may depend on the
# length only beyond ``spec.max_position`` (as dynamic NTK does): the patch reuses one result for every
# length inside the trained window.
Scheme = Callable[[RopeSpec, float, int], "tuple[torch.Tensor, float]"]
SCHEMES: Registry[Callable[..., tuple[torch.Tensor, float]]] = Registry("position scheme", "lpes_framework.schemes")


def wavelength_ramp(inv_freq: torch.Tensor, low: float | None, high: float | None) -> torch.Tensor:
    """Share of the factor each dimension takes: 0 below ``low`` tokens of wavelength, 1 above ``high``."""
    if low is None:
        if high is not None:
            raise LpesError("wavelength_high needs wavelength_low")
        return torch.ones_like(inv_freq)
    if low <= 0 or (high is not None and high < low):
        raise LpesError(f"need 0 < wavelength_low <= wavelength_high, got {low}, {high}")
    wavelength = 2 * math.pi / inv_freq
    if high is None or high == low:
        return (wavelength > low).to(inv_freq.dtype)
    return ((wavelength - low) / (high - low)).clamp(0.0, 1.0)


def _scaled(spec: RopeSpec, per_dim: torch.Tensor, low: float | None, high: float | None) -> torch.Tensor:
    ramp = wavelength_ramp(spec.inv_freq, low, high)
    return spec.inv_freq / (1 + (per_dim - 1) * ramp)


def _check_factor(factor: float) -> None:
    if not math.isfinite(factor) or factor <= 0:
        raise LpesError(f"scaling factors must be finite and > 0, got {factor}")


@SCHEMES.register("rope")
def rope(spec: RopeSpec, factor: float, seq_len: int, *, wavelength_low=None, wavelength_high=None):
    """Plain RoPE with the layer factor: layer sees positions m / factor."""
    return pi(spec, factor, seq_len, global_factor=1.0, wavelength_low=wavelength_low, wavelength_high=wavelength_high)


@SCHEMES.register("pi")
def pi(spec: RopeSpec, factor: float, seq_len: int, *, global_factor=1.0, wavelength_low=None, wavelength_high=None):
    """Position interpolation: positions / (global_factor * layer factor). global_factor extends the context."""
    _check_factor(factor)
    _check_factor(global_factor)
    total = global_factor * factor
    if total == 1.0:
        return spec.inv_freq, spec.attention_scaling
    per_dim = torch.full_like(spec.inv_freq, total)
    return _scaled(spec, per_dim, wavelength_low, wavelength_high), spec.attention_scaling


def ntk_alpha(factor: float, seq_len: int, max_position: int) -> float:
    """Per-layer NTK scale: the layer factor inside the trained window, the dynamic rule beyond it.

    Transformers' dynamic NTK uses ``factor * L / L_train - (factor - 1)`` once ``L > L_train`` and does
    nothing inside the window. Here the layer factor acts everywhere; the dynamic term takes over once
    it exceeds the factor, so the scale is continuous in L and equals the reference rule far out.
    """
    dynamic = factor * seq_len / max_position - (factor - 1)
    return max(factor, dynamic)


@SCHEMES.register("ntk")
def ntk(spec: RopeSpec, factor: float, seq_len: int, *, wavelength_low=None, wavelength_high=None):
    """Dynamic NTK with a per-layer base: base_l = base * alpha^(d / (d - 2)).

    In frequency terms dimension i (of d/2) is divided by alpha^(2i / (d - 2)): the highest frequency is
    untouched and the lowest is divided by alpha, which is why NTK degrades local order less than PI.
    """
    _check_factor(factor)
    alpha = ntk_alpha(factor, seq_len, spec.max_position)
    if alpha == 1.0:
        return spec.inv_freq, spec.attention_scaling
    half = spec.inv_freq.numel()
    exponent = torch.arange(half, dtype=torch.float32) * 2 / max(2 * half - 2, 1)
    per_dim = torch.tensor(alpha, dtype=torch.float64).pow(exponent.double()).float()
    return _scaled(spec, per_dim, wavelength_low, wavelength_high), spec.attention_scaling


def yarn_mscale(scale: float) -> float:
    """YaRN's cos/sin multiplier for a total interpolation factor (1 when nothing is interpolated)."""
    return 0.1 * math.log(scale) + 1.0 if scale > 1 else 1.0


def yarn_ramp(spec: RopeSpec, beta_fast: float, beta_slow: float, truncate: bool = True) -> torch.Tensor:
    """Share of interpolation each rotary dimension takes under YaRN, ramped in dimension index as
    transformers does: dimension i turns ``L_train / (2 pi inv_freq_i)`` times over the trained window;
    those turning more than ``beta_fast`` times keep their frequency, fewer than ``beta_slow`` are
    interpolated fully."""
    dim = 2 * spec.inv_freq.numel()
    log_base = math.log(spec.rope_theta)

    def correction_dim(rotations: float) -> float:
        return dim * math.log(spec.max_position / (rotations * 2 * math.pi)) / (2 * log_base)

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # transformers' guard against a zero-width ramp
    return ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)


@SCHEMES.register("yarn")
def yarn(spec: RopeSpec, factor: float, seq_len: int, *, global_factor=1.0, beta_fast=32.0, beta_slow=1.0,
         truncate=True, attention_factor=None):
    """YaRN with the layer factor inside it: s = global_factor * layer factor is YaRN's ``factor``.

    Frequencies are recomputed from ``rope_theta`` and blended exactly as transformers' ``yarn`` rope
    type does (interpolated by s where the ramp is 1, untouched where it is 0), so a schedule with the
    same factor on every layer equals ``rope_type: yarn`` with ``factor: s``. The ramp depends only on
    the trained window and the betas, not on s; the attention factor follows s.
    """
    if not 0 < beta_slow < beta_fast:
        raise LpesError(f"yarn needs 0 < beta_slow < beta_fast, got {beta_slow}, {beta_fast}")
    _check_factor(factor)
    _check_factor(global_factor)
    total = global_factor * factor
    if total == 1.0 and attention_factor is None:
        return spec.inv_freq, spec.attention_scaling
    dim = 2 * spec.inv_freq.numel()
    pos_freqs = spec.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (total * pos_freqs)
    keep = 1 - yarn_ramp(spec, beta_fast, beta_slow, truncate)
    inv_freq = interpolation * (1 - keep) + extrapolation * keep
    scale = yarn_mscale(total) if attention_factor is None else float(attention_factor)
    return inv_freq, spec.attention_scaling * scale


def build_scheme(cfg) -> Scheme:
    """A scheme with its options bound, from ``{name: ..., **options}``; options are checked now.

    Registry entries are pure functions ``(spec, factor, seq_len, **options)``. A plugin may instead
    register a class whose instances have ``install(model, factors) -> handle``: schemes that cannot be
    expressed as one table per layer (head-wise Ms-PoE) bring their own patch that way.
    """
    if isinstance(SCHEMES.get(cfg["name"]), type):
        scheme = SCHEMES.build(cfg)
    else:
        fn, options = SCHEMES.options(cfg, None, 1.0, 1)
        scheme = partial(fn, **options)
        # A dry run on a toy spec surfaces out-of-range options before any model is loaded.
        scheme(RopeSpec(torch.tensor([1.0, 0.01]), 1.0, 16, rope_theta=10000.0), 1.5, 8)
    scheme.config = dict(cfg)  # what a saved model records to rebuild it
    return scheme
