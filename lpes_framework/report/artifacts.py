"""What a finished search leaves for people to read: the plots and ``report.md`` (the machine-readable
outputs, ``best_factors.json`` and ``pareto.json``, are the search's own)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..judging.comparison import Comparison
from ..judging.fitness import Outcome
from ..position.bands import factors_json
from .plots import plot_by_position, plot_factors, plot_pareto, plot_progress


def _factor_text(factor) -> str:
    """A layer's factor for the report: 1.234, or (0.900, 1.234) for a band-wise one."""
    if isinstance(factor, list):
        return "(" + ", ".join(f"{f:.3f}" for f in factor) + ")"
    return f"{factor:.3f}"


@dataclass(frozen=True)
class SearchSummary:
    model: str
    settings: dict  # scheme, curve, optimizer configs, shown as they were given
    log: list[dict]  # the optimizer's progress entries (``Optimizer.progress``): per generation or Adam step
    factors: list  # the chosen schedule (a list of band values per layer when band-wise)
    uniform_name: str
    uniform: float
    best: Outcome  # the chosen candidate's search-split outcome
    val_fitness: dict[str, float]
    val_intervals: dict[str, list[float]]  # 95% paired bootstrap interval of each against unpatched
    chosen: str
    test: Comparison  # the held-out comparison, with its intervals
    test_outcomes: dict[str, dict]
    table: str  # the printed held-out table
    history: list[Outcome]  # every evaluated candidate
    front: list[Outcome]  # Pareto set (multi-objective optimizers), else empty


def write_artifacts(out: Path, s: SearchSummary, plots: bool = True) -> None:
    """report.md, and with ``plots`` the PNGs it shows."""
    (out / "report.md").write_text(report(s, plots))
    if not plots:
        return
    plot_factors({"found": s.factors, s.uniform_name: [s.uniform] * len(s.factors)}, out / "factors.png")
    plot_progress(s.log, out / "progress.png")
    middle = {task: per["middle"] for task, per in s.test.intervals["found - unpatched"].items()}
    subtitle = "; ".join(f"{task} middle, found - unpatched: {i} points" for task, i in middle.items())
    plot_by_position(s.test.scores, out / "by_position.png", title=f"{s.model}: held-out test split\n{subtitle}")
    if s.front:
        points = [(o.perplexity, o.retrieval) for o in s.history if math.isfinite(o.perplexity)]
        plot_pareto(points, [(o.perplexity, o.retrieval) for o in s.front], out / "pareto.png")


def report(s: SearchSummary, plots: bool = True) -> str:
    lines = [f"# LPES search report: {s.model}", ""]
    lines += [f"- {key}: `{value}`" for key, value in s.settings.items()]
    unit = "Adam steps" if s.log and "step" in s.log[0] else "generations"
    lines += [f"- evaluations: {len(s.history)} candidates scored on the search split over {len(s.log)} {unit}",
              f"- best search fitness: {s.best.fitness:.4f} (0 = unpatched)", "",
              "## Found factors", "", "`" + ", ".join(map(_factor_text, factors_json(s.factors))) + "`", "",
              *(["![factors](factors.png) ![progress](progress.png)", ""] if plots else []),
              "## Validation: the search's top candidates re-scored on fresh samples", "",
              "| method | validation fitness | 95% interval over contexts |", "|---|---|---|"]
    lines += [f"| {name}{' (chosen)' if name == s.chosen else ''} | {f:.4f} | "
              + ("" if name == "unpatched" else "[{:+.4f}, {:+.4f}]".format(*s.val_intervals[name])) + " |"
              for name, f in s.val_fitness.items()]
    lines += ["", "## Held-out test split (exact match % / mean gold log-prob; differences in points with "
              "95% paired bootstrap intervals over contexts)", "", "```", s.table, "```", "",
              "| method | test fitness |", "|---|---|"]
    lines += [f"| {name} | {o['fitness']:.4f} |" for name, o in s.test_outcomes.items()]
    lines += ["", "![by position](by_position.png)", ""] if plots else [""]
    if s.front and plots:
        lines += ["## Pareto front", "", "![pareto](pareto.png)", ""]
    return "\n".join(lines)
