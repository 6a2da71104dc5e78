"""Which way each task of a mixture pulls the genes: the per-task parts of a gradient search's steps
(``task_gradients`` in its step records) averaged over steps, summarised by band and depth, and how far the
tasks agree (the cosine of their mean gradients, the share of genes all tasks push the same way). Pure
functions of the recorded numbers: no model."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np


def mean_pulls(steps: Sequence[Mapping[str, Sequence[float]]]) -> dict[str, np.ndarray]:
    """Each task's gradient averaged over the steps that recorded it."""
    tasks = sorted({task for step in steps for task in step})
    return {task: np.mean([step[task] for step in steps if task in step], axis=0) for task in tasks}


def pull_table(pulls: Mapping[str, np.ndarray], n_layers: int, n_bands: int, parts: int = 3) -> list[str]:
    """Lines: per task, the summed gradient of each band over ``parts`` depth thirds (free-curve genes,
    band after band), then the tasks' pairwise cosines and the share of genes they all push one way."""
    edges = np.linspace(0, n_layers, min(parts, n_layers) + 1).round().astype(int)  # no empty part
    depth = [f"layers {a}-{b - 1}" for a, b in zip(edges, edges[1:])]
    lines = [f"{'task':24} {'band':>5} " + "".join(f"{d:>15}" for d in depth)]
    for task, g in pulls.items():
        table = np.asarray(g).reshape(n_bands, n_layers)
        for band in range(n_bands):
            sums = [table[band, a:b].sum() for a, b in zip(edges, edges[1:])]
            lines.append(f"{task[:24]:24} {band:>5} " + "".join(f"{s:+15.4f}" for s in sums))
    # a task whose gradient is all zeros (a guard never crossed) pulls no way: left out of the agreement,
    # where its zero signs would make every gene a disagreement
    names = [t for t in pulls if np.any(np.asarray(pulls[t]) != 0)]
    silent = [t for t in pulls if t not in names]
    unit = {t: pulls[t] / np.linalg.norm(pulls[t]) for t in names}
    lines.append("cosine of the tasks' mean gradients:")
    lines += [f"  {a} . {b}: {float(unit[a] @ unit[b]):+.3f}" for i, a in enumerate(names) for b in names[i + 1:]]
    if silent:
        lines.append(f"no pull (every gene's gradient 0, e.g. a guard never crossed): {', '.join(silent)}")
    signs = np.sign(np.array([pulls[t] for t in names]))
    agree = float(np.mean(np.all(signs == signs[:1], axis=0))) if names else float("nan")
    lines.append(f"genes every pulling task pushes the same way: {agree:.0%} of {signs.shape[1] if names else 0}")
    return lines
