"""Whether there is anything to fix: the unpatched model's loss in the middle of each column, from its rows.

For a column with gold positions: the exact match at its two end positions minus that at the middle ones
(points), and the same for the gold log-prob per token (nats): what a positional fix can hope to give back in
the middle. A perplexity column has no positions and nothing to diagnose."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..judging.positions import end_positions, middle_positions
from ..tasks.base import WHOLE_TEXT


@dataclass(frozen=True)
class MiddleLoss:
    column: str
    points: float  # exact match, ends minus middle
    logprob: float  # gold log-prob per token, ends minus middle (nats)
    exact: dict  # position -> exact match, points

    def line(self) -> str:
        by_position = " ".join(f"{p}:{v:.0f}" for p, v in self.exact.items())
        return (f"{self.column}: middle {self.points:+.1f} points and {self.logprob:+.3f} nats/token below the ends "
                f"(exact by position {by_position})")


def middle_loss(column: str, rows: list) -> MiddleLoss | None:
    """The middle loss of one column's unpatched rows (None: no gold positions)."""
    if not rows or rows[0].position == WHOLE_TEXT:
        return None
    positions = sorted({str(r.position) for r in rows}, key=float)
    exact = {p: 100 * float(np.mean([r.exact for r in rows if str(r.position) == p])) for p in positions}
    logprob = {p: float(np.mean([r.logprob for r in rows if str(r.position) == p])) for p in positions}
    ends, middle = end_positions(positions), middle_positions(positions)
    if not ends:  # two positions or fewer: no middle between ends
        return MiddleLoss(column, 0.0, 0.0, exact)
    return MiddleLoss(column, float(np.mean([exact[p] for p in ends]) - np.mean([exact[p] for p in middle])),
                      float(np.mean([logprob[p] for p in ends]) - np.mean([logprob[p] for p in middle])), exact)


def anything_to_fix(losses: list[MiddleLoss], points: float, nats: float) -> list[MiddleLoss]:
    """The columns that lose at least ``points`` or ``nats`` in the middle."""
    return [x for x in losses if x.points >= points or x.logprob >= nats]
