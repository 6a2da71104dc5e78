"""How far a search has got, while it runs or after it: ``python -m lpes_framework.commands.status <run dir>``.

Reads what the search writes (``evaluations.jsonl``, whose first record holds the run's settings) and
changes nothing, so it is safe on a search running in the background. Prints the candidates scored out of the
run's plan, the median seconds per candidate and the scoring time left, the best candidates so far
(search split, unpatched = 0) with their exact match by gold position (perplexity for text windows) next to
the unpatched model's,
and the best fitness per generation. No model is loaded.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Mapping
from pathlib import Path

from ..errors import LpesError
from ..model.factors_file import load_factors
from ..position.bands import factor_table
from ..io.store import JsonLog, RunStore, read_evaluations

TOP = 5


def planned_candidates(cfg, run_dir: Path, n_layers: int) -> tuple[int | None, int]:
    """(candidates a full run asks for, generations) from the run's own config."""
    from ..config import plain
    from ..errors import whole
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


def _score_line(scores: dict, windows: set[str]) -> str:
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


def _window_tasks(config: dict) -> set:
    """The keys under which a run's scores hold its text-window (perplexity) tasks: the main task's name,
    the extra tasks' own keys."""
    extra = config.get("extra_tasks")
    tasks = dict(extra) if isinstance(extra, dict) else {}
    if isinstance(config.get("task"), dict):
        tasks[config["task"].get("name")] = config["task"]
    return {key for key, task in tasks.items() if isinstance(task, dict) and task.get("name") == "perplexity"}


def _genome(genome: list[float]) -> str:
    """A genome short enough to print whole, else its size and range (a per-frequency one has 768 genes)."""
    if len(genome) <= 12:
        return "[" + ", ".join(f"{g:.3f}" for g in genome) + "]"
    return f"{len(genome)} genes {min(genome):.3f}-{max(genome):.3f}"


def status(run_dir: Path) -> str:
    if not JsonLog(run_dir / "evaluations.jsonl").exists():
        raise LpesError(f"{run_dir} holds no evaluations.jsonl: not a search run directory, or not started")
    records = read_evaluations(run_dir / "evaluations.jsonl")  # the search may be writing its last line now
    baseline = next((r for r in records if r["kind"] == "baseline"), None)
    candidates = [r for r in records if r["kind"] == "candidate"]
    if baseline is None or not candidates:
        return f"{run_dir}: {'baseline scored' if baseline else 'nothing scored yet'}, no candidate yet"
    from ..io.spec import read_spec

    spec = read_spec(run_dir)
    planned, generations = planned_candidates(spec.cfg(), run_dir, len(candidates[0]["factors"]))
    windows = _window_tasks(spec.config)
    result = run_dir / "best_factors.json"
    # A candidate of generation g means generations 0..g-1 are done; the checkpoint (not kept in copied run
    # folders) also knows when the newest generation finished before the next one started.
    state = None if result.is_file() else RunStore(run_dir).load_checkpoint()
    seen = max(r["generation"] for r in candidates)
    finished = generations if result.is_file() else max(seen, state["optimizer"]["generation"] if state else 0)
    timed = [r["seconds"] for r in candidates if "same_as" not in r]  # a reused score took no time
    each = statistics.median(timed) if timed else baseline["seconds"]
    lines = [f"{run_dir}: {len(candidates)} candidates scored, {finished} of {generations} generations finished"
             + (f" (at most {planned} candidates planned)" if planned else "") + f", {each:.0f} s per candidate (median)"]
    steps = [r for r in records if r["kind"] == "step"]  # optimizer=gradient
    if steps:
        per_step = statistics.median(r["seconds"] for r in steps)
        lines[0] = (f"{run_dir}: {len(steps)} of {generations} gradient steps, {per_step:.0f} s per step (median); "
                    f"{len(candidates)} fixed-split scorings ({each:.0f} s each)")
        if len(steps) < generations:
            lines[0] += f"; about {(generations - len(steps)) * per_step / 60:.0f} min of steps left"
        lines.append("minibatch objective, last steps: " + "  ".join(f"{r['objective']:+.3f}" for r in steps[-8:]))
    elif finished < generations and planned and len(candidates) < planned:
        left = (planned - len(candidates)) * each / 60
        lines[0] += f"; about {left:.0f} min of scoring left, then validation and test"
    ranked = sorted(candidates, key=lambda r: r["outcome"]["fitness"], reverse=True)
    lines += ["", "exact match % by gold position, perplexity of text windows (search split)",
              f"{'unpatched':>18}  {_score_line(baseline['scores'], windows)}"]
    for rank, r in enumerate(ranked[:TOP], 1):
        values = factor_table(r["factors"])  # band-wise: every band's
        lines.append(f"{rank}. fitness {r['outcome']['fitness']:+.4f}  {_score_line(r['scores'], windows)}   genome "
                     f"{_genome(r['genome'])}, factors {values.min():.3f}-{values.max():.3f}, generation {r['generation']}")
    by_generation: dict[int, list[float]] = {}
    for r in candidates:
        by_generation.setdefault(r["generation"], []).append(r["outcome"]["fitness"])
    lines += ["", "best new candidate per generation (candidates): " + "  ".join(
        f"{g}: {max(f):+.4f} ({len(f)})" for g, f in sorted(by_generation.items()))]
    if result.is_file():
        validation = load_factors(result)["metrics"].get("validation") or {}
        chosen = validation.get("chosen", "the best")
        if chosen in validation.get("intervals", {}):  # searches before the noise floor was recorded have none
            low, high = validation["intervals"][chosen]
            fitness = validation["fitness"][chosen]
            chosen += f" (validation fitness {fitness:+.4f}, 95% interval [{low:+.4f}, {high:+.4f}])"
        lines.append(f"finished: validation chose {chosen}; held-out result in {run_dir / 'report.md'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    from .cli import one_line_errors

    parser = argparse.ArgumentParser(prog="python -m lpes_framework.commands.status", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a search run directory (hydra.run.dir of the search)")
    args = parser.parse_args(argv)
    print(one_line_errors(status)(args.run))


if __name__ == "__main__":
    main()
