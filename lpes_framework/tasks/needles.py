"""Needle tasks: passkey retrieval and RULER-style multi-key needles in a haystack, at set depths.

``layout: move`` (the default, as the originals) builds one haystack per sample draw and moves the gold
needle through the depths. ``layout: queries`` (RULER's multi-query NIAH; several labelled pass keys)
puts one needle with its own key at every depth and asks for each in turn: the questions share the
haystack as a prefix, so shared-prefix scoring runs it once.
"""

from __future__ import annotations

from ..errors import LpesError
from .base import TASKS, Sample, Task, check_layout, rng_for

FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
PASSKEY_NEEDLE = "The pass key is {key}. Remember it. {key} is the pass key. "
PASSKEY_QUERY = ("There is an important info hidden inside a lot of irrelevant text. Find it and memorize it. "
                 "I will quiz you about the important information there.\n\n{context}\n\n"
                 "What is the pass key? The pass key is")
# several labelled keys in one haystack (queries layout)
LABELLED_NEEDLE = "The pass key for the {label} door is {key}. Remember it. {key} is the pass key for the {label} door. "
LABELLED_QUERY = ("There is important info hidden inside a lot of irrelevant text. Find it and memorize it. "
                  "I will quiz you about the important information there.\n\n{context}\n\n"
                  "What is the pass key for the {label} door? The pass key for the {label} door is")
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

    def __init__(self, *, context_tokens: int = 1024, depths=(0, 50, 100), layout: str = "move", **common):
        super().__init__(**common)
        if context_tokens < 64:
            raise LpesError(f"{self.name}: context_tokens must be >= 64, got {context_tokens}")
        self.context_tokens = context_tokens
        self.depths = _depths(depths)
        self.layout = check_layout(self.name, layout)
        if layout == "queries" and len(set(self.depths)) > len(NIAH_WORDS):
            raise LpesError(f"{self.name}: the queries layout takes at most {len(NIAH_WORDS)} depths")

    @property
    def positions(self) -> list:
        return list(self.depths)

    def _filler_units(self, tokenizer) -> int:
        per_unit = len(tokenizer(FILLER, add_special_tokens=False)["input_ids"]) if tokenizer else 24
        return max(2, self.context_tokens // per_unit)

    @staticmethod
    def _insert(units: int, placed: list[tuple[int, str]]) -> str:
        """Filler units with each text at its slot (a slot is the number of filler units before it)."""
        slots: dict[int, list[str]] = {}
        for slot, text in placed:
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

    def _draw_labelled(self, rng, count: int) -> list[tuple[str, str, str]]:
        """``count`` (needle, question template with {context}, answer) with distinct keys (queries layout)."""
        raise NotImplementedError

    def samples(self, split: str, tokenizer=None) -> list[Sample]:
        units = self._filler_units(tokenizer)
        out = []
        for j in range(self.samples_per_position):
            rng = rng_for(self.seed, split, j)
            if self.layout == "queries":
                needles = self._draw_labelled(rng, len(self.depths))
                context = self._insert(units, [(self._slot(d, units), n) for d, (n, _, _) in zip(self.depths, needles)])
                out += [Sample(prompt=question.format(context=context), answer=answer, position=depth, context=j)
                        for depth, (_, question, answer) in zip(self.depths, needles)]
                continue
            needle, distractors, question, answer = self._draw(rng, units)
            for depth in self.depths:
                context = self._insert(units, [(self._slot(depth, units), needle), *distractors])
                out.append(Sample(prompt=question.format(context=context), answer=answer, position=depth, context=j))
        return out

    @staticmethod
    def _slot(depth: int, units: int) -> int:
        return round(depth / 100 * units)


@TASKS.register("passkey")
class Passkey(_Haystack):
    name = "passkey"

    def __init__(self, *, digits: int = 5, **common):
        super().__init__(**common)
        self.digits = digits

    def _key(self, rng) -> str:
        return str(rng.integers(10 ** (self.digits - 1), 10 ** self.digits))

    def _draw(self, rng, units):
        key = self._key(rng)
        return PASSKEY_NEEDLE.format(key=key), [], PASSKEY_QUERY, " " + key

    def _draw_labelled(self, rng, count):
        labels = [NIAH_WORDS[w] for w in rng.choice(len(NIAH_WORDS), size=count, replace=False)]
        keys = [self._key(rng) for _ in labels]
        return [(LABELLED_NEEDLE.format(label=label, key=key), LABELLED_QUERY.replace("{label}", label), " " + key)
                for label, key in zip(labels, keys)]


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
