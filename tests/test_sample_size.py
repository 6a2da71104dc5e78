"""Sample sizes from a pilot's spread: the count that reaches the stated half-width, capped, and refusals."""

import numpy as np
import pytest

from lpes_framework.errors import LpesError
from lpes_framework.judging.sample_size import check_request, draws_needed, sample_size
from lpes_framework.judging.stats import logprob_bootstrap
from lpes_framework.scoring.base import ScoreRow


def rows(deltas_by_draw, positions=(0, 1, 2)):
    """(method, unpatched) rows whose per-draw mean log-prob delta is each entry of ``deltas_by_draw``."""
    a, b = [], []
    for d, delta in enumerate(deltas_by_draw):
        for p in positions:
            b.append(ScoreRow(p, -1.0, False, False, -1.0, 1, draw=d))
            a.append(ScoreRow(p, -1.0 + delta, bool(p == 0 and delta > 0), False, -1.0, 1, draw=d))
    return a, b


def test_the_count_reaches_the_half_width_it_was_chosen_for():
    rng = np.random.default_rng(0)
    pilot = rows(rng.normal(0.02, 0.05, size=20))
    size = sample_size([pilot], logprob_half_width=0.01, cap=10_000)
    assert size.needed == draws_needed(size.sd_logprob, 0.01) and 50 < size.draws < 200  # (1.96 * 0.05 / 0.01)^2 = 96
    # measured again on that many fresh draws, the bootstrap's interval is about that wide
    a, b = rows(rng.normal(0.02, 0.05, size=size.draws))
    interval = logprob_bootstrap(a, b)
    assert 0.007 < (interval.high - interval.low) / 2 < 0.013


def test_capped_and_floored_and_the_exact_match_precision_counts_too():
    wide = rows(np.linspace(-0.5, 0.5, 10))
    assert sample_size([wide], cap=40).draws == 40 and sample_size([wide], cap=40).needed > 40
    flat = rows([0.001, -0.001] * 5)  # log-prob nearly flat; exact match at the first position flips by draw
    assert sample_size([flat]).draws == 8  # the floor: a near-constant pilot still gets a bootstrap's worth
    assert sample_size([flat], exact_half_width=3.0, cap=500).needed > sample_size([flat]).needed  # exact varies
    # the widest of several comparisons decides
    assert sample_size([flat, wide], cap=10_000).needed == sample_size([wide], cap=10_000).needed


@pytest.mark.parametrize("kwargs,match", [
    ({"logprob_half_width": 0}, "positive number"),
    ({"logprob_half_width": float("nan")}, "positive number"),
    ({"floor": 50, "cap": 10}, "cap must be a whole number >= 50"),
    ({"cap": "many"}, "cap must be a whole number"),
])
def test_bad_precisions_are_refused(kwargs, match):
    with pytest.raises(LpesError, match=match):
        sample_size([rows([0.1, 0.2, 0.3])], **kwargs)


@pytest.mark.parametrize("half_width,cap,pilot,match", [
    ("0.01", 100, 10, "positive number"), (0.01, 4, 10, "cap must be"), (0.01, 100, 1, "pilot draws must be")])
def test_a_request_is_checked_before_any_pilot_is_scored(half_width, cap, pilot, match):
    with pytest.raises(LpesError, match=match):
        check_request(half_width, cap=cap, pilot=pilot)


def test_a_pilot_needs_two_draws_and_paired_rows():
    with pytest.raises(LpesError, match="no spread"):
        sample_size([rows([0.1])])
    a, b = rows([0.1, 0.2])
    with pytest.raises(LpesError, match="same samples"):
        sample_size([(a, b[:-1])])
