"""Jobs one after another in this process (the default executor)."""

from __future__ import annotations

from typing import Iterator, Sequence

from ..registries import EXECUTORS
from .base import Executor, GradientJob, Job, Rows, Scorer


@EXECUTORS.plugin
class LocalExecutor(Executor):
    """Jobs one after another in this process, on the model loaded here."""

    def __init__(self, cfg: dict, task_specs: dict, splits: Sequence[str], *, evaluators=None, loaded=None):
        self.scorer = Scorer(cfg, task_specs, splits, evaluators=evaluators, loaded=loaded)
        self.info = self.scorer.info

    def run(self, jobs: Sequence[Job], desc: str = "eval") -> Iterator[tuple[Rows, float]]:
        for split, factors, scheme in jobs:
            yield self.scorer.rows(split, factors, scheme, desc=desc)

    def gradient(self, job: GradientJob):
        return self.scorer.gradient(job)
