"""bench/transfer.py, the committed Qwen matrix's caller of lpes_framework.matrix: the Markdown matrix (the
README's table: one line a column, a cell a method, bold only where the log-prob interval excludes 0, blank where
the method is not scored in that column), haystack counts from a pilot, its refusals."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from lpes_framework.judging.stats import Interval  # noqa: E402
from lpes_framework.matrix import Cell  # noqa: E402
from lpes_framework.matrix.report import markdown  # noqa: E402


def cell(delta, low, high):
    return Cell(Interval(delta, low, high), None, None)  # exact match: left to the printed matrix


def test_markdown_matrix_marks_only_intervals_that_exclude_zero():
    table = {"general": {"kv-1k": cell(0.032, 0.029, 0.035), "vt-1k": cell(-0.003, -0.007, 0.001)},
             "competitor": {"vt-1k": cell(-0.009, -0.015, -0.003)}}
    lines = markdown(table, ["kv-1k", "vt-1k"]).splitlines()
    assert lines[0] == "| column | general | competitor |" and lines[1] == "|---|---|---|"
    assert lines[2] == "| kv-1k | **+0.032 [+0.029, +0.035]** |  |"
    assert lines[3] == "| vt-1k | -0.003 [-0.007, +0.001] | **-0.009 [-0.015, -0.003]** |"


def test_a_columns_haystack_count_is_chosen_once_from_a_validation_pilot(tmp_path, monkeypatch):
    import json
    from types import SimpleNamespace

    import pytest
    import transfer

    from lpes_framework.evaluate import run
    from lpes_framework.scoring.base import ScoreRow

    def fake_rows(draws, delta):
        return [ScoreRow(p, -1.0 + delta * (d % 3), False, False, -1.0, 1, draw=d) for d in range(draws) for p in (0, 1)]

    pilots = []

    def pilot(cfg, folder):  # what run_evaluate returns: each method's rows by task
        pilots.append((cfg.split, cfg.task.samples_per_position))
        return {"rows": {"unpatched": {"t": fake_rows(10, 0.0)}, "general": {"t": fake_rows(10, 0.05)}}}

    monkeypatch.setattr(run, "run_evaluate", pilot)
    args = SimpleNamespace(threads=1, pilot=10, seed=0, precision=0.01, cap=100)
    folder = tmp_path / "vt-1k"
    chosen = transfer.choose_haystacks("vt-1k", {"unpatched": None}, args, folder)
    assert pilots == [("validation", 10)] and 8 <= chosen <= 100
    record = json.loads((folder / transfer.SIZE_FILE).read_text())
    assert record["draws"] == chosen and record["pilot_split"] == "validation"
    # fixed from then on: no second pilot, and the report reads the same count
    assert transfer.choose_haystacks("vt-1k", {"unpatched": None}, args, folder) == chosen and len(pilots) == 1
    assert transfer.column_haystacks(folder, None) == chosen and transfer.column_haystacks(folder, 7) == 7
    (folder / transfer.SIZE_FILE).write_text('{"draws": "many"}')
    with pytest.raises(SystemExit, match="no haystack count"):
        transfer.column_haystacks(folder, None)


def test_a_bad_precision_request_is_one_line_before_anything_is_scored(tmp_path, monkeypatch, capsys):
    import sys

    import pytest
    import transfer

    from lpes_framework.evaluate import run

    monkeypatch.setattr(run, "run_evaluate", lambda *a: pytest.fail("scored before the request was checked"))
    monkeypatch.setattr(sys, "argv", ["transfer.py", "--out", str(tmp_path), "--precision", "0.01", "--pilot", "1",
                                      "--methods", "unpatched", "--columns", "vt-1k"])
    with pytest.raises(SystemExit):
        transfer.main()
    assert "pilot draws must be a whole number >= 2" in capsys.readouterr().err


def test_an_extra_row_may_not_shadow_a_built_in_one(tmp_path, monkeypatch, capsys):
    import sys

    import pytest
    import transfer

    monkeypatch.setattr(sys, "argv", ["transfer.py", "--out", str(tmp_path), "--report",
                                      "--also", f"unpatched={tmp_path / 'f.json'}"])
    with pytest.raises(SystemExit, match="are rows of the matrix already"):
        transfer.main()
