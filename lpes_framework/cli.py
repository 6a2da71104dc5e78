"""Shared glue of the Hydra commands: one-line errors, config conversion, CPU threads."""

from __future__ import annotations

import functools
import sys

from omegaconf import DictConfig, OmegaConf

from .errors import LpesError


def plain(cfg) -> dict:
    """A resolved plain-Python copy of a config node."""
    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)


def one_line_errors(fn):
    """Report bad input as ``error: ...`` on one line and exit 2, instead of a traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except LpesError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(2)

    return wrapper


def set_threads(threads) -> None:
    if threads:
        import torch

        torch.set_num_threads(int(threads))


def build_tasks(cfg) -> dict:
    """The primary ``task`` plus ``extra_tasks``, keyed by name (extra tasks keep their dict key)."""
    from .tasks import TASKS

    specs = {cfg.task.name: plain(cfg.task)} | {k: plain(v) for k, v in (cfg.get("extra_tasks") or {}).items()}
    seed = int(cfg.get("seed", 0))
    tasks = {}
    for key, spec in specs.items():
        spec.setdefault("seed", seed)
        tasks[key] = TASKS.build(spec)
    return tasks
