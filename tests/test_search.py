"""The main command end to end on a tiny random model: outputs, determinism, kill and resume."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import TINY_SEARCH, TINY_TASK, read_jsonl, run_cli
from lpes_framework.config import compose_config
from lpes_framework.errors import LpesError

OUTPUTS = ["evaluations.jsonl", "checkpoint.json", "best_factors.json", "factors.png", "progress.png",
           "by_position.png", "report.md"]


def test_search_writes_every_output(ga_run):
    out, proc = ga_run
    for name in OUTPUTS:
        assert (out / name).is_file(), name
    best = json.loads((out / "best_factors.json").read_text())
    assert best["schema"] == "lpes.factors" and best["version"] == 1
    assert len(best["factors"]) == 4 and len(best["genome"]) == 4
    tested = sorted(best["metrics"]["test"])
    assert tested[:1] == ["found"] and tested[1].startswith("uniform ") and tested[2:] == ["unpatched"]
    assert best["task"]["name"] == "kv_retrieval" and best["task"]["pairs"] == 6  # the regime to re-test in
    rows = read_jsonl(out / "evaluations.jsonl")
    assert [r["kind"] for r in rows[:2]] == ["spec", "baseline"]  # the run's settings first, before any score
    spec = rows[0]["spec"]
    assert spec["command"] == "search" and spec["config"]["optimizer"]["name"] == "ga"
    assert {k: spec["model"][k] for k in ("architecture", "n_layers", "head_dim", "trained_context")} == {
        "architecture": "LlamaForCausalLM", "n_layers": 4, "head_dim": 16, "trained_context": 2048}
    assert spec["model"]["rope_parameters"]["rope_theta"] == spec["model"]["rope_theta"]
    assert best["run"] == spec  # the result carries the run record it was made with
    candidates = [r for r in rows if r["kind"] == "candidate"]
    assert len(candidates) == 5 + 4 + 4  # generation 0, then mutations + crossovers twice
    assert all({"genome", "factors", "scores", "outcome", "seconds"} <= r.keys() for r in candidates)
    assert len({r["key"] for r in rows}) == len(rows)  # no genome evaluated twice
    assert candidates[0]["factors"] == [1.0] * 4  # the identity seeds the population
    # ... and takes the unpatched baseline's scores instead of a second identical run
    assert candidates[0]["same_as"] == rows[1]["key"] and candidates[0]["seconds"] == 0
    assert candidates[0]["scores"] == rows[1]["scores"] and candidates[0]["outcome"]["fitness"] == 0
    assert all("same_as" not in r for r in candidates[1:])
    report = (out / "report.md").read_text()
    assert "Held-out test split" in report and "(chosen)" in report and "found - unpatched" in report
    validation = best["metrics"]["validation"]
    assert validation["chosen"] in validation["fitness"] and len(validation["genomes"]) == 2  # validation.top_k
    assert set(validation["intervals"]) == set(validation["fitness"]) - {"unpatched"}  # the noise floor
    assert all(low <= high for low, high in validation["intervals"].values())
    assert "95% interval over contexts" in report and "95% interval [" in proc.stdout
    middle = best["metrics"]["intervals"]["found - unpatched"]["kv_retrieval"]["middle"]
    assert middle["low"] <= middle["delta"] <= middle["high"]
    assert "found" in proc.stdout


def strict_json(text: str):
    def refuse(token):
        raise AssertionError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def test_outputs_are_strict_json(ga_run):
    out, _ = ga_run
    rows = [strict_json(line) for line in (out / "evaluations.jsonl").read_text().splitlines()]
    assert rows[-1]["outcome"]["perplexity"] is None  # no perplexity task: null, not NaN
    best = strict_json((out / "best_factors.json").read_text())
    assert best["metrics"]["search"]["perplexity"] is None


def test_same_seed_same_trajectory(ga_run, tmp_path):
    out, _ = ga_run
    run_cli("lpes_framework", *TINY_SEARCH, f"hydra.run.dir={tmp_path}")
    first = [(r["key"], r["outcome"]["fitness"]) for r in read_jsonl(out / "evaluations.jsonl") if "outcome" in r]
    again = [(r["key"], r["outcome"]["fitness"]) for r in read_jsonl(tmp_path / "evaluations.jsonl") if "outcome" in r]
    assert first == again


def test_refuses_to_overwrite_a_run_without_resume(ga_run):
    out, _ = ga_run
    proc = run_cli("lpes_framework", *TINY_SEARCH, f"hydra.run.dir={out}", check=False)
    assert proc.returncode == 2 and "already holds a search; pass resume=true" in proc.stderr


@pytest.mark.parametrize("executor", [["executor=local"], ["executor=ray", "executor.workers=2"]], ids=["local", "ray"])
def test_sigkill_then_resume_repeats_and_loses_nothing(ga_run, tmp_path, executor, request):
    if executor[0] == "executor=ray":  # the killed run and its resume join the session's instance (as on a cluster)
        ray = request.getfixturevalue("ray_instance")
        executor = [*executor, f"executor.address={ray.get_runtime_context().gcs_address}"]
    reference, _ = ga_run
    slow = [*TINY_SEARCH, *executor, f"hydra.run.dir={tmp_path}"]
    proc = subprocess.Popen([sys.executable, "-m", "lpes_framework", *slow], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    log = tmp_path / "evaluations.jsonl"
    deadline = time.time() + 300  # Ray workers start slowly on a loaded machine
    # kill in the middle of generation 1: baseline + 5 of generation 0 + 2 more
    while time.time() < deadline and (not log.exists() or len(log.read_text().splitlines()) < 8):
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    done_before = len(log.read_text().splitlines())
    with open(log, "a") as fh:  # what a kill during a write leaves behind
        fh.write('{"key": "half-writ')
    run_cli("lpes_framework", *slow, "resume=true")
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.endswith("}")]
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys)), "an evaluation was repeated"
    expected = [r["key"] for r in read_jsonl(reference / "evaluations.jsonl")]
    assert sorted(keys) == sorted(expected) and len(keys) > done_before, "an evaluation was lost"
    assert (tmp_path / "best_factors.json").is_file()


def test_corrupted_checkpoint_is_a_one_line_error_and_keeps_evaluations(ga_run, tmp_path):
    reference, _ = ga_run
    for name in ("evaluations.jsonl", "checkpoint.json"):
        (tmp_path / name).write_bytes((reference / name).read_bytes())
    ckpt = tmp_path / "checkpoint.json"
    ckpt.write_bytes(ckpt.read_bytes()[:50])
    before = (tmp_path / "evaluations.jsonl").read_bytes()
    proc = run_cli("lpes_framework", *TINY_SEARCH, f"hydra.run.dir={tmp_path}", "resume=true", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("error: ") and "truncated or corrupted" in proc.stderr
    assert (tmp_path / "evaluations.jsonl").read_bytes() == before


def test_resume_with_different_config_is_refused(ga_run, tmp_path):
    reference, _ = ga_run
    for name in ("evaluations.jsonl", "checkpoint.json"):
        (tmp_path / name).write_bytes((reference / name).read_bytes())
    proc = run_cli("lpes_framework", *TINY_SEARCH, f"hydra.run.dir={tmp_path}", "resume=true", "pos=ntk", check=False)
    assert proc.returncode == 2 and "holds a search with other settings (pos.name" in proc.stderr


def test_a_resume_takes_a_moved_file_of_the_same_bytes_and_refuses_an_edited_one(tmp_path):
    from lpes_framework.io.spec import RunSpec, file_digests
    from lpes_framework.io.store import RunStore
    from lpes_framework.search.resume import restore

    def spec(start: Path) -> RunSpec:
        config = {"optimizer": {"name": "gradient", "start": str(start)}, "model": {"name_or_path": str(first)}}
        return RunSpec(command="search", config=config, model={}, files=file_digests(config))

    first, moved, edited = (tmp_path / n for n in ("start.json", "moved.json", "edited.json"))
    first.write_text("[1.0, 1.2]")
    moved.write_text("[1.0, 1.2]")
    edited.write_text("[1.0, 1.3]")
    assert list(spec(first).files) == ["optimizer.start"]  # the model's files are never hashed
    store = RunStore(tmp_path / "run")
    store.evaluations.append(spec(first).record())
    restore(store, spec(moved), 1)
    with pytest.raises(LpesError, match="other settings \\(optimizer.start differ"):
        restore(store, spec(edited), 1)
    first.write_text("[1.0, 1.3]")  # the same path, other bytes
    with pytest.raises(LpesError, match="optimizer.start's content differ"):
        restore(store, spec(first), 1)


def test_a_kill_before_the_first_checkpoint_then_a_resume_with_another_model_is_refused(ga_run, tmp_path):
    reference, _ = ga_run
    lines = (reference / "evaluations.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "evaluations.jsonl").write_text("".join(lines[:4]))  # spec, baseline, two of generation 0
    before = (tmp_path / "evaluations.jsonl").read_bytes()
    proc = run_cli("lpes_framework", *TINY_SEARCH, f"hydra.run.dir={tmp_path}", "resume=true",
                   "model.random.num_hidden_layers=2", "fitness.end_penalty=1.0", check=False)
    assert proc.returncode == 2
    line = proc.stderr.strip().splitlines()[-1]
    assert "fitness.end_penalty" in line and "the model's n_layers" in line, line
    assert (tmp_path / "evaluations.jsonl").read_bytes() == before


@pytest.mark.parametrize("bad", [b"{}\n", b"\xff\xfe not utf-8\n"], ids=["no-key", "not-utf8"])
def test_a_damaged_evaluation_log_is_one_line_and_left_as_it_is(ga_run, tmp_path, bad):
    reference, _ = ga_run
    data = (reference / "evaluations.jsonl").read_bytes() + bad
    (tmp_path / "evaluations.jsonl").write_bytes(data)
    proc = run_cli("lpes_framework", *TINY_SEARCH, f"hydra.run.dir={tmp_path}", "resume=true", check=False)
    assert proc.returncode == 2 and "evaluations.jsonl: line" in proc.stderr.strip().splitlines()[-1]
    assert (tmp_path / "evaluations.jsonl").read_bytes() == data


def test_nsga2_writes_a_pareto_front(tmp_path):
    run_cli("lpes_framework", *TINY_TASK, "plots=true", "optimizer=nsga2", "optimizer.population=4",
            "optimizer.generations=2", "perplexity_task.window_tokens=64", f"hydra.run.dir={tmp_path}")
    front = json.loads((tmp_path / "pareto.json").read_text())
    assert front and all({"genome", "retrieval", "perplexity"} <= f.keys() for f in front)
    assert (tmp_path / "pareto.png").is_file()
    # the front is exactly the evaluated candidates no other candidate dominates, by perplexity
    points = {tuple(r["genome"]): (r["outcome"]["retrieval"], r["outcome"]["perplexity"])
              for r in read_jsonl(tmp_path / "evaluations.jsonl") if r["kind"] == "candidate"}

    def dominated(p):
        return any(q[0] >= p[0] and q[1] <= p[1] and q != p for q in points.values())

    assert [tuple(f["genome"]) for f in front] == sorted(
        (g for g, p in points.items() if not dominated(p)), key=lambda g: points[g][1])


def test_the_pareto_front_leaves_out_a_broken_candidate():
    from lpes_framework.judging.fitness import Outcome
    from lpes_framework.optim import build_optimizer
    from lpes_framework.position.curves import build_curve

    opt = build_optimizer({"name": "nsga2", "population": 4}, build_curve({"name": "bezier"}, 4), 0)
    for genes, retrieval, ppl in [((1.0,) * 4, 0.5, 10.0), ((1.1,) * 4, 0.7, 12.0), ((1.2,) * 4, 0.4, 11.0),
                                  ((1.3,) * 4, float("nan"), float("nan"))]:
        opt.history[genes] = (list(genes), Outcome(fitness=0.0, retrieval=retrieval, perplexity=ppl))
    assert [g[0] for g, _ in opt.front()] == [1.0, 1.1]  # 1.2 is dominated by 1.0; NaN by everything


def test_random_search_runs(tmp_path):
    run_cli("lpes_framework", *TINY_TASK, "optimizer=random", "optimizer.population=3", "optimizer.generations=3",
            f"hydra.run.dir={tmp_path}")
    rows = [r for r in read_jsonl(tmp_path / "evaluations.jsonl") if r["kind"] == "candidate"]
    assert len(rows) == 9 and rows[0]["factors"] == [1.0] * 4
    # plots=false: every JSON output, no PNG, and a report that links none
    assert (tmp_path / "best_factors.json").is_file() and not list(tmp_path.glob("*.png"))
    assert "![" not in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize("launcher", ["basic", "joblib"])
def test_multirun_sweep_writes_one_run_per_job(tmp_path, launcher):
    extra = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"] if launcher == "joblib" else []
    run_cli("lpes_framework", "-m", *TINY_SEARCH, "optimizer.generations=1", "curve=bezier,free", "pos=rope,pi",
            f"hydra.sweep.dir={tmp_path}", *extra)
    jobs = sorted(p for p in tmp_path.iterdir() if p.is_dir() and (p / "best_factors.json").exists())
    assert [j.name for j in jobs] == ["0", "1", "2", "3"]
    curves = {json.loads((j / "best_factors.json").read_text())["curve"]["name"] for j in jobs}
    assert curves == {"bezier", "free"}


def test_the_wandb_logger_gets_every_generation_and_the_summary(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from lpes_framework.config import compose_config
    from lpes_framework.search import run_search

    calls = {"log": [], "finish": 0}
    run = SimpleNamespace(summary={}, log=lambda metrics, step: calls["log"].append((step, metrics)),
                          finish=lambda: calls.__setitem__("finish", calls["finish"] + 1))

    def init(**kwargs):
        calls["init"] = kwargs
        return run

    from importlib.machinery import ModuleSpec
    from types import ModuleType

    fake = ModuleType("wandb")  # a module with a spec: libraries that probe for wandb (find_spec) accept it
    fake.__spec__ = ModuleSpec("wandb", None)
    fake.init, fake.Table = init, lambda columns, data: data
    fake.plot = SimpleNamespace(line=lambda table, x, y, stroke, title: table)
    monkeypatch.setitem(sys.modules, "wandb", fake)  # wandb's own client would need a login or write binary files
    run_search(compose_config("config", [*TINY_SEARCH, "optimizer.generations=2", "logger=wandb"]), tmp_path)
    assert calls["init"]["mode"] == "offline" and calls["init"]["project"] == "lpes"  # offline unless told
    assert calls["init"]["config"]["optimizer"]["generations"] == 2
    log = json.loads((tmp_path / "checkpoint.json").read_text())["log"]
    assert [step for step, _ in calls["log"]] == [entry["generation"] for entry in log] == [1, 2]
    assert [m["best_fitness"] for _, m in calls["log"]] == [entry["best_fitness"] for entry in log]
    assert all(len(m["best_factors"]) == 4 for _, m in calls["log"])  # one (layer, band, factor) row per layer
    assert all(row[1] == 0 for _, m in calls["log"] for row in m["best_factors"])  # one band: band 0
    best = json.loads((tmp_path / "best_factors.json").read_text())
    assert run.summary == {"best_fitness": best["metrics"]["search"]["fitness"]} and calls["finish"] == 1


def test_the_identity_among_the_top_candidates_takes_the_unpatched_validation_scores(tmp_path):
    from lpes_framework.config import compose_config
    from lpes_framework.search import Search

    # every candidate goes to validation, the identity seed among them
    search = Search(compose_config("config", [*TINY_SEARCH, "validation.top_k=13"]), tmp_path)
    search.setup()
    search.loop()
    jobs = []
    run = search.executor.run
    search.executor.run = lambda batch, desc="": (jobs.extend(batch), run(batch, desc))[1]
    try:
        summary = search.finish()
    finally:
        search.executor.close()
    validation = [job for job in jobs if job.sample_set == "validation"]
    scored = [None if job.factors is None else tuple(job.factors) for job in validation if job.draws == (0, 1)]
    assert [job.draws for job in validation] == [(0, 1), (1, 2)] * len(scored)  # a schedule's draws one after another
    # unpatched, the top 13 but the identity, the best uniform: each distinct schedule once (the uniform seed is
    # often among the top candidates)
    top = {tuple(search.curve.factors(g)) for g, _ in search.top_candidates(13)} - {(1.0,) * 4}
    uniform = (search.uniform_baseline(search.curve.factors(search.top_candidates(1)[0][0])),) * 4
    assert len(scored) == len(set(scored)) == len({None} | top | {uniform})
    assert all(f is None or any(x != 1.0 for x in f) for f in scored)
    best = json.loads((tmp_path / "best_factors.json").read_text())
    chosen = best["metrics"]["validation"]
    identity = [n for n, g in chosen["genomes"].items() if g == [1.0] * 4]
    assert len(identity) == 1 and chosen["fitness"][identity[0]] == 0.0
    assert summary["chosen"] in chosen["fitness"]


def test_status_reads_a_finished_run(ga_run):
    out, _ = ga_run
    proc = run_cli("lpes_framework.commands.status", str(out))
    first, *rest = proc.stdout.splitlines()
    assert "13 candidates scored, 3 of 3 generations finished (at most 13 candidates planned)" in first
    assert "left" not in first
    assert any(line.startswith("1. fitness") and "genome [" in line for line in rest)
    assert rest[-1].startswith("finished: validation chose top ") and "95% interval [" in rest[-1]


def test_status_on_a_running_search_leaves_its_files_alone(ga_run, tmp_path):
    out, _ = ga_run
    lines = (out / "evaluations.jsonl").read_text().splitlines(keepends=True)
    written = "".join(lines[:8]) + lines[8][:40]  # spec, baseline, 6 candidates, a line being written
    (tmp_path / "evaluations.jsonl").write_text(written)
    proc = run_cli("lpes_framework.commands.status", str(tmp_path))
    # no checkpoint copied: the sixth candidate opens generation 1, so generation 0 is known to be done
    assert "6 candidates scored, 1 of 3 generations finished (at most 13 candidates planned)" in proc.stdout
    assert "min of scoring left, then validation and test" in proc.stdout
    assert (tmp_path / "evaluations.jsonl").read_text() == written


def test_status_shows_perplexity_for_text_windows_and_a_long_genome_by_its_range():
    from lpes_framework.search.readout import genome_text, score_line, window_tasks

    config = {"task": {"name": "perplexity"}, "extra_tasks": {"inside": {"name": "perplexity"},
                                                             "kv": {"name": "kv_retrieval"}, "odd": "text"}}
    windows = window_tasks(config)
    assert windows == {"perplexity", "inside"}
    stats = {"accuracy": 0.0, "perplexity": 5.3171}
    line = score_line({"perplexity": {"all": stats}, "kv": {"0": {"accuracy": 0.5, "perplexity": 1.2}}}, windows)
    assert line == "perplexity/all: ppl 5.317  kv/0: 50.0"  # a whole window is never matched exactly: no 0.0
    assert genome_text([1.0, 1.25]) == "[1.000, 1.250]"
    assert genome_text([1.0] * 767 + [2.0]) == "768 genes 1.000-2.000"


def test_status_of_a_folder_without_a_search_is_one_line(tmp_path):
    proc = run_cli("lpes_framework.commands.status", str(tmp_path), check=False)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0
    assert "holds no evaluations.jsonl" in proc.stderr


@pytest.mark.parametrize("cfg, planned", [
    ({"name": "ga", "population": 5, "parents": 3, "mutations": 2, "crossovers": 1, "generations": 4}, 5 + 3 * 3),
    ({"name": "random", "population": 4, "generations": 3}, 12), ({"name": "nsga2", "population": 4, "generations": 2}, 8)])
def test_each_optimizer_says_how_many_candidates_a_full_run_asks_for(cfg, planned):
    from lpes_framework.position.curves import build_curve
    from lpes_framework.optim import build_optimizer

    assert build_optimizer(cfg, build_curve({"name": "bezier"}, 4), 0).planned() == planned


def test_a_search_in_a_folder_another_process_holds_gets_one_line_naming_it(tmp_path):
    # the holder keeps the lock until its stdin closes: no race with how fast a tiny search finishes
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from lpes_framework.io.store import RunLock; "
         f"lock = RunLock({str(tmp_path)!r}).acquire(); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        second = run_cli("lpes_framework", *TINY_SEARCH, f"hydra.run.dir={tmp_path}", check=False)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert second.returncode == 2
    assert second.stderr.strip().splitlines()[-1] == (
        f"error: {tmp_path} is in use by another lpes process (pid {holder.pid}); wait for it to finish or use "
        "another output folder")
    assert not (tmp_path / "evaluations.jsonl").exists()  # refused before it wrote anything
    run_cli("lpes_framework", *TINY_SEARCH, "optimizer.generations=1", f"hydra.run.dir={tmp_path}")
    assert (tmp_path / "best_factors.json").is_file()  # the holder's exit freed the folder


def test_a_stale_lock_of_a_dead_process_is_taken_over(tmp_path):
    (tmp_path / ".lpes.lock").write_text("999999")  # left by a killed run: no process holds the flock
    run_cli("lpes_framework", *TINY_SEARCH, "optimizer.generations=1", f"hydra.run.dir={tmp_path}")
    assert (tmp_path / "best_factors.json").is_file()


class _Exploit:
    """What a crafted checkpoint could hold: unpickling it would create a file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_pickle_in_a_run_folder_is_never_unpickled(ga_run, tmp_path):
    import pickle

    reference, _ = ga_run
    (tmp_path / "evaluations.jsonl").write_bytes((reference / "evaluations.jsonl").read_bytes())
    marker = tmp_path / "pwned"
    (tmp_path / "checkpoint.pkl").write_bytes(pickle.dumps(_Exploit(marker)))
    for command, args in (("lpes_framework.commands.status", [str(tmp_path)]),
                          ("lpes_framework", [*TINY_SEARCH, f"hydra.run.dir={tmp_path}", "resume=true"])):
        proc = run_cli(command, *args, check=False)
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert "is a checkpoint of an older lpes (a pickle, which is not read" in proc.stderr.strip().splitlines()[-1]
        assert not marker.exists()


def test_nsga2_resumes_by_replaying_its_generations(tmp_path):
    from lpes_framework.config import compose_config
    from lpes_framework.search import Search

    base = [*TINY_TASK, "optimizer=nsga2", "optimizer.population=4", "perplexity_task.window_tokens=64"]

    def history(out, generations, resume=False):
        search = Search(compose_config("config", [*base, f"optimizer.generations={generations}", f"resume={resume}"]), out)
        search.setup()
        search.loop()
        search.executor.close()
        search.lock.release()
        return [(g, o.fitness) for g, o in search.optimizer.history.values()]

    straight = history(tmp_path / "straight", 3)
    history(tmp_path / "resumed", 2)
    assert history(tmp_path / "resumed", 3, resume=True) == straight


def jobs_given(monkeypatch) -> list:
    """The jobs every LocalExecutor.run is given from now on, in order; each run is done as before."""
    from lpes_framework.execution.local import LocalExecutor

    jobs = []
    run = LocalExecutor.run

    def counted(self, batch, desc="eval"):
        jobs.extend(batch)
        return run(self, batch, desc)

    monkeypatch.setattr(LocalExecutor, "run", counted)
    return jobs


def test_a_kill_during_the_heldout_scoring_rescores_only_what_it_interrupted(ga_run, tmp_path, monkeypatch):
    """Validation and test rows are kept after every run of draws of a method (heldout.jsonl, one draw a record
    in TINY_SEARCH), bound to the run by their key; a kill in the middle of a method leaves its first draws
    kept, and a resume scores only the draws the kill left unscored and writes the same answer."""
    from lpes_framework.search import Search

    reference, _ = ga_run
    held = read_jsonl(reference / "heldout.jsonl")
    assert [r["split"] for r in held][-6:] == ["test"] * 6
    assert [r["draws"] for r in held] == [[0, 1], [1, 2]] * (len(held) // 2)
    assert len({(r["key"], tuple(r["draws"])) for r in held}) == len(held)
    for name in ("evaluations.jsonl", "checkpoint.json"):
        (tmp_path / name).write_bytes((reference / name).read_bytes())
    kept = (reference / "heldout.jsonl").read_text().splitlines()[:3]  # the second method's first draw
    (tmp_path / "heldout.jsonl").write_text("\n".join(kept) + '\n{"key": "half-writ')  # killed mid-write
    jobs = jobs_given(monkeypatch)
    Search(compose_config("config", [*TINY_SEARCH, "resume=true"]), tmp_path).run()
    # each distinct schedule's draws are scored once (a top candidate may be the uniform one); the kept three not again
    assert [(job.factors is None, job.draws) for job in jobs][0] == (False, (1, 2))
    assert len(jobs) == len(held) - 3
    assert read_jsonl(tmp_path / "heldout.jsonl")[:3] == held[:3]
    mine, theirs = (json.loads((d / "best_factors.json").read_text()) for d in (tmp_path, reference))
    assert mine["factors"] == theirs["factors"] and mine["metrics"]["test"] == theirs["metrics"]["test"]
    # rows changed under a valid key, or draws that are no run of the split, are refused, not taken for scores
    rows = read_jsonl(tmp_path / "heldout.jsonl")
    (tmp_path / "best_factors.json").unlink()
    for damage, message in ((lambda r: r.update(rows={t: per[:-1] for t, per in r["rows"].items()}),
                             r"\(validation, draws 0-0\) are not the split's samples"),
                            (lambda r: r.update(draws=[1, 1]), r"draws must be \[start, stop\)"),
                            (lambda r: r.update(draws=[5, 6]), "are not the split's samples")):
        damaged = [dict(r) for r in rows]
        damage(damaged[0])
        (tmp_path / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in damaged))
        with pytest.raises(LpesError, match=message):
            Search(compose_config("config", [*TINY_SEARCH, "resume=true"]), tmp_path).run()


def test_a_kill_during_a_fixed_split_scoring_rescores_only_the_run_it_interrupted(ga_run, tmp_path, monkeypatch):
    """A schedule's rows on the fixed search split are kept a run of draws at a time (search_rows.jsonl) until its
    scores go to evaluations.jsonl: a kill after the first draw of a candidate leaves that draw kept, and a
    resume scores only its second draw before going on, to the same records and answer; a kept run whose rows
    were changed is refused before any weights load."""
    from lpes_framework.search import Search

    reference, _ = ga_run
    records = read_jsonl(reference / "evaluations.jsonl")
    kept_rows = read_jsonl(reference / "search_rows.jsonl")
    scored = [i for i, r in enumerate(records) if r.get("kind") in ("baseline", "candidate") and "same_as" not in r]
    assert [r["draws"] for r in kept_rows] == [[0, 1], [1, 2]] * len(scored)  # two runs for each scoring
    assert [r["key"] for r in kept_rows[::2]] == [records[i]["key"] for i in scored]
    cut = scored[2]  # killed after the first draw of the second candidate scored
    lines = (reference / "evaluations.jsonl").read_text().splitlines()
    (tmp_path / "evaluations.jsonl").write_text("\n".join(lines[:cut]) + "\n")
    (tmp_path / "search_rows.jsonl").write_text("\n".join((reference / "search_rows.jsonl").read_text().splitlines()[:5])
                                                + '\n{"key": "half-writ')  # killed mid-write
    jobs = jobs_given(monkeypatch)
    Search(compose_config("config", [*TINY_SEARCH, "resume=true"]), tmp_path).run()
    search_jobs = [job for job in jobs if job.sample_set == "search"]
    assert search_jobs[0].draws == (1, 2) and len(search_jobs) == len(kept_rows) - 5
    mine = [{k: v for k, v in r.items() if k != "seconds"} for r in read_jsonl(tmp_path / "evaluations.jsonl")]
    assert mine == [{k: v for k, v in r.items() if k != "seconds"} for r in records]
    assert read_jsonl(tmp_path / "search_rows.jsonl") == kept_rows
    ours, theirs = (json.loads((d / "best_factors.json").read_text()) for d in (tmp_path, reference))
    assert ours["factors"] == theirs["factors"] and ours["metrics"]["test"] == theirs["metrics"]["test"]
    damaged = [dict(r) for r in kept_rows]
    damaged[0]["rows"] = {t: per[:-1] for t, per in damaged[0]["rows"].items()}
    (tmp_path / "search_rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in damaged))
    with pytest.raises(LpesError, match=r"search_rows.jsonl: the rows of baseline \(search, draws 0-0\) are not"):
        Search(compose_config("config", [*TINY_SEARCH, "resume=true"]), tmp_path)
    (tmp_path / "search_rows.jsonl").write_text((reference / "heldout.jsonl").read_text())
    with pytest.raises(LpesError, match="a record of split 'validation'; only search rows are kept there"):
        Search(compose_config("config", [*TINY_SEARCH, "resume=true"]), tmp_path)


def test_held_out_rows_written_whole_before_runs_of_draws_are_reused(ga_run, tmp_path, monkeypatch):
    """A run whose heldout.jsonl holds each method whole (written before records by runs of draws) resumes
    without scoring anything again, to the same answer."""
    from lpes_framework.search import Search
    from lpes_framework.execution.local import LocalExecutor

    reference, _ = ga_run
    for name in ("evaluations.jsonl", "checkpoint.json"):
        (tmp_path / name).write_bytes((reference / name).read_bytes())
    whole = {}
    for record in read_jsonl(reference / "heldout.jsonl"):
        kept = whole.setdefault(record["key"], {k: v for k, v in record.items() if k != "draws"} | {"rows": {}})
        for task, rows in record["rows"].items():
            kept["rows"][task] = kept["rows"].get(task, []) + rows
    (tmp_path / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in whole.values()))
    monkeypatch.setattr(LocalExecutor, "run", lambda self, jobs, desc="": iter([]) if not jobs else pytest.fail(jobs))
    Search(compose_config("config", [*TINY_SEARCH, "resume=true"]), tmp_path).run()
    mine, theirs = (json.loads((d / "best_factors.json").read_text()) for d in (tmp_path, reference))
    assert mine["factors"] == theirs["factors"] and mine["metrics"]["test"] == theirs["metrics"]["test"]


def test_a_search_takes_what_another_search_scored_under_its_keys(ga_run, tmp_path, monkeypatch):
    """reuse=[folder]: the same search in a new folder scores nothing (the other run scored every schedule on
    every split under the same keys) and writes the same answer, each score it took marked with its folder;
    another optimizer on the same tasks takes the unpatched model's rows and scores the rest. A borrowed score or
    held-out row changed in its file, or a folder of another model, is refused before any weights load, the
    message pointing at the lent folder (never written here), not at a resume."""
    from lpes_framework.search import Search

    reference, _ = ga_run
    jobs = jobs_given(monkeypatch)
    Search(compose_config("config", [*TINY_SEARCH, f"reuse=[{reference}]"]), tmp_path / "again").run()
    assert jobs == []
    mine, theirs = (json.loads((d / "best_factors.json").read_text()) for d in (tmp_path / "again", reference))
    assert mine["factors"] == theirs["factors"] and mine["metrics"]["test"] == theirs["metrics"]["test"]
    records = [r for r in read_jsonl(tmp_path / "again" / "evaluations.jsonl")[1:] if "same_as" not in r]
    assert records and all(r["reused_from"] == str(reference) for r in records)  # the identity: the baseline's
    assert all(r["reused_from"] == str(reference) for r in read_jsonl(tmp_path / "again" / "heldout.jsonl"))

    random = [*TINY_TASK, "optimizer=random", "optimizer.population=3", "optimizer.generations=1",
              "validation.top_k=2", "validation.bootstrap_resamples=200", "record_every=1", f"reuse=[{reference}]"]
    Search(compose_config("config", random), tmp_path / "random").run()
    assert jobs and all(job.factors is not None for job in jobs)  # the unpatched model: no job on any split
    baseline = read_jsonl(tmp_path / "random" / "evaluations.jsonl")[1]
    assert baseline["kind"] == "baseline" and baseline["reused_from"] == str(reference)

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    lines = read_jsonl(reference / "evaluations.jsonl")
    lines[1]["scores"]["kv_retrieval"]["0"]["count"] += 1
    (damaged / "evaluations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(LpesError, match="not of this run's search split .* leave that folder out of reuse"):
        Search(compose_config("config", [*TINY_SEARCH, f"reuse=[{damaged}]"]), tmp_path / "third")
    (damaged / "evaluations.jsonl").write_text((reference / "evaluations.jsonl").read_text())
    held = read_jsonl(reference / "heldout.jsonl")
    held[0]["rows"] = {task: rows[:-1] for task, rows in held[0]["rows"].items()}
    (damaged / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in held))
    with pytest.raises(LpesError, match="not the split's samples; the file was changed: leave that folder out of reuse"):
        Search(compose_config("config", [*TINY_SEARCH, f"reuse=[{damaged}]"]), tmp_path / "third")
    (damaged / "heldout.jsonl").unlink()
    lines = read_jsonl(reference / "evaluations.jsonl")
    lines[0]["spec"]["model"]["rope_theta"] = 500000.0
    (damaged / "evaluations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(LpesError, match="searched another model"):
        Search(compose_config("config", [*TINY_SEARCH, f"reuse=[{damaged}]"]), tmp_path / "third")
    with pytest.raises(LpesError, match="this run's own folder"):
        Search(compose_config("config", [*TINY_SEARCH, "resume=true", f"reuse=[{reference}]"]), reference)
