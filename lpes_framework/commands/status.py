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
from pathlib import Path

from ..errors import LpesError
from ..model.factors_file import load_factors
from ..position.bands import factor_table
from ..io.spec import read_spec
from ..io.store import JsonLog, RunStore, read_evaluations
from ..search.readout import genome_text, planned_candidates, score_line, window_tasks

TOP = 5


def status(run_dir: Path) -> str:
    if not JsonLog(run_dir / "evaluations.jsonl").exists():
        raise LpesError(f"{run_dir} holds no evaluations.jsonl: not a search run directory, or not started")
    records = read_evaluations(run_dir / "evaluations.jsonl")  # the search may be writing its last line now
    baseline = next((r for r in records if r["kind"] == "baseline"), None)
    candidates = [r for r in records if r["kind"] == "candidate"]
    if baseline is None or not candidates:
        return f"{run_dir}: {'baseline scored' if baseline else 'nothing scored yet'}, no candidate yet"
    spec = read_spec(run_dir)
    planned, generations = planned_candidates(spec.cfg(), run_dir, len(candidates[0]["factors"]))
    windows = window_tasks(spec.config)
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
              f"{'unpatched':>18}  {score_line(baseline['scores'], windows)}"]
    for rank, r in enumerate(ranked[:TOP], 1):
        values = factor_table(r["factors"])  # band-wise: every band's
        lines.append(f"{rank}. fitness {r['outcome']['fitness']:+.4f}  {score_line(r['scores'], windows)}   genome "
                     f"{genome_text(r['genome'])}, factors {values.min():.3f}-{values.max():.3f}, generation {r['generation']}")
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
