"""The per-layer patch on tiny random models of every covered architecture."""

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

from conftest import ARCHS, tiny_model
from lpes_framework.errors import LpesError
from lpes_framework.position import apply_layer_scaling, build_scheme, rope_layout
from lpes_framework.scoring import left_pad

ROPE = build_scheme({"name": "rope"})
FACTORS = [1.0, 1.3, 1.7, 2.0]


def logits(model, ids, **kw):
    with torch.no_grad():
        return model(ids, **kw).logits


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("arch", ARCHS)
def test_all_ones_is_bit_identical_and_remove_restores(arch, attn):
    model = tiny_model(arch, attn)
    ids = torch.randint(3, 97, (2, 48))
    ref = logits(model, ids)
    with apply_layer_scaling(model, [1.0] * 4, ROPE):
        assert torch.equal(logits(model, ids), ref)
    with apply_layer_scaling(model, FACTORS, build_scheme({"name": "ntk"})):
        assert not torch.allclose(logits(model, ids), ref)
    assert torch.equal(logits(model, ids), ref)


@pytest.mark.parametrize("arch", ["llama", "qwen2", "mistral"])  # phi3 configs accept only longrope
def test_uniform_pi_matches_transformers_linear_scaling(arch):
    model = tiny_model(arch)
    params = dict(model.config.rope_parameters)
    reference = tiny_model(arch, rope_parameters=params | {"rope_type": "linear", "factor": 2.5})
    ids = torch.randint(3, 97, (1, 64))
    with apply_layer_scaling(model, [2.5] * 4, build_scheme({"name": "pi"})):
        torch.testing.assert_close(logits(model, ids), logits(reference, ids), rtol=1e-5, atol=1e-5)


def test_uniform_ntk_matches_transformers_dynamic_beyond_trained_length():
    model = tiny_model("llama", max_positions=32)
    reference = tiny_model("llama", max_positions=32,
                           rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0})
    ids = torch.randint(3, 97, (1, 96))  # 3x the trained length: the dynamic rule is in charge
    with apply_layer_scaling(model, [2.0] * 4, build_scheme({"name": "ntk"})):
        torch.testing.assert_close(logits(model, ids), logits(reference, ids), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("length", [48, 64])  # 1.5x and 2x the trained window: the extrapolation baselines
@pytest.mark.parametrize("rope_type,scheme", [("linear", "pi"), ("yarn", "yarn")])
def test_uniform_pi_and_yarn_at_length_over_window_match_transformers_beyond_the_window(length, rope_type, scheme):
    factor = length / 32
    model = tiny_model("llama", max_positions=32)
    params = {"rope_type": rope_type, "rope_theta": 10000.0, "factor": factor}
    if rope_type == "yarn":
        params["original_max_position_embeddings"] = 32
    reference = tiny_model("llama", max_positions=32, rope_parameters=params)
    ids = torch.randint(3, 97, (1, length))
    with apply_layer_scaling(model, [factor] * 4, build_scheme({"name": scheme})):
        torch.testing.assert_close(logits(model, ids), logits(reference, ids), rtol=1e-4, atol=1e-4)
    assert not torch.allclose(logits(model, ids), logits(reference, ids), rtol=1e-4, atol=1e-4)  # it acted


def test_gemma3_keeps_its_local_global_split():
    model = tiny_model("gemma3_text")
    _, _, ropes = rope_layout(model)
    assert [s.key for s in ropes] == ["sliding_attention", "full_attention"] * 2
    assert not torch.equal(ropes[0].inv_freq, ropes[1].inv_freq)  # different thetas per layer type
    ids = torch.randint(3, 97, (1, 32))

    def hidden():
        with torch.no_grad():
            return model(ids, output_hidden_states=True).hidden_states  # [embeddings, after layer 0, ...]

    ref = hidden()
    # factor 1 on the local layers, 2 on the global ones: layer 0 (local) must run its own table exactly
    # (its output is bit-identical), layer 1 (global) a scaled one
    with apply_layer_scaling(model, [1.0, 2.0, 1.0, 2.0], ROPE) as handle:
        out = hidden()
    assert handle._ropes[0].key == "sliding_attention"
    assert torch.equal(out[1], ref[1])
    assert not torch.allclose(out[2], ref[2])


@pytest.mark.parametrize("arch", ["llama", "gemma3_text"])
def test_generate_with_kv_cache_equals_full_reforward(arch):
    model = tiny_model(arch)
    prompt = torch.randint(3, 97, (1, 20))
    with apply_layer_scaling(model, FACTORS, ROPE):
        out = model.generate(prompt, max_new_tokens=12, do_sample=False, min_new_tokens=12)
        # greedy re-check: every generated token is the argmax of a fresh full forward of its prefix
        full = logits(model, out)
        assert torch.equal(full[0, prompt.shape[1] - 1:-1].argmax(-1), out[0, prompt.shape[1]:])
        with torch.no_grad():
            cached = model(out[:, :-1], use_cache=True)
        torch.testing.assert_close(cached.logits, full[:, :-1], rtol=1e-5, atol=1e-5)


def test_padded_batch_with_real_position_ids_matches_single_rows():
    model = tiny_model("llama")
    rows = [torch.randint(3, 97, (n,)).tolist() for n in (30, 18)]
    ids, mask, pos = left_pad(rows, 0, "cpu")
    with apply_layer_scaling(model, FACTORS, ROPE):
        batched = logits(model, ids, attention_mask=mask, position_ids=pos)
        for i, row in enumerate(rows):
            single = logits(model, torch.tensor([row]))
            torch.testing.assert_close(batched[i, -len(row):], single[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("factors,match", [
    ([1.0] * 3, "got 3 factors for a model with 4 decoder layers"),
    ([1.0, 0.0, 1.0, 1.0], "layer 1 is 0.0"),
    ([1.0, -2.0, 1.0, 1.0], "layer 1 is -2.0"),
    ([1.0, 1.0, float("nan"), 1.0], "layer 2 is nan"),
    ([1.0, 1.0, 1.0, float("inf")], "layer 3 is inf"),
])
def test_bad_factors_are_refused_before_anything_runs(factors, match):
    model = tiny_model("llama")
    with pytest.raises(LpesError, match=match):
        apply_layer_scaling(model, factors, ROPE)
    assert all(not layer._forward_pre_hooks for layer in model.model.layers)


def test_model_without_rope_is_refused_with_its_architecture():
    config = AutoConfig.for_model("gpt2", n_layer=2, n_embd=32, n_head=2, vocab_size=97)
    model = AutoModelForCausalLM.from_config(config)
    with pytest.raises(LpesError, match="GPT2LMHeadModel has no rotary position embedding"):
        apply_layer_scaling(model, [1.0, 1.0], ROPE)


def test_runtime_rope_types_are_refused():
    model = tiny_model("llama", rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0})
    with pytest.raises(LpesError, match="rope_type 'dynamic'"):
        apply_layer_scaling(model, [1.0] * 4, ROPE)


@pytest.mark.parametrize("arch", ["llama", "gemma3_text"])
def test_short_forwards_build_all_tables_at_once_with_identical_values(arch, monkeypatch):
    from lpes_framework.position import patch

    model = tiny_model(arch)
    ids = torch.randint(3, 97, (2, 12))
    factors = [1.0, 1.3, 1.7, 2.2]
    with torch.no_grad(), apply_layer_scaling(model, factors, build_scheme({"name": "ntk"})):
        batched = model(ids).logits  # 12 positions: one batched pass for every factor
        monkeypatch.setattr(patch, "_BATCHED_POSITIONS", 0)
        one_by_one = model(ids).logits
    assert torch.equal(batched, one_by_one)
