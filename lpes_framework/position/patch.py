"""Install per-layer RoPE factors on a loaded transformers model, and take them off again.

Transformers 5.x computes ``position_embeddings = (cos, sin)`` once per forward and passes it to every
decoder layer as a keyword argument. A forward pre-hook on each decoder layer swaps in the cos/sin of
that layer's factor, computed with the same formula as the model's rotary module. Nothing else changes:
no attention class is touched, SDPA and eager attention both read the swapped tables, and the KV cache
stores keys already rotated, so ``generate()`` keeps working. Layers whose scheme returns the model's
own frequencies keep the model's own tables, which makes an all-ones schedule bit-identical.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import torch

from ..errors import LpesError, one_form
from ..exported.lpes_tables import cos_sin
from ..hf import text_config
from .bands import check_occupied, check_width, factor_key
from .schemes import RopeParams, check_factor

# These rope types recompute their frequencies from the running length inside the rotary module; a
# static copy of them would silently be wrong, so they are refused rather than patched.
_RUNTIME_ROPE_TYPES = {"dynamic", "longrope"}
# forwards of at most this many positions (decoding steps) build every layer's table in one batched pass
_BATCHED_POSITIONS = 64


class TableScheme(Protocol):
    """What the per-layer patch asks of a scheme: one table per layer (``contract.BoundScheme`` is one)."""

    config: dict
    n_bands: int

    def __call__(self, rope: RopeParams, factor, seq_len: int) -> tuple[torch.Tensor, float]: ...


def _arch(model) -> str:
    return type(model).__name__


def _rope_params(config, layer_type: str | None) -> dict:
    params = getattr(config, "rope_parameters", None) or {}
    if layer_type is not None and layer_type in params:
        params = params[layer_type]
    return params


def rope_layout(model) -> tuple[torch.nn.Module, Sequence[torch.nn.Module], list[RopeParams]]:
    """(decoder, its layers, one RopeParams per layer) or a one-line error naming the architecture."""
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else model
    rotary = getattr(decoder, "rotary_emb", None)
    layers = getattr(decoder, "layers", None)
    if rotary is None or layers is None:
        raise LpesError(f"{_arch(model)} has no rotary position embedding (RoPE) module; lpes patches RoPE models only")
    if "position_embeddings" not in inspect.signature(layers[0].forward).parameters:
        raise LpesError(f"{_arch(model)}: decoder layers take no position_embeddings argument; architecture not supported")
    return decoder, layers, layer_specs(rotary, text_config(model.config), len(layers), _arch(model))


def layer_specs(rotary: torch.nn.Module, config, n_layers: int, arch: str) -> list[RopeParams]:
    """One RopeParams per decoder layer, read off a transformers rotary module built for ``config`` (the
    model's own, or one built from the config alone where another engine runs the model)."""
    layer_types = getattr(config, "layer_types", None) if hasattr(rotary, "layer_types") else None
    ropes: dict[str, RopeParams] = {}
    out = []
    for idx in range(n_layers):
        key = layer_types[idx] if layer_types else "default"
        if key not in ropes:
            params = _rope_params(config, key if layer_types else None)
            rope_type = params.get("rope_type", "default")
            if rope_type in _RUNTIME_ROPE_TYPES:
                raise LpesError(f"{arch}: rope_type '{rope_type}' changes frequencies at run time; "
                                "lpes composes with static rope types (default, linear, llama3, yarn)")
            prefix = f"{key}_" if layer_types else ""
            inv_freq = getattr(rotary, f"{prefix}original_inv_freq", None)
            if inv_freq is None:
                inv_freq = getattr(rotary, f"{prefix}inv_freq")
            max_position = params.get("original_max_position_embeddings") or config.max_position_embeddings
            ropes[key] = RopeParams(
                inv_freq=inv_freq.detach().float().cpu(),
                attention_scaling=float(getattr(rotary, f"{prefix}attention_scaling")),
                max_position=int(max_position),
                rope_theta=float(params.get("rope_theta") or getattr(config, "rope_theta", 10000.0)),
                key=key,
            )
        out.append(ropes[key])
    return out


def validate_factors(factors: Sequence, n_layers: int) -> list:
    """Layer factors as floats, or tuples of floats (one per wavelength band, ``position.bands``), checked."""
    if isinstance(factors, str) or not isinstance(factors, (Sequence, np.ndarray)):
        raise LpesError(f"layer factors must be a list with one entry per layer, got {factors!r}")
    try:
        values = [factor_key(f) for f in factors]
    except (TypeError, ValueError) as exc:
        raise LpesError(f"layer factors must be numbers or lists of numbers (one per band): {exc}") from None
    if len(values) != n_layers:
        raise LpesError(f"got {len(values)} factors for a model with {n_layers} decoder layers")
    one_form(values)
    for i, f in enumerate(values):
        for value in f if isinstance(f, tuple) else (f,):
            check_factor(value, f"factor for layer {i}")
    return values


def check_bands_fit(scheme, ropes: Sequence[RopeParams], factors) -> None:
    """A band-wise schedule's width matches the scheme's bands, and every band holds a rotary dimension of
    the model (a factor of an empty band would change nothing; a search would spend genes on it)."""
    bands = scheme.config.get("bands")  # set only on a banded scheme
    for width in {len(f) for f in factors if isinstance(f, tuple)}:  # validate_factors: one width at most
        check_width(width, bands, f"pos={scheme.config['name']}")
    if bands:
        for rope in {rope.key: rope for rope in ropes}.values():
            check_occupied(rope.inv_freq, bands, "this model")


class PatchHandle:
    """An installed patch made of torch hook handles: ``remove()`` it, or use it as a context manager.
    Plugin schemes with their own ``install`` return a subclass too (it keeps ``factors`` and ``scheme``)."""

    _handles: list

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class LayerScaling(PatchHandle):
    """One RoPE table per layer factor, swapped in by pre-hooks on the decoder layers."""

    def __init__(self, model, factors: Sequence[float], scheme: TableScheme):
        decoder, layers, ropes = rope_layout(model)
        self.factors = validate_factors(factors, len(layers))
        check_bands_fit(scheme, ropes, self.factors)
        self.scheme = scheme
        self._ropes = ropes
        self._tables: dict[tuple, tuple | None] = {}  # by (layer type, factor)
        # scheme results by (layer type, factor, effective length): kept across forwards, so a decoding
        # step (one new position) only builds its small cos/sin rows
        self._freqs: dict[tuple, tuple[torch.Tensor, float] | None] = {}
        # layers sharing a table; a table is dropped after its last layer so that at most one is alive
        self._uses = Counter((rope.key, factor) for rope, factor in zip(ropes, self.factors))
        self._left: Counter = Counter()
        self._seq_len: int | None = None
        self._handles = [
            decoder.register_forward_pre_hook(self._reset),
            decoder.register_forward_hook(self._reset_after),
            *layer_hooks(layers, self._table),
        ]

    def _reset(self, module, args):
        self._tables.clear()
        self._left = self._uses.copy()
        self._seq_len = None

    def _reset_after(self, module, args, output):
        self._reset(module, args)  # free the tables between forwards

    def _table(self, idx: int, position_ids: torch.Tensor, own: tuple[torch.Tensor, torch.Tensor]):
        rope, factor = self._ropes[idx], self.factors[idx]
        key = (rope.key, factor)
        if key not in self._tables:
            if self._seq_len is None:
                self._seq_len = int(position_ids.max()) + 1
            if position_ids.shape[-1] <= _BATCHED_POSITIONS:
                self._tables.update(self._all_tables(position_ids, own[0].dtype))
            else:
                freqs = self._frequencies(rope, factor)
                self._tables[key] = None if freqs is None else rotary_tables(position_ids, *freqs, own[0].dtype)
        self._left[key] -= 1
        return self._tables[key] if self._left[key] > 0 else self._tables.pop(key)

    def _all_tables(self, position_ids: torch.Tensor, dtype: torch.dtype) -> dict:
        """Every remaining factor's cos/sin of a short forward (a decoding step) in one batched pass: one
        factor at a time, 30 tiny tables cost more in Python and kernel launches than the step's RoPE.
        Same elementwise operations as ``rotary_tables``, so the values are identical."""
        rope_of = {(rope.key, factor): rope for rope, factor in zip(self._ropes, self.factors)}
        freqs = {key: self._frequencies(rope_of[key], key[1]) for key in self._uses if self._left[key] > 0}
        tables: dict = {key: None for key, f in freqs.items() if f is None}
        by_size: dict[int, list] = {}
        for key, f in freqs.items():
            if f is not None:
                by_size.setdefault(f[0].numel(), []).append(key)
        for keys in by_size.values():
            inv = torch.stack([freqs[k][0] for k in keys]).to(position_ids.device)  # (K, D/2)
            scale = torch.tensor([freqs[k][1] for k in keys], device=position_ids.device)[:, None, None, None]
            cos, sin = cos_sin(position_ids[None, ..., None].float() * inv[:, None, None, :], scale, dtype)
            tables.update({k: (cos[i], sin[i]) for i, k in enumerate(keys)})
        return tables

    def _frequencies(self, rope: RopeParams, factor: float) -> tuple[torch.Tensor, float] | None:
        """The scheme's (inv_freq, scaling) for this layer, or None where they are the model's own.
        Schemes may depend on the length only beyond the trained window (see ``contract.BoundScheme``), so
        every length inside it shares one entry."""
        key = (rope.key, factor, max(self._seq_len, rope.max_position))
        if key not in self._freqs:
            inv_freq, scaling = self.scheme(rope, factor, self._seq_len)
            own = torch.equal(inv_freq, rope.inv_freq) and scaling == rope.attention_scaling
            self._freqs[key] = None if own else (inv_freq, scaling)
        return self._freqs[key]

    def remove(self) -> None:
        super().remove()
        self._tables.clear()
        self._freqs.clear()


def layer_hooks(layers, table) -> list:
    """Pre-hooks that give decoder layer ``idx`` the cos/sin ``table(idx, position_ids, own tables)``
    (None keeps the model's own)."""
    def hook_for(idx: int):
        def hook(module, args, kwargs):
            position_ids = kwargs.get("position_ids")
            own = kwargs.get("position_embeddings")
            if position_ids is None or own is None:
                raise LpesError(f"decoder layer {idx} was called without position_ids/position_embeddings keywords")
            swapped = table(idx, position_ids, own)
            if swapped is None:
                return None
            kwargs["position_embeddings"] = swapped
            return args, kwargs

        return hook

    return [layer.register_forward_pre_hook(hook_for(idx), with_kwargs=True) for idx, layer in enumerate(layers)]


class TracedScaling(PatchHandle):
    """Layer factors as a tensor that carries a gradient (the gradient optimizer's patch): every forward
    builds each layer's cos/sin from ``factors[l]`` with autograd on, nothing cached across forwards
    (each backward frees the graph). Values equal ``LayerScaling``'s for the same factors: the schemes
    compute the same tables for a traced factor as for the float it holds."""

    def __init__(self, model, factors: torch.Tensor, scheme: TableScheme):
        decoder, layers, self._ropes = rope_layout(model)
        if factors.dim() not in (1, 2) or factors.shape[0] != len(layers):
            raise LpesError(f"got {tuple(factors.shape)} factors for a model with {len(layers)} decoder layers")
        check_bands_fit(scheme, self._ropes, [tuple(row) if factors.dim() == 2 else 1.0 for row in factors.tolist()])
        self.factors, self.scheme = factors, scheme
        self._handles = layer_hooks(layers, self._table)

    def _table(self, idx: int, position_ids: torch.Tensor, own):
        inv_freq, scaling = self.scheme(self._ropes[idx], self.factors[idx], int(position_ids.max()) + 1)
        return rotary_tables(position_ids, inv_freq, scaling, own[0].dtype)


def rotary_tables(position_ids: torch.Tensor, inv_freq: torch.Tensor, scaling: float, dtype: torch.dtype):
    """cos/sin exactly as transformers' rotary modules compute them, for the given frequencies."""
    return cos_sin(position_ids[..., None].float() * inv_freq.to(device=position_ids.device, dtype=torch.float),
                   scaling, dtype)
