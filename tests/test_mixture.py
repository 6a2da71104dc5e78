"""A mixture of tasks and lengths in one objective: each task's term over its unpatched spread, the same
scales in the GA's fitness and the gradient's objective, results by context length."""

import json
import math

import numpy as np
import pytest

from conftest import TINY_TASK, read_jsonl, run_cli
from lpes_framework.config import plain, task_configs
from lpes_framework.search import run_search
from lpes_framework.config import compose_config
from lpes_framework.errors import LpesError
from lpes_framework.judging.comparison import Comparison, format_lengths
from lpes_framework.judging.fitness import FitnessWeights, outcome, task_score, task_scales, task_spread
from lpes_framework.scoring.base import ScoreRow
from lpes_framework.judging.results import by_length, by_position
from lpes_framework.tasks import TASKS

MIXTURE = ["model=tiny", "task=niah_single_1", "task.context_tokens=[160,240]", "task.depths=[0,50,100]",
           "task.samples_per_position=2", "task.max_new_tokens=8", "+task@extra_tasks.kv=kv_retrieval",
           "extra_tasks.kv.pairs=6", "extra_tasks.kv.gold_positions=[0,2,5]", "extra_tasks.kv.samples_per_position=2",
           "progress=false", "fitness.normalise=true"]


def rows(positions, accuracy, logprobs, draws=4):
    return [ScoreRow(position=p, logprob=lp, exact=d < accuracy * draws, first=True, first_logprob=lp, tokens=2,
                     draw=d) for p in positions for d, lp in zip(range(draws), logprobs)]


def test_the_spread_is_the_standard_deviation_of_one_draws_quality():
    weights = FitnessWeights.defaults(logprob_weight=0.5, normalise=True)
    base = by_position(rows([0, 5, 10], 0.5, [-1.0, -2.0, -1.0, -2.0]))
    w = {"0": 1.0, "5": 2.0, "10": 1.0}  # the depth weights (middle_bonus 1)
    per_position = 0.5 * 0.5 + 0.5 ** 2 * np.var([-1.0, -2.0, -1.0, -2.0], ddof=1)
    assert task_spread(base, weights) == pytest.approx(math.sqrt(sum((v / 4) ** 2 for v in w.values()) * per_position))


def test_normalised_terms_count_in_units_of_their_spread():
    weights = FitnessWeights.defaults(logprob_weight=0.1, normalise=True)
    tasks = {"wide": TASKS.build({"name": "kv_retrieval", "weight": 1.0}),
             "narrow": TASKS.build({"name": "kv_retrieval", "weight": 2.0})}
    base = {"wide": by_position(rows([0, 4, 9], 0.5, [-1.0, -3.0, -1.0, -3.0])),
            "narrow": by_position(rows([0, 4, 9], 0.5, [-1.0, -1.1, -1.0, -1.1]))}
    better = {"wide": by_position(rows([0, 4, 9], 0.75, [-1.0, -3.0, -1.0, -3.0])),
              "narrow": by_position(rows([0, 4, 9], 0.75, [-1.0, -1.1, -1.0, -1.1]))}
    scales = task_scales(base, tasks, weights)
    assert scales == {n: pytest.approx(1 / task_spread(base[n], weights)) for n in tasks}
    assert scales["narrow"] > scales["wide"]  # a steadier task's change counts more
    expected = sum(t.weight * scales[n] * task_score(better[n], base[n], weights) for n, t in tasks.items())
    assert outcome(better, base, tasks, weights).fitness == pytest.approx(expected)
    plain_weights = FitnessWeights.defaults(logprob_weight=0.1)
    assert task_scales(base, tasks, plain_weights) == {"wide": 1.0, "narrow": 1.0}
    flat = {n: by_position(rows([0, 4, 9], 1.0, [-1.0] * 4)) for n in tasks}
    with pytest.raises(LpesError, match="do not vary"):
        task_scales(flat, tasks, weights)


def test_a_gradient_jobs_task_scale_multiplies_its_term():
    from lpes_framework.execution import GradientJob, build_executor

    cfg = compose_config("config", [*TINY_TASK, "task.samples_per_position=2"])
    executor = build_executor({"name": "local"}, plain(cfg), task_configs(cfg), ["search"])
    try:
        job = dict(split="search", draws=(2, 3), genes=(0.8, 1.4, 2.0, 1.2), curve={"name": "bezier", "low": 0.5,
                   "high": 3.0}, scheme={"name": "pi"}, weights=plain(cfg.fitness), per_position=2)
        one = executor.gradient(GradientJob(**job))
        scaled = executor.gradient(GradientJob(**job, task_scales={"kv_retrieval": 2.5}))
    finally:
        executor.close()
    assert scaled.value == pytest.approx(2.5 * one.value, rel=1e-5)
    np.testing.assert_allclose(scaled.gradient, 2.5 * np.array(one.gradient), rtol=1e-4, atol=1e-10)


def test_a_mixture_of_tasks_and_lengths_searches_end_to_end(tmp_path):
    cfg = compose_config("config", [*MIXTURE, "optimizer=gradient", "optimizer.steps=2", "optimizer.eval_every=2",
                                    "optimizer.contexts_per_step=2", "curve=free", "curve.low=0.5",
                                    "curve.high=2.0", "validation.top_k=1", "validation.bootstrap_resamples=50"])
    result = run_search(cfg, tmp_path)
    assert math.isfinite(result["test"]["found"]["fitness"])
    report = (tmp_path / "report.md").read_text()
    assert "by context length" in report and "160" in report and "240" in report
    # each step records each task's part of its gradient; the pulls analysis reads them by band and depth
    steps = [r for r in read_jsonl(tmp_path / "evaluations.jsonl") if r["kind"] == "step"]
    for step in steps:
        assert set(step["task_gradients"]) == {"ruler_niah", "kv"}
        np.testing.assert_allclose(np.sum(list(step["task_gradients"].values()), axis=0), step["gradient"], atol=1e-12)
    pulls = run_cli("lpes_framework.commands.analysis", "pulls", str(tmp_path)).stdout
    assert "2 steps" in pulls and "ruler_niah" in pulls and "kv . ruler_niah" in pulls
    assert "genes every pulling task pushes the same way" in pulls
    # a received log whose gradients lost a number, or whose genes are no whole number a layer, is one line
    log = tmp_path / "evaluations.jsonl"
    records = read_jsonl(log)
    step = next(r for r in records if r["kind"] == "step")
    step["task_gradients"]["kv"] = step["task_gradients"]["kv"][:-1]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    damaged = run_cli("lpes_framework.commands.analysis", "pulls", str(tmp_path), check=False)
    assert damaged.returncode == 2 and "numbers for" in damaged.stderr and "Traceback" not in damaged.stderr
    for r in records:
        if r["kind"] == "step":
            r["genome"] = r["gradient"] = [1.0] * 7
            r["task_gradients"] = {task: [0.5] * 7 for task in r["task_gradients"]}
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    foreign = run_cli("lpes_framework.commands.analysis", "pulls", str(tmp_path), check=False)
    assert foreign.returncode == 2 and "not one width x" in foreign.stderr


def test_pulls_leave_a_task_without_gradient_out_of_the_agreement():
    from lpes_framework.judging.pulls import mean_pulls, pull_table

    steps = [{"kv": [1.0, -1.0, 2.0, 0.5], "mdqa": [2.0, -1.0, -1.0, 1.0], "ppl": [0.0] * 4}] * 2
    lines = pull_table(mean_pulls(steps), n_layers=2, n_bands=2)
    assert lines[0].split()[2:] == ["layers", "0-0", "layers", "1-1"]  # two layers: two parts, none empty
    assert lines[1].split()[2:] == ["+1.0000", "-1.0000"]  # kv band 0: layer 0, then layer 1
    assert [line.split(":")[0].strip() for line in lines if " . " in line] == ["kv . mdqa"]
    assert "no pull (every gene's gradient 0, e.g. a guard never crossed): ppl" in lines
    assert lines[-1] == "genes every pulling task pushes the same way: 75% of 4"  # ppl's zeros would make it 0%


def test_normalise_needs_two_samples_a_task_and_is_refused_before_load(tmp_path):
    cfg = compose_config("config", [*MIXTURE, "task.samples_per_position=1"])
    with pytest.raises(LpesError, match="samples_per_position >= 2"):
        run_search(cfg, tmp_path)
    assert not (tmp_path / "evaluations.jsonl").exists()
    with pytest.raises(LpesError, match="normalise must be true or false"):
        FitnessWeights.defaults(normalise="yes")


def test_results_by_length():
    mixed = [ScoreRow(position=50, logprob=-1.0 * (n == 2048), exact=n == 1024, first=True, first_logprob=-1.0,
                      tokens=2, draw=d, length=n) for d, n in enumerate([1024, 2048, 1024, 2048])]
    stats = by_length(mixed)
    assert list(stats) == ["1024", "2048"] and stats["1024"].accuracy == 1.0 and stats["2048"].accuracy == 0.0
    assert by_length([ScoreRow(position=0, logprob=0.0, exact=True, first=True, first_logprob=0.0, tokens=1)]) == {}
    table = format_lengths(Comparison({"unpatched": {"niah": mixed}}))
    assert "by context length" in table and "100.0" in table
