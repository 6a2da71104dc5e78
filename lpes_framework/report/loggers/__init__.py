"""Experiment loggers, one module per logger (``logger=<name>``): ``none`` (default) and ``wandb``."""

from __future__ import annotations

from pathlib import Path

from ...registry import LOGGERS
from .base import Logger


def build_logger(cfg, config: dict, out_dir: Path) -> Logger:
    """The logger a ``logger`` config names (none when unset), given the run's whole config."""
    return LOGGERS.build(dict(cfg) if cfg is not None else {"name": "none"}, config, out_dir)


__all__ = ["LOGGERS", "Logger", "build_logger"]
