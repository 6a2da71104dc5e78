"""The optimizer interface every search algorithm implements: ask / tell, plus a JSON-able state.

``ask()`` returns the evaluations the optimizer wants next; ``tell(asked, answers)`` gives back one
answer per request, in order. A request is either a genome, to be scored on the fixed search split
(answered with its ``Outcome``), or a ``GradientRequest``: the search objective of a genome on a fresh
minibatch and its gradient (answered with a ``Gradient``; only optimizers with ``needs_gradient`` ask
for those, and the search then checks the scheme and curve are differentiable before any weights load).
The search runs one loop for every optimizer: ask, evaluate, tell, checkpoint, and writes a progress
entry (``progress()``) whenever ``generation`` (a GA generation, an Adam step) moved on.

The search checkpoints ``state_dict()`` after every ``tell`` and a resumed run restores it with
``load_state_dict`` before asking again: optimizers draw all randomness from their own generator, whose
state is part of the checkpoint, so a resumed run asks exactly what the killed one would have asked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..position.curves import Curve
from ..errors import LpesError, is_number
from ..judging.fitness import Outcome


@dataclass(frozen=True, eq=False)
class GradientRequest:
    """The search objective of ``genome`` on minibatch draws ``draws`` of the search split (numbered from
    the first draw after the fixed split's, so minibatches never reuse the haystacks every candidate is
    scored on) and its gradient with respect to the genes. ``step`` (restart, step) names it in the
    evaluation log."""

    genome: np.ndarray
    draws: tuple[int, ...]
    step: tuple[int, int]


@dataclass(frozen=True)
class Gradient:
    """The answer to a ``GradientRequest``."""

    value: float
    gradient: list[float]  # d value / d genes


def genome_key(genome) -> tuple:
    """Hashable identity of a genome; rounding merges genomes equal up to float noise."""
    return tuple(round(float(g), 6) for g in genome)


class Optimizer:
    name = "optimizer"  # set by the registry
    objectives = 1  # 2: the search adds a perplexity task for the second objective

    def __init__(self, curve: Curve, *, generations: int, seed: int = 0):
        if generations < 1:
            raise LpesError(f"{self.name}: generations must be >= 1, got {generations}")
        self.curve = curve
        self.generations = generations
        self.generation = 0
        self.rng = np.random.default_rng(seed)
        self.history: dict[tuple, tuple[list[float], Outcome]] = {}

    @property
    def done(self) -> bool:
        return self.generation >= self.generations

    def planned(self) -> int | None:
        """Candidates a full run asks for (at most: genomes seen before are skipped); None where an
        optimizer without a fixed ``population`` per generation does not say."""
        population = getattr(self, "population", None)
        return None if population is None else population * self.generations

    def ask(self) -> list:
        """The next requests: genomes (and, for an optimizer with ``needs_gradient``, ``GradientRequest``s)."""
        raise NotImplementedError

    def tell(self, asked: list, answers: list) -> None:
        for g, o in zip(asked, answers):
            self.history[genome_key(g)] = (list(map(float, g)), o)
        self.generation += 1

    def progress(self, answers: list) -> dict:
        """The progress entry written after a ``tell`` that moved ``generation`` on (``answers``: its)."""
        _, best = self.best()
        finite = [o.fitness for o in answers if math.isfinite(o.fitness)]
        return {"generation": self.generation, "evaluated": len(answers), "best_fitness": best.fitness,
                "mean_fitness": float(np.mean(finite)) if finite else math.nan}

    def best(self) -> tuple[np.ndarray, Outcome]:
        if not self.history:
            raise LpesError("no candidate has been evaluated yet")
        genome, outcome = max(self.history.values(), key=lambda item: item[1].fitness)
        return np.asarray(genome), outcome

    def front(self) -> list[tuple[list[float], Outcome]]:
        """Non-dominated (genome, outcome) pairs of a multi-objective optimizer; none for a scalar one."""
        return []

    def random_genome(self) -> np.ndarray:
        low, high = self.curve.bounds()
        return self.curve.repair(self.rng.uniform(low, high))

    def seeds(self, uniform: list[float]) -> list[np.ndarray]:
        """Identity first, then the uniform scalings that fit the bounds."""
        out = []
        for value in [1.0, *uniform]:
            if self.curve.low <= value <= self.curve.high:
                out.append(self.curve.uniform(value))
        return out

    def fresh(self, candidates, limit: int, tries: int = 50) -> list[np.ndarray]:
        """Up to ``limit`` genomes never evaluated nor already chosen; ``candidates`` is a generator factory."""
        chosen: dict[tuple, np.ndarray] = {}
        for _ in range(limit * tries):
            if len(chosen) >= limit:
                break
            g = self.curve.repair(candidates())
            key = genome_key(g)
            if key not in self.history and key not in chosen:
                chosen[key] = g
        return list(chosen.values())

    def state_dict(self) -> dict:
        """Plain JSON types only (the checkpoint is JSON): numpy's generator state is a dict of ints."""
        return {"generation": self.generation, "rng": self.rng.bit_generator.state,
                "history": [[g, o.__dict__] for g, o in self.history.values()]}

    def load_state_dict(self, state: dict) -> None:
        self.generation = state["generation"]
        self.rng.bit_generator.state = state["rng"]
        self.history = {genome_key(g): (g, Outcome(**o)) for g, o in state["history"]}
        # a scored candidate's fitness is always a number (a NaN candidate is penalised, not stored as NaN): a null
        # one is a damaged checkpoint, which would resume to a best fitness of nan
        if not all(is_number(o.fitness) for _, o in self.history.values()):
            raise ValueError("a candidate in its history has no fitness")
