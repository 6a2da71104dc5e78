"""What the needle tasks (``passkey``, ``niah``) share: a filler haystack with needles at set depths.

``layout: move`` (the default, as the originals) builds one haystack per sample draw and moves the gold
needle through the depths. ``layout: queries`` (RULER's multi-query NIAH; several labelled pass keys)
puts one needle with its own key at every depth and asks for each in turn: the questions share the
haystack as a prefix, so shared-prefix scoring runs it once.
"""

from __future__ import annotations

from typing import Sequence

from ..errors import LpesError, distinct_whole
from .base import Sample, Task, check_context_tokens, check_layout, rng_for

FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
NIAH_WORDS = ("amber", "basil", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
              "kelp", "lagoon", "maple", "nectar", "onyx", "pebble", "quartz", "raven", "saffron", "tundra")


def placed(units: list[str], at: Sequence[tuple[int, str]]) -> list[str]:
    """``units`` with each text inserted before the unit of its index (several at one index keep their
    order)."""
    out = list(units)
    for shift, (index, text) in enumerate(sorted(at, key=lambda item: item[0])):
        out.insert(index + shift, text)
    return out


def _depths(depths) -> list[int]:
    return distinct_whole(depths, "needle depths (percent)", 0, 100, "depth")


class _Haystack(Task):
    """Filler text of about ``context_tokens`` tokens with needles inserted at sentence boundaries."""

    def __init__(self, *, context_tokens: int = 1024, depths=(0, 50, 100), layout: str = "move", **common):
        super().__init__(**common)
        self.context_tokens = check_context_tokens(self.name, context_tokens)
        self.depths = _depths(depths)
        self.layout = check_layout(self.name, layout)
        if layout == "queries" and len(set(self.depths)) > len(NIAH_WORDS):
            raise LpesError(f"{self.name}: the queries layout takes at most {len(NIAH_WORDS)} depths")

    def _filler_units(self, tokenizer) -> int:
        per_unit = len(tokenizer(FILLER, add_special_tokens=False)["input_ids"]) if tokenizer else 24
        return max(2, self.context_tokens // per_unit)

    @staticmethod
    def _insert(units: int, at: list[tuple[int, str]]) -> str:
        """Filler units with each text at its slot (a slot is the number of filler units before it)."""
        return "".join(placed([FILLER] * units, at)).strip()

    def _draw(self, rng, units: int) -> tuple[str, list[tuple[int, str]], str, str]:
        """(gold needle, distractors at slots, question template with {context}, answer) of one sample."""
        raise NotImplementedError

    def _draw_labelled(self, rng, count: int) -> list[tuple[str, str, str]]:
        """``count`` (needle, question template with {context}, answer) with distinct keys (queries layout)."""
        raise NotImplementedError

    def samples(self, split: str, tokenizer=None) -> list[Sample]:
        units = self._filler_units(tokenizer)
        out = []
        for j in self.draws():
            rng = rng_for(self.seed, split, j)
            if self.layout == "queries":
                needles = self._draw_labelled(rng, len(self.depths))
                context = self._insert(units, [(self._slot(d, units), n) for d, (n, _, _) in zip(self.depths, needles)])
                out += [Sample(prompt=question.format(context=context), answer=answer, position=depth, draw=j)
                        for depth, (_, question, answer) in zip(self.depths, needles)]
                continue
            needle, distractors, question, answer = self._draw(rng, units)
            for depth in self.depths:
                context = self._insert(units, [(self._slot(depth, units), needle), *distractors])
                out.append(Sample(prompt=question.format(context=context), answer=answer, position=depth, draw=j))
        return out

    @staticmethod
    def _slot(depth: int, units: int) -> int:
        return round(depth / 100 * units)
