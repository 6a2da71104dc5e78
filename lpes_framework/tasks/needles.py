"""Needle tasks: passkey retrieval and RULER-style multi-key needles in a haystack, at set depths."""

from __future__ import annotations

from ..errors import LpesError
from .base import TASKS, Sample, Task, rng_for

FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
PASSKEY_NEEDLE = "The pass key is {key}. Remember it. {key} is the pass key. "
PASSKEY_QUERY = ("There is an important info hidden inside a lot of irrelevant text. Find it and memorize it. "
                 "I will quiz you about the important information there.\n\n{context}\n\n"
                 "What is the pass key? The pass key is")
NIAH_NEEDLE = "One of the special magic numbers for {key} is: {value}. "
NIAH_QUERY = ("Some special magic numbers are hidden within the following text. Make sure to memorize it. "
              "I will quiz you about the numbers afterwards.\n{context}\n"
              "What is the special magic number for {key} mentioned in the provided text? "
              "The special magic number for {key} mentioned in the provided text is")
NIAH_WORDS = ("amber", "basil", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
              "kelp", "lagoon", "maple", "nectar", "onyx", "pebble", "quartz", "raven", "saffron", "tundra")


def _depths(depths) -> list[int]:
    out = [int(d) for d in depths]
    if not out or any(d < 0 or d > 100 for d in out):
        raise LpesError(f"needle depths must be percentages in [0, 100], got {out}")
    return out


class _Haystack(Task):
    """Filler text of about ``context_tokens`` tokens with needles inserted at sentence boundaries."""

    def __init__(self, *, context_tokens: int = 1024, depths=(0, 50, 100), **common):
        super().__init__(**common)
        if context_tokens < 64:
            raise LpesError(f"{self.name}: context_tokens must be >= 64, got {context_tokens}")
        self.context_tokens = context_tokens
        self.depths = _depths(depths)

    @property
    def positions(self) -> list:
        return list(self.depths)

    def _filler_units(self, tokenizer) -> int:
        per_unit = len(tokenizer(FILLER, add_special_tokens=False)["input_ids"]) if tokenizer else 24
        return max(2, self.context_tokens // per_unit)

    @staticmethod
    def _insert(units: int, needle: str, depth: int, distractors: list[tuple[int, str]] = ()) -> str:
        """Filler units with the needle at ``depth`` percent and distractors at their own slots."""
        slots = {round(depth / 100 * units): [needle]}
        for slot, text in distractors:
            slots.setdefault(slot, []).append(text)
        parts = []
        for i in range(units + 1):
            parts.extend(slots.get(i, ()))
            if i < units:
                parts.append(FILLER)
        return "".join(parts).strip()

    def _draw(self, rng, units: int) -> tuple[str, list[tuple[int, str]], str, str]:
        """(gold needle, distractors at slots, question template with {context}, answer) of one sample."""
        raise NotImplementedError

    def samples(self, split: str, tokenizer=None) -> list[Sample]:
        units = self._filler_units(tokenizer)
        out = []
        for j in range(self.samples_per_position):
            needle, distractors, question, answer = self._draw(rng_for(self.seed, split, j), units)
            for depth in self.depths:
                context = self._insert(units, needle, depth, distractors)
                out.append(Sample(prompt=question.format(context=context), answer=answer, position=depth))
        return out


@TASKS.register("passkey")
class Passkey(_Haystack):
    name = "passkey"

    def __init__(self, *, digits: int = 5, **common):
        super().__init__(**common)
        self.digits = digits

    def _draw(self, rng, units):
        key = str(rng.integers(10 ** (self.digits - 1), 10 ** self.digits))
        return PASSKEY_NEEDLE.format(key=key), [], PASSKEY_QUERY, " " + key


@TASKS.register("niah")
class MultiKeyNeedle(_Haystack):
    """RULER niah_multikey: one gold needle and ``distractors`` needles for other keys, spread evenly."""

    name = "niah"

    def __init__(self, *, distractors: int = 3, digits: int = 7, **common):
        super().__init__(**common)
        if not 0 <= distractors < len(NIAH_WORDS):
            raise LpesError(f"niah: distractors must be in [0, {len(NIAH_WORDS) - 1}], got {distractors}")
        self.distractors = distractors
        self.digits = digits

    def _draw(self, rng, units):
        words = rng.choice(len(NIAH_WORDS), size=self.distractors + 1, replace=False)
        keys = [f"{NIAH_WORDS[w]}-{rng.integers(100, 1000)}" for w in words]
        values = [str(rng.integers(10 ** (self.digits - 1), 10 ** self.digits)) for _ in keys]
        slots = [round((i + 0.5) / self.distractors * units) for i in range(self.distractors)]
        others = [(slot, NIAH_NEEDLE.format(key=k, value=v)) for slot, k, v in zip(slots, keys[1:], values[1:])]
        # the key is filled in now; {context} stays for samples() to fill
        question = NIAH_QUERY.replace("{key}", keys[0])
        return NIAH_NEEDLE.format(key=keys[0], value=values[0]), others, question, " " + values[0]
