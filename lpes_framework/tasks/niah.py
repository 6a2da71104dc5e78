"""RULER-style multi-key needle in a haystack (multi-query in the queries layout)."""

from __future__ import annotations

from ..errors import LpesError
from ..registry import TASKS
from ._haystack import NIAH_WORDS, _Haystack

NIAH_NEEDLE = "One of the special magic numbers for {key} is: {value}. "
NIAH_QUERY = ("Some special magic numbers are hidden within the following text. Make sure to memorize it. "
              "I will quiz you about the numbers afterwards.\n{context}\n"
              "What is the special magic number for {key} mentioned in the provided text? "
              "The special magic number for {key} mentioned in the provided text is")


@TASKS.plugin
class MultiKeyNeedle(_Haystack):
    """RULER niah_multikey: one gold needle and ``distractors`` needles for other keys, spread evenly."""

    def __init__(self, *, distractors: int = 3, digits: int = 7, **common):
        super().__init__(**common)
        if not 0 <= distractors < len(NIAH_WORDS):
            raise LpesError(f"niah: distractors must be in [0, {len(NIAH_WORDS) - 1}], got {distractors}")
        self.distractors = distractors
        self.digits = digits

    def _keys_values(self, rng, count: int) -> tuple[list[str], list[str]]:
        words = rng.choice(len(NIAH_WORDS), size=count, replace=False)
        keys = [f"{NIAH_WORDS[w]}-{rng.integers(100, 1000)}" for w in words]
        return keys, [str(rng.integers(10 ** (self.digits - 1), 10 ** self.digits)) for _ in keys]

    def _draw(self, rng, units):
        keys, values = self._keys_values(rng, self.distractors + 1)
        slots = [round((i + 0.5) / self.distractors * units) for i in range(self.distractors)]
        others = [(slot, NIAH_NEEDLE.format(key=k, value=v)) for slot, k, v in zip(slots, keys[1:], values[1:])]
        # the key is filled in now; {context} stays for samples() to fill
        question = NIAH_QUERY.replace("{key}", keys[0])
        return NIAH_NEEDLE.format(key=keys[0], value=values[0]), others, question, " " + values[0]

    def _draw_labelled(self, rng, count):
        """RULER niah_multiquery: every needle is another one's distractor."""
        keys, values = self._keys_values(rng, count)
        return [(NIAH_NEEDLE.format(key=k, value=v), NIAH_QUERY.replace("{key}", k), " " + v)
                for k, v in zip(keys, values)]
