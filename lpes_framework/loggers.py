"""Experiment loggers: ``none`` (default) and ``wandb`` (offline unless the user says otherwise)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence


class NullLogger:
    def log_generation(self, generation: int, metrics: dict, factors: Sequence[float]) -> None:
        pass

    def log_summary(self, summary: dict) -> None:
        pass

    def finish(self) -> None:
        pass


class WandbLogger(NullLogger):
    def __init__(self, config: dict, out_dir: Path, project: str = "lpes", mode: str = "offline",
                 entity: str | None = None, run_name: str | None = None, tags=()):
        import wandb

        self._wandb = wandb
        self.run = wandb.init(project=project, entity=entity, name=run_name, mode=mode, dir=str(out_dir),
                              config=config, tags=list(tags), reinit="finish_previous")

    def log_generation(self, generation: int, metrics: dict, factors: Sequence[float]) -> None:
        table = self._wandb.Table(columns=["layer", "factor"], data=[[i, float(f)] for i, f in enumerate(factors)])
        plot = self._wandb.plot.line(table, "layer", "factor", title=f"best factors after generation {generation}")
        self.run.log(metrics | {"best_factors": plot}, step=generation)

    def log_summary(self, summary: dict) -> None:
        self.run.summary.update(summary)

    def finish(self) -> None:
        self.run.finish()


def build_logger(cfg, config: dict, out_dir: Path):
    if cfg is None or cfg.get("name", "none") == "none":
        return NullLogger()
    if cfg.name == "wandb":
        options = {k: v for k, v in dict(cfg).items() if k != "name"}
        return WandbLogger(config, out_dir, **options)
    from .errors import LpesError

    raise LpesError(f"unknown logger '{cfg.name}'; valid: none, wandb")
