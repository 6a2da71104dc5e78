"""The fitness formula on synthetic scores: no model, every term checked by hand."""

import math

import numpy as np
import pytest

from lpes_framework.judging.fitness import FitnessWeights, outcome, task_score
from lpes_framework.judging.results import PositionStats

W = FitnessWeights.defaults(middle_bonus=1.0, end_penalty=2.0, logprob_weight=0.1)


def stats(accuracy: float, logprob: float = -0.5) -> PositionStats:
    return PositionStats(count=10, accuracy=accuracy, ci_low=0.0, ci_high=1.0, first_accuracy=accuracy,
                         logprob=logprob, logprob_se=0.0, first_logprob=logprob, perplexity=math.exp(-logprob))


def scores(acc: dict) -> dict:
    return {str(p): stats(a) for p, a in acc.items()}


class _Task:
    def __init__(self, metric="accuracy", weight=1.0, max_ratio=None):
        self.metric, self.weight, self.max_ratio = metric, weight, max_ratio


def test_unpatched_scores_zero():
    base = scores({0: 1.0, 10: 0.5, 19: 0.9})
    assert task_score(base, base, W) == 0.0


def test_middle_weight_follows_depth_not_list_index():
    base = scores({0: 1.0, 2: 0.5, 19: 1.0})
    better = scores({0: 1.0, 2: 0.7, 19: 1.0})
    w_mid = 1 + (1 - abs(2 * 2 / 19 - 1))  # position 2 sits near the start: small bonus
    assert task_score(better, base, W) == pytest.approx(0.2 * w_mid / (2 + w_mid))


@pytest.mark.parametrize("order", [[0, 10, 19], [19, 0, 10], [10, 19, 0]])
def test_listing_order_does_not_change_the_fitness(order):
    acc_base = {0: 1.0, 10: 0.5, 19: 0.9}
    acc_new = {0: 0.9, 10: 0.8, 19: 0.9}
    base = scores({p: acc_base[p] for p in order})
    new = scores({p: acc_new[p] for p in order})
    w_mid = 1 + (1 - abs(2 * 10 / 19 - 1))
    expected = (-0.1 + w_mid * 0.3) / (2 + w_mid) - 2.0 * 0.1  # position 0 is an end whatever its place
    assert task_score(new, base, W) == pytest.approx(expected)


def test_end_loss_is_penalised_on_both_ends_only():
    base = scores({0: 1.0, 50: 0.5, 100: 1.0})
    worse_ends = scores({0: 0.8, 50: 0.5, 100: 0.9})
    assert task_score(worse_ends, base, W) == pytest.approx((-0.2 - 0.1) / 4 - 2.0 * (0.2 + 0.1))
    worse_middle = scores({0: 1.0, 50: 0.3, 100: 1.0})
    assert task_score(worse_middle, base, W) == pytest.approx(2 * -0.2 / 4)


def test_logprob_breaks_accuracy_ties():
    base = {"0": stats(1.0, -0.5), "5": stats(0.5, -0.5), "10": stats(1.0, -0.5)}
    new = {"0": stats(1.0, -0.5), "5": stats(0.5, -0.3), "10": stats(1.0, -0.5)}
    assert task_score(new, base, W) == pytest.approx(0.1 * 0.2 * 2 / 4)


def test_outcome_sums_weighted_tasks_and_keeps_perplexity_apart():
    tasks = {"kv": _Task(weight=2.0), "ppl": _Task("perplexity", weight=0.5)}
    base = {"kv": scores({0: 1.0, 5: 0.5, 10: 1.0}), "ppl": {"all": stats(0.0, -2.0)}}
    new = {"kv": scores({0: 1.0, 5: 0.9, 10: 1.0}), "ppl": {"all": stats(0.0, -1.5)}}
    out = outcome(new, base, tasks, W)
    kv = 0.4 * 2 / 4
    assert out.retrieval == pytest.approx(2.0 * kv)
    assert out.fitness == pytest.approx(2.0 * kv + 0.5 * 0.1 * 0.5)
    assert out.perplexity == pytest.approx(math.exp(1.5))


def test_a_guarded_perplexity_counts_only_past_its_ratio():
    """max_ratio 1.02: a perplexity up to 2% worse than unpatched (or better) adds nothing, beyond it the
    excess log-ratio is penalised like an end loss; the reward of the other task is untouched."""
    tasks = {"kv": _Task(), "inside": _Task("perplexity", max_ratio=1.02)}
    base = {"kv": scores({0: 1.0, 5: 0.5, 10: 1.0}), "inside": {"all": stats(0.0, -2.0)}}
    kv = scores({0: 1.0, 5: 0.9, 10: 1.0})
    for change in (0.3, 0.0, -0.01):  # better, equal, 1% worse
        out = outcome({"kv": kv, "inside": {"all": stats(0.0, -2.0 + change)}}, base, tasks, W)
        assert out.fitness == pytest.approx(0.4 * 2 / 4)
    worse = outcome({"kv": kv, "inside": {"all": stats(0.0, -2.1)}}, base, tasks, W)  # 10.5% worse
    assert worse.fitness == pytest.approx(0.4 * 2 / 4 - 2.0 * (0.1 - math.log(1.02)))


def test_non_finite_scores_get_the_invalid_fitness():
    tasks = {"kv": _Task()}
    base = {"kv": scores({0: 1.0, 9: 1.0})}
    new = {"kv": {"0": stats(1.0, math.nan), "9": stats(1.0)}}
    out = outcome(new, base, tasks, W)
    assert out.fitness == W.invalid_fitness and out.perplexity == math.inf


def _rows(exact_by_context: list[list[bool]]) -> list:
    from lpes_framework.scoring.base import ScoreRow

    return [ScoreRow(position=p, logprob=-0.1 if hit else -1.0, exact=hit, first=hit, first_logprob=-0.1, tokens=4,
                     draw=c) for c, hits in enumerate(exact_by_context) for p, hit in zip((0, 5, 9), hits)]


def test_fitness_interval_is_the_noise_of_that_many_contexts():
    from lpes_framework.judging.fitness import fitness_interval

    rng = np.random.default_rng(1)
    tasks = {"kv": _Task()}

    def interval(contexts: int, middle: float):  # the same ends; the middle drawn apart, ``mine`` right at ``middle``
        base = rng.random((contexts, 3)) < 0.6
        mine = base.copy()
        mine[:, 1] = rng.random(contexts) < middle
        return fitness_interval({"kv": _rows(mine.tolist())}, {"kv": _rows(base.tolist())}, tasks, W, resamples=500)

    same = _rows([[True, False, True]] * 5)
    assert fitness_interval({"kv": same}, {"kv": same}, tasks, W, resamples=50) == (0.0, 0.0, 0.0)
    few, many = interval(10, 0.6), interval(400, 0.6)
    assert few[1] < 0 < few[2] and many[1] < 0 < many[2]  # no effect: both intervals span 0
    assert many[2] - many[1] < (few[2] - few[1]) / 3  # 40x the contexts: much narrower
    fitness, low, high = interval(400, 0.9)  # a real middle gain on many contexts is told apart
    assert 0 < low <= fitness <= high
