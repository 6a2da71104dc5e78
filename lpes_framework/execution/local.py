"""Jobs one after another in this process (the default executor)."""

from __future__ import annotations

from typing import Iterator, Sequence

from ..registry import EXECUTORS
from .base import Executor, GradientJob, Job, Rows, Worker


@EXECUTORS.plugin
class LocalExecutor(Executor):
    """Jobs one after another in this process, on the model loaded here."""

    in_process = True

    def __init__(self, cfg: dict, task_configs: dict, splits: Sequence[str], *, sample_sets=None, loaded=None):
        self.worker = Worker(cfg, task_configs, splits, sample_sets=sample_sets, loaded=loaded)
        self.info = self.worker.info

    def run(self, jobs: Sequence[Job], desc: str = "eval") -> Iterator[tuple[Rows, float]]:
        for job in jobs:
            yield self.worker.rows(*job, desc=desc)

    def gradient(self, job: GradientJob):
        return self.worker.gradient(job)
