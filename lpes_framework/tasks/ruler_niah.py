"""RULER's needle-in-a-haystack family (``niah_single_1..3``, ``niah_multikey_1..3``, ``niah_multivalue``,
``niah_multiquery``: ``conf/task/`` holds each as RULER's ``synthetic.yaml`` sets it).

Needles "One of the special magic {numbers} for {key} is: {value}." with keys and values of RULER's types
(adjective-noun words, 7-digit numbers, uuids) go into a haystack of noise sentences, of documentation
prose (``essay``, see ``_ruler``) or of other needles (``needle``). ``keys`` needles with ``values`` values
each; ``queries`` of the keys are asked for at once, and the answer is all their values. Where RULER puts
every needle at a random depth, here the first value of the first queried key is moved through ``depths``
(the sample's position; the draw's other needles keep their random depths from RULER's 40-point grid), so
that accuracy is reported by depth on the same material (``layout: move``, one context a depth). ``layout:
queries`` builds one context a draw with a group of ``queries`` keys pinned at every depth (their first value
there, their other values at random depths) and asks for each group in turn, so the questions share the
context as a prefix and it is scored once. It departs from RULER where a draw holds fewer keys than groups
need: it then holds ``queries x depths`` keys (niah_multikey_1: 5 where RULER has 4), all of them asked once.
All keys, values and haystack needles of a draw are distinct, so the gold answer is never ambiguous.
"""

from __future__ import annotations

import numpy as np

from ..errors import LpesError, whole
from ..registry import TASKS
from ._haystack import _depths, placed
from ._ruler import (DEPTH_GRID, HAYSTACKS, NEEDLE_TYPES, NOISE, RulerTask, boundary, check_choice, distinct,
                     essay_start, essay_words, random_needle, sentences)
from .base import Sample, check_layout

NEEDLE = "One of the special magic {kind} for {key} is: {value}."
TEMPLATE = ("Some special magic {kind} are hidden within the following text. Make sure to memorize it. "
            "I will quiz you about the {kind} afterwards.\n{context}\n"
            "What are all the special magic {kind} for {query} mentioned in the provided text?")
ANSWER_PREFIX = " The special magic {kind} for {query} mentioned in the provided text are"


def singular(text: str) -> str:
    """RULER's rewording of the template when one value is asked for."""
    return text.replace("Some", "A").replace("are all", "is").replace("are", "is")


def query_text(keys: list[str]) -> str:
    return keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + ", and " + keys[-1]


@TASKS.plugin
class RulerNiah(RulerTask):
    def __init__(self, *, haystack: str = "noise", key_type: str = "words", value_type: str = "numbers",
                 keys: int = 1, values: int = 1, queries: int = 1, depths=(0, 25, 50, 75, 100), layout: str = "move",
                 **common):
        super().__init__(**common)
        self.haystack = check_choice(self.name, "haystack", haystack, HAYSTACKS)
        self.key_type = check_choice(self.name, "key_type", key_type, NEEDLE_TYPES)
        self.value_type = check_choice(self.name, "value_type", value_type, NEEDLE_TYPES)
        keys, values, queries = (whole(v, f"{self.name}: {o}", 1) for o, v in (("keys", keys), ("values", values),
                                                                                 ("queries", queries)))
        if queries > keys:
            raise LpesError(f"{self.name}: queries={queries} exceeds keys={keys} (each query asks for another key)")
        self.keys, self.values, self.queries = keys, values, queries
        self.depths = _depths(depths)
        self.layout = check_layout(self.name, layout)
        self.check_fits("keys x values needles", self._key_count() * values)

    unkeyed_defaults = RulerTask.unkeyed_defaults + (("layout", "move"),)

    def _groups(self) -> int:
        """Groups of asked keys a draw holds: one a depth in the queries layout."""
        return len(self.depths) if self.layout == "queries" else 1

    def _key_count(self) -> int:
        return max(self.keys, self.queries * self._groups())

    def positions(self) -> list[int]:
        return self.depths

    def _material(self, rng, target: int):
        n_keys, groups = self._key_count(), self._groups()
        # the draws of the move layout (one group) are those it always made: its recorded haystacks stay the same
        keys = distinct(rng, n_keys, lambda r: random_needle(r, self.key_type))
        values = distinct(rng, n_keys * self.values, lambda r: random_needle(r, self.value_type))
        needles = [(k, values[i * self.values + v]) for i, k in enumerate(keys) for v in range(self.values)]
        drawn = [int(i) for i in rng.choice(n_keys, size=self.queries * groups, replace=False)]
        asked = [sorted(drawn[g * self.queries:(g + 1) * self.queries]) for g in range(groups)]
        pinned = [needles[group[0] * self.values] for group in asked]  # each group's first value of its first key
        needles = [n for n in needles if n not in pinned]
        others = [(int(d), NEEDLE.format(kind=self.value_type, key=k, value=v))
                  for d, (k, v) in zip(rng.choice(DEPTH_GRID, size=len(needles), replace=len(needles) > 40), needles)]
        wanted = [{values[i * self.values + v] for i in group for v in range(self.values)} for group in asked]
        kind = self.value_type if self.queries * self.values > 1 else self.value_type[:-1]
        queries = [query_text([keys[i] for i in group]) for group in asked]
        units = self._units(rng, set(keys), set(values))

        def build(n: int, depth: int) -> Sample:
            material, joiner = units(n)
            group = self.depths.index(depth) if groups > 1 else 0
            depths = self.depths if groups > 1 else [depth]
            at = [(d, NEEDLE.format(kind=self.value_type, key=k, value=v)) for d, (k, v) in zip(depths, pinned)]
            slots = [(boundary(material, d), text) for d, text in at + others]
            context = joiner.join(placed(material, slots))
            # the references in the order the context gives them: the order a reader would list them in
            order = sorted(wanted[group], key=lambda v: context.index(f"is: {v}."))
            template, prefix = TEMPLATE, ANSWER_PREFIX
            if kind != self.value_type:
                template, prefix = singular(template), singular(prefix)
            query = queries[group]
            return Sample(prompt=template.format(kind=kind, context=context, query=query),
                          prefix=prefix.format(kind=kind, query=query), answer=" " + ", ".join(order),
                          position=depth, references=tuple(order))

        return build

    def _units(self, rng, keys: set, values: set):
        """``units(n)``: the haystack's first ``n`` units (the same first units for every ``n``) and the text
        that joins them: noise sentences or needles one per line, or the sentences of ``n`` essay words."""
        if self.haystack == "noise":
            return lambda n: ([NOISE] * n, "\n")
        if self.haystack == "essay":
            words, start = essay_words(), essay_start(rng)
            return lambda n: (sentences([words[(start + i) % len(words)] for i in range(n)]), " ")
        seed = int(rng.integers(2 ** 63))

        def needles(n: int):
            stream, out, seen = np.random.default_rng(seed), [], keys | values
            while len(out) < n:  # one key and one value per needle: the first n are the same for every n
                key, value = random_needle(stream, self.key_type), random_needle(stream, self.value_type)
                if key not in seen and value not in seen:
                    seen |= {key, value}
                    out.append(NEEDLE.format(kind=self.value_type, key=key, value=value))
            return out, "\n"

        return needles
