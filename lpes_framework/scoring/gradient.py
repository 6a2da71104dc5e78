"""The value-and-gradient job: the search objective on a minibatch and its gradient w.r.t. the genes.

The objective is the fitness's smooth part (``fitness.py`` with the accuracy term left out: exact match
has no gradient) relative to the unpatched model on the same samples. For a retrieval task of weight
``a`` and a sample at gold position p with depth weight w_p (sum W over the task's positions), gold
log-prob lp (mean over its answer tokens) and the unpatched model's lp0 on the same sample::

    term = a * logprob_weight / n * ( w_p / W * (lp - lp0)  -  end_penalty * [p is an end] * max(0, lp0 - lp) )

with n the minibatch's samples per position; the objective is the sum of the terms. The depth-weighted
part is exactly the fitness's log-prob part. The end guard is applied per sample rather than to the
position's mean: a sum over samples is what lets each context be backpropagated on its own (one
context's graph alive at a time, whatever the minibatch size) and lets Ray workers each take a share
of the contexts and simply add their gradients. It is the stricter guard (a mean can hide losses
that samples cannot), and both are 0 at the unpatched model.

A perplexity task (one window per sample, lp its mean token log-prob) adds ``a * logprob_weight / n *
(lp - lp0)``, the fitness's term; a guarded one (``max_ratio``) adds ``-a * end_penalty / n *
max(0, lp0 - lp - log max_ratio)`` instead, its guard per window.

Memory: a unit's graph holds every layer's activations, which grow with the context (~33 KB a token a layer
on SmolLM2, ``bench/gradient_memory.py``). ``checkpoint_layers`` keeps only each decoder layer's input and
recomputes the layer in the backward pass (about one more forward; values unchanged), for the units that
run without a KV cache: whole windows (perplexity) and prompts scored whole (``share_prefix: false``). A
forward that writes a cache (a shared prefix) keeps its activations: replaying it would append its keys to
the cache a second time.

Genes -> factors -> tables go through the curve's and the scheme's torch code (``Curve.factors_tensor``,
``TracedScaling`` or a plugin scheme's ``install_traced``); each unit of work (a shared prefix with all its questions, or a batch of prompts
that share nothing) is backpropagated to a leaf holding the layer factors, and the factors' gradient
is carried to the genes once at the end.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import torch

from ..errors import LpesError
from .base import ScoreRow
from ..tasks.base import Encoded
from ._batching import score_row
from .teacher_forced import answer_units


@dataclass
class GradientResult:
    """What one value-and-gradient job returns (or several, added up: ``combine``)."""

    value: float  # the objective's contribution of these samples (a sum: shares add up)
    gradient: list[float]  # d value / d genes
    rows: dict[str, list[ScoreRow]]  # the patched model's rows, as scoring returns them
    baseline: dict[str, list[ScoreRow]]  # the unpatched model's rows on the same samples
    seconds: dict[str, float] = field(default_factory=dict)  # 'baseline' (forward) and 'gradient' (forward + backward)
    by_task: dict[str, list[float]] = field(default_factory=dict)  # each task's part of ``gradient`` (they add up to it)

    @staticmethod
    def combine(parts: Sequence["GradientResult"]) -> "GradientResult":
        """Shares of one minibatch (Ray workers) as one result: values and gradients add up, rows are
        concatenated, seconds are the slowest share's (they ran side by side)."""
        def joined(which: str) -> dict[str, list[ScoreRow]]:
            out: dict[str, list[ScoreRow]] = {}
            for part in parts:
                for task, r in getattr(part, which).items():
                    out.setdefault(task, []).extend(r)
            return out

        tasks = {task for p in parts for task in p.by_task}
        return GradientResult(value=float(sum(p.value for p in parts)),
                              gradient=np.sum([p.gradient for p in parts], axis=0).tolist(),
                              rows=joined("rows"), baseline=joined("baseline"),
                              seconds={k: max(p.seconds.get(k, 0.0) for p in parts) for k in ("baseline", "gradient")},
                              by_task={t: np.sum([p.by_task[t] for p in parts if t in p.by_task], axis=0).tolist()
                                       for t in sorted(tasks)})


class checkpointed_layers:
    """For the duration, each decoder layer called without a KV cache keeps only its inputs and recomputes
    its activations in the backward pass (``torch.utils.checkpoint``, non-reentrant). The layer's
    pre-hooks, which swap in the factors' cos/sin, run outside the checkpoint, so the tables are built
    once and the recompute reads the same ones."""

    CACHE_ARGUMENTS = ("cache", "past_key_values", "past_key_value", "layer_past")  # names across architectures

    def __init__(self, model):
        from ..position.patch import rope_layout

        self.layers = list(rope_layout(model)[1])

    def __enter__(self):
        self.own = [vars(layer).get("forward") for layer in self.layers]  # an instance's own forward, if any
        for layer in self.layers:
            layer.forward = self._checkpointed(layer.forward)

    def __exit__(self, *exc):
        for layer, own in zip(self.layers, self.own):
            if own is None:
                del layer.forward  # the class's forward again
            else:
                layer.forward = own

    def _checkpointed(self, forward):
        from torch.utils.checkpoint import checkpoint

        def run(*args, **kwargs):
            writes_cache = kwargs.get("use_cache") or any(kwargs.get(k) is not None for k in self.CACHE_ARGUMENTS)
            if writes_cache or not torch.is_grad_enabled():
                return forward(*args, **kwargs)
            return checkpoint(forward, *args, use_reentrant=False, **kwargs)

        return run


class frozen_weights:
    """Weights that take no gradient for the duration (only the layer factors do), restored after."""

    def __init__(self, model):
        self.params = [p for p in model.parameters() if p.requires_grad]

    def __enter__(self):
        for p in self.params:
            p.requires_grad_(False)

    def __exit__(self, *exc):
        for p in self.params:
            p.requires_grad_(True)


def value_and_gradient(model, encoded: Mapping[str, Sequence[Encoded]], baseline: Mapping[str, Sequence[ScoreRow]],
                       coefficients: Mapping[str, Mapping[str, tuple[float, float]]], genes: Sequence[float], curve,
                       scheme, *, batch_size: int, pad_id: int, share_prefix: bool,
                       checkpoint_layers: bool = False) -> tuple[float, np.ndarray, dict, dict]:
    """(objective, d objective / d genes, patched rows by task, each task's part of the gradient) on
    ``encoded`` samples whose unpatched rows are ``baseline`` (same order); ``checkpoint_layers``: recompute
    layer activations in the backward pass instead of keeping them (``checkpointed_layers``). The parts come
    free: the factors' gradient is read after each task's units (what pulls a mixture's factors which way)."""

    from ..position import traced_layer_scaling

    genes_t = torch.tensor(np.asarray(genes, dtype=float), dtype=torch.float64, requires_grad=True)
    factors_t = curve.factors_tensor(genes_t)
    leaf = factors_t.detach().requires_grad_(True)  # each unit backpropagates to here, not through the curve
    total = 0.0
    rows: dict[str, list[ScoreRow]] = {}
    parts: dict[str, torch.Tensor] = {}  # each task's d objective / d factors
    memory = checkpointed_layers(model) if checkpoint_layers else nullcontext()
    with frozen_weights(model), traced_layer_scaling(model, leaf, scheme), memory, torch.enable_grad():
        for task, items in encoded.items():
            before = torch.zeros_like(leaf) if leaf.grad is None else leaf.grad.clone()
            coef = coefficients[task]
            base = baseline[task]
            out: list[ScoreRow | None] = [None] * len(items)
            for unit in answer_units(model, items, batch_size=batch_size, pad_id=pad_id, share_prefix=share_prefix):
                terms = []
                for i, token_lp, hits in unit:
                    out[i] = score_row(items[i], token_lp, hits)
                    gain, guard, slack = coef[str(items[i].sample.position)]
                    lp0 = base[i].logprob
                    lp = token_lp.mean()
                    terms.append(gain * (lp - lp0) - guard * torch.relu(lp0 - lp - slack))
                unit_value = torch.stack(terms).sum()
                if not torch.isfinite(unit_value):
                    raise LpesError(f"{task}: the objective is not finite at factors {leaf.detach().tolist()}")
                unit_value.backward()
                total += float(unit_value.detach())
            rows[task] = out  # type: ignore[assignment]
            parts[task] = (torch.zeros_like(leaf) if leaf.grad is None else leaf.grad) - before
    by_task = {task: torch.autograd.grad(factors_t, genes_t, part, retain_graph=True)[0].numpy().copy()
               for task, part in parts.items()}
    gradient = sum(by_task.values(), np.zeros(len(genes)))
    return total, gradient, rows, {task: g.tolist() for task, g in by_task.items()}
