"""Helpers shared by the benchmark scripts: load the embedded model once, time things side by side."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def embedded(overrides=()):
    """(config, model, tokenizer, info): the embedded default model, or the one ``model=...`` in
    ``overrides`` names."""
    import torch

    from lpes_framework.config import compose_config
    from lpes_framework.model.load import load_model

    torch.set_num_threads(2)
    cfg = compose_config("config", ["model=smollm2", *overrides])
    return (cfg, *load_model(cfg.model))


def interleaved(runs: dict, repeats: int) -> dict[str, float]:
    """Median seconds of each callable, alternating them so machine noise hits all alike."""
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}
