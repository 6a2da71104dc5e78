"""One held-out comparison, used by the evaluate command and after a search: several methods scored on
the same samples, summarised by gold position, with paired bootstrap intervals against references."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ..tasks.base import WHOLE_TEXT
from ..scoring.base import ScoreRow
from .results import Scores, by_length, by_position, scores_to_json
from .positions import middle_positions
from .stats import Interval, logprob_bootstrap, paired_bootstrap



def uniform_method_name(scheme_name: str, factor: float) -> str:
    """How one factor for every layer is labelled wherever methods are compared."""
    return f"uniform {scheme_name} {factor:g}"


@dataclass
class Comparison:
    rows: dict[str, dict[str, list[ScoreRow]]]  # method -> task -> per-sample rows (same samples for all)
    intervals: dict[str, dict[str, dict[str, Interval]]] = field(default_factory=dict)  # "a - b" -> task -> ...
    # "a - b" -> task -> "all" / "middle" -> the gold log-prob change per token, the same pairs as ``intervals``
    logprob_intervals: dict[str, dict[str, dict[str, Interval]]] = field(default_factory=dict)

    @property
    def scores(self) -> dict[str, Scores]:
        return {m: {task: by_position(rows) for task, rows in per.items()} for m, per in self.rows.items()}

    def add_intervals(self, a: str, b: str, *, resamples: int = 2000, seed: int = 0) -> None:
        """Paired bootstrap of exact match, ``a`` minus ``b``, for every retrieval task, and of the gold
        log-prob per token over all positions and the middle ones."""
        retrieval = {task: rows for task, rows in self.rows[a].items() if rows and rows[0].position != WHOLE_TEXT}
        self.intervals[f"{a} - {b}"] = {task: paired_bootstrap(rows, self.rows[b][task], resamples=resamples, seed=seed)
                                        for task, rows in retrieval.items()}
        self.logprob_intervals[f"{a} - {b}"] = {task: {
            part: logprob_bootstrap(rows, self.rows[b][task], positions=positions, resamples=resamples, seed=seed)
            for part, positions in (("all", None), ("middle", middle_positions(list(dict.fromkeys(
                str(r.position) for r in rows)))))} for task, rows in retrieval.items()}

    def as_json(self) -> dict:
        def as_json(intervals):
            return {pair: {task: {p: i.as_dict() for p, i in per.items()} for task, per in tasks.items()}
                    for pair, tasks in intervals.items()}

        return {"scores": {m: scores_to_json(s) for m, s in self.scores.items()},
                "by_length": {m: {task: {n: s.as_dict() for n, s in lengths.items()}
                                  for task, rows in per.items() if (lengths := by_length(rows))}
                              for m, per in self.rows.items()},
                "intervals": as_json(self.intervals), "logprob_intervals": as_json(self.logprob_intervals)}


def format_table(methods: Mapping[str, Scores]) -> str:
    """Rows are methods, columns gold positions; each cell is 'accuracy% / log-prob' (perplexity for ppl tasks)."""
    lines = []
    first = next(iter(methods.values()))
    width = max(len(m) for m in methods) + 2
    for task in first:
        positions = list(first[task])
        lines.append(f"[{task}] " + "acc% / logprob by gold position")
        lines.append("method".ljust(width) + "".join(f"{p:>16}" for p in positions))
        for name, scores in methods.items():
            cells = []
            for p in positions:
                s = scores[task][p]
                cells.append(f"ppl {s.perplexity:8.2f}" if p == WHOLE_TEXT else f"{100 * s.accuracy:5.1f} / {s.logprob:7.3f}")
            lines.append(name.ljust(width) + "".join(f"{c:>16}" for c in cells))
    return "\n".join(lines)


def format_lengths(comparison: Comparison) -> str:
    """Tasks whose contexts come in several lengths: each method's exact match and gold log-prob by length."""
    lines = []
    for task in next(iter(comparison.rows.values()), {}):
        per = {m: by_length(rows[task]) for m, rows in comparison.rows.items()}
        lengths = list(next(iter(per.values())))
        if not lengths:
            continue
        width = max(len(m) for m in per) + 2
        lines.append(f"[{task}] acc% / logprob by context length (tokens)")
        lines.append("method".ljust(width) + "".join(f"{n:>16}" for n in lengths))
        for m, stats in per.items():
            lines.append(m.ljust(width) + "".join(f"{f'{100 * stats[n].accuracy:5.1f} / {stats[n].logprob:7.3f}':>16}"
                                                  for n in lengths))
    return "\n".join(lines)


def format_intervals(comparison: Comparison) -> str:
    """One block per compared pair: exact-match difference in points [95% interval] by gold position, then
    the gold log-prob change per token over all positions and the middle ones."""
    lines = []
    for pair, tasks in comparison.intervals.items():
        for task, per in tasks.items():
            lines.append(f"[{task}] {pair}: exact match, points [95% paired bootstrap interval over contexts]")
            lines.append("  " + "   ".join(f"{p}: {i}" for p, i in per.items()))
            logprob = comparison.logprob_intervals.get(pair, {}).get(task, {})
            if logprob:
                lines.append("  gold log-prob per token: " + "   ".join(f"{part} {i.format(4)}" for part, i in logprob.items()))
    return "\n".join(lines)


def effect_lines(comparison: Comparison, a: str, b: str) -> list[str]:
    """What ``a`` does against ``b`` in plain words, one line per retrieval task: the middle gold positions'
    gold answer log-prob per token first (the signal that resolves on few samples) with what its interval
    says, exact match beside it."""
    lines = []
    pair = f"{a} - {b}"
    for task, parts in comparison.logprob_intervals.get(pair, {}).items():
        lp, em = parts["middle"], comparison.intervals[pair][task]["middle"]
        # one haystack resamples to itself: its "interval" is the point, which would read as a measured change
        if len({r.draw for r in comparison.rows[a][task]}) < 2:
            says = "is only the point on one haystack: no spread to measure a change by"
        else:
            says = ("excludes 0: a measured gain" if lp.low > 0 else "excludes 0: a measured loss" if lp.high < 0
                    else "includes 0: no change measured")
        lines.append(f"  {task}, middle gold positions: gold answer log-prob {lp.format(4)} nats per token, "
                     f"the 95% interval {says}; exact match {em} points")
    return lines
