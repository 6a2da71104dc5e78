"""Where candidates are scored: in this process (``executor=local``) or on Ray workers (``executor=ray``).

A job is ``(split, factors or None, scheme config or None)``: one factor schedule scored on one split
(None: the unpatched model). ``run(jobs)`` yields each job's (per-sample rows, seconds) in job order, whatever
order they finish in, so the driver (which alone writes the evaluation log and the checkpoint) writes
the same records in the same order with any executor. Ray workers each load the model once from the
same model config and encode the tasks once; a job whose worker dies is retried on another worker.
"""

from __future__ import annotations

import os
import time
from collections import deque
from pathlib import Path
from typing import Iterator, Sequence

from .errors import LpesError
from .registry import Registry
from .results import ScoreRow

Job = tuple[str, "Sequence[float] | None", "dict | None"]
Rows = dict[str, list[ScoreRow]]

EXECUTORS: Registry = Registry("executor", "lpes_framework.executors")


def encode_splits(cfg, tasks: dict, splits: Sequence[str], tokenizer=None) -> dict:
    """One Evaluator per split: the tasks' samples tokenised and checked against the model's window
    (tokenizer and config only: no weights)."""
    from .evaluator import Evaluator
    from .models import load_tokenizer, peek

    tokenizer = tokenizer or load_tokenizer(cfg.model)
    context = peek(cfg.model).trained_context
    return {split: Evaluator(tokenizer, tasks, split=split, trained_context=context, batch_size=cfg.batch_size,
                             scoring=cfg.scoring, share_prefix=cfg.share_prefix,
                             allow_beyond_trained=cfg.allow_beyond_trained, progress=cfg.progress)
            for split in splits}


class Scorer:
    """What a worker holds: the model, the encoded samples of every split, the schemes it was sent."""

    def __init__(self, cfg: dict, task_specs: dict, splits: Sequence[str], threads: int | None = None, *,
                 evaluators: dict | None = None, loaded=None):
        from omegaconf import OmegaConf

        from .models import load_model
        from .tasks import TASKS

        if threads:
            import torch

            torch.set_num_threads(int(threads))
        cfg = OmegaConf.create(cfg)
        if evaluators is None:
            evaluators = encode_splits(cfg, {k: TASKS.build(s) for k, s in task_specs.items()}, splits)
        self.evaluators = evaluators
        tokenizer = next(iter(evaluators.values())).tokenizer
        self.model, _, self.info = loaded or load_model(cfg.model, tokenizer)
        self._schemes: dict[str, object] = {}

    def model_info(self):
        return self.info

    def scheme(self, cfg: dict | None):
        from .position import build_scheme

        if cfg is None:
            return None
        key = repr(sorted(cfg.items()))
        if key not in self._schemes:
            self._schemes[key] = build_scheme(cfg)
        return self._schemes[key]

    def rows(self, split: str, factors, scheme_cfg: dict | None, desc: str = "eval") -> tuple[Rows, float]:
        """Per-sample rows of one job, and the seconds it took here."""
        start = time.perf_counter()
        rows = self.evaluators[split].rows(self.model, None if factors is None else list(factors),
                                           self.scheme(scheme_cfg), desc=desc)
        return rows, time.perf_counter() - start


@EXECUTORS.register("local")
class LocalExecutor:
    """Jobs one after another in this process, on the model loaded here."""

    def __init__(self, cfg: dict, task_specs: dict, splits: Sequence[str], *, evaluators=None, loaded=None):
        self.scorer = Scorer(cfg, task_specs, splits, evaluators=evaluators, loaded=loaded)
        self.info = self.scorer.info

    def run(self, jobs: Sequence[Job], desc: str = "eval") -> Iterator[tuple[Rows, float]]:
        for split, factors, scheme in jobs:
            yield self.scorer.rows(split, factors, scheme, desc=desc)

    def close(self) -> None:
        pass


def _package_root() -> str:
    return str(Path(__file__).resolve().parent.parent)


@EXECUTORS.register("ray")
class RayExecutor:
    """``workers`` Ray actors, each with its own model replica (``gpus_per_worker`` GPUs and
    ``threads_per_worker`` CPU threads). Without ``address`` a local Ray instance starts with the run and
    stops with it, listening on 127.0.0.1 only; ``address`` (``auto``, ``ray://host:port``) joins a
    running cluster as Ray configures it."""

    def __init__(self, cfg: dict, task_specs: dict, splits: Sequence[str], *, workers: int = 2,
                 threads_per_worker: int = 1, gpus_per_worker: float = 0, address: str | None = None):
        try:
            import ray
        except ImportError:
            raise LpesError("executor=ray needs Ray: pip install 'lpes-framework[ray]'") from None
        if workers < 1 or threads_per_worker < 1 or gpus_per_worker < 0:
            raise LpesError("executor: need workers >= 1, threads_per_worker >= 1, gpus_per_worker >= 0")
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            # workers import this very package (a git worktree's copy, not whatever is installed)
            runtime_env = {"env_vars": {"PYTHONPATH": os.pathsep.join(
                filter(None, [_package_root(), os.environ.get("PYTHONPATH")]))}}
            if address is None:
                os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # bind to 127.0.0.1 only
                ray.init(num_cpus=workers * threads_per_worker, num_gpus=None, include_dashboard=False,
                         log_to_driver=False, runtime_env=runtime_env)
            else:
                ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)
        actor = ray.remote(num_cpus=threads_per_worker, num_gpus=gpus_per_worker, max_restarts=0)(Scorer)
        self.actors = [actor.remote(cfg, task_specs, list(splits), threads_per_worker) for _ in range(workers)]
        self.info = self._first(lambda a: a.model_info.remote())

    def _first(self, call):
        """The answer of the first worker that is alive to give it."""
        for actor in list(self.actors):
            try:
                return self.ray.get(call(actor))
            except self.ray.exceptions.RayActorError:
                self.actors.remove(actor)
        raise LpesError("every Ray worker died while loading the model; see the Ray logs")

    def run(self, jobs: Sequence[Job], desc: str = "eval") -> Iterator[tuple[Rows, float]]:
        ray = self.ray
        queue, done, in_flight = deque(range(len(jobs))), {}, {}
        idle = list(self.actors)
        next_out = 0
        while next_out < len(jobs):
            while queue and idle:
                actor, index = idle.pop(), queue.popleft()
                split, factors, scheme = jobs[index]
                in_flight[actor.rows.remote(split, factors, scheme, desc)] = (actor, index)
            if not in_flight:
                raise LpesError("all Ray workers are gone; finished evaluations are saved: rerun with resume=true")
            ready, _ = ray.wait(list(in_flight), num_returns=1)
            actor, index = in_flight.pop(ready[0])
            try:
                done[index] = ray.get(ready[0])
                idle.append(actor)
            except ray.exceptions.RayActorError:  # the worker died: its job goes to another one
                self.actors.remove(actor)
                queue.appendleft(index)
            while next_out in done:
                yield done.pop(next_out)
                next_out += 1

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        if self.started:
            self.ray.shutdown()


def build_executor(cfg: dict, run_cfg: dict, task_specs: dict, splits: Sequence[str], *, evaluators=None,
                   loaded=None):
    """The executor named by ``cfg['name']``. In-process executors reuse the driver's ``evaluators`` and
    a ``loaded`` = (model, tokenizer, info); remote workers build their own from the configs."""
    if cfg["name"] == "local":
        return EXECUTORS.build(cfg, run_cfg, task_specs, splits, evaluators=evaluators, loaded=loaded)
    return EXECUTORS.build(cfg, run_cfg, task_specs, splits)
