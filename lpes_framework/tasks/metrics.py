"""Whether a generated text answers the question: the papers' generation metrics (pure text functions)."""

from __future__ import annotations

import re
import string
from typing import Sequence

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def answer_found(text: str, answers: Sequence[str]) -> bool:
    """Key-value and needle tasks: a gold answer appears in the generated text (case-insensitive)."""
    low = text.lower()
    return any(a.strip().lower() in low for a in answers if a.strip())


def normalize(text: str) -> str:
    """Lower case, punctuation and the articles a/an/the removed, runs of white space collapsed."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def best_subspan_em(text: str, answers: Sequence[str]) -> bool:
    """Lost in the Middle's multi-document QA metric: some normalised gold answer is a substring of the
    normalised generation."""
    generated = normalize(text)
    return any(normalize(a) and normalize(a) in generated for a in answers)


def string_match_all(text: str, references: Sequence[str]) -> float:
    """RULER's score of one generation for its synthetic tasks: the share of the references that appear in
    it (case-insensitive). Its other metric, string_match_part, serves only its QA tasks, which need
    downloaded data sets."""
    low = text.lower()
    return sum(r.lower() in low for r in references) / len(references)

