"""Position schemes: pure functions (RoPE parameters, layer factor, sequence length) -> (inv_freq, attention scaling).

One module per scheme (``@SCHEMES.plugin``); this module holds the maths they share. What the framework makes
of a registered scheme and asks of it is ``position.contract``.

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

Factors may be floats or 0-d tensors that carry a gradient (the gradient optimizer's layer factors); under
a config with ``bands``, also one number per wavelength band (``position.bands`` wraps the scheme).
Both go through the same torch operations in float64 (``as_factor``), so a tensor gives bit-identical
tables to the float it holds, and the frequencies are differentiable in the factor. Where a scheme
returns the model's own frequencies at factor 1, a traced factor keeps the value and takes the
formula's gradient (``straight_through``): the identity schedule's gradient is the real one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ...errors import LpesError, is_number

@dataclass(frozen=True, eq=False)
class RopeParams:
    """What a scheme needs to know about one layer's RoPE (read off the model by ``patch.rope_layout``)."""

    inv_freq: torch.Tensor  # the model's own frequencies, float32, shape (rotary_dim / 2,)
    attention_scaling: float  # the model's own cos/sin multiplier (1.0 for plain RoPE)
    max_position: int  # trained context length
    rope_theta: float  # the base the frequencies come from (YaRN recomputes them from it, as transformers does)
    key: str = "default"  # layer type: Gemma3 has 'sliding_attention' and 'full_attention'


def wavelength_ramp(inv_freq: torch.Tensor, low: float | None, high: float | None) -> torch.Tensor:
    """Share of the factor each dimension takes: 0 below ``low`` tokens of wavelength, 1 above ``high``."""
    if low is None:
        if high is not None:
            raise LpesError("wavelength_high needs wavelength_low")
        return torch.ones_like(inv_freq)
    for name, value in (("wavelength_low", low), ("wavelength_high", high)):
        if value is not None and not (is_number(value) and math.isfinite(value)):
            raise LpesError(f"{name} must be a finite number of tokens, got {value!r}")
    if low <= 0 or (high is not None and high < low):
        raise LpesError(f"need 0 < wavelength_low <= wavelength_high, got {low}, {high}")
    wavelength = 2 * math.pi / inv_freq
    if high is None or high == low:
        return (wavelength > low).to(inv_freq.dtype)
    return ((wavelength - low) / (high - low)).clamp(0.0, 1.0)


def scaled(rope: RopeParams, per_dim: torch.Tensor, low: float | None, high: float | None) -> torch.Tensor:
    ramp = wavelength_ramp(rope.inv_freq, low, high)
    return rope.inv_freq / (1 + (per_dim - 1) * ramp)


# Beyond these a factor is a typo, not a schedule: 1e300 passes "finite" and overflows the first forward.
FACTOR_RANGE = (1e-6, 1e6)


def check_factor(factor, what: str = "scaling factor") -> None:
    """The one rule for a factor, wherever it comes from (a scheme option, a schedule, a file)."""
    value = float(factor.detach()) if isinstance(factor, torch.Tensor) else float(factor)
    low, high = FACTOR_RANGE
    if not math.isfinite(value) or not low <= value <= high:
        raise LpesError(f"{what} is {value}; factors must be finite and in [{low:g}, {high:g}]")


def as_factor(factor) -> torch.Tensor:
    """A factor as a float64 0-d tensor; a tensor keeps its graph (float64: what a Python float holds)."""
    return factor.to(torch.float64) if isinstance(factor, torch.Tensor) else torch.tensor(float(factor), dtype=torch.float64)


def traced(value) -> bool:
    return isinstance(value, torch.Tensor) and value.requires_grad


def is_one(total: torch.Tensor) -> bool:
    """Exactly 1 and not traced: the scheme may hand back the model's own frequencies as they are."""
    return not traced(total) and total.item() == 1.0


def straight_through(exact, formula):
    """``exact``'s value with ``formula``'s gradient (``formula`` equals ``exact`` up to round-off)."""
    if not traced(formula):
        return exact
    return exact + (formula - formula.detach())
