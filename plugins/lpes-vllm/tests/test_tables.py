"""The plugin's tables without an engine: vLLM's own rotary embedding (``get_rope``) in a model-shaped tree,
patched by ``install``, against the cos/sin the transformers patch computes for the same factors."""

import json

import pytest
import torch
from transformers import LlamaConfig

from lpes_framework.errors import LpesError
from lpes_framework.model.factors_file import factors_record
from lpes_framework.model.info import model_info
from lpes_framework.position import build_scheme, layer_specs, rotary_tables
from lpes_framework.position.bands import resolve_bands
from lpes_vllm.tables import cos_sin_cache, hf_rotary, install

LAYERS, WINDOW = 4, 256


def config(**extra) -> LlamaConfig:
    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=LAYERS, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=WINDOW, vocab_size=100, **extra)
    cfg.architectures = ["LlamaForCausalLM"]
    return cfg


def vllm_model(cfg, layers=range(LAYERS)) -> torch.nn.Module:
    """A module tree shaped as vLLM's Llama (``model.layers.<i>.self_attn.rotary_emb``), one shared rope."""
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.model_executor.layers.rotary_embedding import get_rope

    with set_current_vllm_config(VllmConfig()):  # vLLM's layers are built inside an engine's config
        rope = get_rope(cfg.head_dim, WINDOW, rope_parameters=cfg.rope_parameters, dtype=torch.float32)
    root = torch.nn.Module()
    root.model = torch.nn.Module()
    root.model.layers = torch.nn.ModuleList()
    for _ in layers:
        layer = torch.nn.Module()
        layer.self_attn = torch.nn.Module()
        layer.self_attn.rotary_emb = rope
        root.model.layers.append(layer)
    return root


def block(cfg, factors, scheme=None, **model) -> dict:
    info = model_info(cfg, "tiny", architecture="LlamaForCausalLM").as_dict() | model
    return json.loads(json.dumps(factors_record(model=info, scheme=scheme or {"name": "ntk"}, factors=factors)))


def test_the_tables_of_factor_one_are_vllms_own():
    cfg = config()
    stock = vllm_model(cfg).model.layers[0].self_attn.rotary_emb.cos_sin_cache
    spec = layer_specs(hf_rotary(cfg), cfg, LAYERS, "LlamaForCausalLM")[0]
    assert torch.equal(cos_sin_cache(spec.inv_freq, spec.attention_scaling, WINDOW), stock)


@pytest.mark.parametrize("scheme,factors", [
    ({"name": "ntk"}, [1.0, 1.5, 2.0, 1.0]),
    ({"name": "ntk"}, [0.8, 1.0, 0.9, 1.2]),  # below 1 the table holds up to a length (192 for 0.8; served: 64)
    ({"name": "pi"}, [1.0, 1.25, 1.5, 3.0]),
    ({"name": "yarn"}, [1.0, 2.0, 2.0, 4.0]),
    ({"name": "ntk", "bands": [32.0]}, [[1.0, 1.0], [1.0, 2.0], [1.5, 1.0], [2.0, 3.0]]),
    # a factor per layer per rotary frequency, as the per-frequency preset holds (8 frequencies here)
    ({"name": "ntk", "bands": "per_frequency"}, [[1.0] * 8, [1.0 + 0.1 * i for i in range(8)],
                                                 [1.6 - 0.05 * i for i in range(8)], [0.9, 1.2] * 4]),
])
def test_each_layer_gets_the_table_the_transformers_patch_computes(scheme, factors):
    cfg = config()
    scheme = resolve_bands(scheme, model_info(cfg, "tiny", architecture="LlamaForCausalLM"))
    model = vllm_model(cfg)
    stock = model.model.layers[0].self_attn.rotary_emb
    own = install(model, block(cfg, factors, scheme), cfg, 64)
    ropes = [layer.self_attn.rotary_emb for layer in model.model.layers]
    identity = [bool((torch.tensor(f) == 1.0).all()) for f in factors]
    assert own == identity.count(False)
    assert all((r is stock) == same for r, same in zip(ropes, identity))  # identity layers keep vLLM's table
    built = build_scheme(scheme)
    positions = torch.arange(WINDOW)[None]
    for rope, spec, factor in zip(ropes, layer_specs(hf_rotary(cfg), cfg, LAYERS, "LlamaForCausalLM"), factors):
        inv_freq, scaling = built(spec, factor, 64)  # what the transformers patch uses on a 64-token input
        cos, sin = rotary_tables(positions, inv_freq, scaling, torch.float32)  # transformers' layout: halves twice
        half = inv_freq.numel()
        torch.testing.assert_close(rope.cos_sin_cache[:, :half], cos[0, :, :half], rtol=0, atol=0)
        torch.testing.assert_close(rope.cos_sin_cache[:, half:], sin[0, :, :half], rtol=0, atol=0)


def test_what_cannot_be_served_is_refused_in_one_line():
    cfg = config()
    with pytest.raises(LpesError, match="head_dim=32, this model has 16"):
        install(vllm_model(cfg), block(cfg, [1.5] * LAYERS, head_dim=32), cfg, WINDOW)
    with pytest.raises(LpesError, match="rotary embeddings in layers \\[0, 1\\], not in each of its 4"):
        install(vllm_model(cfg, layers=range(2)), block(cfg, [1.5] * LAYERS), cfg, WINDOW)
    # dynamic NTK grows its base once its rule passes the factor (past the window), which a fixed table cannot follow
    with pytest.raises(LpesError, match="serve with max_model_len <= 341"):  # 1.5 L / 256 - 0.5 > 1.5 from 342
        install(vllm_model(cfg), block(cfg, [1.5] * LAYERS), cfg, 2 * WINDOW)
    install(vllm_model(cfg), block(cfg, [1.5] * LAYERS, {"name": "pi"}), cfg, 2 * WINDOW)  # PI is fixed: served
    # below 1, NTK's dynamic term rises above the factor inside the window: 0.7 * L / 256 + 0.3 > 0.7 from 147 on
    with pytest.raises(LpesError, match="layer 0's frequencies with the length from 147 tokens on"):
        install(vllm_model(cfg), block(cfg, [0.7] * LAYERS), cfg, WINDOW)
    with pytest.raises(LpesError, match="'factors' must be"):
        install(vllm_model(cfg), block(cfg, [1.5] * LAYERS) | {"factors": "x"}, cfg, WINDOW)


def test_a_scheme_with_its_own_attention_patch_is_refused(monkeypatch):
    from lpes_framework.registry import SCHEMES

    class OwnPatch:
        def __init__(self):
            pass

        def install(self, model, factors):
            raise AssertionError("never installed")

    monkeypatch.setattr(SCHEMES, "_entries", dict(SCHEMES._entries))  # registered for this test only
    SCHEMES.register("ownpatch")(OwnPatch)
    cfg = config()
    with pytest.raises(LpesError, match="brings its own attention patch"):
        install(vllm_model(cfg), block(cfg, [1.5] * LAYERS, {"name": "ownpatch"}), cfg, WINDOW)
