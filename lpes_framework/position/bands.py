"""Band-wise layer factors: one factor per decoder layer per wavelength band of the rotary dimensions.

A scheme config with ``bands: [w_1, ..., w_{B-1}]`` (wavelengths in tokens, increasing) splits each layer's
rotary dimensions by wavelength ``2*pi / inv_freq_d``: band 0 holds the dimensions of wavelength up to
``w_1``, band b those in (w_b, w_{b+1}], the last everything above ``w_{B-1}``. A layer's factor is then B
numbers, and dimension d takes the scheme's frequencies computed with its band's number::

    inv_freq'_d = scheme(rope, factor[band(d)], L).inv_freq_d

``bands: per_frequency`` gives every rotary frequency its own band (a factor per layer per frequency): the
boundaries are the geometric means of neighbouring wavelengths of the model at hand, filled in from its
config before anything is built (``resolve_bands``), so factors files record the explicit list.

So a band-wise schedule nests the scalar one: B equal numbers give exactly the scalar factor's tables
(every band reads the same result), and a plain number still works under a banded scheme (every band
takes it, which is how uniform baselines and presets apply). The scheme's own per-dimension rule stays in
force within a band (NTK's exponent, PI's ramp); what the bands add is that short-, middle- and
long-wavelength dimensions of one layer may interpolate by different amounts, a pattern one factor per
layer cannot draw. Schemes whose cos/sin multiplier depends on the factor (YaRN's attention scaling) have
one multiplier per layer and so cannot be banded; they are refused when the scheme is built.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from ..errors import LpesError, is_number


PER_FREQUENCY = "per_frequency"


def default_inv_freq(info) -> torch.Tensor | None:
    """A model's RoPE frequencies from its config (``ModelInfo``): the default rule from ``rope_theta`` and the
    rotary part of the head; None where the config gives no single base (per-layer-type bases, Gemma3)."""
    if not info.rope_theta or not info.head_dim:
        return None
    dim = int(info.head_dim * (info.rope_parameters or {}).get("partial_rotary_factor", 1.0))
    return 1.0 / info.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)


def resolve_bands(scheme_cfg: dict, info) -> dict:
    """``scheme_cfg`` with ``bands: per_frequency`` replaced by the model's boundaries: one band per rotary
    frequency, split at the geometric mean of neighbouring wavelengths (any other config as it is)."""
    if scheme_cfg.get("bands") != PER_FREQUENCY:
        return scheme_cfg
    inv_freq = default_inv_freq(info)
    if inv_freq is None:
        raise LpesError(f"pos.bands={PER_FREQUENCY}: {info.name}'s config gives no single rope_theta and head size "
                        "to read its frequencies from; give pos.bands as a list of wavelengths")
    wavelengths = (2 * math.pi / inv_freq).sort().values
    boundaries = (wavelengths[1:] * wavelengths[:-1]).sqrt()
    return scheme_cfg | {"bands": [round(float(b), 6) for b in boundaries]}


def check_bands(bands) -> tuple[float, ...]:
    """Band boundaries as given in a scheme config: a non-empty increasing list of positive wavelengths."""
    if bands == PER_FREQUENCY:
        raise LpesError(f"pos.bands={PER_FREQUENCY} is filled in from a model's config (search and evaluate do it); "
                        "here give the list of wavelengths")
    if isinstance(bands, (str, bytes)) or not isinstance(bands, Sequence) or not bands:
        raise LpesError(f"bands must be a non-empty list of wavelengths in tokens, e.g. [64, 1024]; got {bands!r}")
    values = []
    for b in bands:
        if not is_number(b) or b <= 0:
            raise LpesError(f"bands must be positive finite wavelengths in tokens, got {list(bands)!r}")
        values.append(float(b))
    if any(a >= b for a, b in zip(values, values[1:])):
        raise LpesError(f"bands must increase strictly, got {values}")
    return tuple(values)


def band_index(inv_freq: torch.Tensor, bands: Sequence[float]) -> torch.Tensor:
    """The band of each rotary dimension (0 .. len(bands)), by its wavelength in tokens."""
    wavelength = 2 * math.pi / inv_freq.double()
    return torch.bucketize(wavelength, torch.tensor(bands, dtype=torch.float64))


def check_width(width: int, bands, where: str) -> None:
    """The one width rule, wherever a schedule meets a scheme (a factors file, the patch, a scheme call): a
    layer factor given as a list holds one number per band of ``bands`` (None: no bands). A plain number,
    which every band takes, is not a list and is not checked here."""
    n_bands = len(bands or ()) + 1
    if width != n_bands:
        raise LpesError(f"{where}: layer factors of {width} numbers under {n_bands} band(s) "
                        f"(bands {list(bands) if bands else None})")


def band_values(factor) -> list | None:
    """A layer factor's per-band numbers (floats or 0-d tensors), or None for a plain number."""
    if isinstance(factor, torch.Tensor):
        return None if factor.dim() == 0 else list(factor.unbind())
    if isinstance(factor, (list, tuple, np.ndarray)):
        return list(factor)
    return None


def banded(scheme, bands: tuple[float, ...], name: str):
    """``scheme`` (rope, factor, length) -> (inv_freq, scaling) taking a factor per band as well as a number."""

    def run(rope, factor, seq_len: int):
        values = band_values(factor)
        if values is None:
            return scheme(rope, factor, seq_len)
        check_width(len(values), bands, f"pos={name}")
        results = [scheme(rope, value, seq_len) for value in values]
        scalings = {float(scaling) for _, scaling in results}
        if len(scalings) > 1:
            raise LpesError(f"pos={name}: its attention scaling depends on the factor, so a layer has one scaling "
                            "and its factor cannot differ by band: drop pos.bands")
        table = torch.stack([inv_freq for inv_freq, _ in results])  # (bands, rotary_dim / 2)
        picked = table.gather(0, band_index(rope.inv_freq, bands)[None]).squeeze(0)
        return picked, results[0][1]

    return run


def refine_bands(table: np.ndarray, inv_freq: torch.Tensor, old: Sequence[float] | None, new: Sequence[float]) -> np.ndarray:
    """A (layers, old bands) schedule on finer bands ``new``: each new band takes the factor of the old band
    its rotary dimensions lie in, so the model's tables are the same. A new band whose dimensions lie in two
    old bands is not a refinement and is refused."""
    check_occupied(inv_freq, new, "this model")
    was, now = band_index(inv_freq, old or ()), band_index(inv_freq, new)
    source = []
    for band in range(len(new) + 1):
        olds = was[now == band].unique().tolist()
        if len(olds) > 1:
            raise LpesError(f"bands {list(new)} do not refine {list(old or [])}: band {band} holds dimensions of "
                            f"old bands {olds}")
        source.append(olds[0])
    return table[:, source]


def check_occupied(inv_freq: torch.Tensor, bands: Sequence[float], model: str) -> None:
    """Refuse bands that hold no rotary dimension of a model: their factors would change nothing, and a
    search would spend genes on them."""
    counts = torch.bincount(band_index(inv_freq, bands), minlength=len(bands) + 1)
    empty = [b for b, n in enumerate(counts.tolist()) if n == 0]
    if empty:
        raise LpesError(f"pos.bands={list(bands)}: band(s) {empty} hold no rotary dimension of {model} "
                        f"(wavelengths {2 * math.pi / float(inv_freq.max()):.0f} to "
                        f"{2 * math.pi / float(inv_freq.min()):.0f} tokens)")


def model_band_check(bands: tuple[float, ...]):
    """A scheme's ``check_model(info)``: the bands' emptiness judged from the model's config before its
    weights load (default RoPE frequencies from ``rope_theta`` and the head size; the patch repeats the check
    on the model's own frequencies, which rope types such as llama3 reshape)."""

    def check_model(info) -> None:
        inv_freq = default_inv_freq(info)
        if inv_freq is not None:  # per-layer-type bases (Gemma3): only the patch's check applies
            check_occupied(inv_freq, bands, info.name)

    return check_model


def factor_key(factor):
    """A layer factor as a hashable value: a float, or a tuple of floats for a band-wise one."""
    values = band_values(factor)
    return float(factor) if values is None else tuple(float(v) for v in values)


def factor_table(factors) -> np.ndarray:
    """A schedule as a (layers, bands) array: one column for one factor per layer."""
    return np.asarray(factors_json(factors), dtype=float).reshape(len(factors), -1)


def factors_json(factors) -> list:
    """Layer factors as JSON values: floats, or lists of floats for band-wise ones."""
    return [f if isinstance(f, float) else list(f) for f in map(factor_key, factors)]
