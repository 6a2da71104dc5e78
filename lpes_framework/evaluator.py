"""Run one candidate (a factor per layer under a position scheme, or the unpatched model) on a task set.

Tasks are tokenised once per split, before any weights load (so a prompt that does not fit the model is
refused at once); every candidate then costs one teacher-forced forward per sample, or much less where
samples share a context (``share_prefix``, see ``scoring``).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from tqdm.auto import tqdm

from .errors import LpesError
from .position import Scheme, apply_layer_scaling
from .results import PositionStats, ScoreRow, by_position
from .scoring import get_scorer
from .tasks import Task

Scores = dict[str, dict[str, PositionStats]]  # task -> gold position -> stats


class Evaluator:
    def __init__(self, tokenizer, tasks: Mapping[str, Task], *, split: str, trained_context: int,
                 batch_size: int = 4, scoring: str = "teacher_forced", share_prefix: bool = True,
                 allow_beyond_trained: bool = False, progress: bool = True):
        if batch_size < 1:
            raise LpesError(f"batch_size must be >= 1, got {batch_size}")
        self.tokenizer, self.tasks = tokenizer, dict(tasks)
        self.scorer = get_scorer(scoring)
        self.batch_size = batch_size
        self.share_prefix = share_prefix
        self.progress = progress
        self.encoded = {name: task.encode(split, tokenizer) for name, task in self.tasks.items()}
        longest = max(len(e.ids) for items in self.encoded.values() for e in items)
        if longest > trained_context and not allow_beyond_trained:
            raise LpesError(f"longest {split}-split prompt has {longest} tokens, beyond the model's trained context "
                            f"of {trained_context}; shorten the task or set allow_beyond_trained=true")

    @property
    def samples(self) -> int:
        return sum(len(items) for items in self.encoded.values())

    def rows(self, model, factors: Sequence[float] | None = None, scheme: Scheme | None = None,
             desc: str = "eval") -> dict[str, list[ScoreRow]]:
        """Per-sample scores of ``model`` by task; ``factors=None`` evaluates it unpatched."""
        handle = apply_layer_scaling(model, factors, scheme) if factors is not None else None
        try:
            with tqdm(total=self.samples, desc=desc, disable=not self.progress, leave=False) as bar:
                return {name: self.scorer(
                            model, items, batch_size=self.batch_size, pad_id=self.tokenizer.pad_token_id,
                            tokenizer=self.tokenizer, max_new_tokens=self.tasks[name].max_new_tokens,
                            share_prefix=self.share_prefix, match=self.tasks[name].matches, progress=bar.update)
                        for name, items in self.encoded.items()}
        finally:
            if handle is not None:
                handle.remove()

    def run(self, model, factors: Sequence[float] | None = None, scheme: Scheme | None = None,
            desc: str = "eval") -> Scores:
        """Scores of ``model`` by task and gold position; ``factors=None`` evaluates it unpatched."""
        return {name: by_position(rows) for name, rows in self.rows(model, factors, scheme, desc).items()}


def scores_to_json(scores: Scores) -> dict:
    return {task: {pos: stats.as_dict() for pos, stats in per_pos.items()} for task, per_pos in scores.items()}


def scores_from_json(data: Mapping) -> Scores:
    return {task: {pos: PositionStats(**stats) for pos, stats in per_pos.items()} for task, per_pos in data.items()}
