"""Bezier-GA vs free-GA vs random search (bezier genomes) at an equal evaluation budget, same seed and
same search data, on the embedded model or another (``--model``, with the regime in ``--overrides``).
Reports each method's best fitness and how many evaluations it needed to reach the free-GA's best (the
identity seed is evaluated first by all three and scores 0).
Last line: bezier_eval_ratio=<evals bezier / evals free> bezier_vs_random=<best bezier - best random>."""

from __future__ import annotations

import argparse
import contextlib
import math
import tempfile
from pathlib import Path

import numpy as np

from common import embedded


def trajectory(search) -> list[float]:
    """Best fitness so far after each evaluation, in evaluation order."""
    fitness = [o.fitness for _, o in search.optimizer.history.values()]
    return list(np.maximum.accumulate(fitness))


def evals_to_reach(best_so_far: list[float], target: float) -> float:
    return next((i + 1 for i, f in enumerate(best_so_far) if f >= target - 1e-12), math.inf)


@contextlib.contextmanager
def run_folder(out: str | None, name: str):
    """(folder, resume): ``out/name`` kept and resumed where ``--out`` is given, else a temporary folder."""
    if out is None:
        with tempfile.TemporaryDirectory() as tmp:
            yield tmp, False
        return
    folder = Path(out) / name.lower()
    yield folder, (folder / "evaluations.jsonl").is_file()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="smollm2", help="model config group")
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--overrides", nargs="*", default=[
        "task.gold_positions=[0,10,19]", "task.samples_per_position=3", "pos.wavelength_low=256",
        "curve.low=0.5", "curve.high=1.5"])
    parser.add_argument("--out", help="keep each method's search in OUT/<method> and resume it from there when "
                        "run again (a long run over several sessions); default: temporary folders")
    args = parser.parse_args()
    from lpes_framework.config import compose_config
    from lpes_framework.search import Search

    _, model, tok, info = embedded([f"model={args.model}"])
    ga = [f"optimizer.generations={args.generations}", "optimizer.population=8", "optimizer.parents=4",
          "optimizer.mutations=3", "optimizer.crossovers=3", "optimizer.init_uniform=[0.9,1.1]"]
    budget = 8 + 6 * (args.generations - 1)
    runs = {
        "bezier-GA": ["curve=bezier", *ga],
        "free-GA": ["curve=free", *ga],
        "random": ["curve=bezier", "optimizer=random", "optimizer.population=6",
                   f"optimizer.generations={math.ceil(budget / 6)}"],
    }
    curves = {}
    for name, overrides in runs.items():
        with run_folder(args.out, name) as (out, resume):
            cfg = compose_config("config", [f"model={args.model}", "progress=false", f"resume={resume}",
                                            *args.overrides, *overrides])
            search = Search(cfg, out)
            search.setup((model, tok, info))
            search.loop()
        curves[name] = trajectory(search)[:budget]
    target = curves["free-GA"][-1]
    reach = {name: evals_to_reach(c, target) for name, c in curves.items()}
    print(f"{info.name}: budget {budget} evaluations per method; overrides {args.overrides}")
    for name, c in curves.items():
        print(f"{name:10s} best fitness {c[-1]:+.4f} after {len(c)} evaluations; "
              f"reached free-GA's best ({target:+.4f}) after {reach[name]} evaluations")
    print(f"bezier_eval_ratio={reach['bezier-GA'] / reach['free-GA']:.4f} "
          f"bezier_vs_random={curves['bezier-GA'][-1] - curves['random'][-1]:+.4f}")


if __name__ == "__main__":
    main()
