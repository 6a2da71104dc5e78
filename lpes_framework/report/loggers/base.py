"""The logger interface: built as ``Logger(config, out_dir, **options)``; every method may do nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence


class Logger:
    name = "logger"  # set by the registry

    def __init__(self, config: dict, out_dir: Path):
        self.config, self.out_dir = config, out_dir

    def log_generation(self, generation: int, metrics: dict, factors: Sequence[float]) -> None:
        """After each generation: its metrics and the best factors so far."""

    def log_summary(self, summary: dict) -> None:
        """Once, after the held-out test."""

    def finish(self) -> None:
        """Always called, also when the search fails."""
