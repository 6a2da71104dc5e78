"""Teacher-forced scoring: one forward over prompt + gold answer gives every answer token's log-probability
and whether greedy decoding would write it (exact match without generating)."""

from __future__ import annotations

from typing import Callable, Sequence

import torch

from ..registry import SCORERS
from .base import ScoreRow
from ..tasks.base import Encoded
from ._batching import answer_columns, answer_scores, chunks, device_of, expanded, group_samples, left_pad, prefix_cache, score_row, suffix_inputs


def answer_units(model, items: Sequence[Encoded], *, batch_size: int, pad_id: int, share_prefix: bool):
    """Per unit of work (a batch of prompts sharing nothing, or every sample of one shared prefix):
    ``[(index in items, gold token log-probs, greedy hits), ...]``. Runs under whatever grad mode the
    caller set: the gradient job backpropagates each unit before asking for the next, so at most one
    context's graph is alive."""
    groups, alone = group_samples(items, share_prefix, key=lambda i: len(items[i].ids))
    for idx in chunks(alone, batch_size):
        batch = [items[i] for i in idx]
        ids, mask, pos = left_pad([b.ids for b in batch], pad_id, device_of(model))
        keep = max(len(b.ids) - b.answer_start for b in batch) + 1
        columns, project = answer_columns(model, keep, input_ids=ids, attention_mask=mask, position_ids=pos,
                                          use_cache=False)
        yield [(i, *scored) for i, scored in
               zip(idx, answer_scores(columns, ids, batch, [ids.shape[1]] * len(batch), project))]
    for length, members in groups:
        cache = prefix_cache(model, items[members[0]].ids[:length])
        unit = []
        for idx in chunks(members, batch_size):
            batch = [items[i] for i in idx]
            ids, mask, pos, ends = suffix_inputs(batch, length, pad_id, device_of(model))
            # columns from the earliest one any row needs (its last prompt token) to the end
            keep = ids.shape[1] - min(e - (len(b.ids) - b.answer_start) - 1 for b, e in zip(batch, ends))
            columns, project = answer_columns(model, keep, input_ids=ids, attention_mask=mask, position_ids=pos,
                                              cache=expanded(cache, len(idx)), use_cache=True)
            unit += [(i, *scored) for i, scored in zip(idx, answer_scores(columns, ids, batch, ends, project))]
        yield unit


@SCORERS.plugin
@torch.no_grad()
def score_teacher_forced(model, items: Sequence[Encoded], *, batch_size: int = 4, pad_id: int = 0,
                         share_prefix: bool = True, progress: Callable[[int], None] | None = None,
                         **_) -> list[ScoreRow]:
    rows: list[ScoreRow | None] = [None] * len(items)
    for unit in answer_units(model, items, batch_size=batch_size, pad_id=pad_id, share_prefix=share_prefix):
        for i, token_lp, hits in unit:
            rows[i] = score_row(items[i], token_lp, hits)
        if progress:
            progress(len(unit))
    return rows  # type: ignore[return-value]
