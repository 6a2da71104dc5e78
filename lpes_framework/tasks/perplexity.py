"""Perplexity on long natural text: Python's own documentation (``pydoc_data.topics``) or user files.

The text is cut into non-overlapping windows of ``window_tokens``, shared between the splits as file
records are (``base.split_records``: even windows ``search``, odd ones ``test`` and ``validation``).
Each window is one sample whose whole continuation (after the first token) is scored, so
perplexity = exp(-mean token log-prob).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import LpesError
from ..registries import TASKS
from .base import WHOLE_TEXT
from .base import Encoded, Sample, Task, file_stamp, split_records


def builtin_text() -> str:
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k] for k in sorted(topics))


@TASKS.plugin
class Perplexity(Task):
    metric = "perplexity"

    def __init__(self, *, files=(), window_tokens: int = 1024, windows: int = 4, **common):
        common.setdefault("samples_per_position", windows)
        super().__init__(**common)
        self.files = [str(f) for f in files]
        self.window_tokens = window_tokens
        for f in self.files:
            if not Path(f).is_file():
                raise LpesError(f"perplexity: file not found: {f}")
        if window_tokens < 16:
            raise LpesError(f"perplexity: window_tokens must be >= 16, got {window_tokens}")

    def settings(self) -> dict:
        return super().settings() | {"file_stamps": [file_stamp(f) for f in self.files]}

    def _text(self) -> str:
        if not self.files:
            return builtin_text()
        return "\n\n".join(Path(f).read_text(encoding="utf-8", errors="replace") for f in self.files)

    def encode(self, split: str, tokenizer) -> list[Encoded]:
        ids = tokenizer(self._text(), add_special_tokens=False)["input_ids"]
        n = self.window_tokens
        windows = split_records([ids[i:i + n] for i in range(0, len(ids) - n + 1, n)], split)
        if len(windows) < self.samples_per_position:
            raise LpesError(f"perplexity: text gives {len(windows)} {split} windows of {n} tokens, "
                            f"fewer than the {self.samples_per_position} asked for")
        return [Encoded(ids=w, answer_start=1, sample=Sample(prompt="", answer="", position=WHOLE_TEXT, draw=j))
                for j, w in self.drawn(windows, split)]
