"""Paired bootstrap over draws: how sure is a difference between two methods scored on the same samples?

Samples of one draw (a haystack, a record) are correlated: the same context is asked about at every
gold position, and a hard haystack is hard for every method. So the unit resampled is the draw,
not the sample: each resample picks draws with replacement and recomputes the mean difference of
exact match per gold position, and over the middle positions (``positions``: all but the shallowest and the deepest).
The 95% interval is the 2.5th..97.5th percentile of those resampled differences, in percentage points.
The gold log-prob change per token is resampled the same way (``logprob_bootstrap``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from ..scoring.base import ScoreRow
from .positions import middle_positions


@dataclass(frozen=True)
class Interval:
    delta: float  # observed mean difference: percentage points of exact match, or nats of log-prob
    low: float  # 95% bootstrap interval
    high: float

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return self.format(1)

    def format(self, digits: int) -> str:
        return f"{self.delta:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"


def resample_draws(n: int, resamples: int, seed: int) -> np.ndarray:
    """Bootstrap resamples of ``n`` draws, (resamples x n) indices drawn with replacement: the one resampling
    every interval over haystacks, records or text windows uses."""
    return np.random.default_rng(seed).integers(n, size=(resamples, n))


def paired_bootstrap(a: Sequence[ScoreRow], b: Sequence[ScoreRow], *, resamples: int = 2000,
                     seed: int = 0) -> dict[str, Interval]:
    """Exact match of ``a`` minus ``b`` (the same samples, in the same order) per gold position and for
    ``middle``, with 95% intervals from resampling draws."""
    if len(a) != len(b) or any((x.position, x.draw) != (y.position, y.draw) for x, y in zip(a, b)):
        raise ValueError("paired_bootstrap needs the same samples scored by both methods")
    positions = list(dict.fromkeys(str(r.position) for r in a))
    draw_ids = sorted({r.draw for r in a})
    column = {p: i for i, p in enumerate(positions)}
    row = {c: i for i, c in enumerate(draw_ids)}
    total = np.zeros((len(draw_ids), len(positions)))
    count = np.zeros_like(total)
    for x, y in zip(a, b):
        cell = row[x.draw], column[str(x.position)]
        total[cell] += float(x.exact) - float(y.exact)
        count[cell] += 1
    middle = [column[p] for p in middle_positions(positions)]
    picks = resample_draws(len(draw_ids), resamples, seed)

    def summary(diff_sum: np.ndarray, n: np.ndarray) -> np.ndarray:
        """Mean difference per position, and over the middle positions (last column), in points."""
        with np.errstate(invalid="ignore", divide="ignore"):
            per_position = 100 * diff_sum / n
        return np.concatenate([per_position, np.nanmean(per_position[..., middle], axis=-1, keepdims=True)], axis=-1)

    observed = summary(total.sum(0), count.sum(0))
    resampled = summary(total[picks].sum(1), count[picks].sum(1))
    low, high = np.nanpercentile(resampled, [2.5, 97.5], axis=0)
    names = positions + ["middle"]
    return {name: Interval(float(observed[i]), float(low[i]), float(high[i])) for i, name in enumerate(names)}


def logprob_bootstrap(a: Sequence[ScoreRow], b: Sequence[ScoreRow], *, positions=None, resamples: int = 2000,
                      seed: int = 0) -> Interval:
    """Mean change of the gold log-prob per token, ``a`` minus ``b`` (paired samples, in the same order),
    over the samples at ``positions`` (None: all), with a 95% interval from resampling draws, the unit
    ``paired_bootstrap`` resamples too. In nats, not points: the smooth signal where exact match is flat."""
    pairs = [(x, y) for x, y in zip(a, b) if positions is None or str(x.position) in positions]
    draws = sorted({x.draw for x, _ in pairs})
    index = {c: i for i, c in enumerate(draws)}
    sums, counts = np.zeros(len(draws)), np.zeros(len(draws))
    for x, y in pairs:
        sums[index[x.draw]] += x.logprob - y.logprob
        counts[index[x.draw]] += 1
    picks = resample_draws(len(draws), resamples, seed)
    low, high = np.percentile(sums[picks].sum(1) / counts[picks].sum(1), [2.5, 97.5])
    return Interval(float(sums.sum() / counts.sum()), float(low), float(high))
