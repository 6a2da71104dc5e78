"""RULER's common-words extraction (``cwe``): a numbered list of words in which ``common`` words repeat
more often than the rest; the answer is those words. As in RULER, below 4K tokens the common words
appear 6 times and the others once (a worked example of 20 words, 3 and 1 times, comes first); from
4K on, ``common_repeats`` and ``rare_repeats`` times (30 and 3; example: 40 words, 10 and 3). Words come
from wonderwords' noun, adjective and verb lists (RULER adds a word list it downloads). The answer has
no depth: one position, labelled ``_ruler.WHOLE_CONTEXT``; teacher forcing scores the common words in
the order of their first appearance in the list.
"""

from __future__ import annotations

import numpy as np

from ..errors import LpesError, whole
from ..registry import TASKS
from ._ruler import RulerTask, word_list
from .base import Sample

TEMPLATE = ("Below is a numbered list of words. In these words, some appear more often than others. Memorize the "
            "ones that appear most often.\n{context}\nQuestion: What are the {common} most common words in the "
            "above list?")
ANSWER_PREFIX = " Answer: The top {common} words that appear most often in the list are:"
LONG = 4096  # RULER's switch from its short to its long repetition counts


def numbered(words) -> str:
    return " ".join(f"{i + 1}. {w}" for i, w in enumerate(words))


@TASKS.plugin
class CommonWords(RulerTask):
    def __init__(self, *, common: int = 10, common_repeats: int = 30, rare_repeats: int = 3, **common_options):
        super().__init__(**common_options)
        common, common_repeats, rare_repeats = (whole(v, f"{self.name}: {o}", 1) for o, v in (
            ("common", common), ("common_repeats", common_repeats), ("rare_repeats", rare_repeats)))
        if common_repeats <= rare_repeats:
            raise LpesError(f"{self.name}: needs common_repeats > rare_repeats, got {common_repeats}, {rare_repeats}")
        self.common, self.common_repeats, self.rare_repeats = common, common_repeats, rare_repeats
        self.check_fits("common x its repeats listed words", common * self._repeats(self.length_span[1])[0],
                        longest=True)

    def _repeats(self, target: int) -> tuple[int, int]:
        """How often a common and a rare word are listed at ``target`` tokens."""
        return (self.common_repeats, self.rare_repeats) if target >= LONG else (6, 1)

    def _listing(self, vocabulary, seed: int, words: int, repeats: tuple[int, int]) -> tuple[list[str], list[str]]:
        """(the shuffled list, its common words in order of first appearance)."""
        common, rare = vocabulary[:self.common], vocabulary[self.common:words]
        listing = common * repeats[0] + rare * repeats[1]
        np.random.default_rng(seed).shuffle(listing)
        return listing, sorted(common, key=listing.index)

    def _material(self, rng, target: int):
        vocabulary = [str(w) for w in rng.permutation(sorted(set(word_list("noun") + word_list("adjective")
                                                                 + word_list("verb"))))]
        seed = int(rng.integers(2 ** 63))
        prompt = TEMPLATE.replace("{common}", str(self.common))
        prefix = ANSWER_PREFIX.format(common=self.common)

        def build(n: int, position: int) -> Sample:
            long = target >= LONG
            example_words, example_repeats = (40, (10, 3)) if long else (20, (3, 1))
            repeats = self._repeats(target)
            listing, answer = self._listing(vocabulary[::-1], seed, example_words + self.common, example_repeats)
            example = f"{prompt.format(context=numbered(listing))}{prefix} {numbered(answer)}\n"
            if self.common + n > len(vocabulary):
                raise LpesError(f"{self.name}: the length asks for more than the {len(vocabulary)} words there are")
            listing, answer = self._listing(vocabulary, seed, self.common + n, repeats)
            return Sample(prompt=example + prompt.format(context=numbered(listing)), prefix=prefix,
                          answer=" " + numbered(answer), position=position, references=tuple(answer))

        return build
