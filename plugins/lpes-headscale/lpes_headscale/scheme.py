"""The head-scale scheme (see the package docstring): scales on each attention head's output, by ``o_proj`` pre-hooks.

A layer's factor holds ``width(info)`` numbers: the base scheme's RoPE factors first (none without ``base``,
one, or one per band), then the scales (one per head, or one per head channel in the heads' order). The
same hooks serve floats (evaluation, the GA) and a tensor that carries a gradient (``install_traced``: the
gradient optimizer), so the two give identical outputs for the same numbers.
"""

from __future__ import annotations

import torch

from lpes_framework.errors import LpesError
from lpes_framework.position import (PatchHandle, Scheme, apply_layer_scaling, build_scheme, check_scheme_for,
                                     rope_layout, traced_layer_scaling, validate_factors)

PER = ("head", "channel")


class HeadScale(Scheme):
    differentiable = True  # the scales enter the forward as tensors: the gradient reaches them
    folds_into_weights = True  # the scales into o_proj (``fold``); an export keeps the base's RoPE tables

    def __init__(self, *, per: str = "head", base: dict | None = None):
        if per not in PER:
            raise LpesError(f"headscale: per must be one of {', '.join(PER)}, got {per!r}")
        if base is not None and not (isinstance(base, dict) and "name" in base):
            raise LpesError(f"headscale: base must be null or scheme settings with a name, e.g. {{name: ntk}}, got {base!r}")
        self.per = per
        self.base = build_scheme(base or {"name": "rope"})  # bad base options fail now, before any weights load
        if not self.base.one_table_per_layer:
            raise LpesError(f"headscale: base must be a scheme of one RoPE table per layer (rope, pi, ntk, yarn), "
                            f"got {base['name']}")
        self.base_width = 0 if base is None else self.base.n_bands  # no RoPE genes without a base
        self.identity_at_one = self.base.identity_at_one  # scales of 1 multiply by exactly 1

    def scale_width(self, n_heads: int, head_dim: int) -> int:
        return n_heads * (head_dim if self.per == "channel" else 1)

    def width(self, info) -> int:
        """Numbers per layer factor on the model ``info``: base factors, then scales."""
        return self.base_width + self.scale_width(info.n_heads, info.head_dim)

    def check_model(self, info) -> None:
        check_scheme_for(self.base, info)

    def head_scales(self, table: torch.Tensor) -> torch.Tensor:
        """The scales each layer's heads take, (layers, scale width), from a (layers, width) factors table."""
        return table[:, self.base_width:]

    def install(self, model, factors) -> "HeadScaling":
        return HeadScaling(model, factors, self)

    def install_traced(self, model, factors: torch.Tensor) -> "HeadScaling":
        return HeadScaling(model, factors, self)

    def fold(self, model, factors) -> PatchHandle:
        """Multiply each head's columns of ``o_proj.weight`` by its scales, in place, and return the base
        scheme's patch of the RoPE factors (the unpatched RoPE without a base): the model then computes what
        the hooked one does with the original's operations only. Its weights are changed for good."""
        layers, table = _table(model, factors, self)
        with torch.no_grad():
            for layer, scales in zip(layers, self.head_scales(table)):
                proj = layer.self_attn.o_proj
                column = _per_column(scales, proj.in_features // len(scales))
                proj.weight.mul_(column.to(proj.weight.dtype)[None, :])
        return apply_layer_scaling(model, _base_factors(table, self.base_width), self.base)


def _per_column(scales: torch.Tensor, repeat: int) -> torch.Tensor:
    """One multiplier per ``o_proj`` input column: a head's scale repeated over its channels."""
    return scales.repeat_interleave(repeat) if repeat > 1 else scales


def _base_factors(table: torch.Tensor, width: int) -> list:
    """The RoPE part of each layer's factor as the base scheme takes it (all ones without a base)."""
    if width == 0:
        return [1.0] * table.shape[0]
    part = table[:, :width].tolist()
    return [row[0] if width == 1 else tuple(row) for row in part]


def _table(model, factors, scheme: HeadScale) -> tuple[list, torch.Tensor]:
    """(decoder layers, factors as a (layers, width) tensor) after checking the width against the model
    (a single number per layer is repeated over the width: a uniform schedule); a tensor keeps its graph."""
    _, layers, _ = rope_layout(model)
    attn = layers[0].self_attn
    proj = getattr(attn, "o_proj", None)
    head_dim = getattr(attn, "head_dim", None)
    if not isinstance(proj, torch.nn.Linear) or head_dim is None or proj.in_features % head_dim:
        raise LpesError(f"headscale: {type(model).__name__}'s attention has no o_proj over head_dim-wide head "
                        "outputs; not supported")
    n_heads = proj.in_features // head_dim
    want = scheme.base_width + scheme.scale_width(n_heads, head_dim)
    if isinstance(factors, torch.Tensor):
        table = factors if factors.dim() == 2 else factors[:, None]
    else:
        values = validate_factors(factors, len(layers))
        table = torch.tensor([list(f) if isinstance(f, tuple) else [f] for f in values], dtype=torch.float64)
    if table.shape[1] == 1:  # one number per layer stands for all of the layer's, as under a banded scheme
        table = table.expand(-1, want)
    if table.shape != (len(layers), want):
        raise LpesError(f"headscale: this model needs {len(layers)} layer factors of {want} numbers each "
                        f"({scheme.base_width} RoPE factors, then {want - scheme.base_width} scales: "
                        f"{n_heads} heads, per {scheme.per}), got shape {tuple(table.shape)}")
    return layers, table


class HeadScaling(PatchHandle):
    """Handle of installed head scales (and the base scheme's RoPE factors, where there is a base)."""

    def __init__(self, model, factors, scheme: HeadScale):
        layers, table = _table(model, factors, scheme)
        traced = isinstance(factors, torch.Tensor)
        self.scheme = scheme
        self.factors = factors if traced else validate_factors(factors, len(layers))
        width = scheme.base_width
        self._rope = None
        if width:
            base = table[:, :width] if width > 1 else table[:, 0]
            self._rope = traced_layer_scaling(model, base, scheme.base) if traced else \
                apply_layer_scaling(model, _base_factors(table, width), scheme.base)
        self._handles = [layer.self_attn.o_proj.register_forward_pre_hook(self._hook(scheme, table, i))
                         for i, layer in enumerate(layers)]

    @staticmethod
    def _hook(scheme: HeadScale, table: torch.Tensor, layer: int):
        def hook(module, args):
            (heads, *rest) = args  # (batch, tokens, heads x head_dim): the heads' outputs side by side
            # taken from the table at every forward: a traced table's graph is then new for each backward
            scales = scheme.head_scales(table)[layer]
            column = _per_column(scales, module.in_features // len(scales))
            return (heads * column.to(heads.dtype), *rest)

        return hook

    def remove(self) -> None:
        super().remove()
        if self._rope is not None:
            self._rope.remove()
