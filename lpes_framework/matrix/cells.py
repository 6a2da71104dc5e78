"""A matrix's cells: per column and method, the change against the unpatched model with paired 95% intervals
over haystacks, and the verdict a row earns across columns."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..judging.results import paired
from ..judging.stats import Interval, logprob_bootstrap, paired_bootstrap
from ..tasks.base import WHOLE_TEXT


@dataclass(frozen=True)
class Cell:
    logprob: Interval  # gold log-prob per token (nats); of the text, on a perplexity column
    exact: Interval | None  # exact match over all positions, points (None: a perplexity column)
    middle: Interval | None  # exact match over the middle positions

    @property
    def harmed(self) -> bool:
        return self.logprob.high < 0

    @property
    def helped(self) -> bool:
        return self.logprob.low > 0


def column_task(rows_by_task: dict[str, list]) -> str:
    """The task a column is about: its first with gold positions (a perplexity guard rides along on some), else
    its only one."""
    return next((t for t, rows in rows_by_task.items() if rows and rows[0].position != WHOLE_TEXT),
                next(iter(rows_by_task)))


def column_cells(per_method: dict[str, dict[str, list]], evaluated: dict[str, str]) -> dict[str, Cell]:
    """Row label -> its cell against unpatched on the samples both scored, for the labels whose method
    (``evaluated``: label -> evaluate's method name) has rows in ``per_method`` (name -> task -> rows)."""
    base = per_method["unpatched"]
    task = column_task(base)
    positions = base[task][0].position != WHOLE_TEXT
    cells = {}
    for label, method in evaluated.items():
        if label != "unpatched" and task in per_method.get(method, {}):
            a, b = paired(per_method[method][task], base[task])
            exact = middle = None
            if positions:
                exact = paired_bootstrap([replace(r, position=0) for r in a], [replace(r, position=0) for r in b])["0"]
                middle = paired_bootstrap(a, b)["middle"]
            cells[label] = Cell(logprob_bootstrap(a, b), exact, middle)
    return cells


@dataclass(frozen=True)
class Verdict:
    columns: int
    harmed: list[str]
    helped: list[str]

    def line(self) -> str:
        return f"columns={self.columns} harmed={len(self.harmed)} helped={len(self.helped)}"


def verdict(cells: dict[str, Cell]) -> Verdict:
    """One row's verdict over its columns (column -> cell)."""
    return Verdict(len(cells), [c for c, cell in cells.items() if cell.harmed],
                   [c for c, cell in cells.items() if cell.helped])
