"""Choosing a search's answer on fresh data: the best of the top candidates by validation fitness.

The search's best is the luckiest of many noisy scores (the winner's curse), so its ``top_k`` candidates
are re-scored on the validation split and the best there is the answer. ``select`` is the pure part of
that: given the candidates and their validation rows, the choice, every method's validation fitness and
its 95% paired bootstrap interval against unpatched (how far apart two fitnesses on this many contexts
must be to mean anything).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .comparison import Comparison
from .fitness import FitnessWeights, Outcome, fitness_interval, outcome


def candidate_name(rank: int) -> str:
    """The row name of the search's ``rank``-th best candidate (0 = best) in validation tables."""
    return f"top {rank + 1}"


@dataclass(frozen=True)
class Choice:
    name: str  # the chosen candidate's row name
    genome: np.ndarray
    search: Outcome  # its outcome on the search split
    fitness: dict[str, float]  # validation fitness of every method scored (unpatched = 0)
    intervals: dict[str, list[float]]  # method -> [low, high] of its validation fitness vs unpatched


def select(top: Sequence[tuple[np.ndarray, Outcome]], validation: Comparison, tasks: Mapping, weights: FitnessWeights,
           *, resamples: int, seed: int) -> Choice:
    """The candidate of ``top`` (best first, named by ``candidate_name``) with the best validation fitness;
    ``validation`` holds their rows, the unpatched model's and any other method's on the same samples."""
    scores = validation.scores
    fitness = {n: outcome(s, scores["unpatched"], tasks, weights).fitness for n, s in scores.items()}
    intervals = {n: list(fitness_interval(validation.rows[n], validation.rows["unpatched"], tasks, weights,
                                          resamples=resamples, seed=seed)[1:])
                 for n in scores if n != "unpatched"}
    rank = max(range(len(top)), key=lambda i: fitness[candidate_name(i)])
    genome, search = top[rank]
    return Choice(name=candidate_name(rank), genome=genome, search=search, fitness=fitness, intervals=intervals)
