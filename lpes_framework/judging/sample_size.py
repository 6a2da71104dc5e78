"""How many draws a paired comparison needs for a stated precision, from the spread of a pilot's paired deltas.

The bootstrap intervals of ``stats`` resample draws, so the precision of a paired mean difference is set by
the spread of the per-draw differences: with standard deviation ``sd`` over draws, a 95% interval's half-width
is about ``1.96 sd / sqrt(n)``, and ``n = (1.96 sd / h)^2`` draws reach half-width ``h``. A pilot (a few draws
of another split: validation) gives ``sd``; the count is then fixed before the measured split is scored, and
that split is never extended after its interval is seen (the count is recorded next to it).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from ..errors import LpesError, is_number, whole
from ..scoring.base import ScoreRow

Z95 = 1.959964
MIN_DRAWS = 8  # below this the bootstrap's percentiles are coarse whatever the spread


@dataclass(frozen=True)
class SampleSize:
    draws: int  # the count chosen (within [floor, cap])
    needed: int  # what the precision asks for before the cap
    pilot_draws: int
    sd_logprob: float  # per-draw spread of the paired log-prob delta, nats per token
    sd_exact: float  # of the paired exact-match delta, points
    logprob_half_width: float
    exact_half_width: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def per_draw_deltas(a: Sequence[ScoreRow], b: Sequence[ScoreRow]) -> tuple[np.ndarray, np.ndarray]:
    """(log-prob per token, exact match in points) of ``a`` minus ``b`` averaged within each draw: the units
    the bootstrap resamples."""
    if len(a) != len(b) or any((x.position, x.draw) != (y.position, y.draw) for x, y in zip(a, b)):
        raise LpesError("a sample size needs the same samples scored by both methods")
    draws = sorted({x.draw for x in a})
    index = {d: i for i, d in enumerate(draws)}
    lp, ex, n = (np.zeros(len(draws)) for _ in range(3))
    for x, y in zip(a, b):
        i = index[x.draw]
        lp[i] += x.logprob - y.logprob
        ex[i] += 100 * (float(x.exact) - float(y.exact))
        n[i] += 1
    return lp / n, ex / n


def check_request(half_width, *, cap, floor: int = MIN_DRAWS, pilot=None) -> None:
    """A one-line error for a request no pilot can answer (checked before any pilot is scored)."""
    if not (is_number(half_width) and half_width > 0 and math.isfinite(half_width)):
        raise LpesError(f"a precision must be a positive number, got {half_width!r}")
    whole(cap, "sample size: cap", floor)  # below the floor no count is allowed
    if pilot is not None:
        whole(pilot, "sample size: pilot draws", 2)  # one draw has no spread


def draws_needed(sd: float, half_width: float) -> int:
    """Draws for a 95% interval of half-width ``half_width`` when the per-draw deltas spread by ``sd``."""
    check_request(half_width, cap=MIN_DRAWS)
    return max(1, math.ceil((Z95 * sd / half_width) ** 2))


def sample_size(pilots: Sequence[tuple[Sequence[ScoreRow], Sequence[ScoreRow]]], *, logprob_half_width: float = 0.01,
                exact_half_width: float | None = None, cap: int = 200, floor: int = MIN_DRAWS) -> SampleSize:
    """The draws a column needs so that every pilot comparison (method rows, unpatched rows), measured again on
    that many draws, has a 95% interval of at most ``logprob_half_width`` nats per token (and
    ``exact_half_width`` exact-match points, where given), within ``[floor, cap]``."""
    if not pilots:
        raise LpesError("a sample size needs at least one pilot comparison")
    check_request(logprob_half_width, cap=cap, floor=floor)
    sds = [per_draw_deltas(a, b) for a, b in pilots]
    pilot_draws = min(len(lp) for lp, _ in sds)
    if pilot_draws < 2:
        raise LpesError(f"a pilot of {pilot_draws} draw has no spread to size a sample by: score at least 2")
    sd_lp = max(float(np.std(lp, ddof=1)) for lp, _ in sds)
    sd_ex = max(float(np.std(ex, ddof=1)) for _, ex in sds)
    needed = draws_needed(sd_lp, logprob_half_width)
    if exact_half_width is not None:
        needed = max(needed, draws_needed(sd_ex, exact_half_width))
    return SampleSize(draws=min(cap, max(floor, needed)), needed=needed, pilot_draws=pilot_draws, sd_logprob=sd_lp,
                      sd_exact=sd_ex, logprob_half_width=logprob_half_width, exact_half_width=exact_half_width)
