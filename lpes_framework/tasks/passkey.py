"""Passkey retrieval: a number hidden in filler text at set depths (labelled keys in the queries layout)."""

from __future__ import annotations

from ..registry import TASKS
from ._haystack import NIAH_WORDS, _Haystack

PASSKEY_NEEDLE = "The pass key is {key}. Remember it. {key} is the pass key. "
PASSKEY_QUERY = ("There is an important info hidden inside a lot of irrelevant text. Find it and memorize it. "
                 "I will quiz you about the important information there.\n\n{context}\n\n"
                 "What is the pass key? The pass key is")
# several labelled keys in one haystack (queries layout)
LABELLED_NEEDLE = "The pass key for the {label} door is {key}. Remember it. {key} is the pass key for the {label} door. "
LABELLED_QUERY = ("There is important info hidden inside a lot of irrelevant text. Find it and memorize it. "
                  "I will quiz you about the important information there.\n\n{context}\n\n"
                  "What is the pass key for the {label} door? The pass key for the {label} door is")


@TASKS.plugin
class Passkey(_Haystack):
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
