"""Weights & Biases: offline unless the config says otherwise (this machine may have no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from ...position.bands import factor_table
from ...registry import LOGGERS
from .base import Logger


@LOGGERS.plugin
class WandbLogger(Logger):
    def __init__(self, config: dict, out_dir: Path, project: str = "lpes", mode: str = "offline",
                 entity: str | None = None, run_name: str | None = None, tags=()):
        import wandb

        super().__init__(config, out_dir)
        self._wandb = wandb
        self.run = wandb.init(project=project, entity=entity, name=run_name, mode=mode, dir=str(out_dir),
                              config=config, tags=list(tags), reinit="finish_previous")

    def log_generation(self, generation: int, metrics: dict, factors: Sequence) -> None:
        # one line per wavelength band (a single band 0 for one factor per layer)
        rows = [[layer, band, float(value)] for (layer, band), value in np.ndenumerate(factor_table(factors))]
        table = self._wandb.Table(columns=["layer", "band", "factor"], data=rows)
        plot = self._wandb.plot.line(table, "layer", "factor", stroke="band",
                                     title=f"best factors after generation {generation}")
        self.run.log(metrics | {"best_factors": plot}, step=generation)

    def log_summary(self, summary: dict) -> None:
        self.run.summary.update(summary)

    def finish(self) -> None:
        self.run.finish()
