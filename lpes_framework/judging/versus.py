"""One method against the others after the fact, on the samples they share: exact match in the middle and
at the ends with paired intervals, by blocks of haystacks, and the noise floor of the search's fitness at
its sample size."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence

from ..errors import LpesError
from ..scoring.base import ScoreRow
from .fitness import fitness_interval
from .positions import middle_positions
from .results import paired
from .stats import logprob_bootstrap, paired_bootstrap

Rows = dict[str, list[ScoreRow]]  # method -> rows of one task, sorted by (draw, position)


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
            order = sorted(positions, key=float)
            shallow, deep = order[0], order[-1]  # the shallowest and deepest shown, whatever their count
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
    own formula) with its 95% interval on the haystacks both scored and on the first ``sample`` of them, and its
    spread over random ``sample``-haystack subsets (the search's and validation's sample size); the separation
    (fitness over that spread) says how well a search at ``sample`` haystacks can see the effect under these
    weights. A method scored on fewer haystacks than ``sample`` is named and left out."""
    if "unpatched" not in rows:
        raise LpesError(f"no unpatched rows to measure the fitness against (methods: {sorted(rows)})")
    if sample < 1:
        raise LpesError(f"--sample is a number of haystacks (at least 1), got {sample}")
    lines = []
    for name in (m for m in rows if m != "unpatched"):
        # paired on the samples both scored: a column grown for one method holds more unpatched haystacks
        pairs = {task: paired(per, rows["unpatched"].get(task, [])) for task, per in rows[name].items()}
        haystacks = sorted(set.intersection(*({r.draw for r in mine} for mine, _ in pairs.values())))
        if len(haystacks) < sample:
            lines.append(f"{name}: {len(haystacks)} haystacks shared with unpatched, fewer than --sample {sample}")
            continue

        def on(keep, side: int) -> dict:
            keep = set(keep)
            return {task: [r for r in two[side] if r.draw in keep] for task, two in pairs.items()}

        whole = fitness_interval(on(haystacks, 0), on(haystacks, 1), tasks, weights)
        first = fitness_interval(on(haystacks[:sample], 0), on(haystacks[:sample], 1), tasks, weights)
        rng = random.Random(0)
        spread = [fitness_interval(on(s, 0), on(s, 1), tasks, weights, resamples=1)[0]
                  for s in (rng.sample(haystacks, sample) for _ in range(subsets))]
        sd = statistics.stdev(spread)
        separation = whole[0] / sd if sd else math.nan  # no spread: identical to unpatched on every subset
        lines.append(f"{name}: {len(haystacks)} haystacks {whole[0]:+.4f} [{whole[1]:+.4f}, {whole[2]:+.4f}]; "
                     f"first {sample} {first[0]:+.4f} [{first[1]:+.4f}, {first[2]:+.4f}]; {subsets} random "
                     f"{sample}-haystack subsets: sd {sd:.4f}, range {min(spread):+.4f} to {max(spread):+.4f}; "
                     f"separation {separation:+.2f}")
    return lines
