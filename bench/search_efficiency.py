"""Search methods at an equal budget, same seed and same search data, on the embedded model or another
(``--model``, with the regime in ``--overrides``): Bezier GA, free GA, random search (Bezier genomes) and
the gradient optimizer (free curve), or the ``--optimizers`` named.

Cost is counted in forward-equivalents: one scoring of the fixed search split is 1 (every GA or random
candidate; the identity seed takes the unpatched scores and costs nothing), and a gradient step is its
share of the split's samples times (1 + its measured gradient-pass / forward seconds), the unpatched
forward of its minibatch included. Fitness is the search split's, read from each run's
``evaluations.jsonl``. Reports each method's best fitness and the forward-equivalents it needed to reach
the free GA's best; ``--plot`` draws best-so-far fitness against forward-equivalents.
Last line: bezier_eval_ratio=<evals bezier / evals free> bezier_vs_random=<best bezier - best random>
gradient_cost_ratio=<forward-equivalents gradient / free GA to reach the free GA's best>
(each only where its methods ran; the ratios are nan where the free GA found nothing above unpatched)."""

from __future__ import annotations

import argparse
import contextlib
import math
import tempfile
from pathlib import Path


from common import embedded
from lpes_framework.io.store import JsonLog


def trajectory(records: list[dict], split_contexts: int) -> list[tuple[float, float]]:
    """(forward-equivalents spent, best fitness so far) after each search-split scoring, in log order."""
    spent, best, out = 0.0, -math.inf, []
    for r in records:
        if r["kind"] == "step":
            parts = r["seconds_parts"]
            share = len(r["draws"]) / split_contexts  # each draw is one context with every gold position
            spent += share * (1 + parts["gradient"] / max(parts["baseline"], 1e-9))
        elif r["kind"] == "candidate":
            spent += 0.0 if "same_as" in r else 1.0
            best = max(best, r["outcome"]["fitness"])
            out.append((spent, best))
    return out


def cost_to_reach(curve: list[tuple[float, float]], target: float) -> float:
    return next((spent for spent, best in curve if best >= target - 1e-12), math.inf)


def cost_ratio(curves: dict, name: str, target: float) -> float:
    """Cost of ``name`` over the free GA's to reach ``target``; NaN where the free GA's best is the
    unpatched model (reached at no cost: there is nothing to be faster at)."""
    free = cost_to_reach(curves["free-GA"], target)
    return math.nan if free == 0 else cost_to_reach(curves[name], target) / free


@contextlib.contextmanager
def run_folder(out: str | None, name: str):
    """(folder, resume): ``out/name`` kept and resumed where ``--out`` is given, else a temporary folder."""
    if out is None:
        with tempfile.TemporaryDirectory() as tmp:
            yield tmp, False
        return
    folder = Path(out) / name.lower()
    yield folder, JsonLog(folder / "evaluations.jsonl").exists()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="smollm2", help="model config group")
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--optimizers", nargs="+", default=["bezier-GA", "free-GA", "random", "gradient"],
                        choices=["bezier-GA", "free-GA", "random", "gradient"])
    parser.add_argument("--gradient", nargs="*", default=["optimizer.steps=20", "optimizer.eval_every=5"],
                        help="overrides of the gradient optimizer's run")
    parser.add_argument("--overrides", nargs="*", default=[
        "task.gold_positions=[0,10,19]", "task.samples_per_position=3", "pos.wavelength_low=256",
        "curve.low=0.5", "curve.high=1.5"])
    parser.add_argument("--out", help="keep each method's search in OUT/<method> and resume it from there when "
                        "run again (a long run over several sessions); default: temporary folders")
    parser.add_argument("--plot", help="write best-so-far fitness vs forward-equivalents to this PNG")
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
        "gradient": ["curve=free", "optimizer=gradient", *args.gradient],
    }
    curves = {}
    for name in args.optimizers:
        with run_folder(args.out, name) as (out, resume):
            cfg = compose_config("config", [f"model={args.model}", "progress=false", f"resume={resume}",
                                            *args.overrides, *runs[name]])
            search = Search(cfg, out)
            search.setup((model, tok, info))
            search.loop()
            curve = trajectory(JsonLog(Path(out) / "evaluations.jsonl").read(), search.fixed_contexts)
        curves[name] = curve if name == "gradient" else curve[:budget]
    print(f"{info.name}: budget {budget} evaluations per GA / random method; overrides {args.overrides}")
    target = curves["free-GA"][-1][1] if "free-GA" in curves else None
    for name, c in curves.items():
        reach = f"; reached free-GA's best ({target:+.4f}) after {cost_to_reach(c, target):.1f}" if target is not None else ""
        print(f"{name:10s} best fitness {c[-1][1]:+.4f} after {c[-1][0]:.1f} forward-equivalents{reach}")
    if args.plot:
        from lpes_framework.report.plots import plot_convergence

        plot_convergence(curves, args.plot, title=f"{info.name}: search split fitness vs cost")
    line = []
    if {"bezier-GA", "free-GA"} <= set(curves):
        line.append(f"bezier_eval_ratio={cost_ratio(curves, 'bezier-GA', target):.4f}")
    if {"bezier-GA", "random"} <= set(curves):
        line.append(f"bezier_vs_random={curves['bezier-GA'][-1][1] - curves['random'][-1][1]:+.4f}")
    if {"gradient", "free-GA"} <= set(curves):
        line.append(f"gradient_cost_ratio={cost_ratio(curves, 'gradient', target):.4f}")
    print(" ".join(line))


if __name__ == "__main__":
    main()
