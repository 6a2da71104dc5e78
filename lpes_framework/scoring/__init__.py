"""Score gold answers without a decode loop, or with real greedy generation as the reference.

Teacher forcing: one forward pass over prompt + answer gives, at every answer position, the
log-probability of the gold token and whether it is the argmax. Greedy decoding reproduces the answer
exactly iff the gold token is the argmax at every answer position, so exact match needs no generation.
Prompts are left-padded into batches with real ``position_ids``, and only the logits of the answer
span are computed (``logits_to_keep``), so scoring costs about one plain forward pass.

The scorers are the modules ``teacher_forced`` and ``generate`` (``scoring: <name>`` in the config);
``base`` states the contract, ``_batching`` holds what they share.

Shared prefixes: samples that ask different questions of one context (a haystack, a document set)
share a long token prefix. ``prefix_groups`` finds them; the prefix runs once with a KV cache, and the
suffixes (question + answer, a few dozen tokens) run in batches against copies of that cache, their
positions continuing from the prefix length. Causal attention makes this exact: every token sees the
same keys and values as in the full forward. Samples sharing nothing are scored the plain way.
"""

from __future__ import annotations

# the helpers plugin packages may build on (a scheme with its own forward scores through them)
from ._batching import expanded, left_pad, prefix_cache, prefix_groups
from .base import ScoreRow, Scorer

__all__ = ["ScoreRow", "Scorer", "expanded", "left_pad", "prefix_cache", "prefix_groups"]
