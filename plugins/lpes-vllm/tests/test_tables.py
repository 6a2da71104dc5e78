"""The plugin's tables without an engine: vLLM's own rotary embedding (``get_rope``) in a model-shaped tree,
given an exported config's tables by ``install``, against the cos/sin the transformers patch computes for the
same factors; what it cannot serve, refused in one line; nothing of lpes_framework imported."""

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

from lpes_framework.model.factors_file import factors_record
from lpes_framework.model.info import model_info
from lpes_framework.position import apply_layer_scaling, build_scheme, layer_specs, rope_layout, rotary_tables
from lpes_framework.position.bands import resolve_bands
from lpes_framework.report.export import export_tables
from lpes_vllm.tables import ServingError, cos_sin_cache, install, install_from_config

LAYERS, WINDOW = 4, 256


def config() -> LlamaConfig:
    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=LAYERS, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=WINDOW, vocab_size=100)
    cfg.architectures = ["LlamaForCausalLM"]
    return cfg


def exported(factors, scheme=None) -> LlamaConfig:
    """A config as ``lpes export`` writes it for a tiny Llama under ``factors``: its lpes block and tables."""
    cfg = config()
    scheme = resolve_bands(scheme or {"name": "ntk"}, model_info(cfg, "tiny", architecture="LlamaForCausalLM"))
    model = LlamaForCausalLM(cfg).eval()
    with apply_layer_scaling(model, factors, build_scheme(scheme)) as handle:
        tables = export_tables(model, handle)
        block = factors_record(model=model_info(cfg, "tiny").as_dict(), scheme=handle.scheme.config,
                               factors=handle.factors)
    cfg.lpes, cfg.lpes_tables = json.loads(json.dumps(block)), json.loads(json.dumps(tables))
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


def test_the_tables_of_factor_one_are_vllms_own():
    cfg = config()
    stock = vllm_model(cfg).model.layers[0].self_attn.rotary_emb.cos_sin_cache
    assert torch.equal(cos_sin_cache(LlamaRotaryEmbedding(config=cfg).inv_freq, 1.0, WINDOW), stock)


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
    cfg = exported(factors, scheme)
    model = vllm_model(cfg)
    stock = model.model.layers[0].self_attn.rotary_emb
    own = install(model, cfg, LAYERS, 64)
    ropes = [layer.self_attn.rotary_emb for layer in model.model.layers]
    identity = [bool((torch.tensor(f) == 1.0).all()) for f in factors]
    assert own == identity.count(False)
    assert all((r is stock) == same for r, same in zip(ropes, identity))  # identity layers keep vLLM's table
    built = build_scheme(cfg.lpes["scheme"])
    positions = torch.arange(WINDOW)[None]
    _, _, specs = rope_layout(LlamaForCausalLM(config()))
    for rope, spec, factor in zip(ropes, specs, factors):
        inv_freq, scaling = built(spec, factor, 64)  # what the transformers patch uses on a 64-token input
        cos, sin = rotary_tables(positions, inv_freq, scaling, torch.float32)  # transformers' layout: halves twice
        half = inv_freq.numel()
        torch.testing.assert_close(rope.cos_sin_cache[:, :half], cos[0, :, :half], rtol=0, atol=0)
        torch.testing.assert_close(rope.cos_sin_cache[:, half:], sin[0, :, :half], rtol=0, atol=0)


def test_what_cannot_be_served_is_refused_in_one_line():
    cfg = exported([1.5] * LAYERS)
    with pytest.raises(ServingError, match="rotary embeddings in layers \\[0, 1\\], not in each of its 4"):
        install(vllm_model(cfg, layers=range(2)), cfg, LAYERS, WINDOW)
    # dynamic NTK grows its base once its rule passes the factor (past the window), which a fixed table cannot follow
    with pytest.raises(ServingError, match="serve with max_model_len <= 341"):  # 1.5 L / 256 - 0.5 > 1.5 from 342
        install(vllm_model(cfg), cfg, LAYERS, 2 * WINDOW)
    pi = exported([1.5] * LAYERS, {"name": "pi"})
    install(vllm_model(pi), pi, LAYERS, 2 * WINDOW)  # PI is fixed: served
    # below 1, NTK's dynamic term rises above the factor inside the window: 0.7 * L / 256 + 0.3 > 0.7 from 147 on
    low = exported([0.7] * LAYERS)
    with pytest.raises(ServingError, match="change with the length from 147 tokens on"):
        install(vllm_model(low), low, LAYERS, WINDOW)
    edited = exported([1.5] * LAYERS)
    edited.lpes_tables["scaling"][1] = 2.0  # the tables no longer those of the block: two schedules in one folder
    with pytest.raises(ServingError, match="not those of its lpes block"):
        install(vllm_model(edited), edited, LAYERS, 64)
    edited.lpes["factors"][1] = "x"
    with pytest.raises(ServingError, match="not those of its lpes block"):
        install(vllm_model(edited), edited, LAYERS, 64)
    unexported = exported([1.5] * LAYERS)
    del unexported.lpes_tables  # what save_patched writes: the block alone
    with pytest.raises(ServingError, match="serve the folder `lpes export` makes"):
        install_from_config(vllm_model(unexported), SimpleNamespace(hf_config=unexported, hf_text_config=unexported,
                                                                    max_model_len=64))
    stock = config()
    assert install_from_config(vllm_model(stock), SimpleNamespace(hf_config=stock, hf_text_config=stock,
                                                                  max_model_len=64)) == 0


def test_the_plugin_imports_nothing_of_lpes_framework():
    code = ("import sys; sys.modules['lpes_framework'] = None\n"  # any import of it fails
            "import lpes_vllm, lpes_vllm.tables\n"
            "print(sorted(m for m in sys.modules if m.startswith('lpes_framework')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "['lpes_framework']"
