"""Scores of single samples, and their summary by gold position with 95% confidence intervals."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Mapping

from ..io.jsonio import nulls_to_nan
from ..scoring.base import ScoreRow


@dataclass(frozen=True)
class PositionStats:
    count: int
    accuracy: float
    ci_low: float  # Wilson 95% interval of the accuracy
    ci_high: float
    first_accuracy: float
    logprob: float  # mean over samples of the per-sample mean answer log-prob
    logprob_se: float
    first_logprob: float
    perplexity: float  # exp(-token-weighted mean log-prob); the metric of perplexity tasks

    def __post_init__(self):
        nulls_to_nan(self)  # JSON stores non-finite numbers as null

    def as_dict(self) -> dict:
        return asdict(self)


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # the interval holds p; at p = 1 (or 0) rounding put its bound a hair inside (n = 4: 0.9999999999999999)
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def summarise(rows: list[ScoreRow]) -> PositionStats:
    n = len(rows)
    hits = sum(r.exact for r in rows)
    low, high = wilson(hits, n)
    lps = [r.logprob for r in rows]
    mean = sum(lps) / n
    var = sum((x - mean) ** 2 for x in lps) / (n - 1) if n > 1 else 0.0
    tokens = sum(r.tokens for r in rows)
    token_mean = sum(r.logprob * r.tokens for r in rows) / tokens
    return PositionStats(
        count=n, accuracy=hits / n, ci_low=low, ci_high=high,
        first_accuracy=sum(r.first for r in rows) / n,
        logprob=mean, logprob_se=math.sqrt(var / n),
        first_logprob=sum(r.first_logprob for r in rows) / n,
        perplexity=math.exp(-token_mean) if math.isfinite(token_mean) else math.inf,
    )


def by_position(rows: list[ScoreRow]) -> dict[str, PositionStats]:
    """Per gold position (keys as strings, ready for JSON), in the order positions first appear."""
    groups: dict[str, list[ScoreRow]] = defaultdict(list)
    for row in rows:
        groups[str(row.position)].append(row)
    return {pos: summarise(group) for pos, group in groups.items()}


def by_length(rows: list[ScoreRow]) -> dict[str, PositionStats]:
    """Per context length (keys as strings), for rows of a task that fills its contexts to a length drawn
    from a list or range; empty when the rows hold fewer than two lengths."""
    groups: dict[str, list[ScoreRow]] = defaultdict(list)
    for row in rows:
        if row.length is not None:
            groups[str(row.length)].append(row)
    return {n: summarise(groups[n]) for n in sorted(groups, key=int)} if len(groups) > 1 else {}


Scores = dict[str, dict[str, PositionStats]]  # task -> gold position -> stats


def scores_to_json(scores: Scores) -> dict:
    return {task: {pos: stats.as_dict() for pos, stats in per_pos.items()} for task, per_pos in scores.items()}


OPTIONAL = ("length", "match")  # row fields written only where a task sets them: older rows files stay as they were


def rows_to_json(rows: Mapping[str, list[ScoreRow]]) -> dict:
    return {task: [{k: v for k, v in asdict(row).items() if v is not None or k not in OPTIONAL} for row in per]
            for task, per in rows.items()}


def rows_from_json(data: Mapping) -> dict[str, list[ScoreRow]]:
    """Inverse of ``rows_to_json`` after a strict-JSON round trip (non-finite numbers come back as None)."""
    def nan(value):
        return math.nan if value is None else value

    def renamed(row):  # rows written before the field was called draw
        return {("draw" if k == "context" else k): v for k, v in row.items()}

    return {task: [ScoreRow(**{**renamed(row), "logprob": nan(row["logprob"]), "first_logprob": nan(row["first_logprob"]),
                               "token_logprobs": tuple(nan(v) for v in row["token_logprobs"])}) for row in per]
            for task, per in data.items()}


def scores_from_json(data: Mapping) -> Scores:
    return {task: {pos: PositionStats(**stats) for pos, stats in per_pos.items()} for task, per_pos in data.items()}


def by_sample(rows) -> dict[tuple[int, str], ScoreRow]:
    """Rows keyed by their sample, (draw, gold position label): how rows of two methods, folders or records
    are joined, never by list order."""
    return {(r.draw, str(r.position)): r for r in rows}


def paired(a, b, haystacks: range | None = None) -> tuple[list[ScoreRow], list[ScoreRow]]:
    """The rows of ``a`` and ``b`` on the samples both scored (within ``haystacks``), in ``a``'s order."""
    mine, theirs = by_sample(a), by_sample(b)
    keys = [k for k in mine if k in theirs and (haystacks is None or k[0] in haystacks)]
    return [mine[k] for k in keys], [theirs[k] for k in keys]
