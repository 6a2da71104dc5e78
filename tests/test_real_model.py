"""Integration on the real embedded SmolLM2-135M at short contexts (loaded once per session)."""

import json

import pytest
import torch

from conftest import read_jsonl, run_cli
from lpes_framework.execution import SampleSet
from lpes_framework.position import apply_layer_scaling, build_scheme
from lpes_framework.judging.results import by_position
from lpes_framework.tasks import TASKS

pytestmark = pytest.mark.slow

SMALL_KV = ["task.pairs=4", "task.gold_positions=[0,3]", "task.samples_per_position=1"]


def test_embedded_model_reports_its_shape(smollm2):
    _, tok, info = smollm2
    assert (info.architecture, info.n_layers, info.n_heads, info.n_kv_heads, info.head_dim) == (
        "LlamaForCausalLM", 30, 9, 3, 64)
    assert info.rope_theta == 100000.0 and info.trained_context == 8192
    assert tok.chat_template is not None


def test_identity_is_bit_identical_and_patched_generation_is_consistent(smollm2):
    model, tok, info = smollm2
    ids = tok("The grass is green. The sky is blue. The sun is yellow. " * 8, return_tensors="pt").input_ids
    with torch.no_grad():
        ref = model(ids).logits
        with apply_layer_scaling(model, [1.0] * 30, build_scheme({"name": "rope"})):
            assert torch.equal(model(ids).logits, ref)
    factors = [1.0 + 0.5 * i / 29 for i in range(30)]
    with apply_layer_scaling(model, factors, build_scheme({"name": "rope", "wavelength_low": 256})):
        out = model.generate(ids, max_new_tokens=8, do_sample=False, min_new_tokens=8)
        with torch.no_grad():
            full = model(out).logits
    assert torch.equal(full[0, ids.shape[1] - 1:-1].argmax(-1), out[0, ids.shape[1]:])


def test_kv_retrieval_scores_on_the_real_model(smollm2):
    model, tok, info = smollm2
    task = TASKS.build({"name": "kv_retrieval", "pairs": 4, "gold_positions": [0, 3], "samples_per_position": 2,
                        "key_kind": "hex", "answer_prefix": '"'})
    samples = SampleSet(tok, {"kv": task}, split="test", trained_context=info.trained_context, progress=False)
    scores = by_position(samples.rows(model)["kv"])
    assert list(scores) == ["0", "3"] and all(s.count == 2 for s in scores.values())
    # at 4 pairs the model copies well: the gold value is likely (a broken patch would give about -10)
    assert all(-3.0 < s.logprob < 0 for s in scores.values())


def test_search_end_to_end_on_the_embedded_model(tmp_path):
    run_cli("lpes_framework", "model=smollm2", *SMALL_KV, "optimizer.population=2", "optimizer.parents=1",
            "optimizer.mutations=1", "optimizer.crossovers=0", "optimizer.generations=2", "progress=false",
            "pos.wavelength_low=256", f"hydra.run.dir={tmp_path}")
    best = json.loads((tmp_path / "best_factors.json").read_text())
    assert best["model"]["n_layers"] == 30 and len(best["factors"]) == 30
    assert len([r for r in read_jsonl(tmp_path / "evaluations.jsonl") if r["kind"] == "candidate"]) == 3
    assert "found" in (tmp_path / "report.md").read_text()


def test_shared_prefix_scoring_is_exact_on_the_embedded_model(smollm2):
    from lpes_framework.scoring.teacher_forced import score_teacher_forced

    model, tok, info = smollm2
    task = TASKS.build({"name": "kv_retrieval", "pairs": 12, "gold_positions": [0, 4, 8, 11], "samples_per_position": 2,
                        "key_kind": "hex", "answer_prefix": '"', "layout": "queries"})
    items = task.encode("test", tok)
    factors = [1.0 + 0.6 * i / 29 for i in range(30)]
    with apply_layer_scaling(model, factors, build_scheme({"name": "ntk"})):
        shared = score_teacher_forced(model, items, batch_size=4, pad_id=tok.pad_token_id)
        plain = score_teacher_forced(model, items, batch_size=4, pad_id=tok.pad_token_id, share_prefix=False)
    assert [r.exact for r in shared] == [r.exact for r in plain]
    assert max(abs(a - b) for s, p in zip(shared, plain) for a, b in zip(s.token_logprobs, p.token_logprobs)) <= 1e-4
