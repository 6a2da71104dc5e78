"""A matrix shown: the printed table (a blank where a method is not scored on all of a column's haystacks), the
Markdown one for README and docs, the heat map, what its columns cost, and a row's summary line."""

from __future__ import annotations

import math
from pathlib import Path

from ..io.store import read_rows
from .cells import Cell, verdict

Table = dict[str, dict[str, Cell]]  # method label -> column -> cell


def shown(interval, digits: int) -> str:
    return "" if interval is None else f"{interval.delta:+.{digits}f} [{interval.low:+.{digits}f}, {interval.high:+.{digits}f}]"


def table_lines(table: Table, columns: list[str]) -> list[str]:
    lines = [f"{'method':22}" + "".join(f"{c:>30}" for c in columns)]
    for label, cells in table.items():
        for part, unit, digits in (("exact", "exact points", 1), ("logprob", "log-prob/token", 3)):
            lines.append(f"{label[:14] + ' ' + unit[:7]:22}" + "".join(
                f"{shown(getattr(cells[c], part) if c in cells else None, digits):>30}" for c in columns))
    return lines


def summary_line(cells: dict[str, Cell], kv_column: str | None) -> str:
    """``columns= harmed= helped= mean_delta= kv_middle_gain= kv_ci_low=`` of one row (nan where the row has
    no ``kv_column`` cell)."""
    mean = sum(c.logprob.delta for c in cells.values()) / len(cells)
    middle = cells[kv_column].middle if kv_column in cells else None
    gain, low = (middle.delta, middle.low) if middle is not None else (math.nan, math.nan)
    return f"{verdict(cells).line()} mean_delta={mean:.4f} kv_middle_gain={gain:.2f} kv_ci_low={low:.2f}"


def markdown(table: Table, columns: list[str]) -> str:
    """The matrix transposed (a line a column, a table column a method: eleven lines fit a page, eleven table
    columns do not): the gold log-prob delta per token with its interval, in bold where the interval excludes 0;
    blank where unscored."""
    def cell(cells, column):
        if column not in cells:
            return ""
        text = shown(cells[column].logprob, 3)
        return f"**{text}**" if cells[column].harmed or cells[column].helped else text

    lines = ["| column | " + " | ".join(table) + " |", "|---" * (len(table) + 1) + "|"]
    lines += [f"| {c} | " + " | ".join(cell(cells, c) for cells in table.values()) + " |" for c in columns]
    return "\n".join(lines)


def column_cost(folder: Path, unpatched: dict[str, list]) -> tuple[float | None, int]:
    """(seconds a sample, samples a method) of one column: the seconds over the samples of the scorings its
    rows.jsonl recorded the cost of (rows written before costs were recorded count for nothing; a record of
    a few samples weighs as little as it holds), and a whole row's samples, so that a column's cost from
    scratch is their product times the methods."""
    costs = [r["cost"] for r in read_rows(folder / "rows.jsonl") if (r.get("cost") or {}).get("samples")]
    samples = sum(len(rows) for rows in unpatched.values())
    spent = sum(c["samples"] for c in costs)
    return (sum(c["seconds"] for c in costs) / spent if spent else None), samples


def cost_lines(costs: dict[str, tuple[float | None, int]], methods: int) -> list[str]:
    """Each column's measured cost and the matrix's from scratch (these rows, on this machine), where known."""
    known = {c: rate * samples * methods for c, (rate, samples) in costs.items() if rate is not None}
    lines = []
    for column, (rate, samples) in costs.items():
        said = f"{rate:.2f} s a sample, {rate * samples / 60:.0f} min a method" if rate is not None else "not measured"
        lines.append(f"cost {column}: {samples} samples a method, {said}")
    unknown = sorted(set(costs) - set(known))
    lines.append(f"cost from scratch of the {len(known)} measured columns x {methods} methods: "
                 f"{sum(known.values()) / 3600:.1f} h" + (f"; not measured: {', '.join(unknown)}" if unknown else ""))
    return lines


def heat_map(table: Table, columns: list[str], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    labels = list(table)
    delta = np.array([[table[m][c].logprob.delta if c in table[m] else np.nan for c in columns] for m in labels])
    limit = max(np.nanmax(np.abs(delta)), 1e-3)
    fig, ax = plt.subplots(figsize=(1.1 * len(columns) + 3, 0.6 * len(labels) + 2))
    image = ax.imshow(delta, cmap="RdBu", vmin=-limit, vmax=limit, aspect="auto")
    for i, m in enumerate(labels):
        for j, c in enumerate(columns):
            if c not in table[m]:
                continue
            cell = table[m][c]
            ax.text(j, i, f"{cell.logprob.delta:+.3f}{'*' if cell.harmed or cell.helped else ''}", ha="center",
                    va="center", fontsize=7,
                    color="white" if abs(cell.logprob.delta) > 0.6 * limit else "black")  # legible on the darkest cells
    ax.set_xticks(range(len(columns)), columns, rotation=45, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    fig.colorbar(image, label="gold log-prob per token vs unpatched (nats)")
    ax.set_title(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
