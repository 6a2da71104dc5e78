"""RULER's frequent-words extraction (``fwe``): a text of coded words (``word_length`` random letters) whose
counts follow a Zipf law of exponent ``alpha`` (RULER: 2.0, a vocabulary of one word per 50 tokens of
the length); the most frequent word is replaced by the noise "..." and the answer is the next three. No
depth: one position, labelled ``_ruler.WHOLE_CONTEXT``; teacher forcing scores the three words from the
most frequent down.
"""

from __future__ import annotations

import numpy as np
from scipy.special import zeta

from ..errors import LpesError, is_number, whole
from ..registry import TASKS
from ._ruler import RulerTask, distinct, random_letters
from .base import Sample

TEMPLATE = ("Read the following coded text and track the frequency of each coded word. Find the three most "
            "frequently appeared coded words. {context}\nQuestion: Do not provide any explanation. Please ignore "
            "the dots '....'. What are the three most frequently appeared words in the above coded text?")
ANSWER_PREFIX = " Answer: According to the coded text above, the three most frequently appeared words are:"
TOKENS_PER_WORD_TYPE = 50  # RULER's vocabulary size: one coded word per 50 tokens of the length


@TASKS.plugin
class FrequentWords(RulerTask):
    def __init__(self, *, alpha: float = 2.0, word_length: int = 6, **common):
        super().__init__(**common)
        if not (is_number(alpha) and alpha > 1):
            raise LpesError(f"{self.name}: alpha must be > 1 (a Zipf law with a finite sum), got {alpha}")
        word_length = whole(word_length, f"{self.name}: word_length", 3)
        self.check_fits("word_length letters", word_length)
        self.alpha, self.word_length = float(alpha), word_length

    def _material(self, rng, target: int):
        size = max(5, target // TOKENS_PER_WORD_TYPE)
        vocabulary = ["..."] + distinct(rng, size - 1, lambda r: random_letters(r, self.word_length,
                                                                                  "abcdefghijklmnopqrstuvwxyz"))
        seed = int(rng.integers(2 ** 63))
        answer = vocabulary[1:4]

        def build(n: int, position: int) -> Sample:
            # n words in all: the k-th most frequent appears n k^-alpha / zeta(alpha) times (RULER's counts)
            counts = (n * np.arange(1, size + 1, dtype=float) ** -self.alpha / zeta(self.alpha)).astype(int)
            text = [w for w, c in zip(vocabulary, counts) for _ in range(c)]
            np.random.default_rng(seed).shuffle(text)
            return Sample(prompt=TEMPLATE.format(context=" ".join(text)), prefix=ANSWER_PREFIX,
                          answer=" " + " ".join(answer), position=position, references=tuple(answer))

        return build
