"""Where candidates are scored: in this process (``executor=local``) or on Ray workers (``executor=ray``).

A job is ``(split, factors or None, scheme config or None)``: one factor schedule scored on one split
(None: the unpatched model). ``run(jobs)`` yields each job's (per-sample rows, seconds) in job order, whatever
order they finish in, so the driver (which alone writes the evaluation log and the checkpoint) writes
the same records in the same order with any executor. Ray workers each load the model once from the
same model config and encode the tasks once; a job whose worker dies is retried on another worker.
"""
from __future__ import annotations

from typing import Sequence

from ..registry import EXECUTORS
from .base import SampleSet, Executor, GradientJob, Job, Rows, Worker, encode_splits


def build_executor(cfg: dict, run_cfg: dict, task_configs: dict, splits: Sequence[str], *, sample_sets=None,
                   loaded=None):
    """The executor named by ``cfg['name']``. One that runs in this process (``in_process = True``) reuses
    the driver's ``sample_sets`` and a ``loaded`` = (model, tokenizer, info); remote workers build their own
    from the configs."""
    shared = {"sample_sets": sample_sets, "loaded": loaded} if EXECUTORS.get(cfg["name"]).in_process else {}
    return EXECUTORS.build(cfg, run_cfg, task_configs, splits, **shared)


__all__ = ["EXECUTORS", "SampleSet", "Executor", "GradientJob", "Job", "Rows", "Worker", "build_executor", "encode_splits"]
