"""What one method's row of the transfer matrix and one mixture search step cost, the move layouts and fixed
haystack counts against the queries layouts and counts from the spread, and whether the two layouts measure
the same.

1. Seconds a sample, per matrix column (``bench/transfer.py``'s), measured side by side on ``--haystacks`` draws
   of the search split (its cost is any split's), the old and the new layout of a column alternated
   ``--repeats`` times; a column without a queries twin (key-value retrieval is one already; cwe has no
   positions) is measured once and counts the same in both. A row's seconds: each column's rate times its
   haystack count, old: the column's fixed count; new: the count its pilot recorded (``haystacks.json``, from
   ``bench/transfer.py --precision``) or, where none was made yet, the count the ``--precision`` asks for given
   the spread of the column's committed rows (an estimate of the cost only: no count is fixed by it), capped at
   ``--cap``.
2. One mixture step (the general preset's mixture: KV ~1K and ~2K, MDQA ~1K, multikey at [1K, 2K]; one fresh
   context of each, the unpatched minibatch and the forward and backward), move layouts against queries.
3. Equivalence, scoring nothing: for each column whose queries twin holds rows under ``--out`` (unpatched and
   the general preset), the unpatched per-position means and the paired preset-minus-unpatched log-prob delta
   under both layouts. Stated before any was scored: the layouts agree on a column when the 95% interval of
   (queries delta - move delta), the two bootstrap half-widths combined in quadrature (different haystacks,
   so unpaired), contains 0 and lies within +-0.05 nats per token.

Last line: matrix_row_ratio=<new / old seconds for one row> step_ratio=<new / old for one step>
equivalent=<columns where the layouts agree> of=<columns compared> step_ratio_kept=<the new step where its
unpatched minibatch is kept from an earlier search, over the old>. Targets: <= 0.25, <= 0.35, all.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from common import embedded, interleaved
from lpes_framework.io.store import JsonLog
from lpes_framework.matrix import column_task
import transfer

COLUMNS = transfer.columns()
TWINS = {c[: -len("-queries")]: c for c in COLUMNS if c.endswith("-queries")}
ROWS = {"unpatched": None, "general preset": transfer.GENERAL_PRESET}  # the rows the estimate and the check read
MARGIN = 0.05  # nats per token: the equivalence margin, fixed before the queries columns were scored
MIXTURE = {"kv1k": ("kv_retrieval", {"layout": "queries", "pairs": 50}),
           "kv2k": ("kv_retrieval", {"layout": "queries", "pairs": 100,
                                     "gold_positions": [0, 11, 22, 33, 44, 55, 66, 77, 88, 99]}),
           "mdqa": ("mdqa_capitals", {"chat_template": False, "gold_positions": [0, 10, 19]}),
           "mk": ("niah_multikey_1", {"context_tokens": [1024, 2048], "depths": [0, 50, 100]})}


def sample_set(task: str, settings: dict, haystacks: int, tok, info, layout: str | None = None):
    """The search split's first ``haystacks`` draws of a task config (the column's own task: a perplexity guard
    beside it is not the column)."""
    from lpes_framework.execution import SampleSet
    from lpes_framework.matrix.columns import task_config
    from lpes_framework.tasks import TASKS

    spec = task_config(task, settings) | {"samples_per_position": haystacks} | ({"layout": layout} if layout else {})
    return SampleSet(tok, {"task": TASKS.build(spec)}, split="search", trained_context=info.trained_context,
                     batch_size=10, progress=False)


def rate(sets, model, repeats: int) -> dict[str, float]:
    return {name: s / sets[name].samples for name, s in
            interleaved({name: (lambda s=s: s.rows(model)) for name, s in sets.items()}, repeats).items()}


def new_count(column: str, precision: float, cap: int, out: Path) -> int:
    """A column's new haystack count: the one its pilot recorded, else the one ``precision`` asks for given the
    spread of its committed rows (an estimate; see the module docstring)."""
    from lpes_framework.evaluate.run import scored_rows
    from lpes_framework.judging.results import paired
    from lpes_framework.judging.sample_size import sample_size

    twin = TWINS.get(column, column)
    recorded = transfer.column_haystacks(out / twin, None)
    if recorded:
        return recorded
    per_method = scored_rows(transfer.column_config(column, ROWS, 2, None), out / column)
    base = per_method.get("unpatched")
    if not base:
        return COLUMNS[twin].haystacks
    task = column_task(base)
    pilots = [paired(by_task[task], base[task]) for m, by_task in per_method.items() if m != "unpatched" and task in by_task]
    return sample_size(pilots, logprob_half_width=precision, cap=cap).draws if pilots else COLUMNS[twin].haystacks


def equivalence(column: str, out: Path) -> bool | None:
    """Whether the two layouts agree on ``column`` (module docstring), printed with the means behind it; None
    where the queries twin has no unpatched and general-preset rows yet."""
    from lpes_framework.evaluate.methods import file_method_names
    from lpes_framework.evaluate.run import scored_rows
    from lpes_framework.judging.results import by_position, paired
    from lpes_framework.judging.stats import logprob_bootstrap

    general = file_method_names([transfer.GENERAL_PRESET])[transfer.GENERAL_PRESET]
    deltas = {}
    for name in (column, TWINS[column]):
        folder = out / name
        if not JsonLog(folder / "rows.jsonl").exists():
            return None
        per_method = scored_rows(transfer.column_config(name, ROWS, 2, transfer.column_haystacks(folder, None)), folder)
        if "unpatched" not in per_method or general not in per_method:
            return None
        task = column_task(per_method["unpatched"])
        base, method = per_method["unpatched"][task], per_method[general][task]
        means = {p: round(s.logprob, 3) for p, s in by_position(base).items()}
        deltas[name] = logprob_bootstrap(*paired(method, base))
        print(f"  {name}: unpatched log-prob by position {means}; general preset - unpatched "
              f"{deltas[name].format(4)} nats/token ({len({r.draw for r in base})} haystacks)")
    move, queries = deltas[column], deltas[TWINS[column]]
    half = math.hypot((move.high - move.low) / 2, (queries.high - queries.low) / 2)
    diff = queries.delta - move.delta
    low, high = diff - half, diff + half
    agree = low <= 0 <= high and -MARGIN <= low and high <= MARGIN
    said = ("agree" if agree else "differ (the interval excludes 0)" if not low <= 0 <= high
            else "not shown to agree (the interval passes the margin: too few haystacks)")
    print(f"{column}: queries - move {diff:+.4f} [{low:+.4f}, {high:+.4f}]: {said} (margin +-{MARGIN})")
    return agree


def mixture_step(model, tok, info, layout: str, kept: bool = False) -> float:
    """Seconds of one mixture step's work: the unpatched minibatch (unless ``kept``: a later search on the same
    split takes its rows from ``minibatch_rows.jsonl``), then the objective's forward and backward."""
    import time

    import numpy as np

    from lpes_framework.judging.fitness import FitnessWeights, objective_coefficients
    from lpes_framework.position import build_scheme
    from lpes_framework.position.curves import build_curve
    from lpes_framework.scoring.gradient import value_and_gradient

    sets = {name: sample_set(task, settings, 1, tok, info, layout=None if name.startswith("kv") else layout)
            for name, (task, settings) in MIXTURE.items()}
    encoded = {name: s.encoded["task"] for name, s in sets.items()}
    tasks = {name: s.tasks["task"] for name, s in sets.items()}
    start = time.perf_counter()
    baseline = {name: s.rows(model)["task"] for name, s in sets.items()}
    if kept:
        start = time.perf_counter()
    coefficients = objective_coefficients(baseline, tasks, FitnessWeights.defaults(), 1, {})
    scheme = build_scheme({"name": "ntk"})
    curve = build_curve({"name": "free", "low": 0.5, "high": 3.0}, info.n_layers)
    genes = np.exp(np.random.default_rng(0).normal(0.0, 0.05, info.n_layers))
    value_and_gradient(model, encoded, baseline, coefficients, genes, curve, scheme, batch_size=10,
                       pad_id=tok.pad_token_id, share_prefix=True, checkpoint_layers=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-0.5b")
    parser.add_argument("--out", type=Path, default=transfer.RUN, help="the matrix's columns (equivalence, counts)")
    parser.add_argument("--haystacks", type=int, default=2, help="draws a column is timed on")
    parser.add_argument("--repeats", type=int, default=1, help="times each column's two layouts are timed, "
                        "alternated (the median is kept)")
    parser.add_argument("--precision", type=float, default=0.01)
    parser.add_argument("--cap", type=int, default=100)
    parser.add_argument("--columns", nargs="*", default=[c for c in COLUMNS if not c.endswith("-queries")])
    parser.add_argument("--no-step", action="store_true", help="leave the mixture step out (step_ratio=nan)")
    args = parser.parse_args()

    _, model, tok, info = embedded([f"model={args.model}"])
    old_total = new_total = 0.0
    for column in args.columns:
        old, old_count = COLUMNS[column], COLUMNS[column].haystacks
        sets = {"old": sample_set(old.task, old.settings, args.haystacks, tok, info)}
        if column in TWINS:
            twin = COLUMNS[TWINS[column]]
            sets["new"] = sample_set(twin.task, twin.settings, args.haystacks, tok, info)
        rates = rate(sets, model, args.repeats)
        rates.setdefault("new", rates["old"])
        count = new_count(column, args.precision, args.cap, args.out)
        per_draw = {k: sets.get(k, sets["old"]).samples / args.haystacks for k in ("old", "new")}
        old_s, new_s = (rates[k] * per_draw[k] * n for k, n in (("old", old_count), ("new", count)))
        old_total, new_total = old_total + old_s, new_total + new_s
        print(f"{column}: {rates['old']:.2f} -> {rates['new']:.2f} s a sample ({'queries twin' if column in TWINS else 'same layout'}), "
              f"{old_count} -> {count} haystacks: {old_s / 60:.1f} -> {new_s / 60:.1f} min a method")
    step = {"old": math.nan, "new": math.nan, "kept": math.nan}
    if not args.no_step:
        step = {k: mixture_step(model, tok, info, layout, kept) for k, layout, kept in
                (("old", "move", False), ("new", "queries", False), ("kept", "queries", True))}
        print(f"one mixture step (a context of each task): {step['old']:.1f} s -> {step['new']:.1f} s; "
              f"{step['kept']:.1f} s where the unpatched minibatch is kept (a later search on the same split)")
    verdicts = [v for v in (equivalence(c, args.out) for c in TWINS if c in args.columns) if v is not None]
    print(f"matrix_row_ratio={new_total / old_total:.3f} step_ratio={step['new'] / step['old']:.3f} "
          f"equivalent={sum(verdicts)} of={len(verdicts)} step_ratio_kept={step['kept'] / step['old']:.3f}")


if __name__ == "__main__":
    main()
