"""The constrained genetic algorithm of the LPES papers, after LongRoPE's evolutionary search.

Generation 0: the identity (all factors 1), small uniform scalings, then random genomes, all inside the
curve's bounds. Every later generation keeps the best ``parents`` (elitism: they are not re-evaluated)
and adds ``mutations`` children (Gaussian steps of ``mutation_sigma`` times the bound range on a
random subset of genes) and ``crossovers`` children (uniform crossover of two parents). Children go
through the curve's ``repair`` (clip to bounds, sort when monotone), so every candidate satisfies the
constraints, and a global history skips any genome seen before.
"""

from __future__ import annotations

import numpy as np

from ..errors import LpesError, numbers
from ..registry import OPTIMIZERS
from .base import Optimizer, genome_key


@OPTIMIZERS.plugin
class GeneticAlgorithm(Optimizer):
    def __init__(self, curve, *, population: int = 16, parents: int = 8, mutations: int = 4, crossovers: int = 4,
                 generations: int = 10, mutation_sigma: float = 0.15, mutation_rate: float = 0.5,
                 init_uniform=(1.1, 1.25, 1.5), seed: int = 0):
        super().__init__(curve, generations=generations, seed=seed)
        if population < 2 or not 1 <= parents <= population:
            raise LpesError(f"ga: need population >= 2 and 1 <= parents <= population, got {population}, {parents}")
        if mutations < 0 or crossovers < 0 or mutations + crossovers < 1:
            raise LpesError("ga: mutations + crossovers must be >= 1 (and neither negative)")
        if not 0 < mutation_rate <= 1 or mutation_sigma <= 0:
            raise LpesError(f"ga: need 0 < mutation_rate <= 1 and mutation_sigma > 0, got {mutation_rate}, {mutation_sigma}")
        self.population, self.parents = population, parents
        self.mutations, self.crossovers = mutations, crossovers
        self.mutation_sigma, self.mutation_rate = mutation_sigma, mutation_rate
        self.init_uniform = numbers(init_uniform, "ga: init_uniform")

    def planned(self) -> int:
        return self.population + (self.generations - 1) * (self.mutations + self.crossovers)

    def elite(self) -> list[np.ndarray]:
        ranked = sorted(self.history.values(), key=lambda item: item[1].fitness, reverse=True)
        return [np.asarray(g) for g, _ in ranked[: self.parents]]

    def _mutate(self, parent: np.ndarray) -> np.ndarray:
        span = self.curve.high - self.curve.low or 1.0
        mask = self.rng.random(parent.size) < self.mutation_rate
        mask[self.rng.integers(parent.size)] = True  # always move at least one gene
        return parent + mask * self.rng.normal(0.0, self.mutation_sigma * span, parent.size)

    def _cross(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(self.rng.random(a.size) < 0.5, a, b)

    def ask(self) -> list[np.ndarray]:
        if self.generation == 0:
            first = [g for g in self.seeds(self.init_uniform) if genome_key(g) not in self.history]
            first = first[: self.population]
            return first + self.fresh(self.random_genome, self.population - len(first))
        parents = self.elite()
        pick = lambda: parents[self.rng.integers(len(parents))]  # noqa: E731
        children = self.fresh(lambda: self._mutate(pick()), self.mutations)
        if len(parents) > 1:
            for child in self.fresh(lambda: self._cross(pick(), pick()), self.crossovers):
                if genome_key(child) not in {genome_key(c) for c in children}:
                    children.append(child)
        return children
