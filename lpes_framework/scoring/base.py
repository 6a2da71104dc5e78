"""What a scorer is and what it produces.

A scorer is a function registered with ``@SCORERS.plugin`` (``scoring: <name>`` in the config) that the
executors call as::

    scorer(model, items, *, batch_size, pad_id, tokenizer, max_new_tokens, share_prefix, match, text_score,
           progress) -> list[ScoreRow]

``items`` are a task's encoded samples (``tasks.base.Encoded``); the model is scored as it is (patched or
not); one ``ScoreRow`` per item comes back in item order, and ``progress(n)``, where given, is called as
samples finish. A scorer ignores the keywords it has no use for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence


@dataclass(frozen=True)
class ScoreRow:
    """What scoring produces for one sample (the unit every comparison and fitness is built from)."""

    position: int | str
    logprob: float  # mean log-probability of the gold answer tokens
    exact: bool  # greedy decoding reproduces the whole answer
    first: bool  # greedy decoding gets the first answer token
    first_logprob: float
    tokens: int  # answer tokens scored
    token_logprobs: tuple[float, ...] = ()  # log-probability of each gold answer token
    draw: int = 0  # the sample's draw (haystack, record): paired comparisons resample these
    length: int | None = None  # the token length its context was filled to (tasks with a length option)
    match: float | None = None  # the task's own text score of a generation (RULER's string match), if any



class Scorer(Protocol):
    def __call__(self, model, items: Sequence, *, batch_size: int = 4, pad_id: int = 0,
                 progress: Callable[[int], None] | None = None, **options) -> list[ScoreRow]: ...
