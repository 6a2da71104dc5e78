"""What the scorers share: left-padded batches, shared-prefix groups and their KV caches, and the
answer-span log-probabilities (see the package docstring for the approach)."""

from __future__ import annotations

import copy
from typing import Sequence

import torch

from ..tasks.base import Encoded
from .base import ScoreRow

# A group shares a prefix when it covers at least this share of its longest prompt: below that the
# suffix forwards would redo most of the work the cache was meant to save.
MIN_SHARED = 0.5


def chunks(indices: Sequence[int], size: int):
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


def device_of(model):
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


def group_samples(items: Sequence[Encoded], share_prefix: bool, key) -> tuple[list[tuple[int, list[int]]], list[int]]:
    """(groups sharing a prefix, the other samples sorted by ``key`` so that similar lengths batch
    together with little padding)."""
    groups = prefix_groups(items) if share_prefix else [(0, [i]) for i in range(len(items))]
    alone = sorted((m[0] for _, m in groups if len(m) == 1), key=key)
    return [g for g in groups if len(g[1]) > 1], alone


LOGSOFTMAX_COLUMNS = 2048  # logit columns made and normalised at a time: a 16K window over a 49K vocabulary
# would need 3 GB of logits at once


def output_head(model):
    """hidden states -> logits as the model's own forward computes them: its output embedding, then the
    final soft cap where the config sets one (Gemma)."""
    head = model.get_output_embeddings()
    cap = getattr(model.config.get_text_config(), "final_logit_softcapping", None)

    def project(hidden: torch.Tensor) -> torch.Tensor:
        logits = head(hidden)
        return torch.tanh(logits / cap) * cap if cap else logits

    return project


def answer_columns(model, keep: int, **inputs):
    """(columns, project) for ``answer_scores``: the last ``keep`` columns' logits from the model's own
    forward, or, past ``LOGSOFTMAX_COLUMNS`` columns (whole-window answers: perplexity), the decoder's last
    hidden states and the ``output_head`` that makes their logits a chunk at a time, so that no forward
    holds a window's worth of logits. Short answers keep the model's own head: its single matrix product
    rounds the same at any thread count (a Ray worker's rows equal the driver's bit for bit), a product in
    chunks does not."""
    if keep <= LOGSOFTMAX_COLUMNS:
        return model(**inputs, logits_to_keep=keep).logits, None
    return model.get_decoder()(**inputs).last_hidden_state[:, -keep:], output_head(model)


def answer_scores(columns: torch.Tensor, ids: torch.Tensor, batch: list[Encoded], ends: list[int], project=None):
    """(gold token log-probs, greedy hits) of each row of a batch: row r's answer is the ``span`` tokens of
    ``ids`` ending at column ``ends[r]`` (exclusive); ``columns`` hold the last ``columns.shape[1]`` columns'
    logits, or their hidden states when ``project`` turns hidden states into logits (``answer_columns``).
    Only each answer's own columns are projected and normalised, ``LOGSOFTMAX_COLUMNS`` at a time (each
    column's log-softmax is its own, so the values are those of one whole-tensor call). The log-probs carry
    the columns' gradient, if any."""
    offset = ids.shape[1] - columns.shape[1]  # column of columns[:, 0]
    out = []
    for row, (b, end) in enumerate(zip(batch, ends)):
        span = len(b.ids) - b.answer_start
        first = end - span - 1 - offset
        gold = ids[row, end - span: end]
        lps, hits = [], []
        for start in range(0, span, LOGSOFTMAX_COLUMNS):
            stop = min(start + LOGSOFTMAX_COLUMNS, span)
            logits = columns[row, first + start: first + stop]
            logits = project(logits) if project else logits
            # half precision is raised to float32; a float64 model keeps float64 (the gradient tests' precision)
            lp = torch.log_softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)
            lps.append(lp.gather(-1, gold[start:stop, None]).squeeze(-1))
            hits.append(lp.argmax(-1) == gold[start:stop])
        out.append((torch.cat(lps), torch.cat(hits)))
    return out


def score_row(item: Encoded, token_lp: torch.Tensor, hits: torch.Tensor) -> ScoreRow:
    token_lp = token_lp.detach()
    return ScoreRow(position=item.sample.position, logprob=float(token_lp.mean()), exact=bool(hits.all()),
                    first=bool(hits[0]), first_logprob=float(token_lp[0]), tokens=len(token_lp),
                    token_logprobs=tuple(token_lp.tolist()), draw=item.sample.draw, length=item.sample.length)


def prefix_cache(model, ids: list[int]):
    """KV cache of one prefix (its logits are not needed: one is computed)."""
    device = device_of(model)
    prefix = torch.tensor([ids], device=device)
    out = model(input_ids=prefix, position_ids=torch.arange(len(ids), device=device)[None], use_cache=True,
                logits_to_keep=1)
    return out.cache


def suffix_inputs(items: list[Encoded], length: int, pad_id: int, device):
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
    """The cache repeated ``n`` times along the batch, the original untouched. Layers are copied shallowly
    and their tensors replaced by the repeat (a deep copy would also fail on a cache that carries a
    gradient: non-leaf tensors cannot be deep-copied)."""
    out = copy.copy(cache)
    out.layers = [copy.copy(layer) for layer in cache.layers]
    out.batch_repeat_interleave(n)
    return out
