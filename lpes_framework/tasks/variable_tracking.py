"""RULER's variable tracking (``vt``): chains of assignments "VAR ABCDE = 12345", "VAR FGHIJ = VAR ABCDE"
hidden among noise sentences; the question gives the first value and the answer is every variable of
that chain. ``chains`` chains of ``hops`` hops each (RULER: 1 x 4), a worked example first (RULER's
few-shot example; here with 3-letter names and a fixed 5 noise lines, where RULER fills it to 500 tokens).
Where RULER scatters each chain at random, the queried chain's first assignment sits at the sample's
depth and its hops follow at random places after it, so that results come by depth; values are
distinct across chains (RULER may repeat one, which makes the answer ambiguous). That is ``layout: move``, one
context a depth; ``layout: queries`` builds one context a draw with a chain starting at every depth (its hops
after it) and asks for each chain in turn, so the questions share the context as a prefix and it is scored
once. It departs from RULER in holding at least one chain a depth (RULER's vt: 1 chain; here 5, so each
question has four distractor chains RULER does not have).
"""

from __future__ import annotations

from ..errors import whole
from ..registry import TASKS
from ._haystack import _depths, placed
from ._ruler import NOISE, RulerTask, distinct, random_letters
from .base import Sample, check_layout

TEMPLATE = ("Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\n"
            "Question: Find all variables that are assigned the value {query} in the text above.")
# RULER's prefix ends "they are: "; its trailing space goes to the answer, where tokenizers attach it
ANSWER_PREFIX = (" Answer: According to the chain(s) of variable assignment in the text above, {count} variables "
                 "are assigned the value {query}, they are:")
EXAMPLE_NOISE = 5


def chain_lines(names: list[str], value: int) -> list[str]:
    return [f"VAR {names[0]} = {value}"] + [f"VAR {b} = VAR {a} " for a, b in zip(names, names[1:])]


@TASKS.plugin
class VariableTracking(RulerTask):
    def __init__(self, *, chains: int = 1, hops: int = 4, fewshot: bool = True, depths=(0, 25, 50, 75, 100),
                 layout: str = "move", **common):
        super().__init__(**common)
        chains, hops = whole(chains, f"{self.name}: chains", 1), whole(hops, f"{self.name}: hops", 1)
        self.chains, self.hops, self.fewshot = chains, hops, bool(fewshot)
        self.depths = _depths(depths)
        self.layout = check_layout(self.name, layout)
        self.check_fits("chains x (hops + 1) assignments", self._chain_count() * (hops + 1))

    unkeyed_defaults = RulerTask.unkeyed_defaults + (("layout", "move"),)

    def _chain_count(self) -> int:
        """Chains a draw holds: one a depth at the least in the queries layout, each asked once."""
        return max(self.chains, len(self.depths)) if self.layout == "queries" else self.chains

    def positions(self) -> list[int]:
        return self.depths

    def _chains(self, rng, letters: int, chains: int) -> tuple[list[list[str]], list[int]]:
        names = distinct(rng, chains * (self.hops + 1), lambda r: random_letters(r, letters))
        values = [int(v) for v in distinct(rng, chains, lambda r: str(r.integers(10000, 99999)))]
        return [names[c * (self.hops + 1):(c + 1) * (self.hops + 1)] for c in range(chains)], values

    def _example(self, rng) -> str:
        names, values = self._chains(rng, 3, self.chains)
        lines = [NOISE + "\n"] * EXAMPLE_NOISE
        for chain, value in zip(names, values):
            lines = _scatter(rng, lines, chain_lines(chain, value))
        text = TEMPLATE.format(context=" ".join(lines).replace(". \n", ".\n"), query=values[0])
        prefix = ANSWER_PREFIX.format(count=self.hops + 1, query=values[0])
        return f"{text}{prefix} {' '.join(names[0])}\n\n"

    def _material(self, rng, target: int):
        example = self._example(rng) if self.fewshot else ""
        names, values = self._chains(rng, 5, self._chain_count())
        # where each chain's lines go, as shares of the haystack: drawn once, so every n and depth agree
        spread = [sorted(rng.random(self.hops + 1)) for _ in names]
        queries = self.layout == "queries"

        def build(n: int, depth: int) -> Sample:
            # the asked chain starts at the depth, its hops after it; so does every chain of the queries layout
            heads = {self.depths.index(d) if queries else 0: d / 100 for d in (self.depths if queries else [depth])}
            asked = self.depths.index(depth) if queries else 0

            def share(c: int, i: int, u: float) -> float:
                head = heads.get(c)
                return u if head is None else head if i == 0 else head + (1 - head) * u

            at = [(round(share(c, i, u) * n), line) for c, (chain, value) in enumerate(zip(names, values))
                  for i, (u, line) in enumerate(zip(spread[c], chain_lines(chain, value)))]
            lines = placed([NOISE + "\n"] * n, at)  # a stable sort: a chain's lines keep their order
            context = " ".join(lines).replace(". \n", ".\n")
            query = values[asked]
            return Sample(prompt=example + TEMPLATE.format(context=context, query=query),
                          prefix=ANSWER_PREFIX.format(count=self.hops + 1, query=query),
                          answer=" " + " ".join(names[asked]), position=depth, references=tuple(names[asked]))

        return build


def _scatter(rng, lines: list[str], chain: list[str]) -> list[str]:
    """``chain`` inserted in order at random places of ``lines`` (RULER's placement)."""
    slots = sorted(int(i) for i in rng.integers(len(lines) + 1, size=len(chain)))
    return placed(lines, list(zip(slots, chain)))
