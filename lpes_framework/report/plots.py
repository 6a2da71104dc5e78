"""PNG plots the commands write (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..judging.results import PositionStats, Scores  # noqa: E402
from ..position.bands import factor_table  # noqa: E402
from ..tasks.base import WHOLE_TEXT, whole_text  # noqa: E402


def plot_by_position(methods: Mapping[str, Scores], path: Path, title: str = "") -> Path:
    """Accuracy (with 95% CI) and mean gold log-prob against gold position; one line per method. A task
    scored over whole texts (perplexity) gets a bar per method instead."""
    first = next(iter(methods.values()))
    tasks = list(first)
    fig, axes = plt.subplots(2, len(tasks), figsize=(5.5 * len(tasks), 7), squeeze=False)
    for col, task in enumerate(tasks):
        if whole_text(first[task]):
            _perplexity_bars(axes[0][col], {m: s[task][WHOLE_TEXT].perplexity for m, s in methods.items()}, task)
            axes[1][col].axis("off")
            continue
        for method, scores in methods.items():
            per_pos = scores[task]
            xs = list(per_pos)
            x = [float(p) if p.lstrip("-").isdigit() else i for i, p in enumerate(xs)]
            acc = [per_pos[p].accuracy for p in xs]
            # a bar below 0 stops matplotlib: a results file from elsewhere may hold an interval that misses its point
            err = [[max(0.0, a - per_pos[p].ci_low) for a, p in zip(acc, xs)],
                   [max(0.0, per_pos[p].ci_high - a) for a, p in zip(acc, xs)]]
            axes[0][col].errorbar(x, acc, yerr=err, marker="o", capsize=3, label=method)
            axes[1][col].plot(x, [per_pos[p].logprob for p in xs], marker="o", label=method)
        axes[0][col].set(title=f"{task}: exact match", ylabel="accuracy", ylim=(-0.05, 1.05))
        axes[1][col].set(title=f"{task}: gold answer log-prob", xlabel="gold position", ylabel="mean log-prob / token")
        axes[0][col].legend(fontsize=8)
    return _finish(fig, path, title)


def _perplexity_bars(ax, values: Mapping[str, float], task: str) -> None:
    names = list(values)
    ax.bar(range(len(names)), [values[n] for n in names], color=[f"C{i}" for i in range(len(names))])
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=8)
    for i, n in enumerate(names):
        ax.annotate(f"{values[n]:.3f}", (i, values[n]), ha="center", va="bottom", fontsize=8)
    ax.set(title=f"{task}: perplexity (lower is better)", ylabel="perplexity")


def _finish(fig, path: Path, title: str = "") -> Path:
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _save(fig, ax, path: Path) -> Path:
    ax.legend(fontsize=8)
    return _finish(fig, path)


def plot_factors(curves: Mapping[str, Sequence], path: Path, title: str = "factor per layer") -> Path:
    """One line per schedule, or per band of a band-wise one (layers x bands)."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, factors in curves.items():
        table = factor_table(factors)
        for band, column in enumerate(table.T):
            label = name if table.shape[1] == 1 else f"{name}, band {band}"
            ax.plot(range(len(column)), column, marker=".", label=label)
    ax.set(xlabel="decoder layer", ylabel="RoPE scaling factor s_l", title=title)
    return _save(fig, ax, path)


def plot_progress(log: Sequence[Mapping], path: Path) -> Path:
    """Best-so-far search fitness per generation, with the generation's mean; for gradient steps (entries
    with ``step``), with the latest fixed-split score of the current genes."""
    steps = bool(log) and "step" in log[0]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot([e["best_fitness"] for e in log], marker="o", label="best so far")
    if steps:
        ax.plot([e["scored_fitness"] for e in log], marker=".", label="current genes (latest search-split score)")
    else:
        ax.plot([e["mean_fitness"] for e in log], marker=".", label="generation mean")
    ax.set(xlabel="Adam step" if steps else "generation", ylabel="fitness", title="search progress")
    return _save(fig, ax, path)


def plot_convergence(curves: Mapping[str, Sequence[tuple[float, float]]], path, title: str = "") -> Path:
    """Best-so-far fitness against the cost spent, one line per search method."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, points in curves.items():
        ax.step(*zip(*points), where="post", marker="o", markersize=3, label=name)
    ax.set(xlabel="forward-equivalents spent (scorings of the search split)", ylabel="best search-split fitness",
           title=title or "search efficiency")
    return _save(fig, ax, Path(path))


def plot_buckets(perplexity: Mapping[str, tuple[Sequence[float], ...]], depth: Mapping[str, Mapping[str, PositionStats]],
                 path: Path, *, window: int | None = None, depth_task: str = "passkey") -> Path:
    """Perplexity by position bucket (``method -> (bucket centres, perplexity, 95% low, 95% high)``, log
    scale, the trained ``window`` marked) and, when ``depth`` holds rows, the depth task's exact match and
    gold log-prob by depth: the extrapolation picture, inside the window and beyond it."""
    panels = 3 if depth else 1
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4.2), squeeze=False)
    ax = axes[0][0]
    for method, (x, point, low, high) in perplexity.items():
        ax.errorbar(x, point, yerr=[[p - lo for p, lo in zip(point, low)], [hi - p for p, hi in zip(point, high)]],
                    marker="o", capsize=3, label=method)
    if window:
        ax.axvline(window, color="grey", linestyle="--", linewidth=1, label=f"trained window ({window})")
    ax.set(yscale="log", xlabel="token position (bucket centre)", ylabel="perplexity (95% interval over windows)",
           title="perplexity by position")
    ax.legend(fontsize=8)
    for method, per in depth.items():
        depths = list(per)
        axes[0][1].plot(depths, [100 * per[d].accuracy for d in depths], marker="o", label=method)
        axes[0][2].plot(depths, [per[d].logprob for d in depths], marker="o", label=method)
    if depth:
        axes[0][1].set(xlabel="depth (%)", ylabel="exact match %", ylim=(-5, 105), title=f"{depth_task}: exact match")
        axes[0][2].set(xlabel="depth (%)", ylabel="mean log-prob / token", title=f"{depth_task}: gold log-prob")
        axes[0][2].legend(fontsize=8)
    return _finish(fig, path)


def plot_pareto(points: Sequence[tuple[float, float]], front: Sequence[tuple[float, float]], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    if points:
        ax.scatter(*zip(*points), s=12, alpha=0.4, label="evaluated")
    if front:
        ax.plot(*zip(*sorted(front)), "o-", color="C3", label="Pareto front")
    ax.set(xlabel="perplexity (lower is better)", ylabel="retrieval score (higher is better)", title="NSGA-II")
    return _save(fig, ax, path)


def plot_attention(results: Mapping[str, Mapping[str, Mapping[str, Sequence[float]]]], path: Path,
                   title: str = "") -> Path:
    """Per task: the gold-span attention mass as layer x gold position maps (unpatched, patched, their
    difference) and averaged over layers by gold position."""
    fig, axes = plt.subplots(len(results), 4, figsize=(19, 4.2 * len(results)), squeeze=False)
    for row, (task, methods) in enumerate(results.items()):
        positions = list(next(iter(methods.values())))
        maps = {m: [[per[p][layer] for p in positions] for layer in range(len(per[positions[0]]))]
                for m, per in methods.items()}
        a, b = (maps[m] for m in ("unpatched", "patched"))
        diff = [[y - x for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]
        top = max(max(max(r) for r in a), max(max(r) for r in b))
        bound = max(abs(v) for r in diff for v in r) or 1.0
        panels = [("unpatched", a, "viridis", 0.0, top), ("patched", b, "viridis", 0.0, top),
                  ("patched - unpatched", diff, "coolwarm", -bound, bound)]
        for col, (name, grid, cmap, vmin, vmax) in enumerate(panels):
            ax = axes[row][col]
            image = ax.imshow(grid, aspect="auto", origin="lower", cmap=cmap, vmin=vmin, vmax=vmax)
            ax.set(title=f"{task}: {name}", xlabel="gold position", ylabel="decoder layer",
                   xticks=range(len(positions)), xticklabels=positions)
            fig.colorbar(image, ax=ax, fraction=0.046)
        ax = axes[row][3]
        for name, per in methods.items():
            ax.plot(positions, [sum(per[p]) / len(per[p]) for p in positions], marker="o", label=name)
        ax.set(title=f"{task}: mean over layers", xlabel="gold position", ylabel="attention mass on the gold span")
        ax.legend(fontsize=8)
    return _finish(fig, path, title)
