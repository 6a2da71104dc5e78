"""Run one candidate (a factor per layer under a position scheme, or the unpatched model) on a task set.

Tasks are tokenised once per split; every candidate then costs one teacher-forced forward per sample.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from tqdm.auto import tqdm

from .errors import LpesError
from .position import Scheme, apply_layer_scaling
from .results import PositionStats, by_position
from .scoring import get_scorer
from .tasks import Task

Scores = dict[str, dict[str, PositionStats]]  # task -> gold position -> stats


class Evaluator:
    def __init__(self, model, tokenizer, tasks: Mapping[str, Task], *, split: str, trained_context: int,
                 batch_size: int = 4, scoring: str = "teacher_forced", allow_beyond_trained: bool = False,
                 progress: bool = True):
        if batch_size < 1:
            raise LpesError(f"batch_size must be >= 1, got {batch_size}")
        self.model, self.tokenizer, self.tasks = model, tokenizer, dict(tasks)
        self.scorer = get_scorer(scoring)
        self.batch_size = batch_size
        self.progress = progress
        self.encoded = {name: task.encode(split, tokenizer) for name, task in self.tasks.items()}
        longest = max(len(e.ids) for items in self.encoded.values() for e in items)
        if longest > trained_context and not allow_beyond_trained:
            raise LpesError(f"longest prompt has {longest} tokens, beyond the model's trained context of "
                            f"{trained_context}; shorten the task or set allow_beyond_trained=true")
        self.longest = longest

    @property
    def samples(self) -> int:
        return sum(len(items) for items in self.encoded.values())

    def run(self, factors: Sequence[float] | None = None, scheme: Scheme | None = None, desc: str = "eval") -> Scores:
        """Scores by task and gold position; ``factors=None`` evaluates the unpatched model."""
        handle = apply_layer_scaling(self.model, factors, scheme) if factors is not None else None
        try:
            with tqdm(total=self.samples, desc=desc, disable=not self.progress, leave=False) as bar:
                return {name: by_position(self.scorer(
                            self.model, items, batch_size=self.batch_size, pad_id=self.tokenizer.pad_token_id,
                            tokenizer=self.tokenizer, max_new_tokens=self.tasks[name].max_new_tokens,
                            progress=bar.update))
                        for name, items in self.encoded.items()}
        finally:
            if handle is not None:
                handle.remove()


def scores_to_json(scores: Scores) -> dict:
    return {task: {pos: stats.as_dict() for pos, stats in per_pos.items()} for task, per_pos in scores.items()}


def scores_from_json(data: Mapping) -> Scores:
    return {task: {pos: PositionStats(**stats) for pos, stats in per_pos.items()} for task, per_pos in data.items()}
