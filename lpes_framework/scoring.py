"""Score gold answers without a decode loop, or with real greedy generation as the reference.

Teacher forcing: one forward pass over prompt + answer gives, at every answer position, the
log-probability of the gold token and whether it is the argmax. Greedy decoding reproduces the answer
exactly iff the gold token is the argmax at every answer position, so exact match needs no generation.
Prompts are left-padded into batches with real ``position_ids``, and only the logits of the answer
span are computed (``logits_to_keep``), so scoring costs about one plain forward pass.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch

from .errors import LpesError
from .results import ScoreRow
from .tasks.base import Encoded

SCORERS: dict[str, Callable] = {}


def _scorer(name: str):
    def add(fn):
        SCORERS[name] = fn
        return fn

    return add


def _batches(items: Sequence[Encoded], batch_size: int, key):
    order = sorted(range(len(items)), key=key)  # similar lengths together: less padding
    for start in range(0, len(order), batch_size):
        yield order[start:start + batch_size]


def left_pad(seqs: list[list[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, width - len(s):] = torch.tensor(s)
        mask[i, width - len(s):] = 1
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), position_ids.to(device)


def _device(model):
    return next(model.parameters()).device


@_scorer("teacher_forced")
@torch.no_grad()
def score_teacher_forced(model, items: Sequence[Encoded], *, batch_size: int = 4, pad_id: int = 0,
                         progress: Callable[[int], None] | None = None, **_) -> list[ScoreRow]:
    rows: list[ScoreRow | None] = [None] * len(items)
    for idx in _batches(items, batch_size, key=lambda i: len(items[i].ids)):
        batch = [items[i] for i in idx]
        ids, mask, pos = left_pad([b.ids for b in batch], pad_id, _device(model))
        spans = [len(b.ids) - b.answer_start for b in batch]
        keep = max(spans) + 1
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=keep,
                       use_cache=False).logits.float()
        logprobs = torch.log_softmax(logits, dim=-1)
        for row, (i, b, span) in enumerate(zip(idx, batch, spans)):
            lp = logprobs[row, keep - span - 1: keep - 1]
            gold = ids[row, ids.shape[1] - span:]
            token_lp = lp.gather(-1, gold[:, None]).squeeze(-1)
            hits = lp.argmax(-1) == gold
            rows[i] = ScoreRow(position=b.sample.position, logprob=float(token_lp.mean()), exact=bool(hits.all()),
                               first=bool(hits[0]), first_logprob=float(token_lp[0]), tokens=span)
        if progress:
            progress(len(batch))
    return rows  # type: ignore[return-value]


def answer_found(text: str, answers: Sequence[str]) -> bool:
    """The papers' generation metric: a gold answer appears in the generated text."""
    low = text.lower()
    return any(a.strip().lower() in low for a in answers if a.strip())


@_scorer("generate")
@torch.no_grad()
def score_generate(model, items: Sequence[Encoded], *, batch_size: int = 4, pad_id: int = 0, tokenizer=None,
                   max_new_tokens: int = 48, progress: Callable[[int], None] | None = None) -> list[ScoreRow]:
    """Real greedy generation: ``exact`` is the papers' metric (answer appears in the output); the
    log-probabilities still come from teacher forcing so both scorers report the same continuous signal."""
    if tokenizer is None:
        raise LpesError("scoring=generate needs the tokenizer")
    forced = score_teacher_forced(model, items, batch_size=batch_size, pad_id=pad_id)
    rows: list[ScoreRow | None] = [None] * len(items)
    for idx in _batches(items, batch_size, key=lambda i: items[i].answer_start):
        batch = [items[i] for i in idx]
        ids, mask, _ = left_pad([b.ids[: b.answer_start] for b in batch], pad_id, _device(model))
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, do_sample=False,
                             pad_token_id=pad_id, top_p=None, top_k=None, temperature=None)
        for row, (i, b) in enumerate(zip(idx, batch)):
            new = out[row, ids.shape[1]:].tolist()
            text = tokenizer.decode(new, skip_special_tokens=True)
            gold = b.ids[b.answer_start:]
            found = answer_found(text, (b.sample.answer, *b.sample.alternatives))
            f = forced[i]
            rows[i] = ScoreRow(position=f.position, logprob=f.logprob, exact=found,
                               first=bool(new[:1] == gold[:1]), first_logprob=f.first_logprob, tokens=f.tokens)
        if progress:
            progress(len(batch))
    return rows  # type: ignore[return-value]


def get_scorer(name: str) -> Callable:
    if name not in SCORERS:
        raise LpesError(f"unknown scoring '{name}'; valid: {', '.join(sorted(SCORERS))}")
    return SCORERS[name]
