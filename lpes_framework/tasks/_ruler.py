"""What RULER's synthetic tasks share (NVIDIA/RULER, ``scripts/data/synthetic``): the needle key and value
types, the word lists, the haystacks, and filling a sample to a target length in the model's own tokens.

Departures from RULER, all forced by running offline: the ``essay`` haystack is the prose of Python's own
documentation (``pydoc_data.topics``) instead of Paul Graham's essays (a download), cut into sentences by a
regular expression instead of NLTK's ``sent_tokenize``; common-words extraction draws from wonderwords'
lists alone (RULER adds a Randle word list it downloads). Needles go at set depths rather than RULER's
random ones, so that results are reported by depth (see each task).
"""

from __future__ import annotations

import re
import string
import uuid
from dataclasses import replace
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from ..errors import LpesError
from ._haystack import FILLER
from .base import Sample, Task, check_context_tokens, encode_sample, rng_for
from .metrics import string_match_all

NOISE = FILLER.strip()  # RULER's noise haystack is the passkey filler
HAYSTACKS = ("noise", "essay", "needle")  # RULER's 'repeat' is called noise here, as in its paper
NEEDLE_TYPES = ("words", "numbers", "uuids")
DEPTH_GRID = [round(100 * i / 39) for i in range(40)]  # RULER's 40 evenly spaced depths
WHOLE_CONTEXT = 50  # the one position label of tasks whose answer draws on the whole context (cwe, fwe)


@lru_cache(maxsize=None)
def word_list(kind: str) -> tuple[str, ...]:
    """wonderwords' list of ``kind`` (noun, adjective, verb): the lists RULER draws its words from."""
    from importlib.resources import files

    text = files("wonderwords.assets").joinpath(f"{kind}list.txt").read_text(encoding="utf-8")
    return tuple(sorted({w.strip() for w in text.splitlines() if w.strip()}))


@lru_cache(maxsize=None)
def essay_words() -> tuple[str, ...]:
    from .perplexity import pydoc_text

    return tuple(re.sub(r"\s+", " ", pydoc_text()).split(" "))


def essay_start(rng) -> int:
    """A random word of the essay text that begins a sentence: where a draw's haystack starts."""
    words = essay_words()
    start = int(rng.integers(len(words)))
    while not words[start - 1].endswith((".", "!", "?")):
        start = (start + 1) % len(words)
    return start


def sentences(words: Sequence[str]) -> list[str]:
    """The words joined and cut after each full stop, question or exclamation mark."""
    return [s for s in re.split(r"(?<=[.!?]) ", " ".join(words)) if s]


def check_choice(task: str, option: str, value: str, valid: Sequence[str]) -> str:
    if value not in valid:
        raise LpesError(f"{task}: {option} must be one of {', '.join(valid)}, got {value!r}")
    return value


def random_needle(rng, kind: str) -> str:
    """A key or value of RULER's type ``kind``: an adjective-noun pair, a 7-digit number or a uuid4."""
    if kind == "words":
        adjectives, nouns = word_list("adjective"), word_list("noun")
        return f"{adjectives[rng.integers(len(adjectives))]}-{nouns[rng.integers(len(nouns))]}"
    if kind == "numbers":
        return str(rng.integers(10 ** 6, 10 ** 7))
    return str(uuid.UUID(bytes=rng.bytes(16), version=4))


def distinct(rng, count: int, draw: Callable) -> list[str]:
    """``count`` values of ``draw(rng)`` that differ from each other: a gold key that a distractor repeats
    would make the gold answer ambiguous."""
    seen = set()
    out = []
    for _ in range(1000 * count):
        if len(out) == count:
            break
        value = draw(rng)
        if value not in seen:
            seen.add(value)
            out.append(value)
    if len(out) < count:
        raise LpesError(f"cannot draw {count} distinct values: their space is too small")
    return out


def random_letters(rng, k: int, alphabet: str = string.ascii_uppercase) -> str:
    return "".join(alphabet[i] for i in rng.integers(len(alphabet), size=k))


def check_lengths(task: str, context_tokens) -> list[int] | tuple[int, int]:
    """``context_tokens``: one length, a list (draw j takes entry j mod its size: each length equally
    often), or ``{low: a, high: b}`` (each draw's length uniform in [a, b]); every length >= 64."""
    if isinstance(context_tokens, dict):
        if set(context_tokens) != {"low", "high"}:
            raise LpesError(f"{task}: a context_tokens range is {{low: a, high: b}}, got {context_tokens}")
        low, high = (check_context_tokens(task, context_tokens[k]) for k in ("low", "high"))
        if low > high:
            raise LpesError(f"{task}: context_tokens low {low} exceeds high {high}")
        return low, high
    values = list(context_tokens) if isinstance(context_tokens, (list, tuple)) else [context_tokens]
    if not values:
        raise LpesError(f"{task}: context_tokens is an empty list")
    return [check_context_tokens(task, v) for v in values]


def length_of_draw(lengths, rng, j: int) -> int:
    if isinstance(lengths, tuple):
        return int(rng.integers(lengths[0], lengths[1] + 1))
    return lengths[j % len(lengths)]


def fill(build: Callable[[int], list[Sample]], target: int, tokenizer, use_chat: bool, task: str) -> int:
    """The largest number of haystack units ``n`` whose samples ``build(n)`` all encode (chat template,
    prompt and gold answer, as they are scored) to at most ``target`` tokens: RULER fills to its length the
    same way, by counting the tokens of the whole input with the model's own tokenizer."""
    def tokens(n: int) -> int:
        return max(len(encode_sample(s, tokenizer, use_chat).ids) for s in build(n))

    least = tokens(1)
    if least > target:
        raise LpesError(f"{task}: context_tokens={target} is shorter than the template and answer alone "
                        f"({least} tokens)")
    low, high = 1, 2
    while tokens(high) <= target:  # double until too long, then bisect: ~2 log2(n) tokenisations
        if high > 16 * target:  # every unit holds at least one token, so this cannot be reached
            raise LpesError(f"{task}: its haystack does not grow with its size")
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if tokens(mid) <= target else (low, mid)
    return low


def needs_tokenizer(task: str, tokenizer) -> None:
    if tokenizer is None:
        raise LpesError(f"{task}: samples are filled to a length in the model's tokens and need its tokenizer")


class RulerTask(Task):
    """A RULER task: each draw builds its material from the draw's random stream, then is filled to its
    length (``context_tokens``, see ``check_lengths``) and asked at each of ``positions()``. Scored by
    RULER's ``string_match_all`` under ``scoring=generate`` (``exact`` when every reference appears,
    ``match`` the share); teacher forcing scores the references in the order the context gives them."""

    def __init__(self, *, context_tokens=(1024,), **common):
        super().__init__(**common)
        self.context_tokens = context_tokens  # as given: the settings (and cache keys) keep the user's spelling
        self._lengths = check_lengths(self.name, context_tokens)

    def positions(self) -> list[int]:
        return [WHOLE_CONTEXT]

    @property
    def length_span(self) -> tuple[int, int]:
        """The shortest and longest length a draw can take."""
        return self._lengths if isinstance(self._lengths, tuple) else (min(self._lengths), max(self._lengths))

    def check_fits(self, what: str, count: int, *, longest: bool = False) -> None:
        """Refuse ``count`` items (needles, assignments, letters: a token each at the least) that no length
        (``longest``) or not the shortest can hold, before any draw is built: 10^11 hops hung drawing them."""
        room = self.length_span[1 if longest else 0]
        if count > room:
            raise LpesError(f"{self.name}: {what} ({count}) cannot fit in {room} tokens of context "
                            "(a token each at the least); raise context_tokens or lower the count")

    def _material(self, rng, target: int) -> Callable[[int, int], Sample]:
        """A draw's content, to be filled to ``target`` tokens: ``build(n, position)`` gives its sample with
        ``n`` haystack units."""
        raise NotImplementedError

    def matches(self, text: str, answers: Sequence[str]) -> bool:
        return string_match_all(text, answers) == 1.0

    def text_score(self, text: str, sample: Sample) -> float | None:
        return string_match_all(text, sample.references)

    def samples(self, split: str, tokenizer=None) -> list[Sample]:
        needs_tokenizer(self.name, tokenizer)
        use_chat = self.uses_chat(tokenizer)
        out = []
        for j in self.draws():
            rng = rng_for(self.seed, split, j)
            target = length_of_draw(self._lengths, rng, j)
            build = self._material(rng, target)
            n = fill(lambda n: [build(n, p) for p in self.positions()], target, tokenizer, use_chat, self.name)
            out += [replace(build(n, p), draw=j, length=target) for p in self.positions()]
        return out


def boundary(units: Sequence[str], depth: float) -> int:
    """The unit boundary nearest to ``depth`` percent of the units' text: sentences of unequal length put a
    needle at its depth in the text, not at that share of the sentence count."""
    ends = np.cumsum([0] + [len(u) for u in units])
    return int(np.abs(ends - depth / 100 * ends[-1]).argmin())
