"""What every executor shares: jobs, named sets of encoded samples (``SampleSet``), what a worker holds
(``Worker``: the model and the sample sets), and the ``Executor`` interface.

An executor is built as ``Executor(cfg, task_configs, splits, **options)`` (``cfg``: the run's whole
config as a dict; in-process executors (``in_process = True``) also take ``sample_sets=`` and ``loaded=``), exposes ``info``
(the model's ``ModelInfo``), and implements ``run(jobs, desc)``, ``gradient(job)`` and ``close()``.
"""

from __future__ import annotations

import copy
import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Iterator, Mapping, NamedTuple, Sequence

import numpy as np
from tqdm.auto import tqdm

from ..errors import LpesError
from ..position import apply_layer_scaling
from ..registry import SCORERS
from ..scoring.base import ScoreRow
from ..tasks import Task

Rows = dict[str, list[ScoreRow]]


class Job(NamedTuple):
    """One factor schedule scored on one named sample set: a split, or (evaluate, resumed with more
    samples) the part of a split that is still to score; ``draws`` = [start, stop): only the set's samples
    of those draws (a held-out method scored a run of draws at a time, on workers that hold whole splits)."""

    sample_set: str
    factors: Sequence[float] | None  # None: the unpatched model
    scheme: dict | None
    draws: tuple[int, int] | None = None


@dataclass(frozen=True)
class GradientJob:
    """One value-and-gradient evaluation: the objective of ``genes`` (under ``curve`` and ``scheme``) on
    draws ``draws`` of ``split``, against the unpatched model on the same samples (see
    ``scoring.gradient``); each task takes its ``step_draws`` of them. ``per_position`` is the whole
    minibatch's sample count per gold position (times a task's ``step_contexts`` for that task), so that a
    share of its draws (one Ray worker's) returns its part of the same sum."""

    split: str
    draws: tuple[int, ...]
    genes: tuple[float, ...]
    curve: dict
    scheme: dict
    weights: dict
    per_position: int
    checkpoint_layers: bool = False  # recompute layer activations in the backward pass (long contexts)
    first: int = 0  # the split's first draw past the fixed search split (where each task's minibatch draws start)
    task_scales: dict = field(default_factory=dict)  # task -> factor on its term (``fitness.task_scales``)
    baseline: dict | None = None  # the unpatched rows of these draws as JSON where kept (``search.minibatch``)

    def shares(self, n: int) -> list["GradientJob"]:
        """The job cut into at most ``n`` jobs over consecutive blocks of its draws."""
        blocks = [list(b) for b in np.array_split(np.array(self.draws, dtype=int), min(n, len(self.draws)))]
        return [replace(self, draws=tuple(int(d) for d in b)) for b in blocks]


class SampleSet:
    """The samples of a split's tasks, tokenised and checked against the model's window, and how they are
    scored (``scoring=``); ``rows(model)`` scores the model as it is (patched or not)."""

    def __init__(self, tokenizer, tasks: Mapping[str, Task], *, split: str, trained_context: int,
                 batch_size: int = 4, scoring: str = "teacher_forced", share_prefix: bool = True,
                 allow_beyond_trained: bool = False, progress: bool = True):
        if batch_size < 1:
            raise LpesError(f"batch_size must be >= 1, got {batch_size}")
        self.tokenizer, self.tasks, self.split = tokenizer, dict(tasks), split
        self.score = SCORERS.get(scoring)
        self.batch_size = batch_size
        self.share_prefix = share_prefix
        self.progress = progress
        self.encoded = {name: task.encode(split, tokenizer) for name, task in self.tasks.items()}
        longest = max(len(e.ids) for items in self.encoded.values() for e in items)
        if longest > trained_context and not allow_beyond_trained:
            raise LpesError(f"longest {split}-split prompt has {longest} tokens, beyond the model's trained context "
                            f"of {trained_context}; shorten the task or set allow_beyond_trained=true")
        # Dynamic schemes change the model at factor 1 past the window (see position.is_identity).
        answer = max(task.max_new_tokens for task in self.tasks.values())
        self.within_trained = longest + answer <= trained_context

    @property
    def samples(self) -> int:
        return sum(len(items) for items in self.encoded.values())

    def without(self, scored: Mapping[str, set[int]]) -> "SampleSet":
        """The same samples less those whose context (draw) is in ``scored[task]``: what a
        comparison resumed with more samples per position still has to score."""
        return self._keeping(lambda task, draw: draw not in scored.get(task, ()))

    def between(self, start: int, stop: int) -> "SampleSet":
        """The same samples less those whose draw is not in ``[start, stop)``: one run of a method's draws
        scored between two of its records."""
        return self._keeping(lambda task, draw: start <= draw < stop)

    def runs(self, every: int) -> list[tuple[int, int]]:
        """The set's draws cut into runs ``[start, stop)`` of ``every`` draws from draw 0, by draw number: after
        each run a record can hold the first draws of every task, as a resume reuses them."""
        stop = 1 + max((e.sample.draw for items in self.encoded.values() for e in items), default=-1)
        return [(start, min(start + every, stop)) for start in range(0, stop, every)]

    def _keeping(self, keep) -> "SampleSet":
        """A shallow copy holding the samples whose (task, draw) ``keep`` accepts; tasks left empty dropped."""
        part = copy.copy(self)
        part.encoded = {name: kept for name, items in self.encoded.items()
                        if (kept := [e for e in items if keep(name, e.sample.draw)])}
        return part

    def with_draws(self, draws: Sequence[int], first: int, keep=lambda task: True) -> "SampleSet":
        """The same tasks over a gradient minibatch's draws of its split (numbered from ``first``; each task
        takes its ``step_draws``), for the tasks ``keep`` accepts (only they are encoded)."""
        out = copy.copy(self)
        out.tasks = {name: task.with_draws(task.step_draws(draws, first)) for name, task in self.tasks.items()
                     if keep(task)}
        out.encoded = {name: task.encode(self.split, self.tokenizer) for name, task in out.tasks.items()}
        return out

    def rows(self, model, desc: str = "eval") -> Rows:
        """Per-sample scores of ``model`` by task."""
        # disable=None: a bar on a terminal, none in a log (its frames would be lines)
        with tqdm(total=self.samples, desc=desc, disable=None if self.progress else True, leave=False) as bar:
            return {name: self.score(
                        model, items, batch_size=self.batch_size, pad_id=self.tokenizer.pad_token_id,
                        tokenizer=self.tokenizer, max_new_tokens=self.tasks[name].max_new_tokens,
                        share_prefix=self.share_prefix, match=self.tasks[name].matches,
                        text_score=self.tasks[name].text_score, progress=bar.update)
                    for name, items in self.encoded.items()}


def encode_splits(cfg, tasks: dict, splits: Sequence[str], tokenizer=None, info=None) -> dict:
    """One SampleSet per split: the tasks' samples tokenised and checked against the model's window
    (tokenizer and config only: no weights; ``info``, the model's identity where the caller has it)."""
    from ..model.load import identify, load_tokenizer

    tokenizer = tokenizer or load_tokenizer(cfg.model)
    context = (info or identify(cfg.model)).trained_context
    return {split: SampleSet(tokenizer, tasks, split=split, trained_context=context, batch_size=cfg.batch_size,
                             scoring=cfg.scoring, share_prefix=cfg.share_prefix,
                             allow_beyond_trained=cfg.allow_beyond_trained, progress=cfg.progress)
            for split in splits}


def kept_rows(kept: dict | None, minibatch) -> dict | None:
    """The rows of ``kept`` (JSON, a whole job's) for ``minibatch``'s samples in its order (a Ray share takes
    its own draws' rows), or None unless every sample has its row."""
    from ..judging.results import rows_from_json

    if not kept:
        return None
    by_sample = {(task, r.draw, str(r.position), r.length): r for task, rows in rows_from_json(kept).items() for r in rows}
    rows = {task: [by_sample.get((task, e.sample.draw, str(e.sample.position), e.sample.length)) for e in items]
            for task, items in minibatch.encoded.items()}
    return None if any(r is None for per in rows.values() for r in per) else rows


class Worker:
    """What a worker holds: the model, the encoded samples of every split, the schemes it was sent."""

    def __init__(self, cfg: dict, task_configs: dict, splits: Sequence[str], threads: int | None = None, *,
                 sample_sets: dict | None = None, loaded=None):
        from omegaconf import OmegaConf

        from ..model.load import load_model
        from ..tasks import TASKS

        if threads:
            import torch

            torch.set_num_threads(int(threads))
        cfg = OmegaConf.create(cfg)
        if sample_sets is None:
            sample_sets = encode_splits(cfg, {k: TASKS.build(s) for k, s in task_configs.items()}, splits)
        self.sample_sets = sample_sets
        tokenizer = next(iter(sample_sets.values())).tokenizer
        self.model, _, self.info = loaded or load_model(cfg.model, tokenizer)
        self._schemes: dict[str, object] = {}
        self._curves: dict[str, object] = {}

    def model_info(self):
        return self.info

    def scheme(self, cfg: dict | None):
        from ..position import build_scheme

        if cfg is None:
            return None
        key = repr(sorted(cfg.items()))
        if key not in self._schemes:
            self._schemes[key] = build_scheme(cfg)
        return self._schemes[key]

    def curve(self, cfg: dict, scheme_cfg: dict):
        """The curve of ``cfg`` over the numbers per layer of the scheme ``scheme_cfg`` on this model (its
        ``layer_width``, as the search counts them)."""
        from ..position import layer_width
        from ..position.curves import build_curve

        n_bands = layer_width(self.scheme(scheme_cfg), self.info)
        key = repr((sorted(cfg.items()), n_bands))
        if key not in self._curves:
            self._curves[key] = build_curve(cfg, self.info.n_layers, n_bands=n_bands)
        return self._curves[key]

    def gradient(self, job: GradientJob):
        """The unpatched rows of the job's samples, then the objective and its gradient against them."""
        from ..judging.fitness import FitnessWeights, objective_coefficients
        from ..scoring.gradient import GradientResult, value_and_gradient

        start = time.perf_counter()
        # a task of weight 0 (NSGA-II's perplexity objective) adds nothing to the objective: not scored
        minibatch = self.sample_sets[job.split].with_draws(job.draws, job.first, keep=lambda task: task.weight != 0)
        baseline = kept_rows(job.baseline, minibatch) or minibatch.rows(self.model, desc="minibatch")
        middle = time.perf_counter()
        coefficients = objective_coefficients(baseline, minibatch.tasks, FitnessWeights(**job.weights),
                                              job.per_position, job.task_scales)
        value, gradient, rows, by_task = value_and_gradient(
            self.model, minibatch.encoded, baseline, coefficients, job.genes, self.curve(job.curve, job.scheme),
            self.scheme(job.scheme), batch_size=minibatch.batch_size, pad_id=minibatch.tokenizer.pad_token_id,
            share_prefix=minibatch.share_prefix, checkpoint_layers=job.checkpoint_layers)
        return GradientResult(value=value, gradient=gradient.tolist(), rows=rows, baseline=baseline,
                              seconds={"baseline": middle - start, "gradient": time.perf_counter() - middle},
                              by_task=by_task)

    def rows(self, sample_set: str, factors, scheme_cfg: dict | None, draws: tuple[int, int] | None = None,
             desc: str = "eval") -> tuple[Rows, float]:
        """Per-sample rows of one job (the sample set named ``sample_set``, its draws in ``[start, stop)`` where
        given, patched with ``factors`` unless None), and the seconds it took here."""
        start = time.perf_counter()
        samples = self.sample_sets[sample_set]
        samples = samples if draws is None else samples.between(*draws)
        patch = nullcontext() if factors is None else apply_layer_scaling(self.model, list(factors),
                                                                           self.scheme(scheme_cfg))
        with patch:
            rows = samples.rows(self.model, desc=desc)
        return rows, time.perf_counter() - start


class Executor:
    name = "executor"  # set by the registry
    info = None  # ModelInfo of the model the jobs run on
    in_process = False  # True: built with the driver's sample_sets= and loaded= (no second model in memory)

    def run(self, jobs: Sequence[Job], desc: str = "eval") -> Iterator[tuple[Rows, float]]:
        """(per-sample rows by task, seconds) of each job, in job order."""
        raise NotImplementedError

    def gradient(self, job: GradientJob):
        """The ``scoring.gradient.GradientResult`` of one value-and-gradient job."""
        raise NotImplementedError

    def close(self) -> None:
        """Release workers; called once, also when the search fails."""
