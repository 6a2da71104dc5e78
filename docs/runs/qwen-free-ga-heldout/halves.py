"""The free GA's answer minus unpatched on each block of 100 test haystacks separately: 0-99 are the
haystacks the earlier Qwen methods were tested on (nine of them before this one, so one interval
excluding 0 there could be luck), 100-199 were scored for the first time by this re-test and no
other method has seen them. Exact match points per middle position with paired bootstrap intervals
over haystacks, and the mean change of the gold log-prob per token.

    python docs/runs/qwen-free-ga-heldout/halves.py
"""

from pathlib import Path

import numpy as np

from lpes_framework.evaluate import file_method_names, logged_rows
from lpes_framework.stats import middle_positions, paired_bootstrap

here = Path(__file__).parent
source = str(here / "best_factors.json")
found_name = file_method_names([source])[source]
rows = {method: per["kv_retrieval"] for method, per in logged_rows(here).items()}
haystacks = len({r.context for r in rows[found_name]})


def logprob_interval(found, base, resamples=2000):
    """Mean change of the gold log-prob per token over all positions, with a 95% interval from resampling
    haystacks (the unit paired_bootstrap resamples too)."""
    by_context = {}
    for f, b in zip(found, base):
        by_context.setdefault(f.context, []).append(f.logprob - b.logprob)
    sums = np.array([sum(d) for d in by_context.values()])
    counts = np.array([len(d) for d in by_context.values()])
    draws = np.random.default_rng(0).integers(len(sums), size=(resamples, len(sums)))
    low, high = np.percentile(sums[draws].sum(1) / counts[draws].sum(1), [2.5, 97.5])
    return f"{sums.sum() / counts.sum():+.4f} [{low:+.4f}, {high:+.4f}]"


for first, last in ((0, 100), (100, haystacks), (0, haystacks))[:1 if haystacks <= 100 else 3]:
    found, base = ([r for r in rows[m] if first <= r.context < last] for m in (found_name, "unpatched"))
    interval = paired_bootstrap(found, base)
    inner = middle_positions([p for p in interval if p != "middle"])
    first_end, last_end = (p for p in interval if p != "middle" and p not in inner)
    middle = "  ".join(f"{p}: {interval[p]}" for p in inner)
    print(f"haystacks {first}-{last - 1}: middle {interval['middle']} (low {interval['middle'].low:+.2f})  "
          f"ends {interval[first_end].delta:+.1f} / {interval[last_end].delta:+.1f}  "
          f"gold log-prob per token {logprob_interval(found, base)}\n  {middle}")
