"""Scoring by real greedy generation: the task's own metric on the decoded text (log-probabilities still
from teacher forcing, so both scorers report the same continuous signal)."""

from __future__ import annotations

from typing import Callable, Sequence

import torch

from ..errors import LpesError
from ..tasks.metrics import answer_found
from ..registry import SCORERS
from .base import ScoreRow
from ..tasks.base import Encoded
from ._batching import chunks, device_of, expanded, group_samples, left_pad, prefix_cache
from .teacher_forced import score_teacher_forced


def _generate(model, batch: list[Encoded], cache, pad_id: int, max_new_tokens: int) -> torch.Tensor:
    """Greedy continuations of the prompts of ``batch``. With the cache of a shared prefix, the prompts
    have equal lengths (no padding after the prefix) and decoding starts from a copy of that cache."""
    ids, mask, _ = left_pad([b.ids[: b.answer_start] for b in batch], pad_id, device_of(model))
    extra = {} if cache is None else {"cache": expanded(cache, len(batch))}
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, do_sample=False,
                         pad_token_id=pad_id, top_p=None, top_k=None, temperature=None, **extra)
    return out[:, ids.shape[1]:]


def _by_prompt_length(items: Sequence[Encoded], members: list[int]) -> list[list[int]]:
    lengths: dict[int, list[int]] = {}
    for i in members:
        lengths.setdefault(items[i].answer_start, []).append(i)
    return list(lengths.values())


@SCORERS.plugin
@torch.no_grad()
def score_generate(model, items: Sequence[Encoded], *, batch_size: int = 4, pad_id: int = 0, tokenizer=None,
                   max_new_tokens: int = 48, share_prefix: bool = True, match: Callable = answer_found,
                   text_score: Callable | None = None,
                   progress: Callable[[int], None] | None = None) -> list[ScoreRow]:
    """Real greedy generation: ``exact`` is the task's generation metric ``match(text, answers)`` (by
    default: a gold answer appears in the output), ``match`` the task's graded score of the text where it
    has one (``text_score(text, sample)``: RULER's string match); the log-probabilities still come from
    teacher forcing so both scorers report the same continuous signal."""
    if tokenizer is None:
        raise LpesError("scoring=generate needs the tokenizer")
    forced = score_teacher_forced(model, items, batch_size=batch_size, pad_id=pad_id, share_prefix=share_prefix)
    rows: list[ScoreRow | None] = [None] * len(items)
    groups, alone = group_samples(items, share_prefix, key=lambda i: items[i].answer_start)
    # (cache, batches): plain prompts left-padded together; with a shared prefix, prompts of one length
    # decode together (padding after the prefix would shift sliding-window layers)
    plan = [(None, list(chunks(alone, batch_size)))]
    for length, members in groups:
        cache = prefix_cache(model, items[members[0]].ids[:length])
        plan.append((cache, [c for part in _by_prompt_length(items, members) for c in chunks(part, batch_size)]))
    for cache, batches in plan:
        for idx in batches:
            batch = [items[i] for i in idx]
            new_tokens = _generate(model, batch, cache, pad_id, max_new_tokens)
            for row, (i, b) in enumerate(zip(idx, batch)):
                new = new_tokens[row].tolist()
                text = tokenizer.decode(new, skip_special_tokens=True)
                gold = b.ids[b.answer_start:]
                f = forced[i]
                rows[i] = ScoreRow(position=f.position, logprob=f.logprob,
                                   exact=match(text, b.sample.references or (b.sample.answer, *b.sample.alternatives)),
                                   first=bool(new[:1] == gold[:1]), first_logprob=f.first_logprob, tokens=f.tokens,
                                   token_logprobs=f.token_logprobs, draw=f.draw, length=f.length,
                                   match=text_score(text, b.sample) if text_score else None)
            if progress:
                progress(len(batch))
    return rows  # type: ignore[return-value]
