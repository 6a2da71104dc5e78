"""Perplexity on long text that ships offline: Python's documentation (``source: pydoc``, the
``pydoc_data.topics`` text, ~200K tokens), the standard library's own source (``source: stdlib``, its
top-level modules, a few million tokens: long windows for extrapolation), or user ``files``.

The text is cut into non-overlapping windows of ``window_tokens``, shared between the splits as file
records are (``base.split_records``: even windows ``search``, odd ones ``test`` and ``validation``).
Each window is one sample whose whole continuation (after the first token) is scored, so
perplexity = exp(-mean token log-prob). ``score_from: k`` scores only the tokens from position k on, the
rest being context: the perplexity beyond a model's trained window given everything before it (the
extrapolation search's fitness; ``analysis buckets`` wants whole windows). ``max_ratio`` makes the task a
guard in a search's fitness instead of a reward (``judging.fitness``).
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

from ..errors import LpesError
from ..registry import TASKS
from .base import WHOLE_TEXT
from .base import Encoded, Sample, Task, file_stamp, split_records


def pydoc_text() -> str:
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k] for k in sorted(topics))


def stdlib_text() -> str:
    """The standard library's top-level modules, in name order (the same text for a given Python version)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    return "\n\n".join(f.read_text(encoding="utf-8", errors="replace") for f in sorted(root.glob("*.py")))


SOURCES = {"pydoc": pydoc_text, "stdlib": stdlib_text}


@TASKS.plugin
class Perplexity(Task):
    metric = "perplexity"

    def __init__(self, *, files=(), source: str = "pydoc", window_tokens: int = 1024, windows: int = 4,
                 score_from: int = 1, max_ratio: float | None = None, **common):
        common.setdefault("samples_per_position", windows)
        super().__init__(**common)
        if source not in SOURCES:
            raise LpesError(f"perplexity: source must be one of {', '.join(SOURCES)}, got {source!r}")
        self.files = [str(f) for f in files]
        self._source = source
        self.window_tokens = window_tokens
        for f in self.files:
            if not Path(f).is_file():
                raise LpesError(f"perplexity: file not found: {f}")
        if window_tokens < 16:
            raise LpesError(f"perplexity: window_tokens must be >= 16, got {window_tokens}")
        if not 1 <= score_from < window_tokens:
            raise LpesError(f"perplexity: score_from must be in [1, window_tokens), got {score_from}")
        if max_ratio is not None and not (isinstance(max_ratio, (int, float)) and max_ratio >= 1):
            raise LpesError(f"perplexity: max_ratio must be a number >= 1 (or null), got {max_ratio!r}")
        # private: the guard changes the fitness, not the samples (not part of the cache key)
        self._max_ratio = None if max_ratio is None else float(max_ratio)
        self._score_from = score_from

    @property
    def score_from(self) -> int:
        """The first scored position of a window (1: all but the first token)."""
        return self._score_from

    @property
    def max_ratio(self) -> float | None:
        """The search's guard: a perplexity ratio to unpatched above which a candidate is penalised, and
        below which this task adds nothing to the fitness (``judging.fitness``); None rewards the log-prob."""
        return self._max_ratio

    @property
    def source(self) -> str:
        return self._source

    def settings(self) -> dict:
        # the stdlib text changes with the Python version, so it is part of what decides the samples; the
        # default source adds nothing, so runs recorded before there was a choice still resume
        source = {} if self._source == "pydoc" or self.files else {"source": self._source,
                                                                     "python": sys.version.split()[0]}
        scored = {} if self._score_from == 1 else {"score_from": self._score_from}  # likewise
        return super().settings() | {"file_stamps": [file_stamp(f) for f in self.files]} | source | scored

    def _text(self) -> str:
        if not self.files:
            return SOURCES[self._source]()
        return "\n\n".join(Path(f).read_text(encoding="utf-8", errors="replace") for f in self.files)

    def encode(self, split: str, tokenizer) -> list[Encoded]:
        ids = tokenizer(self._text(), add_special_tokens=False)["input_ids"]
        n = self.window_tokens
        windows = split_records([ids[i:i + n] for i in range(0, len(ids) - n + 1, n)], split)
        if len(windows) < self.samples_per_position:
            raise LpesError(f"perplexity: text gives {len(windows)} {split} windows of {n} tokens, "
                            f"fewer than the {self.samples_per_position} asked for")
        return [Encoded(ids=w, answer_start=self._score_from, sample=Sample(prompt="", answer="", position=WHOLE_TEXT, draw=j))
                for j, w in self.drawn(windows, split)]
