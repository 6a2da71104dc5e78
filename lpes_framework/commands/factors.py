"""The factors file of a run's best entry: a search's best candidate, or an evaluate folder's best method.

    python -m lpes_framework.commands.factors <search run> [--uniform] --out best.json
    python -m lpes_framework.commands.factors <evaluate folder> --baseline <search run> --out best.json
    python -m lpes_framework.commands.factors <factors file> --fit bezier [--control-points 4] --out fitted.json

A search writes ``best_factors.json`` itself, after validation; this is for the runs that stop short of
it (a search-efficiency comparison, a killed search) and for tuning sweeps: ``evaluate`` on the search
split with several uniform factors, whose best by the search's fitness becomes the baseline's factors file.

- A search folder: the candidate with the best recorded search fitness in ``evaluations.jsonl`` (with
  ``--uniform``: among those with one factor other than 1 in every layer); the model block, scheme, curve and task
  come from the run record (the model block of its own ``best_factors.json`` for runs written before the
  record), the candidate's outcome goes into ``metrics.search``.
- ``--fit <curve>`` on a factors file: the genome of that curve (within the file's curve bounds) whose
  factors are closest to the file's in least squares, as a factors file of its own (``metrics.fit``: the
  source, the largest and the root-mean-square factor change): does a few-gene curve lose what a free
  search found? Re-test it held out like any other file.
- An evaluate folder: every patched method in ``results.json`` is scored by the fitness against the
  folder's ``unpatched`` row with the default fitness weights, or, with ``--baseline`` (a search run on
  the same split and samples: a tuning sweep judged the way that search judged its candidates), against
  that search's baseline with its weights; the best one's factors and scheme, with every method's fitness
  and the weights in ``metrics.search``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import LpesError
from ..evaluation.fitness import FitnessWeights, task_score
from ..evaluation.results import scores_from_json
from ..io.spec import read_spec
from ..io.store import read_evaluations, read_results
from ..model.factors import factors_record, write_json_atomic
from .cli import one_line_errors, plain, task_specs


def _records(run: Path, kind: str) -> list[dict]:
    return [r for r in read_evaluations(run / "evaluations.jsonl") if r["kind"] == kind]


def best_candidate(run: Path, uniform: bool = False) -> dict:
    """The factors record of the search run's best candidate by its recorded search fitness (``uniform``:
    of those with one factor other than 1 in every layer: the uniform baseline a search tests its answer
    against)."""
    from ..position.bands import band_count
    from ..position.curves import build_curve, uniform_scaling

    spec = read_spec(run)
    model = spec.model
    if not model and (run / "best_factors.json").is_file():  # written before the run record: the run's own file
        model = json.loads((run / "best_factors.json").read_text())["model"]
    if not model:
        raise LpesError(f"{run} was written before the run record and holds no best_factors.json: its model is "
                        "unknown, so no factors file can be made from it")
    candidates = [r for r in _records(run, "candidate") if not uniform or uniform_scaling(r["genome"])]
    if not candidates:
        raise LpesError(f"{run / 'evaluations.jsonl'} holds no scored {'uniform ' if uniform else ''}candidate")
    best = max(candidates, key=lambda r: r["outcome"]["fitness"])
    cfg = spec.cfg()
    curve = build_curve(plain(cfg.curve), model["n_layers"], bands=band_count(plain(cfg.pos)))
    return factors_record(model=model, scheme=plain(cfg.pos), factors=best["factors"], curve=curve.settings(),
                          genome=best["genome"], task=task_specs(cfg)[cfg.task.name],
                          metrics={"search": best["outcome"]}) | {"run": spec.as_json()}


def fitted(path: Path, curve_cfg: dict) -> dict:
    """The factors file at ``path`` redrawn by the curve ``curve_cfg`` (bounds default to the file's)."""
    import numpy as np

    from ..model.factors import load_factors
    from ..position.bands import band_count
    from ..position.curves import build_curve

    record = load_factors(path)
    bounds = {k: record["curve"][k] for k in ("low", "high") if record.get("curve") and k in record["curve"]}
    curve = build_curve(bounds | curve_cfg, len(record["factors"]), bands=band_count(record["scheme"]))
    genome = curve.fit(record["factors"])
    factors = curve.factors(genome)
    change = factors - np.asarray(record["factors"])
    fit = {"from": str(path), "max_abs_change": float(np.abs(change).max()),
           "rms_change": float(np.sqrt((change ** 2).mean()))}
    return factors_record(model=record["model"], scheme=record["scheme"], factors=factors.tolist(),
                          curve=curve.settings(), genome=[float(g) for g in genome], task=record.get("task"),
                          metrics={"fit": fit}) | ({"run": record["run"]} if "run" in record else {})


def best_method(folder: Path, baseline: Path | None = None) -> dict:
    """The factors record of the evaluate folder's best patched method by the fitness: against the
    ``baseline`` search run's baseline scores with its weights, or against the folder's unpatched row with
    the default weights (evaluate has no fitness of its own)."""
    path = folder / "results.json"
    results = read_results(folder)
    task = next(iter(results["tasks"]))  # the primary task comes first
    judge = read_spec(baseline).cfg() if baseline is not None else {}
    weights = FitnessWeights(**plain(judge["fitness"])) if "fitness" in judge else FitnessWeights()
    methods = {name: m for name, m in results["methods"].items() if m.get("factors") is not None}
    if not methods:
        raise LpesError(f"{path} holds no patched method")
    if baseline is not None:
        records = _records(baseline, "baseline")
        if not records:
            raise LpesError(f"{baseline / 'evaluations.jsonl'} holds no baseline record")
        base = scores_from_json(records[0]["scores"])[task]
    elif "unpatched" in results["methods"]:
        base = scores_from_json(results["methods"]["unpatched"]["scores"])[task]
    else:
        raise LpesError(f"{path} holds no unpatched row: pass --baseline <search run> scored on the same samples")
    fitness = {name: task_score(scores_from_json(m["scores"])[task], base, weights) for name, m in methods.items()}
    best = max(fitness, key=fitness.get)
    return factors_record(model=results["model"], scheme=methods[best]["scheme"], factors=methods[best]["factors"],
                          task=results["tasks"][task],
                          metrics={"search": {"chosen": best, "fitness": fitness, "weights": weights.__dict__}})


@one_line_errors
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lpes_framework.commands.factors",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a search run (evaluations.jsonl), an evaluate folder (results.json), "
                                               "or with --fit a factors file")
    parser.add_argument("--baseline", type=Path, help="evaluate folders without an unpatched row: a search run "
                                                      "whose baseline record scored the same samples")
    parser.add_argument("--uniform", action="store_true", help="a search run's best uniform candidate (one factor "
                                                                "other than 1 in every layer)")
    parser.add_argument("--fit", help="a curve (e.g. bezier) to redraw the factors file in")
    parser.add_argument("--control-points", type=int, help="--fit bezier: control points (default 4: cubic)")
    parser.add_argument("--out", type=Path, required=True, help="the factors file to write")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)  # a new run folder for the file, as every command makes its own
    if args.control_points is not None and not args.fit:
        raise LpesError("--control-points is for --fit (e.g. --fit bezier --control-points 5)")
    if args.fit and (args.uniform or args.baseline is not None):
        raise LpesError("--fit redraws a factors file; --uniform and --baseline choose from a run")
    if args.fit:
        cfg = {"name": args.fit} | ({} if args.control_points is None else {"control_points": args.control_points})
        record = fitted(args.run, cfg)
        write_json_atomic(args.out, record)
        fit = record["metrics"]["fit"]
        print(f"wrote {args.out}: {args.fit} fit, factors moved by {fit['max_abs_change']:.4f} at most "
              f"({fit['rms_change']:.4f} rms)")
        return
    search = (args.run / "evaluations.jsonl").is_file()
    if search and args.baseline is not None:
        raise LpesError("--baseline is for evaluate folders; a search run has its own baseline")
    if not search and args.uniform:
        raise LpesError("--uniform is for search runs; an evaluate folder's methods are chosen among as scored")
    record = best_candidate(args.run, args.uniform) if search else best_method(args.run, args.baseline)
    write_json_atomic(args.out, record)
    print(f"wrote {args.out}: {len(record['factors'])} factors under {record['scheme']['name']}"
          + (f" ({record['metrics']['search']['chosen']})" if not search else ""))


if __name__ == "__main__":
    main()
