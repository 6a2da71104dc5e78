"""The gradient path: value-and-gradient vs finite differences, identity at all ones, Ray = local,
optimizer=gradient end to end (deterministic, resumable after SIGKILL, bad settings refused early)."""

import functools
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from conftest import TINY_TASK, read_jsonl, run_cli, tiny_model
from lpes_framework.config import compose_config
from lpes_framework.position.curves import build_curve
from lpes_framework.errors import LpesError
from lpes_framework.judging.fitness import FitnessWeights, sample_coefficients
from lpes_framework.position import build_scheme
from lpes_framework.scoring.gradient import value_and_gradient
from lpes_framework.scoring.teacher_forced import score_teacher_forced
from lpes_framework.tasks import TASKS
from lpes_framework.tasks.base import Encoded, Sample

GRADIENT = [*TINY_TASK, "optimizer=gradient", "optimizer.steps=4", "optimizer.eval_every=2", "curve=bezier",
            "curve.low=0.5", "curve.high=3.0", "validation.top_k=2", "validation.bootstrap_resamples=200"]


def haystacks(n_contexts: int, positions=(0, 3, 7), seed: int = 0) -> list[Encoded]:
    """Random-token contexts, each asked about every position: a shared prefix, a short suffix, an
    answer copied from the context (so the gold log-prob depends on where the model looks)."""
    rng = np.random.default_rng(seed)
    items = []
    for c in range(n_contexts):
        context = rng.integers(3, 90, size=120).tolist()
        for p in positions:
            answer = context[10 * p + 5: 10 * p + 8]
            ids = context + [91, 92, 93 + p % 3] + answer
            items.append(Encoded(ids=ids, answer_start=len(ids) - len(answer),
                                 sample=Sample(prompt="", answer="x", position=p, draw=c)))
    return items


def objective(model, items, genes, curve, scheme, baseline, coefficients):
    return value_and_gradient(model, {"kv": items}, {"kv": baseline}, {"kv": coefficients}, genes, curve, scheme,
                              batch_size=2, pad_id=0, share_prefix=True)


@pytest.mark.parametrize("scheme_cfg, curve_name", [({"name": "pi"}, "free"), ({"name": "ntk"}, "bezier"),
                                                    ({"name": "yarn", "global_factor": 1.5}, "spline")])
def test_the_gradient_is_the_central_finite_difference(scheme_cfg, curve_name, monkeypatch):
    # cos/sin are built in float32 as transformers builds them; their rounding swamps a finite difference
    # of a small step, so this check of the chain genes -> curve -> scheme -> tables -> log-probs builds
    # them in float64 (the float32 path is checked bit for bit at all ones below); the frequencies stay
    # float32 (the model's own), which limits the check to the 2%
    from lpes_framework.position import patch

    def tables64(position_ids, inv_freq, scaling, dtype):
        emb = position_ids[..., None].double() * inv_freq.double()
        emb = torch.cat((emb, emb), dim=-1)
        return (emb.cos() * scaling).to(dtype), (emb.sin() * scaling).to(dtype)

    monkeypatch.setattr(patch, "rotary_tables", tables64)
    model = tiny_model("llama", layers=4, max_positions=256).double()
    items = haystacks(1)
    curve = build_curve({"name": curve_name, "low": 0.5, "high": 3.0}, 4)
    scheme = build_scheme(scheme_cfg)
    with torch.no_grad():
        baseline = score_teacher_forced(model, items, batch_size=2)
    weights = FitnessWeights.defaults(logprob_weight=1.0, end_penalty=0.5)
    coefficients = sample_coefficients({"0", "3", "7"}, 1.0, weights, per_position=1)
    genes = np.linspace(0.8, 1.6, curve.n_genes)
    _, grad, _, _ = objective(model, items, genes, curve, scheme, baseline, coefficients)
    eps = 1e-3
    for k in range(curve.n_genes):
        up, down = genes.copy(), genes.copy()
        up[k] += eps
        down[k] -= eps
        fd = (objective(model, items, up, curve, scheme, baseline, coefficients)[0]
              - objective(model, items, down, curve, scheme, baseline, coefficients)[0]) / (2 * eps)
        assert grad[k] == pytest.approx(fd, rel=0.02, abs=0.03 * np.abs(grad).max()), (k, grad, fd)
    assert np.abs(grad).max() > 1e-4  # the check above is not vacuous


def test_the_objective_is_a_sum_over_contexts():
    """What lets each context backpropagate alone and Ray workers add their shares."""
    model = tiny_model("llama", layers=4, max_positions=64).double()
    items = haystacks(3)
    curve, scheme = build_curve({"name": "free", "low": 0.5, "high": 3.0}, 4), build_scheme({"name": "pi"})
    with torch.no_grad():
        baseline = score_teacher_forced(model, items, batch_size=2)
    coefficients = sample_coefficients({"0", "3", "7"}, 1.0, FitnessWeights.defaults(), per_position=3)
    genes = np.array([0.7, 1.3, 2.0, 1.1])
    whole, grad, _, _ = objective(model, items, genes, curve, scheme, baseline, coefficients)
    parts = [objective(model, [items[i] for i in idx], genes, curve, scheme, [baseline[i] for i in idx], coefficients)
             for idx in ([0, 1, 2], [3, 4, 5, 6, 7, 8])]
    assert whole == pytest.approx(sum(p[0] for p in parts), rel=1e-10)
    np.testing.assert_allclose(grad, parts[0][1] + parts[1][1], rtol=1e-9)


@pytest.mark.parametrize("share_prefix", [False, True])
def test_checkpointed_layers_give_the_same_gradient_and_recompute_only_uncached_forwards(share_prefix):
    from lpes_framework.position.patch import rope_layout

    model = tiny_model("llama", layers=4, max_positions=256).double()
    items = haystacks(2)
    curve, scheme = build_curve({"name": "free", "low": 0.5, "high": 3.0}, 4), build_scheme({"name": "ntk"})
    with torch.no_grad():
        baseline = score_teacher_forced(model, items, batch_size=2, share_prefix=share_prefix)
    coefficients = sample_coefficients({"0", "3", "7"}, 1.0, FitnessWeights.defaults(), per_position=2)
    layers = rope_layout(model)[1]
    calls = []
    for layer in layers:
        layer.register_forward_hook(lambda *_: calls.append("call"))  # __call__: once a forward
    own_forward = type(layers[0]).forward

    @functools.wraps(own_forward)
    def counted(self, *args, **kwargs):  # the layer's body: once a forward, again on each recompute
        calls.append("body")
        return own_forward(self, *args, **kwargs)

    type(layers[0]).forward = counted
    try:
        results = {}
        for flag in (False, True):
            calls.clear()
            results[flag] = value_and_gradient(model, {"kv": items}, {"kv": baseline}, {"kv": coefficients},
                                               np.array([0.7, 1.3, 2.0, 1.1]), curve, scheme, batch_size=2,
                                               pad_id=0, share_prefix=share_prefix, checkpoint_layers=flag)
            results[flag] += (calls.count("body"), len(calls) - calls.count("body"))
    finally:
        type(layers[0]).forward = own_forward
    (plain_value, plain_grad, plain_rows, _, plain_body, forwards), (value, grad, rows, _, body, again) = results.values()
    assert value == plain_value and rows == plain_rows
    np.testing.assert_array_equal(grad, plain_grad)
    assert plain_body == forwards == again and not any("forward" in vars(layer) for layer in layers)
    # without a shared prefix every layer forward is replayed in the backward pass; with one, the prefix and
    # its suffix batches all write a cache, and none is (replaying would append their keys twice)
    assert body == (2 * forwards if not share_prefix else forwards)


def test_at_all_ones_the_rows_are_the_unpatched_models_and_the_objective_is_zero():
    model = tiny_model("qwen2", layers=4, max_positions=256)
    items = haystacks(2)
    with torch.no_grad():
        baseline = score_teacher_forced(model, items, batch_size=2)
    curve, scheme = build_curve({"name": "bezier", "low": 0.5, "high": 3.0}, 4), build_scheme({"name": "ntk"})
    coefficients = sample_coefficients({"0", "3", "7"}, 1.0, FitnessWeights.defaults(), per_position=2)
    value, grad, rows, _ = objective(model, items, np.ones(4), curve, scheme, baseline, coefficients)
    assert value == 0.0 and rows["kv"] == baseline
    assert np.abs(grad).max() > 0  # the identity still has a real gradient
    assert all(p.requires_grad for p in model.parameters())  # weights frozen only for the job


def test_ray_workers_give_the_local_answer(ray_instance):
    from lpes_framework.config import plain, task_configs
    from lpes_framework.execution import GradientJob, build_executor

    cfg = compose_config("config", [*TINY_TASK, "task.samples_per_position=3"])
    specs = task_configs(cfg)
    job = GradientJob(split="search", draws=(3, 4, 5), genes=(0.8, 1.4, 2.0, 1.2),
                      curve={"name": "bezier", "low": 0.5, "high": 3.0}, scheme={"name": "pi"},
                      weights=plain(cfg.fitness), per_position=3)
    results = {}
    for name, extra in (("local", {}), ("ray", {"workers": 2})):
        executor = build_executor({"name": name, **extra}, plain(cfg), specs, ["search"])
        try:
            results[name] = executor.gradient(job)
        finally:
            executor.close()
    local, ray = results["local"], results["ray"]
    assert ray.value == pytest.approx(local.value, rel=1e-5, abs=1e-9)
    np.testing.assert_allclose(ray.gradient, local.gradient, rtol=1e-4, atol=1e-9)
    key = lambda r: (r.draw, str(r.position))  # noqa: E731
    assert sorted(map(key, ray.rows["kv_retrieval"])) == sorted(map(key, local.rows["kv_retrieval"]))
    assert sorted({r.draw for r in local.rows["kv_retrieval"]}) == [3, 4, 5]  # the minibatch's own draws


@pytest.fixture(scope="module")
def gradient_run(tmp_path_factory):
    """The folder of one finished tiny gradient search, shared by the tests that compare a run against it."""
    out = tmp_path_factory.mktemp("gradient")
    run_cli("lpes_framework", *GRADIENT, f"hydra.run.dir={out}")
    return out


def test_the_search_runs_and_is_deterministic(gradient_run, tmp_path):
    run_cli("lpes_framework", *GRADIENT, f"hydra.run.dir={tmp_path}")
    runs = [read_jsonl(folder / "evaluations.jsonl") for folder in (gradient_run, tmp_path)]
    strip = lambda rs: [{k: v for k, v in r.items() if not k.startswith("seconds")} for r in rs]  # noqa: E731
    assert strip(runs[0]) == strip(runs[1])
    steps = [r for r in runs[0] if r["kind"] == "step"]
    scored = [r for r in runs[0] if r["kind"] == "candidate"]
    assert len(steps) == 4 and len(scored) == 3  # steps 0, 2 and the end
    assert steps[0]["objective"] == 0.0 and steps[0]["genome"] == [1.0] * 4
    draws = [d for s in steps for d in s["draws"]]
    assert draws == list(range(2, 10)) and len(set(draws)) == len(draws)  # fresh, after the fixed 2 draws
    assert steps[1]["genome"] != steps[0]["genome"]
    record = json.loads((gradient_run / "best_factors.json").read_text())
    assert record["metrics"]["validation"]["chosen"].startswith("top ")


def test_sigkill_then_resume_continues_exactly(gradient_run, tmp_path):
    reference = gradient_run
    out = tmp_path / "killed"
    args = [*GRADIENT, f"hydra.run.dir={out}"]
    proc = subprocess.Popen([sys.executable, "-m", "lpes_framework", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    log = out / "evaluations.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and (not log.exists() or log.read_text().count('"kind": "step"') < 3):
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    run_cli("lpes_framework", *args, "resume=true")
    strip = lambda rs: [{k: v for k, v in r.items() if not k.startswith("seconds")} for r in rs]  # noqa: E731
    assert strip(read_jsonl(log)) == strip(read_jsonl(reference / "evaluations.jsonl"))
    assert (json.loads((out / "best_factors.json").read_text())["factors"]
            == json.loads((reference / "best_factors.json").read_text())["factors"])


def test_a_later_search_takes_the_kept_unpatched_minibatches_and_finds_the_same(gradient_run, tmp_path, monkeypatch):
    """reuse=[folder]: the unpatched rows of every minibatch come from the other run's minibatch_rows.jsonl (no
    minibatch is scored unpatched), each written here with where it came from, and every step is the same; a kept
    record changed in its file is refused before any weights load."""
    from lpes_framework.execution.base import SampleSet
    from lpes_framework.search import Search

    scored = []
    rows = SampleSet.rows
    monkeypatch.setattr(SampleSet, "rows", lambda self, model, desc="eval": scored.append(desc) or rows(self, model, desc))
    Search(compose_config("config", [*GRADIENT, f"reuse=[{gradient_run}]"]), tmp_path / "again").run()
    assert "minibatch" not in scored
    kept = read_jsonl(tmp_path / "again" / "minibatch_rows.jsonl")
    assert len(kept) == 4 and all(r["reused_from"] == str(gradient_run) for r in kept)
    strip = lambda rs: [{k: v for k, v in r.items() if not k.startswith("seconds") and k != "reused_from"}  # noqa: E731
                        for r in rs]
    mine, theirs = (read_jsonl(folder / "evaluations.jsonl")[1:] for folder in (tmp_path / "again", gradient_run))
    assert strip(mine) == strip(theirs)  # after the run records (this one names the folder it reused)
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "evaluations.jsonl").write_text((gradient_run / "evaluations.jsonl").read_text())
    records = read_jsonl(gradient_run / "minibatch_rows.jsonl")
    records[1]["rows"]["kv_retrieval"] = records[1]["rows"]["kv_retrieval"][:-1]
    (damaged / "minibatch_rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(LpesError, match=r"unpatched rows of minibatch draws \[\d+, \d+\] are not those draws' samples; "
                                        "the file was changed: leave that folder out of reuse"):
        Search(compose_config("config", [*GRADIENT, f"reuse=[{damaged}]"]), tmp_path / "third")


def test_it_starts_from_a_factors_file_in_another_curve_space(tmp_path):
    from lpes_framework.model.factors_file import factors_record
    from lpes_framework.io.atomic import write_json_atomic
    from lpes_framework.optim.gradient import start_genes

    path = tmp_path / "f.json"
    write_json_atomic(path, factors_record(model={"name": "x"}, scheme={"name": "pi"}, factors=[1.0, 1.2, 1.4, 1.6]))
    bezier = build_curve({"name": "bezier", "low": 0.5, "high": 3.0}, 4)
    genes = start_genes(str(path), bezier)
    np.testing.assert_allclose(bezier.factors(genes), [1.0, 1.2, 1.4, 1.6], atol=1e-6)  # a line is a Bezier curve
    assert start_genes(1.25, bezier).tolist() == [1.25] * 4


def test_the_cosine_schedule_falls_from_lr_to_lr_min_within_each_restart():
    from lpes_framework.judging.fitness import Outcome
    from lpes_framework.optim.base import Gradient, GradientRequest
    from lpes_framework.optim.gradient import GradientAscent

    opt = GradientAscent(build_curve({"name": "free", "low": 0.5, "high": 3.0}, 2), lr=0.1, lr_min=0.02, steps=4,
                         restarts=2, schedule="cosine", eval_every=2)
    sizes, scored = [], []
    while not opt.done:
        (request,) = opt.ask()  # ask never raises: a genome to score, or a gradient request
        if isinstance(request, GradientRequest):
            sizes.append(opt.step_size())
            opt.tell([request], [Gradient(0.0, [1.0, 1.0])])
        else:
            scored.append((opt.restart, opt.step))
            opt.tell([request], [Outcome(fitness=0.0, retrieval=0.0, perplexity=float("nan"))])
    half = 0.02 + 0.04 * (1 + np.cos(np.pi * np.arange(4) / 4))
    np.testing.assert_allclose(sizes, [*half, *half])  # 0.1 first, towards 0.02 by the last step, again after
    assert scored == [(0, 0), (0, 2), (0, 4), (1, 0), (1, 2), (1, 4)]  # every eval_every steps and each restart's end
    assert opt.ask() == [] and opt.generation == 8
    constant = GradientAscent(build_curve({"name": "free"}, 2), lr=0.1, steps=4)
    assert constant.step_size() == 0.1


@pytest.mark.parametrize("overrides, message", [
    (["optimizer.lr=-0.1"], "gradient: lr must be a positive finite number"),
    (["optimizer.steps=2.5"], "option steps=2.5 must be a whole number"),
    (["optimizer.steps=0"], "gradient: steps must be a positive integer"),
    (["optimizer.start=5.0"], "uniform factor 5.0 is outside the curve bounds"),
    (["optimizer.start=/nonexistent.json"], "factors file not found"),
    (["optimizer.betas=[0.9,1.0]"], "betas must be two numbers in [0, 1)"),
    (["optimizer.schedule=linear"], "schedule must be one of constant, cosine, got 'linear'"),
    (["optimizer.schedule=cosine", "optimizer.lr_min=0.5"], "lr_min must lie in [0, lr=0.05], got 0.5"),
    (["optimizer.checkpoint_layers=sometimes"], "option checkpoint_layers='sometimes' must be true or false"),
    # a text of 1,000 words: a few 256-token windows, fewer than the 2 fixed + 4 steps x 2 minibatch draws
    (["+extra_tasks.ppl={name:perplexity,files:[TEXT],window_tokens:256,windows:1,weight:1.0}"],
     "too few for draw 9; the gradient optimizer draws fresh minibatches"),
])
def test_bad_gradient_settings_are_refused_before_the_model_loads(overrides, message, tmp_path, monkeypatch):
    from lpes_framework.model import load
    from lpes_framework.search import run_search

    text = tmp_path / "text.txt"
    text.write_text(" ".join(f"word{i}" for i in range(1000)))
    overrides = [o.replace("TEXT", str(text)) for o in overrides]
    monkeypatch.setattr(load, "load_model", lambda *_, **__: pytest.fail("the model loaded"))
    with pytest.raises(LpesError, match=re.escape(message)):
        run_search(compose_config("config", [*GRADIENT, *overrides]), tmp_path / "run")


def test_a_perplexity_task_enters_the_objective_as_it_enters_the_fitness():
    """Rewarded: the objective is the fitness's term, logprob_weight x the change of the windows' mean
    log-prob. Guarded (max_ratio): nothing while every window is within the ratio, the fitness's guard per
    window past it, with a gradient that is the central finite difference."""
    from lpes_framework.judging.fitness import task_score
    from lpes_framework.judging.results import by_position
    from lpes_framework.tasks.base import WHOLE_TEXT

    model = tiny_model("llama", layers=4, max_positions=256).double()
    rng = np.random.default_rng(3)
    windows = [Encoded(ids=rng.integers(3, 90, size=100).tolist(), answer_start=1,
                       sample=Sample(prompt="", answer="", position=WHOLE_TEXT, draw=j)) for j in range(2)]
    curve, scheme = build_curve({"name": "free", "low": 0.5, "high": 3.0}, 4), build_scheme({"name": "pi"})
    weights = FitnessWeights.defaults(logprob_weight=0.5, end_penalty=3.0)
    with torch.no_grad():
        baseline = score_teacher_forced(model, windows, batch_size=2)
    genes = np.array([0.6, 1.4, 2.5, 0.9])

    def run(max_ratio, at=genes):
        coefficients = sample_coefficients({WHOLE_TEXT}, 1.0, weights, per_position=2, max_ratio=max_ratio)
        return objective(model, windows, at, curve, scheme, baseline, coefficients)

    value, _, rows, _ = run(None)
    assert value == pytest.approx(task_score(by_position(rows["kv"]), by_position(baseline), weights), rel=1e-9)
    losses = [b.logprob - r.logprob for r, b in zip(rows["kv"], baseline)]
    assert min(losses) > 0  # these factors hurt both windows: the guard has something to act on
    value, _, _, _ = run(np.exp(max(losses)) * 1.01)
    assert value == 0.0
    ratio = np.exp(min(losses) / 2)
    value, grad, _, _ = run(ratio)
    assert value == pytest.approx(-3.0 / 2 * sum(max(0.0, x - np.log(ratio)) for x in losses), rel=1e-9)
    eps = 1e-4
    for k in range(4):
        up, down = genes.copy(), genes.copy()
        up[k] += eps
        down[k] -= eps
        fd = (run(ratio, up)[0] - run(ratio, down)[0]) / (2 * eps)
        assert grad[k] == pytest.approx(fd, rel=0.02, abs=0.02 * np.abs(grad).max())
    assert np.abs(grad).max() > 0  # the check above is not vacuous


def test_a_scheme_or_curve_without_a_gradient_is_one_line(tmp_path, monkeypatch):
    from lpes_framework.search import stage as search
    from lpes_framework.model import load
    from lpes_framework.position.curves.base import Curve

    monkeypatch.setattr(load, "load_model", lambda *_, **__: pytest.fail("the model loaded"))

    class NumpyCurve(Curve):
        name = "numpy_curve"

        def gene_count(self, n_layers):
            return 2

        def shape(self, genes, t):
            return np.where(np.arange(len(t)) % 2 == 0, float(genes[0]), float(genes[1]))

    monkeypatch.setattr(search, "build_curve", lambda cfg, n, n_bands: NumpyCurve(n_layers=n, low=0.5, high=3.0))
    with pytest.raises(LpesError, match="curve=numpy_curve maps genes to factors without a gradient"):
        search.run_search(compose_config("config", GRADIENT), tmp_path)


def test_minibatch_draws_beyond_a_files_records_are_one_line(tmp_path):
    task = TASKS.build({"name": "perplexity", "window_tokens": 64, "windows": 2}).with_draws([5000])

    class Chars:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [ord(c) % 97 for c in text]}

    with pytest.raises(LpesError, match="too few for draw 5000"):
        task.encode("search", Chars())


def test_the_smoothness_penalty_is_zero_for_uniform_schedules_and_its_gradient_is_exact():
    from lpes_framework.optim.gradient import smoothness_penalty

    curve = build_curve({"name": "free", "low": 0.5, "high": 3.0}, 4, n_bands=3)
    rough = np.random.default_rng(1).uniform(0.6, 2.5, 12)
    assert smoothness_penalty(curve, rough, rough) == (0.0, pytest.approx(np.zeros(12)))  # no change, no penalty
    ones = curve.uniform(1.0)
    assert smoothness_penalty(curve, curve.uniform(1.7), ones) == (0.0, pytest.approx(np.zeros(12)))
    genes = np.random.default_rng(0).uniform(0.6, 2.5, 12)
    value, grad = smoothness_penalty(curve, genes, rough)
    table = np.log(curve.factors(genes)) - np.log(curve.factors(rough))
    assert value == pytest.approx((np.diff(table, axis=0) ** 2).sum() + (np.diff(table, axis=1) ** 2).sum())
    eps = 1e-6
    numeric = [(smoothness_penalty(curve, genes + eps * e, rough)[0] - smoothness_penalty(curve, genes - eps * e, rough)[0])
               / (2 * eps) for e in np.eye(12)]
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)


def test_smoothness_pulls_neighbouring_changes_together():
    from lpes_framework.optim.base import Gradient
    from lpes_framework.optim.gradient import GradientAscent

    curve = build_curve({"name": "free", "low": 0.5, "high": 3.0}, 4, n_bands=2)
    pull = np.array([1.0] * 4 + [-1.0] * 4)  # genes band by band: the objective pulls the two bands apart
    spread = []
    for weight in (0.0, 10.0):  # Adam scales each gene's step: the penalty acts once it outweighs the pull
        opt = GradientAscent(curve, lr=0.05, steps=4, eval_every=4, start=1.0, smoothness=weight)
        opt.scored = True
        for _ in range(4):
            (request,) = opt.ask()
            opt.tell([request], [Gradient(0.0, pull.tolist())])
        spread.append(float(np.ptp(np.log(curve.factors(opt.genes())), axis=1).mean()))
    assert spread[1] < spread[0] / 2
    with pytest.raises(LpesError, match="smoothness must be a finite number >= 0"):
        GradientAscent(curve, smoothness=-1.0)


def test_each_tasks_part_of_a_mixtures_gradient_is_its_own_gradient():
    model = tiny_model("llama", layers=4, max_positions=256)
    items = {"a": haystacks(1, seed=0), "b": haystacks(1, positions=(1, 5), seed=1)}
    curve = build_curve({"name": "bezier", "low": 0.5, "high": 3.0}, 4)
    scheme = build_scheme({"name": "ntk"})
    with torch.no_grad():
        baseline = {task: score_teacher_forced(model, i, batch_size=2) for task, i in items.items()}
    coefficients = {"a": sample_coefficients({"0", "3", "7"}, 1.0, FitnessWeights.defaults(), per_position=1),
                    "b": sample_coefficients({"1", "5"}, 0.5, FitnessWeights.defaults(), per_position=1)}
    genes = np.array([0.7, 1.3, 2.0, 1.1])

    def run(tasks):
        return value_and_gradient(model, {t: items[t] for t in tasks}, baseline, coefficients, genes, curve, scheme,
                                  batch_size=2, pad_id=0, share_prefix=True)

    _, grad, _, by_task = run(["a", "b"])
    assert set(by_task) == {"a", "b"}
    np.testing.assert_allclose(np.sum(list(by_task.values()), axis=0), grad, rtol=1e-9, atol=1e-12)
    for task in ("a", "b"):
        np.testing.assert_allclose(by_task[task], run([task])[1], rtol=1e-6, atol=1e-9)


def test_a_tasks_step_contexts_give_it_more_of_every_step(gradient_run, tmp_path):
    """A task with step_contexts=2 takes two fresh draws for each of a step's contexts, each over its own count:
    one context a step at step_contexts=2 is the reference run's two contexts a step, step for step."""
    run_cli("lpes_framework", *GRADIENT, "optimizer.contexts_per_step=1", "+task.step_contexts=2",
            f"hydra.run.dir={tmp_path}")
    steps = [[r for r in read_jsonl(folder / "evaluations.jsonl") if r["kind"] == "step"]
             for folder in (gradient_run, tmp_path)]
    assert [s["draws"] for s in steps[1]] == [[2], [3], [4], [5]]  # the reference's [2, 3], [4, 5], ...
    for mine, theirs in zip(*steps, strict=True):
        np.testing.assert_allclose(mine["objective"], theirs["objective"], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(mine["gradient"], theirs["gradient"], rtol=1e-9, atol=1e-12)
    assert TASKS.build({"name": "kv_retrieval", "step_contexts": 3}).step_draws([5, 6], first=4) == [7, 8, 9, 10, 11, 12]
    with pytest.raises(LpesError, match="step_contexts must be a whole number"):
        TASKS.build({"name": "kv_retrieval", "step_contexts": 0})
