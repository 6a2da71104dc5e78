"""Analyses of scored rows made after the fact, without a model: one method against the others on the
haystacks they share, by blocks of haystacks, the noise floor of the search's fitness, and perplexity by
position bucket (inside a model's trained window and beyond it).

    python -m lpes_framework.commands.analysis versus <evaluate folder> [<folder> ...] --method "file <run>"
        [--blocks 0-99 100-199]
    python -m lpes_framework.commands.analysis noise <evaluate folder>
    python -m lpes_framework.commands.analysis buckets <evaluate folder> [<folder> ...] --edges 0 8192 16384
        [--task perplexity] [--versus "uniform pi 2"] [--plot buckets.png --window 8192]

Rows come from evaluate folders (``rows.jsonl``, each method's most complete record). Methods are
joined by their rows' (haystack, gold position), never by list order; several folders may be read
together when their unpatched rows agree on the haystacks they share (checked: the same samples with
the same scores), so a method scored in one folder is compared with baselines scored in another.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..errors import LpesError
from ..evaluation.fitness import end_positions, fitness_interval
from ..evaluation.results import ScoreRow
from ..evaluation.stats import Interval, logprob_bootstrap, middle_positions, paired_bootstrap

Rows = dict[str, list[ScoreRow]]  # method -> rows of one task, sorted by (draw, position)


def folder_rows(folders: Sequence[Path], task: str) -> Rows:
    """Every method's rows of ``task`` in the folders; the unpatched rows of any two folders must agree
    on the haystacks both scored."""
    from .evaluate import logged_rows

    return merge_rows({folder: logged_rows(folder) for folder in folders}, task)


def merge_rows(logged: dict[Path, dict], task: str) -> Rows:
    """``folder_rows`` of folders already read: folder -> its ``evaluate.logged_rows``."""
    merged: Rows = {}
    first = next(iter(logged), None)
    for folder, per_method in logged.items():
        rows = {m: per[task] for m, per in per_method.items() if task in per}
        if not rows:
            raise LpesError(f"{folder}: no {task} rows (rows.jsonl of an evaluate run)")
        if "unpatched" in rows and "unpatched" in merged:
            mine, theirs = (_by_sample(r) for r in (rows["unpatched"], merged["unpatched"]))
            shared = mine.keys() & theirs.keys()
            if any(mine[k] != theirs[k] for k in shared):
                raise LpesError(f"{folder}: its unpatched rows differ from those of {first} on the same "
                                "haystacks: not the same samples, so their methods cannot be paired")
        for method, per in rows.items():
            merged[method] = sorted({**_by_sample(merged.get(method, [])), **_by_sample(per)}.values(),
                                    key=lambda r: (r.draw, r.position))
    return merged


def _by_sample(rows: Sequence[ScoreRow]) -> dict[tuple, ScoreRow]:
    return {(r.draw, str(r.position)): r for r in rows}


def paired(a: Sequence[ScoreRow], b: Sequence[ScoreRow], haystacks: range | None = None):
    """The rows of ``a`` and ``b`` on the samples both scored (within ``haystacks``), in ``a``'s order."""
    mine, theirs = _by_sample(a), _by_sample(b)
    keys = [k for k in mine if k in theirs and (haystacks is None or k[0] in haystacks)]
    return [mine[k] for k in keys], [theirs[k] for k in keys]


def versus(rows: Rows, method: str, blocks: Sequence[range | None] = (None,)) -> list[str]:
    """``method`` minus every other method, per block of haystacks (None: all they share): exact-match
    points in the middle (95% paired interval), at the two ends, per middle position, and the gold
    log-prob per token with its interval."""
    if method not in rows:
        raise LpesError(f"no method {method!r} among {sorted(rows)}")
    lines = []
    for other in (m for m in rows if m != method):
        for block in blocks:
            a, b = paired(rows[method], rows[other], block)
            if not a:
                continue
            interval = paired_bootstrap(a, b)
            positions = [p for p in interval if p != "middle"]
            inner = middle_positions(positions)
            # one gold position: it is both ends
            shallow, deep = sorted(end_positions(positions), key=float) or (positions[0], positions[0])
            logprob = logprob_bootstrap(a, b)
            span = f"haystacks {block.start}-{block.stop - 1}" if block else f"{len({r.draw for r in a})} haystacks"
            lines.append(f"{method} - {other} ({span}): middle {interval['middle']}  ends "
                         f"{interval[shallow].delta:+.1f} / {interval[deep].delta:+.1f}  gold log-prob "
                         f"{logprob.delta:+.4f} [{logprob.low:+.4f}, {logprob.high:+.4f}]\n  "
                         + "  ".join(f"{p}: {interval[p]}" for p in inner))
    return lines


def noise_floor(rows: Mapping[str, Mapping[str, list[ScoreRow]]], tasks: Mapping, weights, *, sample: int = 10,
                subsets: int = 500) -> list[str]:
    """The search's noise floor from held-out rows: each method's fitness against unpatched (the search's
    own formula) with its 95% interval on all haystacks and on the first ``sample`` of them, and its spread
    over random ``sample``-haystack subsets (the search's and validation's sample size); the separation (fitness over that spread) says
    how well a search at ``sample`` haystacks can see the effect under these weights."""
    haystacks = sorted({r.draw for per in rows["unpatched"].values() for r in per})

    def on(method: str, keep) -> dict:
        keep = set(keep)
        return {task: [r for r in per if r.draw in keep] for task, per in rows[method].items()}

    lines = []
    for name in (m for m in rows if m != "unpatched"):
        whole = fitness_interval(rows[name], rows["unpatched"], tasks, weights)
        first = fitness_interval(on(name, haystacks[:sample]), on("unpatched", haystacks[:sample]), tasks, weights)
        rng = random.Random(0)
        spread = [fitness_interval(on(name, s), on("unpatched", s), tasks, weights, resamples=1)[0]
                  for s in (rng.sample(haystacks, sample) for _ in range(subsets))]
        sd = statistics.stdev(spread)
        separation = whole[0] / sd if sd else math.nan  # no spread: identical to unpatched on every subset
        lines.append(f"{name}: {len(haystacks)} haystacks {whole[0]:+.4f} [{whole[1]:+.4f}, {whole[2]:+.4f}]; "
                     f"first {sample} {first[0]:+.4f} [{first[1]:+.4f}, {first[2]:+.4f}]; {subsets} random "
                     f"{sample}-haystack subsets: sd {sd:.4f}, range {min(spread):+.4f} to {max(spread):+.4f}; "
                     f"separation {separation:+.2f}")
    return lines


def bucket_logprobs(rows: Sequence[ScoreRow], edges: Sequence[int]) -> np.ndarray:
    """(windows x buckets) sums of token log-probs and token counts of whole-text rows: token ``k`` of a
    window's scored continuation sits at position ``k + 1`` (the first token is context only), bucket
    ``i`` holds positions ``edges[i]`` to ``edges[i + 1] - 1``. Shape (2, windows, buckets)."""
    if list(edges) != sorted(set(edges)) or len(edges) < 2:
        raise LpesError(f"--edges must rise strictly and give at least one bucket, got {list(edges)}")
    out = np.zeros((2, len(rows), len(edges) - 1))
    for w, row in enumerate(rows):
        lp = np.asarray(row.token_logprobs, dtype=float)
        at = np.arange(1, len(lp) + 1)
        which = np.searchsorted(edges, at, side="right") - 1
        inside = (which >= 0) & (which < len(edges) - 1)
        np.add.at(out[0, w], which[inside], lp[inside])
        np.add.at(out[1, w], which[inside], 1)
    return out


def bucket_perplexity(sums: np.ndarray, picks: np.ndarray | None = None) -> np.ndarray:
    """exp(-token-weighted mean log-prob) per bucket of ``bucket_logprobs`` sums, over all windows or,
    with ``picks`` (resamples x windows), once per resample."""
    total, n = (sums[0], sums[1]) if picks is None else (sums[0][picks], sums[1][picks])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.exp(-total.sum(-2) / n.sum(-2))


def window_picks(windows: int, resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """Bootstrap resamples of the windows (resamples x windows indices), shared by every method so that
    intervals of ratios are paired over the same texts."""
    return np.random.default_rng(seed).integers(windows, size=(resamples, windows))


def bucket_ratio(sums: np.ndarray, ref: np.ndarray, picks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ratio, 95% low, 95% high) per bucket of one method's perplexity over another's on the same windows."""
    boot = bucket_perplexity(sums, picks) / bucket_perplexity(ref, picks)
    low, high = np.percentile(boot, [2.5, 97.5], axis=0)
    return bucket_perplexity(sums) / bucket_perplexity(ref), low, high


def same_windows(rows: Rows) -> list[int]:
    """The windows every method scored (the same texts in the same order, or an error)."""
    methods = list(rows)
    windows = [r.draw for r in rows[methods[0]]]
    for m in methods:
        if [r.draw for r in rows[m]] != windows:
            raise LpesError(f"{m}: scored other windows than {methods[0]}; perplexity needs the same texts")
    return windows


def bucket_summary(rows: Rows, edges: Sequence[int], *, resamples: int = 2000, seed: int = 0):
    """(reached bucket indices, method -> (window sums, perplexity, 95% low, 95% high) per bucket, window
    resamples): what the bucket table and plot show. Buckets no window reaches are left out of ``reached``."""
    windows = same_windows(rows)
    sums = {m: bucket_logprobs(per, edges) for m, per in rows.items()}
    reached = np.flatnonzero(next(iter(sums.values()))[1].sum(0) > 0)
    picks = window_picks(len(windows), resamples, seed)
    summary = {}
    for m, own in sums.items():
        low, high = np.percentile(bucket_perplexity(own, picks), [2.5, 97.5], axis=0)
        summary[m] = (own, bucket_perplexity(own), low, high)
    return reached, summary, picks


def bucket_table(rows: Rows, edges: Sequence[int], versus_method: str | None = None, *, resamples: int = 2000,
                 seed: int = 0) -> list[str]:
    """Perplexity of every method per position bucket (95% interval over windows), and with
    ``versus_method`` each method's perplexity ratio to it per bucket (paired over windows: the same
    texts). Buckets no window reaches are left out."""
    if versus_method is not None and versus_method not in rows:
        raise LpesError(f"no method {versus_method!r} among {sorted(rows)}")
    reached, summary, picks = bucket_summary(rows, edges, resamples=resamples, seed=seed)
    labels = [f"{a}-{b}" for a, b in zip(edges[:-1], edges[1:])]
    lines = [f"perplexity by position bucket ({picks.shape[1]} windows; 95% interval over windows)"]
    for m, (_, point, low, high) in summary.items():
        lines.append(f"{m}: " + "  ".join(f"{labels[i]}: {point[i]:.3f} [{low[i]:.3f}, {high[i]:.3f}]" for i in reached))
    if versus_method is not None:
        for m in (m for m in summary if m != versus_method):
            point, low, high = bucket_ratio(summary[m][0], summary[versus_method][0], picks)
            lines.append(f"{m} / {versus_method}: " + "  ".join(
                f"{labels[i]}: {point[i]:.4f} [{low[i]:.4f}, {high[i]:.4f}]" for i in reached))
    return lines


def plot_bucket_folders(folders: Sequence[Path], edges: Sequence[int], path: Path, *, task: str = "perplexity",
                        depth_task: str = "passkey", window: int | None = None) -> Path:
    """``report.plots.plot_buckets`` of evaluate folders: every method's perplexity by position bucket and,
    where the folders scored ``depth_task`` too, its accuracy and gold log-prob by depth."""
    from ..evaluation.results import by_position
    from ..report.plots import plot_buckets
    from .evaluate import logged_rows

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
    from .cli import one_line_errors

    parser = argparse.ArgumentParser(prog="python -m lpes_framework.commands.analysis", description=__doc__.split("\n\n")[0])
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
    noise.add_argument("--end-penalty", type=float, default=2.0)
    noise.add_argument("--logprob-weight", type=float, default=0.1)
    buckets = commands.add_parser("buckets", help="perplexity by position bucket, and ratios to one method")
    buckets.add_argument("folders", nargs="+", type=Path, help="evaluate folders (their rows.jsonl)")
    buckets.add_argument("--edges", nargs="+", type=int, required=True, help="bucket edges in tokens, e.g. 0 8192 16384")
    buckets.add_argument("--task", default="perplexity")
    buckets.add_argument("--versus", help="a method to divide every other's perplexity by, e.g. 'unpatched'")
    buckets.add_argument("--plot", type=Path, help="also draw the buckets (and the passkey by depth, if scored) here")
    buckets.add_argument("--window", type=int, help="the model's trained window, marked on the plot")
    args = parser.parse_args(argv)
    one_line_errors(_run)(args)


def _run(args) -> None:
    if args.command == "versus":
        blocks = [_block(b) for b in args.blocks] + [None]
        print("\n".join(versus(folder_rows(args.folders, args.task), args.method, blocks)))
        return
    if args.command == "buckets":
        print("\n".join(bucket_table(folder_rows(args.folders, args.task), args.edges, args.versus)))
        if args.plot:
            print(f"wrote {plot_bucket_folders(args.folders, args.edges, args.plot, task=args.task, window=args.window)}")
        return
    from .evaluate import logged_rows
    from ..io.store import read_results
    from ..evaluation.fitness import FitnessWeights
    from ..tasks import TASKS

    scored = read_results(args.folder)["tasks"]  # the evaluate run's tasks, as it scored them
    if args.task not in scored:
        raise LpesError(f"{args.folder} scored no task {args.task!r} (it scored {', '.join(scored)})")
    tasks = {args.task: TASKS.build({"name": args.task, **scored[args.task]})}
    rows = {m: {args.task: per[args.task]} for m, per in logged_rows(args.folder).items() if args.task in per}
    weights = FitnessWeights(end_penalty=args.end_penalty, logprob_weight=args.logprob_weight)
    print("\n".join(noise_floor(rows, tasks, weights, sample=args.sample)))


if __name__ == "__main__":
    main()
