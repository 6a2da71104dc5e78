"""bench/transfer.py's Markdown matrix (the README's table): one line a column, a cell a method, bold only where
the log-prob interval excludes 0, blank where the method is not scored in that column."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from transfer import markdown  # noqa: E402

EXACT = (0.0, 0.0, 0.0)  # the exact-match cell, which the Markdown table leaves to the printed matrix


def test_markdown_matrix_marks_only_intervals_that_exclude_zero():
    table = {"general": {"kv-1k": (EXACT, (0.032, 0.029, 0.035), EXACT), "vt-1k": (EXACT, (-0.003, -0.007, 0.001), EXACT)},
             "competitor": {"vt-1k": (EXACT, (-0.009, -0.015, -0.003), EXACT)}}
    lines = markdown(table, ["kv-1k", "vt-1k"]).splitlines()
    assert lines[0] == "| column | general | competitor |" and lines[1] == "|---|---|---|"
    assert lines[2] == "| kv-1k | **+0.032 [+0.029, +0.035]** |  |"
    assert lines[3] == "| vt-1k | -0.003 [-0.007, +0.001] | **-0.009 [-0.015, -0.003]** |"
