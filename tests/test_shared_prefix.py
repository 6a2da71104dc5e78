"""Shared-prefix scoring equals one forward per sample: tiny Llama, Qwen2 (GQA) and Gemma3 (sliding
window smaller than the prefix), patched and unpatched, teacher-forced and generated."""

import pytest
import torch

from conftest import tiny_model
from lpes_framework.position import apply_layer_scaling, build_scheme
from lpes_framework.scoring import prefix_groups
from lpes_framework.scoring.generate import score_generate
from lpes_framework.scoring.teacher_forced import score_teacher_forced
from lpes_framework.tasks.base import Encoded, Sample


def items_with_shared_contexts(model, contexts=2, queries=5, seed=0) -> list[Encoded]:
    """``queries`` questions of different lengths on each of ``contexts`` random contexts, plus two
    unrelated prompts; half the answers are the model's own greedy continuation."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for c in range(contexts):
        context = torch.randint(3, 97, (40 + 7 * c,), generator=g).tolist()
        for q in range(queries):
            prompt = context + torch.randint(3, 97, (2 + q % 3,), generator=g).tolist()
            with torch.no_grad():
                greedy = model.generate(torch.tensor([prompt]), max_new_tokens=3, do_sample=False)[0, len(prompt):]
            answer = greedy.tolist() if q % 2 == 0 else torch.randint(3, 97, (2 + q % 2,), generator=g).tolist()
            out.append(Encoded(prompt + answer, len(prompt), Sample(prompt="", answer="x", position=q)))
    for n in (30, 33):
        ids = torch.randint(3, 97, (n,), generator=g).tolist()
        out.append(Encoded(ids, n - 2, Sample(prompt="", answer="x", position=0)))
    return out


def test_groups_follow_shared_prefixes():
    model = tiny_model("llama")
    items = items_with_shared_contexts(model)
    groups = prefix_groups(items)
    sizes = sorted(len(m) for _, m in groups)
    assert sizes == [1, 1, 5, 5]
    for length, members in groups:
        if len(members) > 1:
            assert length >= 40 and all(length < items[m].answer_start for m in members)
            assert len({tuple(items[m].ids[:length]) for m in members}) == 1


@pytest.mark.parametrize("arch", ["llama", "qwen2", "gemma3_text"])
@pytest.mark.parametrize("patched", [False, True])
def test_shared_prefix_scores_equal_one_forward_per_sample(arch, patched):
    model = tiny_model(arch)
    items = items_with_shared_contexts(model)
    handle = apply_layer_scaling(model, [1.0, 1.3, 1.7, 2.2], build_scheme({"name": "ntk"})) if patched else None
    try:
        plain = score_teacher_forced(model, items, batch_size=3, share_prefix=False)
        shared = score_teacher_forced(model, items, batch_size=3, share_prefix=True)
    finally:
        if handle is not None:
            handle.remove()
    assert [r.exact for r in shared] == [r.exact for r in plain]
    assert any(r.exact for r in plain) and not all(r.exact for r in plain)
    for a, b in zip(shared, plain):
        assert a.tokens == b.tokens and a.position == b.position
        assert max(abs(x - y) for x, y in zip(a.token_logprobs, b.token_logprobs)) <= 1e-4


def test_shared_prefix_in_bfloat16_stays_close():
    model = tiny_model("qwen2").to(torch.bfloat16)
    items = items_with_shared_contexts(model)
    plain = score_teacher_forced(model, items, batch_size=4, share_prefix=False)
    shared = score_teacher_forced(model, items, batch_size=4, share_prefix=True)
    diffs = [abs(x - y) for a, b in zip(shared, plain) for x, y in zip(a.token_logprobs, b.token_logprobs)]
    assert max(diffs) < 0.1  # bf16 rounds differently in a cached vs a full forward


class _Decoder:
    def decode(self, ids, skip_special_tokens=True):
        return " ".join(str(i) for i in ids)


@pytest.mark.parametrize("arch", ["llama", "gemma3_text"])
def test_generation_from_the_shared_prefix_equals_plain_generation(arch):
    model = tiny_model(arch)
    items = items_with_shared_contexts(model)
    with apply_layer_scaling(model, [1.0, 1.5, 1.5, 2.0], build_scheme({"name": "rope"})):
        plain = score_generate(model, items, batch_size=3, tokenizer=_Decoder(), max_new_tokens=4, share_prefix=False)
        shared = score_generate(model, items, batch_size=3, tokenizer=_Decoder(), max_new_tokens=4, share_prefix=True)
    assert [(r.exact, r.first) for r in shared] == [(r.exact, r.first) for r in plain]
    assert any(r.first for r in plain)


@pytest.mark.parametrize("share", [True, False])
def test_long_answers_projected_a_few_columns_at_a_time_score_the_same(share, monkeypatch):
    """Answers longer than LOGSOFTMAX_COLUMNS (perplexity windows) are projected to logits and log-softmaxed
    in column chunks: the rows are those of one call, up to the rounding of a matrix product of another
    shape; short answers (the queries here) keep the model's own head and are bit-identical."""
    import lpes_framework.scoring._batching as scoring

    model = tiny_model("qwen2")
    g = torch.Generator().manual_seed(1)
    windows = [torch.randint(3, 97, (n,), generator=g).tolist() for n in (60, 47)]
    items = [Encoded(w, 1, Sample(prompt="", answer="", position="all", draw=j)) for j, w in enumerate(windows)]
    items += items_with_shared_contexts(model, contexts=1, queries=3)
    whole = score_teacher_forced(model, items, batch_size=2, share_prefix=share)
    monkeypatch.setattr(scoring, "LOGSOFTMAX_COLUMNS", 7)  # 59 scored tokens: 8 chunks, the last one short
    chunked = score_teacher_forced(model, items, batch_size=2, share_prefix=share)
    assert [(r.exact, r.first, r.tokens) for r in chunked] == [(r.exact, r.first, r.tokens) for r in whole]
    for a, b in zip(chunked[:2], whole[:2]):
        torch.testing.assert_close(torch.tensor(a.token_logprobs), torch.tensor(b.token_logprobs), rtol=1e-6, atol=1e-6)
    assert chunked[2:] == whole[2:]
    assert whole[0].tokens == 59


@pytest.mark.parametrize("arch", ["llama", "qwen2", "gemma3_text", "phi3"])
def test_projected_scores_equal_log_softmax_of_the_models_own_logits(arch, monkeypatch):
    """The projected path makes logits from hidden states itself: the log-probs are the model's own, final
    soft cap included (set here on Gemma3)."""
    import lpes_framework.scoring._batching as scoring

    monkeypatch.setattr(scoring, "LOGSOFTMAX_COLUMNS", 16)
    extra = {"final_logit_softcapping": 5.0} if arch == "gemma3_text" else {}
    model = tiny_model(arch, **extra)
    window = torch.randint(3, 97, (40,), generator=torch.Generator().manual_seed(2)).tolist()
    row = score_teacher_forced(model, [Encoded(window, 1, Sample(prompt="", answer="", position="all", draw=0))],
                               share_prefix=False)[0]
    with torch.no_grad():
        logits = model(torch.tensor([window])).logits[0, :-1].float()
    expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(window[1:])[:, None]).squeeze(-1)
    torch.testing.assert_close(torch.tensor(row.token_logprobs), expected, rtol=1e-5, atol=1e-5)


def test_the_output_head_never_sees_more_than_a_chunk_of_a_long_answer(monkeypatch):
    import lpes_framework.scoring._batching as scoring

    model = tiny_model("llama")
    seen = []
    model.lm_head.register_forward_hook(lambda module, args, out: seen.append(args[0].shape[-2]))
    monkeypatch.setattr(scoring, "LOGSOFTMAX_COLUMNS", 16)
    window = torch.randint(3, 97, (100,), generator=torch.Generator().manual_seed(3)).tolist()
    score_teacher_forced(model, [Encoded(window, 1, Sample(prompt="", answer="", position="all", draw=0))])
    assert seen and max(seen) <= 16 and sum(seen) == 99
