"""The scheme contract (``Scheme``: what every position scheme provides and all the framework asks of one), what
``build_scheme`` makes of a registered scheme function (``BoundScheme``, patched in as one table per layer), and the
questions every caller asks a built scheme: its width on a model, whether it drives a gradient, whether it can
patch a model, whether a schedule is the identity, its table as one fixed table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import numpy as np
import torch

from ..errors import LpesError
from ..registry import SCHEMES
from .bands import banded, check_bands, default_inv_freq, model_band_check
from .patch import LayerScaling, PatchHandle, TracedScaling
from .schemes.base import RopeParams, traced


def no_gradient(name: str) -> LpesError:
    return LpesError(f"pos={name} computes its tables without a gradient w.r.t. the layer factor; "
                     "optimizer=gradient needs a differentiable scheme (rope, pi, ntk, yarn): use optimizer=ga")


class Scheme:
    """The scheme contract: what every position scheme provides and all the framework asks of one.

    Every scheme must give ``config`` (``{name, **options}``: what a saved model records to rebuild it) and
    ``install(model, factors) -> PatchHandle`` (a removable patch giving layer l ``factors[l]``). The rest has
    defaults a scheme overrides where it can do more:

    - ``one_table_per_layer``: its patch is one RoPE table per layer (``BoundScheme``), which an export
      writes and vLLM serves; a scheme that brings its own attention patch (head-wise Ms-PoE) is not;
    - ``width(info)``: numbers per layer factor on a model (a head-wise scheme has one per head);
    - ``check_model(info)``: refuse a model it cannot patch, from its identity, before any weights load;
    - ``identity_at_one``: an all-ones schedule leaves the model exactly as it is (``is_identity``);
    - ``differentiable`` with ``install_traced(model, factors_tensor)``: a patch whose factors carry a gradient,
      for ``optimizer=gradient``;
    - ``fold(model, factors)``: the patch an export saves (by default, the patch itself where it is one table a
      layer); ``folds_into_weights`` says it multiplies part of the schedule into the weights first (head scales);
    - ``length_note``: why its tables move with the input's length, for a model card.

    A plugin registers a subclass (``@SCHEMES.plugin class MyScheme(Scheme)``) or a pure function, which
    ``build_scheme`` binds into a ``BoundScheme``.
    """

    config: dict
    n_bands: int = 1  # numbers per layer factor (``position.bands``)
    one_table_per_layer = False
    identity_at_one = False
    differentiable = False
    folds_into_weights = False

    @property
    def name(self) -> str:
        return self.config["name"]

    def install(self, model, factors):
        raise NotImplementedError(f"{type(self).__name__} must define install(model, factors)")

    def install_traced(self, model, factors):
        raise no_gradient(self.name)

    def width(self, info) -> int:
        return self.n_bands

    def check_model(self, info) -> None:
        return None

    def fold(self, model, factors):
        self.check_foldable()
        return self.install(model, factors)

    def check_foldable(self) -> None:
        """One line, before any weights load, where the scheme cannot be saved as RoPE tables."""
        if not (self.one_table_per_layer or self.folds_into_weights):
            raise LpesError(f"pos={self.name} brings its own attention patch; it cannot be saved as RoPE tables "
                            "(an export, vLLM)")

    def length_note(self) -> str:
        return f"its scheme, {self.name}, depends on the length"


@dataclass(eq=False)
class BoundScheme(Scheme):
    """A registered scheme function with its options bound: ``scheme(rope, layer factor, sequence length) ->
    (inv_freq, attention scaling)``, patched in as one table per layer (``patch.LayerScaling``).

    The result may depend on the length only beyond ``rope.max_position`` (as dynamic NTK does): the
    patch reuses one result for every length inside the trained window. A registered function may carry a
    ``length_note`` (see ``ntk``) for what moves its tables with the length.
    """

    fn: Callable[..., "tuple[torch.Tensor, float]"]  # (rope, factor, seq_len) with the options bound
    config: dict
    n_bands: int = 1
    identity_at_one: bool = False  # factor 1 leaves the model's own tables (see ``is_identity``)
    differentiable: bool = False  # tables carry a gradient w.r.t. a traced factor (``optimizer=gradient``)
    model_check: Callable | None = field(default=None)  # the bands' refusal of a model, from its ``ModelInfo``
    note: str | None = None  # the registered function's ``length_note``
    one_table_per_layer = True

    def __call__(self, rope: RopeParams, factor, seq_len: int):
        return self.fn(rope, factor, seq_len)

    def install(self, model, factors):
        return LayerScaling(model, factors, self)

    def install_traced(self, model, factors):
        if not self.differentiable:
            return super().install_traced(model, factors)
        return TracedScaling(model, factors, self)

    def check_model(self, info) -> None:
        if self.model_check is not None:
            self.model_check(info)

    def length_note(self) -> str:
        return self.note or super().length_note()


def brings_own_patch(name: str) -> bool:
    """Whether the registered scheme ``name`` is a ``Scheme`` class (its own patch, its own factors' width)
    rather than a function of one table per layer. A name the registry cannot give is neither: building it
    says why."""
    try:
        return isinstance(SCHEMES.get(name), type)  # a registered name is a dict lookup, no plugin scan
    except LpesError:
        return False


def build_scheme(cfg):
    """A ``BoundScheme`` from ``{name: ..., **options}`` (or a plugin's own scheme object); options are
    checked now, on a toy RoPE, before any model is loaded.

    Registry entries are pure functions ``(rope, factor, seq_len, **options)``, or ``Scheme`` subclasses:
    schemes that cannot be expressed as one table per layer (head-wise Ms-PoE) bring their own patch that way.
    """
    cfg = dict(cfg)
    bands = cfg.pop("bands", None)
    if brings_own_patch(cfg["name"]):
        if not issubclass(SCHEMES.get(cfg["name"]), Scheme):
            raise LpesError(f"pos={cfg['name']} registers a class that is not a lpes_framework.position.Scheme: "
                            "subclass it (the scheme contract) or register a function")
        if bands is not None:
            raise LpesError(f"pos={cfg['name']} brings its own patch; bands apply to schemes of one table per layer")
        scheme = SCHEMES.build(cfg)
        scheme.config = cfg
        return scheme
    fn, options = SCHEMES.options(cfg, None, 1.0, 1)
    scheme = BoundScheme(partial(fn, **options), cfg, note=getattr(fn, "length_note", None))
    toy = RopeParams(torch.tensor([1.0, 0.01]), 1.0, 16, rope_theta=10000.0)
    if bands is not None:
        bands = check_bands(bands)
        scheme.fn = banded(scheme.fn, bands, cfg["name"])
        scheme.n_bands = len(bands) + 1
        scheme.model_check = model_band_check(bands)
        scheme(toy, [1.0 + 0.5 * b for b in range(scheme.n_bands)], 8)  # refuses a factor-dependent scaling now
        cfg["bands"] = list(bands)
    # A dry run on a toy RoPE surfaces out-of-range options before any model is loaded.
    scheme(toy, 1.5, 8)
    # Options such as a global factor make factor 1 a real change; only the dry run can tell.
    inv_freq, scaling = scheme(toy, 1.0, 8)
    scheme.identity_at_one = torch.equal(inv_freq, toy.inv_freq) and scaling == toy.attention_scaling
    scheme.differentiable = _differentiable(scheme, toy)
    return scheme


def _differentiable(scheme, toy: RopeParams) -> bool:
    """Whether the scheme's frequencies carry a gradient w.r.t. a traced factor (a plugin function that
    turns the factor into a float does not)."""
    factor = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    inv_freq, _ = scheme(toy, factor, 8)
    return traced(inv_freq)


def layer_width(scheme, info) -> int:
    """Numbers per layer factor of ``scheme`` on the model ``info`` (``ModelInfo``): its bands, or what a
    plugin scheme with its own patch says it needs for this model (``width``)."""
    return int(scheme.width(info))


def require_gradient(scheme) -> None:
    """One line, before any weights load, for a scheme the gradient optimizer cannot drive."""
    if not scheme.differentiable:
        raise no_gradient(scheme.name)


def fixed_table(scheme, rope: RopeParams, factor, limit: int) -> tuple[torch.Tensor, float, int]:
    """(inv_freq, scaling) of a layer as one fixed table, and the longest length up to ``limit`` it holds for.

    The table is the scheme's at length 1: the factor as it acts on short inputs. A scheme whose result
    changes with the length (dynamic NTK beyond the window, and inside it for factors below 1, where its
    dynamic term rises above the factor) keeps that table only up to the length where it first changes
    (found by bisection: the change is monotone in the length); an engine that serves one fixed table (vLLM,
    an exported folder) must stop there."""
    inv_freq, scaling = scheme(rope, factor, 1)

    def same(length: int) -> bool:
        other, other_scaling = scheme(rope, factor, length)
        return torch.equal(other, inv_freq) and other_scaling == scaling

    if same(limit):
        return inv_freq, scaling, limit
    low, high = 1, limit  # same(low), not same(high)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if same(mid) else (low, mid)
    return inv_freq, scaling, low


def check_scheme_for(scheme, info) -> None:
    """A plugin scheme's refusal of a model it cannot patch, from the model's identity (``ModelInfo``,
    read before any weights load): schemes declare it with a ``check_model(info)`` method."""
    scheme.check_model(info)
    inv_freq = default_inv_freq(info)
    if scheme.one_table_per_layer and inv_freq is not None:
        # options that leave every frequency of this model where it is (a wavelength_low beyond its longest
        # wavelength) make every schedule the unpatched model: a search of nothing
        rope = RopeParams(inv_freq.float(), 1.0, int(info.trained_context or 2048), rope_theta=float(info.rope_theta))
        stock, moved = scheme(rope, [1.0] * scheme.n_bands if scheme.n_bands > 1 else 1.0, 1), \
            scheme(rope, [1.5] * scheme.n_bands if scheme.n_bands > 1 else 1.5, 1)
        if torch.equal(stock[0], moved[0]) and stock[1] == moved[1]:
            options = ", ".join(f"{k}={v}" for k, v in scheme.config.items() if k != "name")
            raise LpesError(f"pos={scheme.config['name']} ({options or 'no options'}) changes no frequency of "
                            f"{info.name} at any factor: every schedule would be the unpatched model")


def is_identity(scheme, factors) -> bool:
    """Whether ``factors`` under ``scheme`` leave the model exactly as it is inside its trained window
    (an all-ones schedule of a scheme whose factor 1 is the model's own RoPE). Plugin schemes with their
    own patch are assumed to change the model at 1 unless they say otherwise (Ms-PoE's head ratios apply
    on top of the layer factor)."""
    return factors is not None and scheme.identity_at_one and \
        all(np.all(np.asarray(f) == 1.0) for f in factors)


def traced_layer_scaling(model, factors: torch.Tensor, scheme: Scheme) -> PatchHandle:
    """``TracedScaling``, or the traced patch of a plugin scheme with its own (``Scheme.install_traced``)."""
    return scheme.install_traced(model, factors)


def apply_layer_scaling(model, factors: Sequence[float], scheme: Scheme) -> PatchHandle:
    """Give decoder layer l the RoPE factor ``factors[l]`` under ``scheme``; returns a removable handle."""
    return scheme.install(model, factors)  # LayerScaling, or a plugin scheme's own patch (``Scheme``)
