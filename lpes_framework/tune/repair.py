"""Repairs of a candidate that harms a validation column, as pure functions of its genes or factors.

``reset``: the 0m ablation made automatic. Each search step recorded each task's part of the gradient
(d term / d gene, the objective climbed). Putting gene i back to 1 (the identity, where genes are the factors:
the free curve) moves a task's term by about ``g_i * (1 - x_i)``; the genes where that is largest for the harmed
tasks, summed, are put back first (``fraction`` of them). ``shrink``: every factor halfway back to 1, for any
curve and for harmed columns the mixture did not hold (no gradient says which genes pull them)."""

from __future__ import annotations

import numpy as np


def reset(genome, pulls: dict[str, np.ndarray], harmed: list[str], fraction: float) -> tuple[np.ndarray, list[int]]:
    """(the genome with the genes that help the ``harmed`` tasks most when put back to 1 put back, their
    indices); no gene where none helps them."""
    genome = np.asarray(genome, dtype=float)
    gain = sum(np.asarray(pulls[t], dtype=float) for t in harmed) * (1.0 - genome)
    order = [i for i in np.argsort(-gain) if gain[i] > 0]
    chosen = sorted(int(i) for i in order[:max(1, round(fraction * genome.size))])
    out = genome.copy()
    out[chosen] = 1.0
    return out, chosen


def shrink(factors, weight: float = 0.5) -> list:
    """Each factor ``weight`` of the way from 1 (factor lists, one a layer, of numbers or of band lists)."""
    return np.round(1.0 + weight * (np.asarray(factors, dtype=float) - 1.0), 6).tolist()
