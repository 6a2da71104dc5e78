"""Gradient ascent on the genes: Adam in log space, projected onto the curve's bounds.

Each step asks (``GradientRequest``, see ``optim.base``) for the objective of the current genes on a
fresh minibatch of search-split contexts and its gradient (``scoring.gradient``). Minibatch draws start
after the draws of the fixed search split and never repeat, so the search does not overfit a fixed set
of haystacks. The genes are ``exp(x)``: Adam moves
``x``, which makes a step a relative change of a factor, and a projection clamps ``x`` to
``[log low, log high]``. Every ``eval_every`` steps (and after the last) it asks for the current genes
scored on the fixed search split without gradients, like any GA candidate: those scores are the ``history`` that
validation, the report and ``status`` read, and what progress is judged on (the minibatch objective
swings with the haystacks drawn).

``schedule: cosine`` anneals the step size from ``lr`` to ``lr_min`` over each restart (a constant step
overshoots: on Qwen2.5-0.5B the fixed-split fitness rose for 20 steps and fell back over the next 20).
``restarts`` > 1 runs Adam again from the start point perturbed by ``restart_sigma`` (log space), with
fresh Adam moments; the data cursor runs on. Everything that decides the next step is in
``state_dict`` (genes, moments, step, restart, cursor, whether the current genes were scored, generator),
so a killed run resumes exactly. The start (``start``: a factor, a factors file or a preset) is resolved
when the optimizer is built, before any weights load.

``smoothness`` (>= 0) subtracts ``smoothness * S`` from every step's objective, where S sums the squared
differences, between neighbouring bands of a layer and between neighbouring layers of a band, of the log
factors' change from the start (``start``; ``smoothness_penalty``): with a factor per layer per rotary
frequency (hundreds of genes, ``pos.bands: per_frequency``), a few minibatches would otherwise fit each gene
to their noise. Penalising the change, not the factors, leaves a rough start (a searched preset) where it is
and asks the search to move it by a smooth field; from all ones the two are the same. It costs no forward
pass (a function of the genes alone).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..errors import LpesError, is_number, numbers
from ..registry import OPTIMIZERS
from .base import Gradient, GradientRequest, Optimizer, genome_key


def start_genes(start, curve) -> np.ndarray:
    """The genome a gradient search starts from: a number (that factor in every layer; 1 is the unpatched
    model), or a factors file or shipped preset name (its genome where it was searched in the same curve
    space, else the curve's least-squares fit of its factors)."""
    if isinstance(start, (int, float)) and not isinstance(start, bool):
        return curve.uniform(float(start))
    if not isinstance(start, str):
        raise LpesError(f"gradient: start must be a factor (e.g. 1.0) or a factors file / preset name, got {start!r}")
    from ..model.factors_file import load_factors

    record = load_factors(start)
    factors = record["factors"]
    if len(factors) != curve.n_layers:
        raise LpesError(f"gradient: start {start} holds {len(factors)} factors, the model has {curve.n_layers} layers")
    values = np.asarray(factors, dtype=float)
    if values.min() < curve.low - 1e-12 or values.max() > curve.high + 1e-12:  # clipped, it is another schedule
        raise LpesError(f"gradient: start {start} holds factors in [{values.min():g}, {values.max():g}], outside the "
                        f"curve bounds [{curve.low}, {curve.high}]; widen curve.low / curve.high")
    same_space = (record.get("curve") or {}).get("name") == curve.name and record.get("genome") is not None \
        and len(record["genome"]) == curve.n_genes
    return curve.repair(record["genome"]) if same_space else curve.fit(factors)


def smoothness_penalty(curve, genes, origin) -> tuple[float, np.ndarray]:
    """(S, dS / d genes) at ``genes``: the sum of squared differences of the log factors' change from
    ``origin``'s (genes) between neighbouring bands of each layer and between neighbouring layers of each band."""
    def log_table(values):
        return curve.factors_tensor(values).reshape(curve.n_layers, -1).log()

    traced = torch.tensor(np.asarray(genes, dtype=float), dtype=torch.float64, requires_grad=True)
    table = log_table(traced) - log_table(torch.tensor(np.asarray(origin, dtype=float), dtype=torch.float64))
    value = table.diff(dim=1).square().sum() + table.diff(dim=0).square().sum()
    value.backward()
    return float(value.detach()), traced.grad.numpy().copy()


SCHEDULES = ("constant", "cosine")


def _positive(name: str, value, integer: bool = False):
    ok = is_number(value) and value > 0
    if not ok or (integer and int(value) != value):
        kind = "a positive integer" if integer else "a positive finite number"
        raise LpesError(f"gradient: {name} must be {kind}, got {value!r}")
    return int(value) if integer else float(value)


@OPTIMIZERS.plugin
class GradientAscent(Optimizer):
    needs_gradient = True

    def __init__(self, curve, *, lr: float = 0.05, steps: int = 40, contexts_per_step: int = 2, eval_every: int = 10,
                 restarts: int = 1, restart_sigma: float = 0.1, betas=(0.9, 0.999), eps: float = 1e-8,
                 schedule: str = "constant", lr_min: float = 0.0, start=None, checkpoint_layers: bool = False,
                 smoothness: float = 0.0, seed: int = 0):
        self.steps = _positive("steps", steps, integer=True)
        self.restarts = _positive("restarts", restarts, integer=True)
        super().__init__(curve, generations=self.steps * self.restarts, seed=seed)
        self.lr = _positive("lr", lr)
        if schedule not in SCHEDULES:
            raise LpesError(f"gradient: schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
        self.schedule = schedule
        self.lr_min = float(lr_min)
        if not (math.isfinite(self.lr_min) and 0 <= self.lr_min <= self.lr):
            raise LpesError(f"gradient: lr_min must lie in [0, lr={self.lr}], got {lr_min!r}")
        self.contexts_per_step = _positive("contexts_per_step", contexts_per_step, integer=True)
        self.eval_every = _positive("eval_every", eval_every, integer=True)
        if not isinstance(checkpoint_layers, bool):
            raise LpesError(f"gradient: checkpoint_layers must be true or false, got {checkpoint_layers!r}")
        self.checkpoint_layers = checkpoint_layers  # how the gradient is computed, not which: no state
        self.restart_sigma = float(restart_sigma)
        if not math.isfinite(self.restart_sigma) or self.restart_sigma < 0:
            raise LpesError(f"gradient: restart_sigma must be >= 0, got {restart_sigma!r}")
        self.betas = tuple(numbers(betas, "gradient: betas", 2))
        if not all(0 <= b < 1 for b in self.betas):
            raise LpesError(f"gradient: betas must be two numbers in [0, 1), got {list(betas)}")
        self.eps = _positive("eps", eps)
        self.smoothness = float(smoothness) if is_number(smoothness) else math.nan
        if not (math.isfinite(self.smoothness) and self.smoothness >= 0):
            raise LpesError(f"gradient: smoothness must be a finite number >= 0, got {smoothness!r}")
        self.start = 1.0 if start is None else start  # None (the YAML's null): the unpatched model
        self.low, self.high = math.log(curve.low), math.log(curve.high)
        self.restart = 0
        self.step = 0  # steps taken in this restart
        self.cursor = 0  # minibatch draws used so far (all restarts)
        self.scored = False  # the current genes' fixed-split score is in (when one is due)
        self.scored_fitness = math.nan  # the latest fixed-split fitness
        self.objective = math.nan  # the latest minibatch objective
        self._begin(start_genes(self.start, curve))

    def _begin(self, genes: np.ndarray) -> None:
        """Place restart 0 at ``genes``."""
        genes = np.asarray(genes, dtype=float)
        if genes.shape != (self.curve.n_genes,) or not np.all(np.isfinite(genes)) or np.any(genes <= 0):
            raise LpesError(f"gradient: the start needs {self.curve.n_genes} finite positive genes, got {genes.tolist()}")
        outside = (genes < self.curve.low - 1e-12) | (genes > self.curve.high + 1e-12)
        if outside.any():
            raise LpesError(f"gradient: start genes {genes[outside].tolist()} lie outside the curve bounds "
                            f"[{self.curve.low}, {self.curve.high}]; widen curve.low / curve.high")
        self.origin = np.log(genes)
        self._place(self.origin)

    def _place(self, x: np.ndarray) -> None:
        self.x = np.clip(x, self.low, self.high)
        self.m = np.zeros_like(self.x)
        self.v = np.zeros_like(self.x)
        self.step = 0
        self.scored = False

    @property
    def done(self) -> bool:
        return self.restart >= self.restarts

    def planned(self) -> int:
        return self.restarts * (self.steps // self.eval_every + 1 + (self.steps % self.eval_every > 0))

    def minibatch_draws(self) -> int:
        """Minibatch draws a full run asks for (numbered from 0 in its ``GradientRequest``s)."""
        return self.restarts * self.steps * self.contexts_per_step

    def genes(self) -> np.ndarray:
        return np.exp(self.x)

    def ask(self) -> list:
        """The current genes scored on the fixed split where a score is due (every ``eval_every`` steps and
        at the end of a restart), else one step's minibatch gradient."""
        if self.done:
            return []
        due = self.step % self.eval_every == 0 or self.step == self.steps
        if due and not self.scored:
            return [self.genes()]
        draws = tuple(range(self.cursor, self.cursor + self.contexts_per_step))
        return [GradientRequest(self.genes(), draws, (self.restart, self.step))]

    def tell(self, asked: list, answers: list) -> None:
        (request,), (answer,) = asked, answers
        if isinstance(answer, Gradient):
            value, gradient = answer.value, np.asarray(answer.gradient, dtype=float)
            if self.smoothness:
                penalty, slope = smoothness_penalty(self.curve, request.genome, np.exp(self.origin))
                value, gradient = value - self.smoothness * penalty, gradient - self.smoothness * slope
            self.objective = value
            self._update(gradient)
            return
        self.history[genome_key(request)] = (list(map(float, request)), answer)
        self.scored, self.scored_fitness = True, answer.fitness
        if self.step >= self.steps:
            self._next_restart()

    def step_size(self) -> float:
        """The step size of the next step of this restart."""
        if self.schedule == "constant":
            return self.lr
        return self.lr_min + 0.5 * (self.lr - self.lr_min) * (1 + math.cos(math.pi * self.step / self.steps))

    def _update(self, gradient) -> None:
        """One Adam step up the objective, given d objective / d genes at ``genes()``."""
        g = np.asarray(gradient, dtype=float)
        if g.shape != self.x.shape or not np.all(np.isfinite(g)):
            raise LpesError(f"gradient: got a non-finite or mis-shaped gradient {g.tolist()}")
        g = g * self.genes()  # chain rule: genes = exp(x)
        b1, b2 = self.betas
        self.m = b1 * self.m + (1 - b1) * g
        self.v = b2 * self.v + (1 - b2) * g * g
        t = self.step + 1
        m_hat, v_hat = self.m / (1 - b1 ** t), self.v / (1 - b2 ** t)
        self.x = np.clip(self.x + self.step_size() * m_hat / (np.sqrt(v_hat) + self.eps), self.low, self.high)
        self.step = t
        self.cursor += self.contexts_per_step
        self.generation += 1
        self.scored = False

    def _next_restart(self) -> None:
        self.restart += 1
        if not self.done:
            self._place(self.origin + self.rng.normal(0.0, self.restart_sigma, self.origin.size))

    def progress(self, answers: list) -> dict:
        _, best = self.best()
        return {"step": self.generation, "objective": self.objective, "scored_fitness": self.scored_fitness,
                "best_fitness": best.fitness}

    def state_dict(self) -> dict:
        return super().state_dict() | {
            "restart": self.restart, "step": self.step, "cursor": self.cursor, "origin": self.origin.tolist(),
            "x": self.x.tolist(), "m": self.m.tolist(), "v": self.v.tolist(), "scored": self.scored,
            "scored_fitness": self.scored_fitness}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.restart, self.step, self.cursor = state["restart"], state["step"], state["cursor"]
        self.origin = np.array(state["origin"])
        self.x, self.m, self.v = (np.array(state[k]) for k in ("x", "m", "v"))
        # checkpoints written before these keys are written after a step (or a restart), when the current
        # genes are not yet scored; the score itself is then re-asked from the evaluation log
        self.scored = bool(state.get("scored", False))
        fitness = state.get("scored_fitness")
        self.scored_fitness = math.nan if fitness is None else float(fitness)
