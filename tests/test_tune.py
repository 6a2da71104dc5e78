"""lpes tune on the tiny model, end to end: each stage, its stop verdict, the test split read once and never before
validation passed, resume after a kill at each stage; and its pure parts (diagnosis, repairs, the split log)."""

import json
import os

import numpy as np
import pytest

from conftest import run_cli
from lpes_framework.errors import LpesError
from lpes_framework.scoring.base import ScoreRow
from lpes_framework.tune.access import SplitLog
from lpes_framework.tune.diagnosis import anything_to_fix, middle_loss
from lpes_framework.tune.repair import reset, shrink

# the tiny matrix, a two-step search; middle_nats=-1: the random model loses no middle, so the stages go on
TINY = ["model=tiny", "matrix=tiny", "tune.search_columns=[kv-short,kv-long]", "optimizer.steps=2",
        "optimizer.eval_every=2", "optimizer.contexts_per_step=1", "tune.validation_haystacks=3",
        "tune.search_haystacks=2", "tune.guard.window_tokens=128", "tune.test.cap=8", "progress=false", "plots=false"]
GOES_ON = ["tune.diagnose.middle_nats=-1"]


def tune_config(out, *extra):
    from lpes_framework.config import compose_config

    return compose_config("tune", [*TINY, *extra])


@pytest.fixture(scope="session")
def tuned(tmp_path_factory):
    """A tune of the tiny model killed before each stage in turn and resumed each time: (folder, stage lines).
    Made once for all test workers (the folder under their shared base, behind a lock): the tests copy it."""
    from filelock import FileLock

    from lpes_framework.tune import recipe

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # this run's, shared by its workers
    out, record = root / "tuned", root / "tuned-stages.json"
    with FileLock(str(root / "tuned.lock")):
        if record.exists():
            return out, json.loads(record.read_text())
        ran = []
        for kill in (*recipe.STAGES[1:], None):
            tune = recipe.Tune(tune_config(out, *GOES_ON), out)
            for stage in recipe.STAGES:
                original = getattr(tune, stage)

                def once(done, stage=stage, original=original):
                    if stage == kill:
                        raise KeyboardInterrupt  # a kill as the stage starts
                    ran.append(stage)
                    return original(done)

                setattr(tune, stage, once)
            try:
                tune.run()
            except KeyboardInterrupt:
                pass
        record.write_text(json.dumps(ran))
        return out, ran


def test_every_stage_runs_once_across_kills_and_resumes(tuned):
    out, ran = tuned
    assert ran == ["diagnose", "search", "validate", "test", "ship"]
    state = json.loads((out / "tune.json").read_text())
    assert list(state["stages"]) == ran
    # the unpatched rows of the diagnosis (a record a draw) were reused by the validation, not scored again
    kv = [json.loads(line) for line in open(out / "validation" / "kv-short" / "rows.jsonl")]
    assert [r.get("method") for r in kv if "rows" in r] == ["unpatched"] * 3 + ["file search"] * 3


def test_the_test_split_is_read_once_at_the_end_and_logged(tuned):
    out, _ = tuned
    entries = SplitLog(out).entries()
    assert [e["stage"] for e in entries] == ["diagnose", "search", "validate", "test"]
    test = entries[-1]
    assert test["split"] == "test" and test["seed"] == 7 and SplitLog(out).test_reads() == 1
    sizes = json.loads((out / "test" / "haystacks.json").read_text())
    assert test["haystacks"] == {c: s["draws"] for c, s in sizes.items()}  # counts fixed before the test was read


def test_ship_writes_a_preset_with_the_test_matrix_and_an_export(tuned):
    from lpes_framework.model.factors_file import load_factors

    out, _ = tuned
    record = load_factors(out / "ship" / "tiny-llama-tuned.json")
    assert set(record["metrics"]["matrix"]["cells"]) == {"kv-short", "kv-long", "perplexity"}
    assert record["metrics"]["matrix"]["seed"] == 7 and record["metrics"]["intervals"]["found - unpatched"]
    assert (out / "ship" / "export" / "config.json").exists()


def test_a_second_test_read_for_another_candidate_is_refused(tuned, tmp_path):
    import shutil

    out, _ = tuned
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    log = SplitLog(copy)
    log.record("test", "test", 7, {"kv-short": 8}, ["unpatched", "candidates/search/factors.json"])  # a resume: same read
    assert log.test_reads() == 1
    with pytest.raises(LpesError, match="read already"):
        log.record("test", "test", 7, {"kv-short": 8}, ["unpatched", "candidates/repair-1/factors.json"])


def test_nothing_to_fix_stops_after_the_diagnosis(tmp_path):
    proc = run_cli("lpes_framework", "tune", *TINY, f"hydra.run.dir={tmp_path}")
    assert "stopped after diagnose: nothing to fix" in proc.stdout
    assert not (tmp_path / "search").exists() and SplitLog(tmp_path).test_reads() == 0


def test_until_stops_after_a_stage_and_a_later_until_goes_on(tmp_path):
    first = run_cli("lpes_framework", "tune", *TINY, *GOES_ON, "tune.until=diagnose", f"hydra.run.dir={tmp_path}")
    assert "stopped after diagnose (tune.until)" in first.stdout and not (tmp_path / "search").exists()
    again = run_cli("lpes_framework", "tune", *TINY, *GOES_ON, "tune.until=search", f"hydra.run.dir={tmp_path}")
    assert "diagnose: done before" in again.stdout and (tmp_path / "candidates" / "search" / "factors.json").exists()
    assert "validate" not in json.loads((tmp_path / "tune.json").read_text())["stages"]


def test_the_test_is_refused_before_a_candidate_passed_validation(tmp_path):
    from lpes_framework.tune.recipe import Tune

    tune = Tune(tune_config(tmp_path), tmp_path)
    with pytest.raises(LpesError, match="test split is read once, after a candidate harms no validation column"):
        tune.test({"validate": {"final": None}})
    assert SplitLog(tmp_path).test_reads() == 0


def test_a_harmed_column_gets_a_repair_chosen_on_validation(tuned, tmp_path, monkeypatch):
    import shutil

    from lpes_framework.judging.stats import Interval
    from lpes_framework.matrix import Cell
    from lpes_framework.tune import recipe

    out, _ = tuned
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    seen = []

    def cells(rows, files):  # the search's candidate harms kv-long; its repair harms nothing
        (f,) = files
        seen.append(f.parent.name)
        harmed = f.parent.name == "search" and len(seen) % 3 == 2
        return {str(f): Cell(Interval(-0.1, -0.2, -0.05) if harmed else Interval(0.0, -0.1, 0.1), None, None)}

    monkeypatch.setattr(recipe, "file_cells", cells)
    tune = recipe.Tune(tune_config(copy, *GOES_ON), copy)
    monkeypatch.setattr(tune, "_each_column", lambda stage, split, counts, files=(): {c: {} for c in counts})
    result = tune.validate({"search": {"candidate": "candidates/search/factors.json"}})
    assert result["final"] == "candidates/repair-1/factors.json"
    assert result["rounds"][0]["harmed"] == ["kv-long"] and result["rounds"][1]["harmed"] == []
    assert (copy / "candidates" / "repair-1" / "factors.json").exists()


@pytest.mark.parametrize("override,match", [
    ("tune.search_columns=[kv-short,nope]", "unknown matrix columns"),
    ("tune.repair.reset_fraction=0", "reset_fraction must be in"),
    ("tune.test.cap=3", "cap must be a whole number >= 8"),
    ("tune.until=deploy", "tune.until must be one of"),
    ("+matrix.columns.bad={task:kv_retrieval,set:{pairs:0}}", "matrix column 'bad'"),
    ("+matrix.columns.bad={task:../matrix/tiny}", "is no task config"),  # no path out of the task group
])
def test_bad_tune_settings_are_one_line_before_any_weights_load(tmp_path, override, match):
    proc = run_cli("lpes_framework", "tune", *TINY, override, f"hydra.run.dir={tmp_path}", check=False)
    assert proc.returncode == 2 and match in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "tune.json").exists()


def test_a_folder_with_another_tunes_settings_is_refused(tuned, tmp_path):
    import shutil

    from lpes_framework.tune.recipe import Tune

    out, _ = tuned
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    with pytest.raises(LpesError, match="holds a tune with other settings"):
        Tune(tune_config(copy, *GOES_ON, "tune.test_seed=8"), copy).run()


def rows(exact_by_position, logprob_by_position, draws=4):
    return [ScoreRow(p, logprob_by_position[p], bool(exact_by_position[p] > d / draws), False, logprob_by_position[p], 1, draw=d)
            for d in range(draws) for p in exact_by_position]


def test_the_middle_loss_is_the_ends_minus_the_middle():
    loss = middle_loss("kv", rows({0: 1.0, 5: 0.3, 9: 1.0}, {0: -0.1, 5: -0.6, 9: -0.2}))
    assert loss.points == pytest.approx(50.0) and loss.logprob == pytest.approx(0.45)
    assert anything_to_fix([loss], 10.0, 1.0) == [loss] and anything_to_fix([loss], 60.0, 1.0) == []
    assert middle_loss("two", rows({0: 1.0, 9: 0.0}, {0: 0.0, 9: -1.0})).points == 0.0  # no middle between ends


def test_a_reset_puts_back_the_genes_that_help_the_harmed_task_and_shrink_halves():
    genome = np.array([1.5, 0.8, 1.2, 2.0])
    pulls = {"vt": np.array([-1.0, 1.0, 0.1, 0.0]), "kv": np.array([5.0, 5.0, 5.0, 5.0])}
    # putting gene i back to 1 moves vt by g_i (1 - x_i): +0.5, -0.2, -0.02, 0
    out, chosen = reset(genome, pulls, ["vt"], 0.25)
    assert chosen == [0] and out.tolist() == [1.0, 0.8, 1.2, 2.0]
    assert shrink([[1.5, 2.0], [0.5, 1.0]]) == [[1.25, 1.5], [0.75, 1.0]]


def test_bench_recipe_reports_a_finished_tune_scoring_nothing(tuned, monkeypatch, capsys):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import recipe

    out, _ = tuned
    monkeypatch.setattr(sys, "argv", ["recipe.py", "--run", str(out)])
    recipe.main()
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("columns=3 harmed=0 helped=0 kv_middle_gain=") and "test_reads=1 cpu_hours=" in last


@pytest.mark.parametrize("edit,words", [
    (lambda s: s["stages"]["test"].update(final="/etc/hostname"), "is no file of this tune"),
    (lambda s: s["stages"]["test"].update(final="../../outside.json"), "is no file of this tune"),
    (lambda s: s["stages"].update(test=5), "is not a tune's state"),
])
def test_a_changed_tune_json_is_one_line(tuned, tmp_path, edit, words):
    import shutil

    from lpes_framework.tune.recipe import Tune

    out, _ = tuned
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    state = json.loads((copy / "tune.json").read_text())
    del state["stages"]["ship"]
    edit(state)
    (copy / "tune.json").write_text(json.dumps(state))
    with pytest.raises(LpesError, match=words):
        Tune(tune_config(copy, *GOES_ON), copy).run()


def test_changed_test_counts_are_refused(tuned, tmp_path):
    import shutil

    from lpes_framework.tune.recipe import Tune

    out, _ = tuned
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    state = json.loads((copy / "tune.json").read_text())
    for stage in ("test", "ship"):
        del state["stages"][stage]
    (copy / "tune.json").write_text(json.dumps(state))
    (copy / "test" / "haystacks.json").write_text(json.dumps({"kv-short": {"draws": "many"}}))
    with pytest.raises(LpesError, match="haystacks.json: not a count from 8"):
        Tune(tune_config(copy, *GOES_ON), copy).run()
