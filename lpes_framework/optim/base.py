"""The optimizer interface every search algorithm implements: ask / tell, plus a JSON-able state.

``ask()`` returns the genomes of the next generation that still need a score; ``tell()`` gives back
one ``Outcome`` per genome. The search loop checkpoints ``state_dict()`` after every ``tell`` and a
resumed run restores it with ``load_state_dict`` before asking again: optimizers draw all randomness
from their own generator, whose state is part of the checkpoint, so a resumed run asks exactly the
genomes the killed one would have asked.
"""

from __future__ import annotations

import numpy as np

from ..position.curves import Curve
from ..errors import LpesError
from ..evaluation.fitness import Outcome


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

    def ask(self) -> list[np.ndarray]:
        raise NotImplementedError

    def tell(self, genomes, outcomes: list[Outcome]) -> None:
        for g, o in zip(genomes, outcomes):
            self.history[genome_key(g)] = (list(map(float, g)), o)
        self.generation += 1

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
