"""The factors file of a run's best entry: a search's best candidate, or an evaluate folder's best method.

    lpes factors <search run> [--uniform] --out best.json
    lpes factors <evaluate folder> --baseline <search run> --out best.json
    lpes factors <factors file> --fit bezier [--control-points 4] --out fitted.json
    lpes factors <factors file> --bands per_frequency --out finer.json
    lpes factors <factors file> --hold-to 8192 --out servable.json

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
- ``--bands <wavelengths or per_frequency>`` on a factors file: the same schedule on finer bands (each new
  band takes the factor of the old band holding its rotary dimensions: the model computes the same), the
  start of a finer search (``optimizer.start=finer.json`` with ``pos.bands`` set alike).
- ``--hold-to <tokens>`` on a factors file: each layer's low factors raised to the least floor that keeps its
  tables fixed up to that many tokens (``metrics.held_to``: the floors and how much moved). Dynamic NTK lifts
  a factor below 1 as the input grows, which an engine serving one fixed table (vLLM, an exported folder)
  cannot follow; the result serves that length there. It is another schedule: re-test it held out.
- An evaluate folder: every patched method in ``results.json`` is scored by the fitness against the
  folder's ``unpatched`` row with the default fitness weights, or, with ``--baseline`` (a search run on
  the same split and samples: a tuning sweep judged the way that search judged its candidates), against
  that search's baseline with its weights; the best one's factors and scheme, with every method's fitness
  and the weights in ``metrics.search``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..evaluate.best import best_candidate, best_method, fitted, held_to, rebanded
from ..errors import LpesError
from ..io.store import JsonLog
from ..io.atomic import write_json_atomic
from .cli import one_line_errors


@one_line_errors
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="lpes factors",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a search run (evaluations.jsonl), an evaluate folder (results.json), "
                                               "or with --fit a factors file")
    parser.add_argument("--baseline", type=Path, help="evaluate folders without an unpatched row: a search run "
                                                      "whose baseline record scored the same samples")
    parser.add_argument("--uniform", action="store_true", help="a search run's best uniform candidate (one factor "
                                                                "other than 1 in every layer)")
    parser.add_argument("--fit", help="a curve (e.g. bezier) to redraw the factors file in")
    parser.add_argument("--control-points", type=int, help="--fit bezier: control points (default 4: cubic)")
    parser.add_argument("--bands", help="finer bands to redraw the factors file on: per_frequency or a JSON list "
                                        "of wavelengths")
    parser.add_argument("--hold-to", type=int, metavar="TOKENS", help="raise low factors until every layer's "
                                                                       "tables stay fixed up to this length")
    parser.add_argument("--out", type=Path, required=True, help="the factors file to write")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)  # a new run folder for the file, as every command makes its own
    if args.control_points is not None and not args.fit:
        raise LpesError("--control-points is for --fit (e.g. --fit bezier --control-points 5)")
    if args.fit and (args.uniform or args.baseline is not None):
        raise LpesError("--fit redraws a factors file; --uniform and --baseline choose from a run")
    if args.hold_to is not None:
        if args.fit or args.bands or args.uniform or args.baseline is not None:
            raise LpesError("--hold-to redraws a factors file; give it alone")
        if not 2 <= args.hold_to < 2**31:  # past int32 no engine indexes a position (and past int64 torch cannot)
            raise LpesError(f"--hold-to is a prompt length in tokens (2 to {2**31 - 1}), got {args.hold_to}")
        record = held_to(args.run, args.hold_to)
        write_json_atomic(args.out, record)
        held = record["metrics"]["held_to"]
        print(f"wrote {args.out}: tables fixed up to {args.hold_to} tokens; {held['changed']} factors raised in "
              f"{len(held['floors'])} layers, by {held['max_abs_change']:.4f} at most")
        return
    if args.bands:
        if args.fit or args.uniform or args.baseline is not None:
            raise LpesError("--bands redraws a factors file on finer bands; give it alone")
        record = rebanded(args.run, args.bands if args.bands == "per_frequency" else _wavelengths(args.bands))
        write_json_atomic(args.out, record)
        print(f"wrote {args.out}: {len(record['scheme']['bands']) + 1} bands a layer")
        return
    if args.fit:
        cfg = {"name": args.fit} | ({} if args.control_points is None else {"control_points": args.control_points})
        record = fitted(args.run, cfg)
        write_json_atomic(args.out, record)
        fit = record["metrics"]["fit"]
        print(f"wrote {args.out}: {args.fit} fit, factors moved by {fit['max_abs_change']:.4f} at most "
              f"({fit['rms_change']:.4f} rms)")
        return
    search = JsonLog(args.run / "evaluations.jsonl").exists()
    if search and args.baseline is not None:
        raise LpesError("--baseline is for evaluate folders; a search run has its own baseline")
    if not search and args.uniform:
        raise LpesError("--uniform is for search runs; an evaluate folder's methods are chosen among as scored")
    record = best_candidate(args.run, args.uniform) if search else best_method(args.run, args.baseline)
    write_json_atomic(args.out, record)
    print(f"wrote {args.out}: {len(record['factors'])} factors under {record['scheme']['name']}"
          + (f" ({record['metrics']['search']['chosen']})" if not search else ""))


def _wavelengths(text: str) -> list:
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise LpesError(f"--bands must be per_frequency or a JSON list of wavelengths, e.g. [64,512,4096]; got {text!r}") from None


if __name__ == "__main__":
    main()
