"""The evaluate command on a tiny model: every kind of method, several tasks, both scorers."""

import json
from dataclasses import replace

import pytest

from conftest import TINY_TASK, approx, model_block, run_cli
from lpes_framework.evaluate.methods import interval_pairs
from lpes_framework.evaluate.rows import logged_rows
from lpes_framework.judging.results import rows_to_json
from lpes_framework.model.factors_file import factors_record
from lpes_framework.io.atomic import write_json_atomic


def test_evaluate_compares_all_method_kinds(tmp_path):
    factors_file = tmp_path / "best_factors.json"
    write_json_atomic(factors_file, factors_record(model=model_block(), scheme={"name": "ntk"}, factors=[1.0, 1.2, 1.4, 1.6]))
    out = tmp_path / "run"
    proc = run_cli("lpes_framework.commands.evaluate", *TINY_TASK, "plots=true", "methods.uniform=[1.25]",
                   f"methods.factors_files=[{factors_file}]", "methods.genomes={mid:[1.0,1.5,1.5,1.0]}",
                   "methods.compare_to=['uniform rope 1.25']",
                   "extra_tasks={ppl: {name: perplexity, window_tokens: 64, windows: 2}}", f"hydra.run.dir={out}")
    results = json.loads((out / "results.json").read_text())
    methods = results["methods"]
    assert list(methods) == ["unpatched", "uniform rope 1.25", "file " + tmp_path.name, "bezier mid"]
    assert methods["file " + tmp_path.name]["scheme"]["name"] == "ntk"  # a file keeps its own scheme
    scores = methods["bezier mid"]["scores"]
    assert list(scores["kv_retrieval"]) == ["0", "2", "5"] and list(scores["ppl"]) == ["all"]
    assert {"accuracy", "ci_low", "ci_high", "logprob", "count", "first_accuracy"} <= scores["kv_retrieval"]["0"].keys()
    assert scores["kv_retrieval"]["0"]["count"] == 2 and results["split"] == "test"
    assert (out / "by_position.png").stat().st_size > 10_000
    table = (out / "table.txt").read_text()
    assert "unpatched" in table and "ppl " in table and table in proc.stdout
    file = "file " + tmp_path.name  # every method against unpatched, then against the compare_to method
    assert list(results["intervals"]) == [
        "uniform rope 1.25 - unpatched", f"{file} - unpatched", "bezier mid - unpatched",
        f"{file} - uniform rope 1.25", "bezier mid - uniform rope 1.25"]
    assert "bezier mid - uniform rope 1.25: exact match" in table


def test_interval_pairs_never_compare_a_pair_twice():
    methods = ["unpatched", "u", "f"]
    assert interval_pairs(methods, []) == [("u", "unpatched"), ("f", "unpatched")]
    assert interval_pairs(methods, ["u", "unpatched"]) == [("u", "unpatched"), ("f", "unpatched"), ("f", "u")]
    assert interval_pairs(["u", "f"], ["u"]) == [("f", "u")]  # no unpatched row: only the references asked for


def test_generate_scoring_keeps_the_teacher_forced_log_probs(tmp_path):
    """Real greedy decoding decides exact match; the gold log-prob is the teacher-forced one either way."""
    scores = {}
    for scoring in ("generate", "teacher_forced"):
        run_cli("lpes_framework.commands.evaluate", *TINY_TASK, f"scoring={scoring}", "task.max_new_tokens=4",
                "methods.uniform=[1.5]", f"hydra.run.dir={tmp_path / scoring}")
        results = json.loads((tmp_path / scoring / "results.json").read_text())
        assert results["scoring"] == scoring
        scores[scoring] = {m: v["scores"]["kv_retrieval"] for m, v in results["methods"].items()}
    for method, per in scores["generate"].items():
        for position, stats in per.items():
            assert stats["logprob"] == pytest.approx(scores["teacher_forced"][method][position]["logprob"], abs=1e-6)


def test_factors_files_from_folders_with_the_same_name_get_distinct_rows(tmp_path):
    paths = []
    for parent in ("a", "b"):
        path = tmp_path / parent / "run1" / "best_factors.json"
        path.parent.mkdir(parents=True)
        write_json_atomic(path, factors_record(model=model_block(), scheme={"name": "rope"}, factors=[1.0, 1.1, 1.2, 1.3]))
        paths.append(str(path))
    out = tmp_path / "out"
    run_cli("lpes_framework.commands.evaluate", *TINY_TASK, "methods.uniform=[]", f"methods.factors_files=[{','.join(paths)}]",
            f"hydra.run.dir={out}")
    methods = json.loads((out / "results.json").read_text())["methods"]
    assert list(methods) == ["unpatched"] + [f"file {p}" for p in paths]


def test_a_killed_comparison_resumes_with_its_finished_methods(tmp_path):
    overrides = [*TINY_TASK, "extra_tasks={ppl: {name: perplexity, window_tokens: 64, windows: 2}}",
                 f"hydra.run.dir={tmp_path}"]
    run_cli("lpes_framework.commands.evaluate", *overrides, "methods.uniform=[1.25]")
    first = json.loads((tmp_path / "results.json").read_text())
    again = run_cli("lpes_framework.commands.evaluate", *overrides, "methods.uniform=[1.25]", check=False)
    assert again.returncode == 2 and "pass resume=true" in again.stderr
    log = tmp_path / "rows.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    assert [json.loads(line)["kind"] for line in lines[:1]] == ["spec"] and len(lines) == 3  # + unpatched, 1.25
    log.write_text(lines[0] + lines[1] + lines[2][:50])  # killed while writing the second method
    proc = run_cli("lpes_framework.commands.evaluate", *overrides, "methods.uniform=[1.25,1.5]", "resume=true")
    assert "1 of 3 methods reused" in proc.stdout
    resumed = json.loads((tmp_path / "results.json").read_text())
    for name in ("unpatched", "uniform rope 1.25"):  # the reused and the re-scored method: the same numbers
        assert resumed["methods"][name]["scores"] == first["methods"][name]["scores"]
    assert resumed["intervals"]["uniform rope 1.25 - unpatched"] == first["intervals"]["uniform rope 1.25 - unpatched"]
    assert [r.get("method") or r["kind"] for r in map(json.loads, log.read_text().splitlines())] == [
        "spec", "unpatched", "spec", "uniform rope 1.25", "uniform rope 1.5"]  # a run record per run
    assert resumed["run"]["config"]["methods"]["uniform"] == [1.25, 1.5] and resumed["run"]["command"] == "evaluate"


def test_a_resume_with_more_samples_scores_only_the_new_draws(tmp_path):
    base = [*TINY_TASK, "extra_tasks={ppl: {name: perplexity, window_tokens: 64, windows: 2}}",
            "methods.uniform=[1.25]"]
    grown, fresh = tmp_path / "grown", tmp_path / "fresh"
    run_cli("lpes_framework.commands.evaluate", *base, "task.samples_per_position=2", f"hydra.run.dir={grown}")
    proc = run_cli("lpes_framework.commands.evaluate", *base, "task.samples_per_position=3", "resume=true",
                   f"hydra.run.dir={grown}")
    assert "0 of 2 methods reused" in proc.stdout and "2 extended: only their new samples scored" in proc.stdout
    run_cli("lpes_framework.commands.evaluate", *base, "task.samples_per_position=3", f"hydra.run.dir={fresh}")
    rows_of = lambda folder: [r for r in map(json.loads, (folder / "rows.jsonl").read_text().splitlines())  # noqa: E731
                              if "method" in r]
    records = rows_of(grown)
    assert [r["method"] for r in records] == ["unpatched", "uniform rope 1.25"] * 2
    assert {r["draw"] for r in records[-1]["rows"]["kv_retrieval"]} == {0, 1, 2}
    # each record's cost is that of its new samples alone (what a matrix grown across runs adds up)
    count = lambda record: sum(map(len, record["rows"].values()))  # noqa: E731
    assert [r["cost"]["samples"] for r in records] == [count(records[0])] * 2 + [count(records[2]) - count(records[0])] * 2
    assert all(r["cost"]["seconds"] > 0 for r in records) and count(records[2]) > count(records[0])
    # the same numbers up to float noise: draw 2 was batched with other prompts than in the fresh run
    assert records[2]["rows"] == approx(rows_of(fresh)[0]["rows"])
    as_json = lambda folder: {m: rows_to_json(per) for m, per in logged_rows(folder).items()}  # noqa: E731
    assert as_json(grown) == approx(as_json(fresh))  # each method's most complete record: all three draws
    first, again = (json.loads((d / "results.json").read_text()) for d in (grown, fresh))
    assert first["methods"] == approx(again["methods"]) and first["intervals"] == approx(again["intervals"])
    # fewer samples: a subset of the rows already there, nothing scored
    proc = run_cli("lpes_framework.commands.evaluate", *base, "task.samples_per_position=1", "resume=true",
                   f"hydra.run.dir={grown}")
    assert "2 of 2 methods reused" in proc.stdout and len(rows_of(grown)) == 4
    counts = json.loads((grown / "results.json").read_text())["methods"]["unpatched"]["scores"]["kv_retrieval"]
    assert {stats["count"] for stats in counts.values()} == {1}


def test_a_kill_in_the_middle_of_a_method_keeps_its_recorded_draws(tmp_path, monkeypatch):
    """record_every: a method is recorded after each run of draws, so a scoring killed half way through a method
    resumes from its last record; the scores come out as those of a scoring never cut."""
    from lpes_framework.evaluate import run
    from lpes_framework.config import compose_config

    overrides = [*TINY_TASK, "task.samples_per_position=3", "methods.uniform=[1.5]", "resume=true",
                 "extra_tasks={ppl: {name: perplexity, window_tokens: 64, windows: 2}}"]
    whole = run.run_evaluate(compose_config("evaluate", [*overrides, "record_every=0"]), tmp_path / "whole")
    scored = []

    class Killed(run.LocalExecutor):
        def run(self, jobs, desc="eval"):
            for job, result in zip(jobs, super().run(jobs, desc)):
                scored.append(job)
                if kill_after and len(scored) == kill_after:
                    raise KeyboardInterrupt
                yield result

    monkeypatch.setattr(run, "LocalExecutor", Killed)
    kill_after = 4  # unpatched's two runs of draws (0-1, 2), then uniform's first
    with pytest.raises(KeyboardInterrupt):
        run.run_evaluate(compose_config("evaluate", [*overrides, "record_every=2"]), tmp_path / "cut")
    records = [r for r in map(json.loads, (tmp_path / "cut" / "rows.jsonl").read_text().splitlines()) if "method" in r]
    draws = lambda record: {task: sorted({r["draw"] for r in rows}) for task, rows in record["rows"].items()}  # noqa: E731
    assert [(r["method"], draws(r)) for r in records] == [
        ("unpatched", {"kv_retrieval": [0, 1], "ppl": [0, 1]}), ("unpatched", {"kv_retrieval": [0, 1, 2], "ppl": [0, 1]}),
        ("uniform rope 1.5", {"kv_retrieval": [0, 1], "ppl": [0, 1]})]
    scored.clear()
    kill_after = None
    resumed = run.run_evaluate(compose_config("evaluate", [*overrides, "record_every=2"]), tmp_path / "cut")
    assert len(scored) == 1  # uniform's draw 2 alone
    assert {m: rows_to_json(r) for m, r in resumed["rows"].items()} == approx(
        {m: rows_to_json(r) for m, r in whole["rows"].items()})
    assert resumed["methods"] == approx(whole["methods"])


def test_two_methods_of_one_name_in_rows_jsonl_are_told_apart_never_merged(tmp_path):
    """Rows reused from another folder may carry a method name this run uses too (two run folders named
    ``search`` both give ``file search``): an analysis must not take one for the other."""
    from lpes_framework.scoring.base import ScoreRow
    from lpes_framework.io.store import JsonLog

    def rows(draws, logprob):
        return {"kv": [ScoreRow(position=0, logprob=logprob, exact=True, first=True, first_logprob=logprob, tokens=2,
                                draw=d) for d in draws]}

    log = JsonLog(tmp_path / "rows.jsonl")
    log.append({"key": "aaaaaaaa11", "method": "file search", "rows": rows_to_json(rows(range(2), -0.5))})
    log.append({"key": "dddddddd22", "method": "file search", "rows": rows_to_json(rows(range(4), -0.5))})  # grown
    log.append({"key": "bbbbbbbb33", "method": "file search", "rows": rows_to_json(rows(range(3), -0.2))})  # another
    log.append({"key": "cccccccc44", "method": "unpatched", "rows": rows_to_json(rows(range(4), -0.9))})
    logged = logged_rows(tmp_path)
    assert sorted(logged) == ["file search [aaaaaaaa]", "file search [bbbbbbbb]", "unpatched"]
    # named by its first record (the name holds as it grows), holding its most complete rows
    assert len(logged["file search [aaaaaaaa]"]["kv"]) == 4 and len(logged["file search [bbbbbbbb]"]["kv"]) == 3


def test_evaluate_returns_each_methods_own_rows_whatever_else_in_rows_jsonl_has_its_name(tmp_path):
    """What a bench analyses are the rows a method was scored by (found by key), never a same-named
    record another run left in the folder (every search's control is ``file uniform-mean``)."""
    from lpes_framework.evaluate.run import run_evaluate
    from lpes_framework.config import compose_config
    from lpes_framework.judging.results import rows_to_json
    from lpes_framework.io.store import JsonLog

    cfg = compose_config("evaluate", [*TINY_TASK, "methods.uniform=[1.5]", "resume=true"])
    first = run_evaluate(cfg, tmp_path)
    name = next(m for m in first["methods"] if m != "unpatched")
    other = {task: [replace(r, logprob=r.logprob - 1.0) for r in per] for task, per in first["rows"][name].items()}
    JsonLog(tmp_path / "rows.jsonl").append({"key": "0" * 40, "method": name, "rows": rows_to_json(other)})
    again = run_evaluate(cfg, tmp_path)
    assert again["rows"] == first["rows"] and again["methods"][name]["scores"] == first["methods"][name]["scores"]


def test_scored_rows_finds_what_a_resume_would_reuse_and_scores_nothing(tmp_path, monkeypatch):
    """bench/transfer.py --report: the matrix so far from rows.jsonl, each method found by its key (whatever name
    it was scored under), a method scored on fewer haystacks than asked left out, no model loaded."""
    from lpes_framework.evaluate import run
    from lpes_framework.config import compose_config

    scored = run.run_evaluate(compose_config("evaluate", [*TINY_TASK, "methods.uniform=[1.5]"]), tmp_path)
    monkeypatch.setattr(run, "LocalExecutor", None)  # loading a model here would fail the test
    asked = compose_config("evaluate", [*TINY_TASK, "methods.uniform=[1.5,2.0]"])
    assert run.scored_rows(asked, tmp_path) == {name: scored["rows"][name] for name in ("unpatched", "uniform rope 1.5")}
    more = compose_config("evaluate", [*TINY_TASK, "methods.uniform=[1.5]", "task.samples_per_position=3"])
    assert run.scored_rows(more, tmp_path) == {}
    fewer = compose_config("evaluate", [*TINY_TASK, "methods.uniform=[1.5]", "task.samples_per_position=1"])
    assert {name: [r.draw for r in rows["kv_retrieval"]] for name, rows in run.scored_rows(fewer, tmp_path).items()} == {
        "unpatched": [0, 0, 0], "uniform rope 1.5": [0, 0, 0]}
    assert run.scored_rows(asked, tmp_path / "nothing") == {}
