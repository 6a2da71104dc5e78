"""NSGA-II (pymoo) on two objectives: weighted retrieval score (up) and perplexity (down).

pymoo runs in ask/tell mode. Its state is not stored: pymoo draws from its own generator seeded at
setup, so asking again and telling each generation's recorded outcomes (from ``history``) rebuilds the
algorithm exactly on resume, and the checkpoint stays plain JSON. The result is the Pareto front of the
evaluated genomes.
"""

from __future__ import annotations

import numpy as np
from pymoo.algorithms.moo.nsga2 import NSGA2
from pymoo.core.evaluator import Evaluator
from pymoo.core.problem import Problem
from pymoo.core.repair import Repair
from pymoo.core.termination import NoTermination
from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting
from pymoo.problems.static import StaticProblem

from ..errors import LpesError
from ..judging.fitness import Outcome
from ..registry import OPTIMIZERS
from .base import Optimizer, genome_key


class CurveRepair(Repair):
    """Keep pymoo's offspring inside the curve's bounds and constraints."""

    def __init__(self, curve):
        super().__init__()
        self.curve = curve

    def _do(self, problem, X, **kwargs):
        return np.stack([self.curve.repair(x) for x in X])


def _objectives(outcomes: list[Outcome]) -> np.ndarray:
    """pymoo's minimised objectives: -retrieval and perplexity; a broken candidate's are dominated by all."""
    F = np.array([[-o.retrieval, o.perplexity] for o in outcomes], dtype=float)
    F[~np.isfinite(F)] = 1e9
    return F


@OPTIMIZERS.plugin
class NSGA2Search(Optimizer):
    objectives = 2

    def __init__(self, curve, *, population: int = 16, generations: int = 10, seed: int = 0):
        super().__init__(curve, generations=generations, seed=seed)
        if population < 4:
            raise LpesError(f"nsga2: population must be >= 4, got {population}")
        self.population = population  # pymoo asks for a full population every generation
        low, high = curve.bounds()
        self.problem = Problem(n_var=curve.n_genes, n_obj=2, xl=low, xu=high)
        self.algorithm = NSGA2(pop_size=population, repair=CurveRepair(curve), eliminate_duplicates=True)
        self.algorithm.setup(self.problem, termination=NoTermination(), seed=seed)
        self._pending = None

    def ask(self) -> list[np.ndarray]:
        self._pending = self.algorithm.ask()
        return [self.curve.repair(x) for x in self._pending.get("X")]

    def tell(self, genomes, outcomes: list[Outcome]) -> None:
        self._tell_algorithm(outcomes)
        super().tell(genomes, outcomes)

    def _tell_algorithm(self, outcomes: list[Outcome]) -> None:
        Evaluator().eval(StaticProblem(self.problem, F=_objectives(outcomes)), self._pending)
        self.algorithm.tell(infills=self._pending)
        self._pending = None

    def front(self) -> list[tuple[list[float], Outcome]]:
        """Non-dominated evaluated genomes (pymoo's sort, on the objectives the algorithm is told), by
        perplexity."""
        items = list(self.history.values())
        if not items:
            return []
        front = NonDominatedSorting().do(_objectives([o for _, o in items]), only_non_dominated_front=True)
        return sorted((items[i] for i in front), key=lambda item: item[1].perplexity)

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        for _ in range(self.generation):  # replay: the same asks, told the outcomes they got
            genomes = self.ask()
            self._tell_algorithm([self.history[genome_key(g)][1] for g in genomes])
