"""Score gold answers without a decode loop, or with real greedy generation as the reference.

Teacher forcing: one forward pass over prompt + answer gives, at every answer position, the
log-probability of the gold token and whether it is the argmax. Greedy decoding reproduces the answer
exactly iff the gold token is the argmax at every answer position, so exact match needs no generation.
Prompts are left-padded into batches with real ``position_ids``, and only the logits of the answer
span are computed (``logits_to_keep``), so scoring costs about one plain forward pass.

Shared prefixes: samples that ask different questions of one context (a haystack, a document set)
share a long token prefix. ``prefix_groups`` finds them; the prefix runs once with a KV cache, and the
suffixes (question + answer, a few dozen tokens) run in batches against copies of that cache, their
positions continuing from the prefix length. Causal attention makes this exact: every token sees the
same keys and values as in the full forward. Samples sharing nothing are scored the plain way.
"""

from __future__ import annotations

import copy
from typing import Callable, Sequence

import torch

from .errors import LpesError
from .metrics import answer_found
from .results import ScoreRow
from .tasks.base import Encoded

SCORERS: dict[str, Callable] = {}

# A group shares a prefix when it covers at least this share of its longest prompt: below that the
# suffix forwards would redo most of the work the cache was meant to save.
MIN_SHARED = 0.5


def _scorer(name: str):
    def add(fn):
        SCORERS[name] = fn
        return fn

    return add


def _chunks(indices: Sequence[int], size: int):
    for start in range(0, len(indices), size):
        yield list(indices[start:start + size])


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


def _common(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    n = 0
    for x, y in zip(a[:limit], b[:limit]):
        if x != y:
            break
        n += 1
    return n


def prefix_groups(items: Sequence[Encoded], min_shared: float = MIN_SHARED) -> list[tuple[int, list[int]]]:
    """(shared prefix length, member indices) for samples whose prompts share a long token prefix.

    Prompts are sorted so that sharers sit next to each other; a group's prefix is the common prefix of
    its members, cut one token before the earliest answer (the last prompt token must be in every
    suffix: its logits score the first answer token). Samples that share too little form groups of one.
    """
    order = sorted(range(len(items)), key=lambda i: items[i].ids[: items[i].answer_start])
    groups: list[tuple[int, list[int]]] = []
    for i in order:
        own = items[i].answer_start - 1
        if groups:
            length, members = groups[-1]
            head = items[members[0]]
            shared = _common(head.ids, items[i].ids, min(length, own))
            longest = max(own, *(items[m].answer_start - 1 for m in members))
            if shared >= min_shared * longest and shared > 0:
                groups[-1] = (shared, members + [i])
                continue
        groups.append((own, [i]))
    return groups


def _plan(items: Sequence[Encoded], share_prefix: bool, key) -> tuple[list[tuple[int, list[int]]], list[int]]:
    """(groups sharing a prefix, the other samples sorted by ``key`` so that similar lengths batch
    together with little padding)."""
    groups = prefix_groups(items) if share_prefix else [(0, [i]) for i in range(len(items))]
    alone = sorted((m[0] for _, m in groups if len(m) == 1), key=key)
    return [g for g in groups if len(g[1]) > 1], alone


def _rows(logits: torch.Tensor, ids: torch.Tensor, batch: list[Encoded], ends: list[int]) -> list[ScoreRow]:
    """Score rows of a batch: row r's answer is the ``span`` tokens of ``ids`` ending at column ``ends[r]``
    (exclusive); ``logits`` hold the last ``logits.shape[1]`` columns."""
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    offset = ids.shape[1] - logits.shape[1]  # column of logits[:, 0]
    rows = []
    for row, (b, end) in enumerate(zip(batch, ends)):
        span = len(b.ids) - b.answer_start
        lp = logprobs[row, end - span - 1 - offset: end - 1 - offset]
        gold = ids[row, end - span: end]
        token_lp = lp.gather(-1, gold[:, None]).squeeze(-1)
        hits = lp.argmax(-1) == gold
        rows.append(ScoreRow(position=b.sample.position, logprob=float(token_lp.mean()), exact=bool(hits.all()),
                             first=bool(hits[0]), first_logprob=float(token_lp[0]), tokens=span,
                             token_logprobs=tuple(token_lp.tolist()), context=b.sample.context))
    return rows


def prefix_cache(model, ids: list[int]):
    """KV cache of one prefix (its logits are not needed: one is computed)."""
    device = _device(model)
    prefix = torch.tensor([ids], device=device)
    out = model(input_ids=prefix, position_ids=torch.arange(len(ids), device=device)[None], use_cache=True,
                logits_to_keep=1)
    return out.cache


def _suffix_inputs(items: list[Encoded], length: int, pad_id: int, device):
    """Suffixes right-padded after a shared prefix of ``length`` tokens: (ids, mask over prefix + suffix,
    positions continuing from the prefix, real suffix lengths). Right padding keeps every suffix right
    after the prefix in the cache, which sliding-window layers (Gemma3) count in cache slots."""
    suffixes = [b.ids[length:] for b in items]
    width = max(len(s) for s in suffixes)
    ids = torch.full((len(items), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(items), length + width), dtype=torch.long)
    mask[:, :length] = 1
    for row, s in enumerate(suffixes):
        ids[row, :len(s)] = torch.tensor(s)
        mask[row, length:length + len(s)] = 1
    pos = torch.arange(length, length + width)[None].expand(len(items), -1)
    return ids.to(device), mask.to(device), pos.to(device), [len(s) for s in suffixes]


def expanded(cache, n: int):
    out = copy.deepcopy(cache)
    out.batch_repeat_interleave(n)
    return out


@_scorer("teacher_forced")
@torch.no_grad()
def score_teacher_forced(model, items: Sequence[Encoded], *, batch_size: int = 4, pad_id: int = 0,
                         share_prefix: bool = True, progress: Callable[[int], None] | None = None,
                         **_) -> list[ScoreRow]:
    rows: list[ScoreRow | None] = [None] * len(items)
    groups, alone = _plan(items, share_prefix, key=lambda i: len(items[i].ids))
    for idx in _chunks(alone, batch_size):
        batch = [items[i] for i in idx]
        ids, mask, pos = left_pad([b.ids for b in batch], pad_id, _device(model))
        keep = max(len(b.ids) - b.answer_start for b in batch) + 1
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=keep,
                       use_cache=False).logits
        for i, row in zip(idx, _rows(logits, ids, batch, [ids.shape[1]] * len(batch))):
            rows[i] = row
        if progress:
            progress(len(batch))
    for length, members in groups:
        cache = prefix_cache(model, items[members[0]].ids[:length])
        for idx in _chunks(members, batch_size):
            batch = [items[i] for i in idx]
            ids, mask, pos, ends = _suffix_inputs(batch, length, pad_id, _device(model))
            # logits from the earliest column any row needs (its last prompt token) to the end
            keep = ids.shape[1] - min(e - (len(b.ids) - b.answer_start) - 1 for b, e in zip(batch, ends))
            logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=keep,
                           cache=expanded(cache, len(idx)), use_cache=True).logits
            for i, row in zip(idx, _rows(logits, ids, batch, ends)):
                rows[i] = row
            if progress:
                progress(len(batch))
    return rows  # type: ignore[return-value]


def _generate(model, batch: list[Encoded], cache, pad_id: int, max_new_tokens: int) -> torch.Tensor:
    """Greedy continuations of the prompts of ``batch``. With the cache of a shared prefix, the prompts
    have equal lengths (no padding after the prefix) and decoding starts from a copy of that cache."""
    ids, mask, _ = left_pad([b.ids[: b.answer_start] for b in batch], pad_id, _device(model))
    extra = {} if cache is None else {"cache": expanded(cache, len(batch))}
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, do_sample=False,
                         pad_token_id=pad_id, top_p=None, top_k=None, temperature=None, **extra)
    return out[:, ids.shape[1]:]


def _by_prompt_length(items: Sequence[Encoded], members: list[int]) -> list[list[int]]:
    lengths: dict[int, list[int]] = {}
    for i in members:
        lengths.setdefault(items[i].answer_start, []).append(i)
    return list(lengths.values())


@_scorer("generate")
@torch.no_grad()
def score_generate(model, items: Sequence[Encoded], *, batch_size: int = 4, pad_id: int = 0, tokenizer=None,
                   max_new_tokens: int = 48, share_prefix: bool = True, match: Callable = answer_found,
                   progress: Callable[[int], None] | None = None) -> list[ScoreRow]:
    """Real greedy generation: ``exact`` is the task's generation metric ``match(text, answers)`` (by
    default: a gold answer appears in the output); the log-probabilities still come from teacher forcing
    so both scorers report the same continuous signal."""
    if tokenizer is None:
        raise LpesError("scoring=generate needs the tokenizer")
    forced = score_teacher_forced(model, items, batch_size=batch_size, pad_id=pad_id, share_prefix=share_prefix)
    rows: list[ScoreRow | None] = [None] * len(items)
    groups, alone = _plan(items, share_prefix, key=lambda i: items[i].answer_start)
    # (cache, batches): plain prompts left-padded together; with a shared prefix, prompts of one length
    # decode together (padding after the prefix would shift sliding-window layers)
    plan = [(None, list(_chunks(alone, batch_size)))]
    for length, members in groups:
        cache = prefix_cache(model, items[members[0]].ids[:length])
        plan.append((cache, [c for part in _by_prompt_length(items, members) for c in _chunks(part, batch_size)]))
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
                                   exact=match(text, (b.sample.answer, *b.sample.alternatives)),
                                   first=bool(new[:1] == gold[:1]), first_logprob=f.first_logprob, tokens=f.tokens,
                                   token_logprobs=f.token_logprobs, context=f.context)
            if progress:
                progress(len(batch))
    return rows  # type: ignore[return-value]


def get_scorer(name: str) -> Callable:
    if name not in SCORERS:
        raise LpesError(f"unknown scoring '{name}'; valid: {', '.join(sorted(SCORERS))}")
    return SCORERS[name]
