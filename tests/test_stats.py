"""The paired bootstrap on synthetic rows: known differences, paired by context."""

import numpy as np
import pytest

from lpes_framework.scoring.base import ScoreRow
from lpes_framework.judging.stats import middle_positions, paired_bootstrap


def rows(exact_by_context_position: dict) -> list[ScoreRow]:
    return [ScoreRow(position=p, logprob=-1.0, exact=bool(e), first=bool(e), first_logprob=-1.0, tokens=2, draw=c)
            for (c, p), e in exact_by_context_position.items()]


def test_middle_positions_are_all_but_the_ends_by_depth():
    assert middle_positions(["19", "0", "10", "5"]) == ["10", "5"]
    assert middle_positions(["0", "9"]) == ["0", "9"]


def test_a_sure_gain_has_a_tight_interval():
    contexts = range(30)
    found = rows({(c, p): True for c in contexts for p in (0, 5, 9)})  # right everywhere
    base = rows({(c, p): p != 5 for c in contexts for p in (0, 5, 9)})  # wrong in the middle only
    result = paired_bootstrap(found, base)
    assert result["5"].delta == result["5"].low == result["5"].high == 100.0
    assert (result["0"].delta, result["0"].low, result["0"].high) == (0.0, 0.0, 0.0) == (
        result["9"].delta, result["9"].low, result["9"].high)
    assert result["middle"].delta == 100.0


def test_identical_methods_give_zero_and_noise_gives_an_interval_around_the_estimate():
    rng = np.random.default_rng(1)
    table = {(c, p): rng.random() < 0.5 for c in range(40) for p in (0, 10, 20, 30)}
    same = paired_bootstrap(rows(table), rows(table))
    assert all(i.delta == i.low == i.high == 0.0 for i in same.values())
    other = {k: rng.random() < 0.6 for k in table}
    result = paired_bootstrap(rows(other), rows(table))
    for interval in result.values():
        assert interval.low <= interval.delta <= interval.high and interval.high - interval.low > 5


def test_contexts_are_the_resampled_unit():
    """A context where everything flips moves all its positions together: wider than sample-level noise."""
    table_a = {(c, p): c < 10 for c in range(20) for p in range(5)}
    table_b = {(c, p): False for c in range(20) for p in range(5)}
    middle = paired_bootstrap(rows(table_a), rows(table_b), resamples=4000)["middle"]
    assert middle.delta == pytest.approx(50.0)
    assert middle.high - middle.low > 30  # 20 contexts, not 60 independent samples


def test_unpaired_rows_are_refused():
    a = rows({(0, 0): True, (1, 0): False})
    b = rows({(1, 0): True, (0, 0): False})
    with pytest.raises(ValueError, match="same samples"):
        paired_bootstrap(a, b)


def test_a_comparison_gives_the_gold_logprob_change_overall_and_in_the_middle():
    from dataclasses import replace

    from lpes_framework.judging.comparison import Comparison, format_intervals

    base = rows({(c, p): False for c in range(20) for p in (0, 5, 9)})
    # 0.2 nats better per token in the middle of every context, 0.1 better at the ends of half of them
    found = [replace(r, logprob=r.logprob + (0.2 if r.position == 5 else 0.1 * (r.draw % 2))) for r in base]
    comparison = Comparison({"found": {"kv": found}, "unpatched": {"kv": base}})
    comparison.add_intervals("found", "unpatched")
    lp = comparison.logprob_intervals["found - unpatched"]["kv"]
    assert (lp["middle"].delta, lp["middle"].low, lp["middle"].high) == pytest.approx((0.2, 0.2, 0.2))
    assert lp["all"].delta == pytest.approx((0.2 + 2 * 0.05) / 3)  # the ends gain 0.05 on average
    assert lp["all"].low < lp["all"].delta < lp["all"].high  # the ends vary across contexts
    assert "  gold log-prob per token: all +0.1000 [" in format_intervals(comparison)
    assert comparison.as_json()["logprob_intervals"]["found - unpatched"]["kv"]["middle"]["delta"] == pytest.approx(0.2)


def test_ends_and_middle_have_one_definition_whatever_the_count():
    """The fitness's end guard, the intervals' "middle" and the reports all read judging.positions: with
    three labels or more the shallowest and the deepest are the ends; with one or two there is no middle
    to protect, so every label is middle and none is an end (never empty, never both)."""
    from lpes_framework.judging.fitness import FitnessWeights, task_score
    from lpes_framework.judging.positions import end_positions, middle_positions
    from lpes_framework.judging.results import by_position

    assert end_positions(["49", "0", "22"]) == ["0", "49"] and middle_positions(["49", "0", "22"]) == ["22"]
    assert end_positions(["0", "99"]) == [] and middle_positions(["0", "99"]) == ["0", "99"]
    assert end_positions(["50"]) == [] and middle_positions(["50"]) == ["50"]
    # two positions: a loss at either is a loss in the middle, which the intervals report, not an end guard
    rows = lambda exact: [ScoreRow(position=p, logprob=-1.0, exact=e, first=e, first_logprob=-1.0, tokens=1, draw=d)  # noqa: E731
                          for d in range(4) for p, e in ((0, exact), (99, True))]
    interval = paired_bootstrap(rows(False), rows(True), resamples=100)
    assert interval["middle"].delta == -50.0 and interval["0"].delta == -100.0
    weights = FitnessWeights.defaults()
    assert task_score(by_position(rows(False)), by_position(rows(True)), weights) == -0.5  # the mean, no end penalty


def test_effect_lines_claim_no_change_from_one_haystack():
    """One haystack bootstraps to its own point (delta = low = high), which must not read as a measured gain."""
    from lpes_framework.judging.comparison import Comparison, effect_lines

    def rows(logprob, draws):
        return [ScoreRow(position=p, logprob=logprob, exact=True, first=True, first_logprob=logprob, tokens=2, draw=d)
                for d in draws for p in (0, 1, 2)]

    for draws, says in (([0], "only the point on one haystack"), ([0, 1], "excludes 0: a measured gain")):
        comparison = Comparison(rows={"found": {"kv": rows(-0.5, draws)}, "unpatched": {"kv": rows(-1.0, draws)}})
        comparison.add_intervals("found", "unpatched")
        assert says in effect_lines(comparison, "found", "unpatched")[0]
