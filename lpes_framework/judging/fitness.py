"""Fitness: one number per candidate, relative to the unpatched model on the search split.

For each retrieval task and gold position p (u_p in [0, 1] its relative depth: (p - min) / (max - min) over
the task's gold positions, so the order they are listed in does not matter):

    q_p      = accuracy_p + logprob_weight * mean_logprob_p      (log-prob breaks accuracy ties and gives
                                                                  small models a gradient of quality)
    w_p      = 1 + middle_bonus * (1 - |2 u_p - 1|)              (the middle counts most)
    task     = sum_p w_p (q_p - q_p^base) / sum_p w_p
               - end_penalty * sum_{p in {min, max}} max(0, q_p^base - q_p)

Perplexity tasks contribute ``logprob_weight`` times the change of their mean token log-prob, or, when
they set ``max_ratio`` (a guard: "at most 2% worse than unpatched" is 1.02), nothing until their
perplexity ratio to unpatched passes it and ``end_penalty`` times the excess log-ratio beyond. The
fitness is the task-weighted sum, so the unpatched model scores exactly 0. A candidate whose scores
are NaN or infinite gets ``invalid_fitness`` instead of crashing the search.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from ..errors import LpesError, is_number
from ..io.jsonio import nulls_to_nan
from ..tasks.base import WHOLE_TEXT, whole_text
from ..scoring.base import ScoreRow
from .positions import depths, end_positions
from .results import Scores, by_position
from .stats import resample_draws
from ..tasks import Task


@dataclass(frozen=True)
class Outcome:
    """What the optimizers see of a candidate."""

    fitness: float  # scalar to maximise (penalised when the candidate produced NaN/inf)
    retrieval: float  # weighted retrieval score (NSGA-II objective 1, maximised)
    perplexity: float  # perplexity on the perplexity task (NSGA-II objective 2, minimised; nan if none)

    def __post_init__(self):
        nulls_to_nan(self)  # JSON stores a missing perplexity as null


@dataclass(frozen=True)
class FitnessWeights:
    """The ``fitness`` config block; its defaults are written once, in ``conf/config.yaml`` (``defaults``)."""

    middle_bonus: float
    end_penalty: float
    logprob_weight: float
    invalid_fitness: float
    normalise: bool  # each task's term over its unpatched spread (``task_scales``): a mixture of tasks

    @classmethod
    def defaults(cls, **overrides) -> "FitnessWeights":
        """The packaged config's weights, with ``overrides``."""
        return cls(**{**_packaged_weights(), **overrides})

    def __post_init__(self):
        """Checked when the config is read: a weight that is text or NaN would only surface (or silently
        give every candidate ``invalid_fitness``) after the whole search."""
        if not isinstance(self.normalise, bool):
            raise LpesError(f"fitness.normalise must be true or false, got {self.normalise!r}")
        for name, value in vars(self).items():
            if name == "normalise":
                continue
            if not is_number(value):
                raise LpesError(f"fitness.{name} must be a finite number, got {value!r}")
            if name != "invalid_fitness" and value < 0:
                raise LpesError(f"fitness.{name} must be >= 0, got {value}")


@functools.cache
def _packaged_weights() -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(Path(__file__).parent.parent / "conf" / "config.yaml").fitness)


def quality(stats, weights: FitnessWeights) -> float:
    return stats.accuracy + weights.logprob_weight * stats.logprob


def depth_weights(positions, weights: FitnessWeights) -> dict[str, float]:
    """w_p = 1 + middle_bonus * (1 - |2 u_p - 1|) of each gold position label."""
    return {p: 1 + weights.middle_bonus * (1 - abs(2 * u - 1)) for p, u in depths(positions).items()}


def task_score(scores, base, weights: FitnessWeights, max_ratio: float | None = None) -> float:
    if whole_text(base):
        change = scores[WHOLE_TEXT].logprob - base[WHOLE_TEXT].logprob  # minus the log perplexity ratio
        if max_ratio is None:
            return weights.logprob_weight * change
        return -weights.end_penalty * max(0.0, -change - math.log(max_ratio))
    w = depth_weights(base, weights)
    total = sum(wp * (quality(scores[p], weights) - quality(base[p], weights)) for p, wp in w.items())
    loss = sum(max(0.0, quality(base[p], weights) - quality(scores[p], weights)) for p in end_positions(base))
    return total / sum(w.values()) - weights.end_penalty * loss


def task_spread(base: Mapping, weights: FitnessWeights) -> float:
    """The standard deviation of one draw's depth-weighted quality under the unpatched model, from its
    per-position spreads: sum_p (w_p / W)^2 (acc_p (1 - acc_p) + logprob_weight^2 var(lp)_p), positions taken
    as independent; a whole-text task's is its log-prob part alone."""
    if whole_text(base):
        stats = base[WHOLE_TEXT]
        return weights.logprob_weight * stats.logprob_se * math.sqrt(stats.count)
    w = depth_weights(base, weights)
    total = sum(w.values())
    variance = sum((wp / total) ** 2 * (base[p].accuracy * (1 - base[p].accuracy)
                                          + weights.logprob_weight ** 2 * base[p].logprob_se ** 2 * base[p].count)
                   for p, wp in w.items())
    return math.sqrt(variance)


def task_scales(baseline: Scores, tasks: Mapping[str, Task], weights: FitnessWeights) -> dict[str, float]:
    """What each task's term is multiplied by: 1, or with ``normalise`` one over its unpatched spread
    (``task_spread``), so that a task whose scores move on a larger scale (exact match against a log-prob,
    a hard task against an easy one) does not dominate a mixture. Guards (``max_ratio``) keep 1: they are
    penalties past a threshold, not rewards to be traded off."""
    if not weights.normalise:
        return {n: 1.0 for n in tasks}
    scales = {}
    for n, t in tasks.items():
        spread = 1.0 if t.max_ratio is not None else task_spread(baseline[n], weights)
        if not spread > 0:
            raise LpesError(f"fitness.normalise: task {n}'s unpatched scores do not vary over its samples "
                            "(spread 0): its term cannot be normalised; drop it or use more samples")
        scales[n] = 1.0 / spread
    return scales


def outcome(scores: Scores, baseline: Scores, tasks: Mapping[str, Task], weights: FitnessWeights,
            scales: Mapping[str, float] | None = None) -> Outcome:
    """``scales``: the tasks' ``task_scales``, where the caller fixed them (a bootstrap resample of the baseline
    must not re-measure its spread); by default those of ``baseline``."""
    scales = task_scales(baseline, tasks, weights) if scales is None else scales
    weighted = {n: t.weight * scales[n] * task_score(scores[n], baseline[n], weights, t.max_ratio)
                for n, t in tasks.items()}
    retrieval = sum(v for n, v in weighted.items() if tasks[n].metric != "perplexity")
    ppl = [stats.perplexity for n, t in tasks.items() if t.metric == "perplexity" for stats in scores[n].values()]
    perplexity = sum(ppl) / len(ppl) if ppl else math.nan
    fitness = sum(weighted.values())
    values = [fitness, retrieval] + [s.logprob for per in scores.values() for s in per.values()]
    if not all(math.isfinite(v) for v in values):
        return Outcome(fitness=weights.invalid_fitness, retrieval=weights.invalid_fitness, perplexity=math.inf)
    return Outcome(fitness=fitness, retrieval=retrieval, perplexity=perplexity)


def fitness_interval(rows: Mapping[str, list[ScoreRow]], baseline: Mapping[str, list[ScoreRow]],
                     tasks: Mapping[str, Task], weights: FitnessWeights, *, resamples: int = 1000,
                     seed: int = 0) -> tuple[float, float, float]:
    """Fitness of ``rows`` against ``baseline`` (the same samples), and its 95% paired bootstrap interval:
    each resample draws every task's contexts with replacement and recomputes the fitness, so the width
    is what the fitness of this many contexts can tell apart (a search's noise floor)."""
    def fitness(picks: Mapping[str, np.ndarray]) -> float:
        a, b = ({task: by_position([r for c in picks[task] for r in per[task][c]]) for task in per}
                for per in (mine, theirs))
        return outcome(a, b, tasks, weights, scales).fitness

    scales = task_scales({task: by_position(r) for task, r in baseline.items()}, tasks, weights)
    mine, theirs = ({task: _by_context(r) for task, r in data.items()} for data in (rows, baseline))
    contexts = {task: np.array(sorted(per)) for task, per in theirs.items()}
    picks = {task: c[resample_draws(len(c), resamples, seed + i)] for i, (task, c) in enumerate(contexts.items())}
    draws = [fitness({task: p[r] for task, p in picks.items()}) for r in range(resamples)]
    low, high = np.percentile(draws, [2.5, 97.5])
    return fitness(contexts), float(low), float(high)


def _by_context(rows: list[ScoreRow]) -> dict[int, list[ScoreRow]]:
    groups: dict[int, list[ScoreRow]] = {}
    for row in rows:
        groups.setdefault(row.draw, []).append(row)
    return groups


def sample_coefficients(labels, task_weight: float, weights, per_position: int,
                        max_ratio: float | None = None) -> dict[str, tuple[float, float, float]]:
    """Per gold position label: (coefficient of lp - lp0, coefficient of the guard max(0, lp0 - lp - slack),
    slack). Depth weights and end positions are the fitness's own. A whole-text task (perplexity: one label)
    has its log-prob change rewarded, or, with a ``max_ratio`` guard, only a loss past log(max_ratio) is
    penalised, by ``end_penalty`` (the fitness's guard, per window as the end guard is per sample)."""
    scale = task_weight / per_position
    if max_ratio is not None:
        return {p: (0.0, scale * weights.end_penalty, math.log(max_ratio)) for p in labels}
    scale *= weights.logprob_weight
    if list(labels) == [WHOLE_TEXT]:
        return {WHOLE_TEXT: (scale, 0.0, 0.0)}
    w = depth_weights(labels, weights)
    norm = sum(w.values())
    ends = end_positions(labels)
    return {p: (scale * wp / norm, scale * weights.end_penalty if p in ends else 0.0, 0.0) for p, wp in w.items()}


def objective_coefficients(baseline: Mapping[str, list[ScoreRow]], tasks: Mapping[str, Task],
                           weights: FitnessWeights, per_position: int,
                           scales: Mapping[str, float]) -> dict[str, dict[str, tuple[float, float, float]]]:
    """``sample_coefficients`` of every task of a gradient minibatch (``baseline``: its unpatched rows), each
    task's weight times its scale (``task_scales``, from the fixed search split), over its own sample count a
    position (``per_position`` times its ``step_contexts``)."""
    return {task: sample_coefficients({str(r.position) for r in rows}, tasks[task].weight * scales.get(task, 1.0),
                                      weights, per_position * tasks[task].step_contexts, tasks[task].max_ratio)
            for task, rows in baseline.items()}
