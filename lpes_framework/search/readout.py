"""A search folder's own records read back without a model, for ``lpes status`` and ``lpes analysis
pulls``: how many candidates its config plans, a candidate's scores and genome as one line, and which way each
task of a gradient search's mixture pulled the genes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..errors import LpesError, whole
from ..io.spec import read_spec
from ..io.store import read_evaluations


def planned_candidates(cfg, run_dir: Path, n_layers: int) -> tuple[int | None, int]:
    """(candidates a full run asks for, generations) from the run's own config."""
    from ..config import plain
    from ..position.curves import build_curve
    from ..optim import build_optimizer

    for group in ("optimizer", "curve"):  # a received record may have lost either block's key
        if not isinstance(cfg.get(group), Mapping):
            raise LpesError(f"{run_dir}: the run record's config has no {group} block")
    options = plain(cfg.optimizer)
    if "start" in options:  # a gradient search's start file: the count does not depend on it, and a received
        options["start"] = None  # record never chooses a file to read
    seed = whole(cfg.get("seed"), f"{run_dir}: the run record's seed", 0)
    optimizer = build_optimizer(options, build_curve(plain(cfg.curve), n_layers), seed)
    return optimizer.planned(), optimizer.generations


def score_line(scores: dict, windows: set[str]) -> str:
    """Exact match by gold position (``task/position`` where a search scores several tasks), or perplexity
    for the text-window tasks named in ``windows`` (a whole window is never matched exactly)."""
    name = (lambda task, pos: f"{task}/{pos}") if len(scores) > 1 else (lambda task, pos: pos)
    cells = []
    for task, per in scores.items():
        for pos, s in per.items():
            if task in windows and s.get("perplexity") is not None:
                cells.append(f"{name(task, pos)}: ppl {s['perplexity']:.3f}")
            elif task not in windows and s.get("accuracy") is not None:
                cells.append(f"{name(task, pos)}:{100 * s['accuracy']:5.1f}")
    return "  ".join(cells)


def window_tasks(config: dict) -> set:
    """The keys under which a run's scores hold its text-window (perplexity) tasks: the main task's name,
    the extra tasks' own keys."""
    extra = config.get("extra_tasks")
    tasks = dict(extra) if isinstance(extra, dict) else {}
    if isinstance(config.get("task"), dict):
        tasks[config["task"].get("name")] = config["task"]
    return {key for key, task in tasks.items() if isinstance(task, dict) and task.get("name") == "perplexity"}


def genome_text(genome: list[float]) -> str:
    """A genome short enough to print whole, else its size and range (a per-frequency one has 768 genes)."""
    if len(genome) <= 12:
        return "[" + ", ".join(f"{g:.3f}" for g in genome) + "]"
    return f"{len(genome)} genes {min(genome):.3f}-{max(genome):.3f}"


def pull_lines(run: Path) -> list[str]:
    """``lpes analysis pulls``: each task's part of a gradient search's steps, by band and depth thirds."""
    from ..judging.pulls import mean_pulls, pull_table

    steps = [r["task_gradients"] for r in read_evaluations(run / "evaluations.jsonl")
             if r["kind"] == "step" and r.get("task_gradients")]
    if not steps:
        raise LpesError(f"{run} holds no step with per-task gradients (recorded by gradient searches since they existed)")
    spec = read_spec(run)
    cfg = spec.cfg()
    if cfg.curve.name != "free":
        raise LpesError(f"{run} searched curve={cfg.curve.name}; pulls are read by layer and band on curve=free's genes")
    n_layers = spec.model["n_layers"]
    genes = {len(g) for step in steps for g in step.values()}
    if len(genes) != 1 or next(iter(genes)) % n_layers:
        raise LpesError(f"{run}: its steps' gradients hold {sorted(genes)} numbers, not one width x {n_layers} "
                        "layers: a damaged or foreign log")
    width = next(iter(genes)) // n_layers
    return [f"{len(steps)} steps"] + pull_table(mean_pulls(steps), n_layers, width)
