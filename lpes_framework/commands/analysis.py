"""Analyses of scored rows made after the fact, without a model: one method against the others on the
haystacks they share, by blocks of haystacks, the noise floor of the search's fitness, perplexity by
position bucket (inside a model's trained window and beyond it), and which way each task of a gradient
search's mixture pulls the factors.

    lpes analysis versus <evaluate folder> [<folder> ...] --method "file <run>"
        [--blocks 0-99 100-199]
    lpes analysis noise <evaluate folder>
    lpes analysis buckets <evaluate folder> [<folder> ...] --edges 0 8192 16384
        [--task perplexity] [--versus "uniform pi 2"] [--plot buckets.png --window 8192]
    lpes analysis pulls <gradient search run>

Rows come from evaluate folders (``rows.jsonl``, each method's most complete record; several folders are
joined as ``evaluate.rows`` says); the statistics are ``judging.versus``, ``judging.buckets`` and
``judging.pulls`` (from the step records of a search with the free curve).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from ..evaluate.rows import folder_rows, logged_rows, merge_rows
from ..errors import LpesError
from ..judging.buckets import bucket_summary, bucket_table
from ..judging.results import by_position
from ..judging.versus import noise_floor, versus
from ..report.plots import plot_buckets
from ..search.readout import pull_lines
from .cli import one_line_errors


def plot_bucket_folders(folders: Sequence[Path], edges: Sequence[int], path: Path, *, task: str = "perplexity",
                        depth_task: str = "passkey", window: int | None = None) -> Path:
    """``report.plots.plot_buckets`` of evaluate folders: every method's perplexity by position bucket and,
    where the folders scored ``depth_task`` too, its accuracy and gold log-prob by depth."""
    logged = {folder: logged_rows(folder) for folder in folders}  # each rows.jsonl read once
    reached, summary, _ = bucket_summary(merge_rows(logged, task), edges)
    centres = [(edges[i] + edges[i + 1]) / 2 for i in reached]
    perplexity = {m: (centres, point[reached], low[reached], high[reached]) for m, (_, point, low, high) in summary.items()}
    # only the folders that scored the depth task: merge_rows refuses a folder without it
    scored = {f: per_method for f, per_method in logged.items() if any(depth_task in per for per in per_method.values())}
    depth = {m: by_position(per) for m, per in merge_rows(scored, depth_task).items()} if scored else {}
    return plot_buckets(perplexity, depth, path, window=window, depth_task=depth_task)


def _block(text: str) -> range:
    first, _, last = text.partition("-")
    if not (first.isdigit() and last.isdigit()) or int(last) < int(first):
        raise LpesError(f"--blocks: {text!r} is not a haystack range like 0-99")
    return range(int(first), int(last) + 1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="lpes analysis", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    vs = commands.add_parser("versus", help="one method minus every other, paired on the haystacks they share")
    vs.add_argument("folders", nargs="+", type=Path, help="evaluate folders (their rows.jsonl)")
    vs.add_argument("--method", required=True, help="the method's row name, e.g. 'file qwen-free-ga-heldout'")
    vs.add_argument("--task", default="kv_retrieval")
    vs.add_argument("--blocks", nargs="*", default=[], help="haystack ranges to report apart, e.g. 0-99 100-199")
    noise = commands.add_parser("noise", help="the fitness's noise floor at the search's sample size")
    noise.add_argument("folder", type=Path)
    noise.add_argument("--task", default="kv_retrieval")
    noise.add_argument("--sample", type=int, default=10, help="haystacks per subset (the search's sample size)")
    noise.add_argument("--end-penalty", type=float, help="the fitness's (default: the search config's)")
    noise.add_argument("--logprob-weight", type=float, help="the fitness's (default: the search config's)")
    buckets = commands.add_parser("buckets", help="perplexity by position bucket, and ratios to one method")
    buckets.add_argument("folders", nargs="+", type=Path, help="evaluate folders (their rows.jsonl)")
    buckets.add_argument("--edges", nargs="+", type=int, required=True, help="bucket edges in tokens, e.g. 0 8192 16384")
    buckets.add_argument("--task", default="perplexity")
    buckets.add_argument("--versus", help="a method to divide every other's perplexity by, e.g. 'unpatched'")
    buckets.add_argument("--plot", type=Path, help="also draw the buckets (and the passkey by depth, if scored) here")
    buckets.add_argument("--window", type=int, help="the model's trained window, marked on the plot")
    pulls = commands.add_parser("pulls", help="each task's part of a gradient search's steps, by band and depth")
    pulls.add_argument("run", type=Path, help="a gradient search folder (evaluations.jsonl)")
    args = parser.parse_args(argv)
    one_line_errors(_run)(args)


def _run(args) -> None:
    if args.command == "pulls":
        print("\n".join(pull_lines(args.run)))
        return
    if args.command == "versus":
        blocks = [_block(b) for b in args.blocks] + [None]
        print("\n".join(versus(folder_rows(args.folders, args.task), args.method, blocks)))
        return
    if args.command == "buckets":
        print("\n".join(bucket_table(folder_rows(args.folders, args.task), args.edges, args.versus)))
        if args.plot:
            print(f"wrote {plot_bucket_folders(args.folders, args.edges, args.plot, task=args.task, window=args.window)}")
        return
    from ..judging.fitness import FitnessWeights
    from ..io.store import read_results
    from ..tasks import TASKS

    scored = read_results(args.folder)["tasks"]  # the evaluate run's tasks, as it scored them
    if args.task not in scored:
        raise LpesError(f"{args.folder} scored no task {args.task!r} (it scored {', '.join(scored)})")
    tasks = {args.task: TASKS.build({"name": args.task, **scored[args.task]})}
    rows = {m: {args.task: per[args.task]} for m, per in logged_rows(args.folder).items() if args.task in per}
    given = {"end_penalty": args.end_penalty, "logprob_weight": args.logprob_weight}
    weights = FitnessWeights.defaults(**{k: v for k, v in given.items() if v is not None})
    print("\n".join(noise_floor(rows, tasks, weights, sample=args.sample)))


if __name__ == "__main__":
    main()
