"""Random search at the same budget as the GA: the baseline every search is judged against."""

from __future__ import annotations

import numpy as np

from ..errors import LpesError
from ..registry import OPTIMIZERS
from .base import Optimizer


@OPTIMIZERS.plugin
class RandomSearch(Optimizer):
    def __init__(self, curve, *, population: int = 8, generations: int = 10, seed: int = 0):
        super().__init__(curve, generations=generations, seed=seed)
        if isinstance(population, bool) or not isinstance(population, int) or population < 1:
            raise LpesError(f"random: population must be a whole number >= 1, got {population!r}")
        self.population = population

    def ask(self) -> list[np.ndarray]:
        # the identity is evaluated first, as in the GA, so both start from the unpatched model
        first = self.seeds([]) if self.generation == 0 else []
        return first + self.fresh(self.random_genome, self.population - len(first))
