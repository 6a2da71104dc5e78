"""Jobs spread over Ray workers, each with its own model replica; a dead worker's job is retried."""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from typing import Iterator, Sequence

from ..errors import LpesError
from ..registry import EXECUTORS
from .base import Executor, GradientJob, Job, Rows, Worker


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])  # the folder holding lpes_framework/


def start_ray(address: str | None = None, cpus: int | None = None) -> None:
    """Join the Ray cluster at ``address``, or start a local instance of ``cpus`` CPUs listening on 127.0.0.1
    only; its workers import this very package (a git worktree's copy, not whatever is installed)."""
    import ray

    runtime_env = {"env_vars": {"PYTHONPATH": os.pathsep.join(
        filter(None, [_package_root(), os.environ.get("PYTHONPATH")]))}}
    if address is None:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # bind to 127.0.0.1 only
        ray.init(num_cpus=cpus, num_gpus=None, include_dashboard=False, log_to_driver=False, runtime_env=runtime_env)
    else:
        ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)


@EXECUTORS.plugin
class RayExecutor(Executor):
    """``workers`` Ray actors, each with its own model replica (``gpus_per_worker`` GPUs and
    ``threads_per_worker`` CPU threads). Without ``address`` a local Ray instance starts with the run and
    stops with it, listening on 127.0.0.1 only; ``address`` (``auto``, ``ray://host:port``) joins a
    running cluster as Ray configures it."""

    def __init__(self, cfg: dict, task_configs: dict, splits: Sequence[str], *, workers: int = 2,
                 threads_per_worker: int = 1, gpus_per_worker: float = 0, address: str | None = None):
        try:
            import ray
        except ImportError:
            raise LpesError("executor=ray needs Ray: pip install 'lpes-framework[ray]'") from None
        # bounded above: 10^11 workers was a Ray start asking for 10^11 CPUs, then as many actors
        if not (1 <= workers <= 4096 and 1 <= threads_per_worker <= 4096 and 0 <= gpus_per_worker <= 4096):
            raise LpesError("executor: need 1 <= workers <= 4096, 1 <= threads_per_worker <= 4096 and "
                            f"0 <= gpus_per_worker <= 4096, got {workers}, {threads_per_worker}, {gpus_per_worker}")
        self.ray = ray
        self.started = not ray.is_initialized()  # an instance started by the caller is the caller's to stop
        if self.started:
            start_ray(address, cpus=workers * threads_per_worker)
        actor = ray.remote(num_cpus=threads_per_worker, num_gpus=gpus_per_worker, max_restarts=0)(Worker)
        self.actors = [actor.remote(cfg, task_configs, list(splits), threads_per_worker) for _ in range(workers)]
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
        return self._map("rows", [(*Job(*job), desc) for job in jobs])  # every field, so desc lands last

    def gradient(self, job: GradientJob):
        """Each worker takes a share of the minibatch's contexts; their sums add up to the whole job's."""
        from ..scoring.gradient import GradientResult

        return GradientResult.combine(list(self._map("gradient", [(share,) for share in job.shares(len(self.actors))])))

    def _map(self, method: str, calls: list[tuple]) -> Iterator:
        """``actor.<method>(*args)`` of each call on idle workers, answers yielded in call order."""
        ray = self.ray
        queue, done, in_flight = deque(range(len(calls))), {}, {}
        idle = list(self.actors)
        next_out = 0
        while next_out < len(calls):
            while queue and idle:
                actor, index = idle.pop(), queue.popleft()
                in_flight[getattr(actor, method).remote(*calls[index])] = (actor, index)
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
