"""Perplexity by position bucket of whole-text rows (each token's log-prob kept): inside a model's trained
window and beyond it, with intervals over windows, and ratios paired over the same texts."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import LpesError
from ..scoring.base import ScoreRow
from .stats import resample_draws

Rows = dict[str, list[ScoreRow]]  # method -> rows of one task


def bucket_logprobs(rows: Sequence[ScoreRow], edges: Sequence[int]) -> np.ndarray:
    """(windows x buckets) sums of token log-probs and token counts of whole-text rows: token ``k`` of a
    window's scored continuation sits at position ``k + 1`` (the first token is context only), bucket
    ``i`` holds positions ``edges[i]`` to ``edges[i + 1] - 1``. Shape (2, windows, buckets)."""
    if list(edges) != sorted(set(edges)) or len(edges) < 2 or edges[0] < 0:
        raise LpesError(f"--edges must be token positions (>= 0) rising strictly, at least one bucket, got {list(edges)}")
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
    picks = resample_draws(len(windows), resamples, seed)  # shared by every method: ratios pair over texts
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
