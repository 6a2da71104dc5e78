"""The Found-in-the-Middle plugin package: the calibration arithmetic, the patch's identities (strength 0,
an input as content-free as its prior), the extra forwards it costs, decoding, and the refusals."""

import json

import pytest
import torch

from conftest import TINY_TASK, installed_plugin, run_cli, tiny_model
from lpes_framework.errors import LpesError


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    with installed_plugin(tmp_path_factory, "lpes-fim") as env:
        from lpes_fim import scheme

        from lpes_framework.position import apply_layer_scaling, build_scheme

        yield apply_layer_scaling, build_scheme, scheme, env


def test_calibration_subtracts_the_prior_and_keeps_the_context_mass(plugin):
    calibrated = plugin[2].calibrated
    weights = torch.tensor([[0.30, 0.10, 0.20, 0.15, 0.05, 0.20]])
    prior = torch.tensor([[0.30, 0.05, 0.25, 0.05, 0.05]])
    out = calibrated(weights, prior, keep=1, context=5, strength=1.0)
    assert out[0, 0] == weights[0, 0] and out[0, 5] == weights[0, 5]  # the sink and the reading token
    torch.testing.assert_close(out[0, 1:5].sum(), weights[0, 1:5].sum())
    assert out[0, 2] == 0 and out[0, 4] == 0  # at or below the prior
    torch.testing.assert_close(out[0, 1] / out[0, 3], torch.tensor(0.05 / 0.10))
    torch.testing.assert_close(calibrated(weights, prior, 1, 5, 0.0), weights)
    torch.testing.assert_close(calibrated(weights, weights[:, :5], 0, 5, 1.0), weights)  # nothing left: unchanged


@pytest.mark.parametrize("arch", ["llama", "qwen2", "phi3"])
def test_strength_zero_is_the_base_scheme(plugin, arch):
    apply_layer_scaling, build_scheme, _, _ = plugin
    model = tiny_model(arch)
    ids = torch.randint(3, 97, (2, 30))
    with torch.no_grad():
        plain = model(ids).logits
        scheme = build_scheme({"name": "fim", "strength": 0.5})
        scheme.strength = 0.0  # refused as an option (the unpatched model under fim's name); the maths still holds
        with apply_layer_scaling(model, [1.0] * 4, scheme):
            torch.testing.assert_close(model(ids).logits, plain, rtol=1e-5, atol=1e-5)
        assert torch.equal(model(ids).logits, plain)  # removed cleanly


def test_a_content_free_input_is_left_as_it_is_and_a_real_one_is_not(plugin):
    apply_layer_scaling, build_scheme, _, _ = plugin
    from lpes_framework.position.attention_patch import content_free_ids

    model = tiny_model("llama")
    dummy = torch.cat([content_free_ids(97, 29), torch.tensor([[5]])], 1)  # exactly the prior pass's input
    real = torch.randint(3, 97, (1, 30))
    with torch.no_grad():
        plain_dummy, plain_real = model(dummy).logits, model(real).logits
        with apply_layer_scaling(model, [1.0] * 4, build_scheme({"name": "fim", "keep_first": 1})):
            torch.testing.assert_close(model(dummy).logits, plain_dummy, rtol=1e-5, atol=1e-5)
            patched = model(real).logits
    torch.testing.assert_close(patched[:, :-1], plain_real[:, :-1], rtol=1e-5, atol=1e-5)  # only the reading row
    assert not torch.allclose(patched[:, -1], plain_real[:, -1], atol=1e-3)


def count_forwards(model):
    calls = []
    handle = model.model.register_forward_pre_hook(lambda module, args, kwargs: calls.append(
        kwargs["input_ids"].shape), with_kwargs=True)
    return calls, handle


def test_extra_forwards_shared_prefix_and_decoding(plugin):
    """The cost stated in the scheme's docstring: every forward once more on a dummy context, the prefix's
    dummy cache kept for its suffix batches, and decoding continues the dummy cache instead of rebuilding it."""
    apply_layer_scaling, build_scheme, _, _ = plugin
    from lpes_framework.scoring import expanded, prefix_cache

    model = tiny_model("qwen2")
    prefix, suffix = torch.randint(3, 97, (25,)).tolist(), torch.randint(3, 97, (3, 5))
    positions = torch.arange(25, 30)[None].expand(3, -1)
    with torch.no_grad(), apply_layer_scaling(model, [1.0] * 4, build_scheme({"name": "fim"})):
        calls, handle = count_forwards(model)
        cache = prefix_cache(model, prefix)
        first = model(suffix, cache=expanded(cache, 3), position_ids=positions).logits
        again = model(suffix, cache=expanded(cache, 3), position_ids=positions).logits
        # (prior, real) per forward: the prefix's dummy cache is kept and serves both suffix batches
        assert [tuple(c) for c in calls] == [(1, 25), (1, 25), (3, 5), (3, 5), (3, 5), (3, 5)]
        torch.testing.assert_close(again, first)
        calls.clear()
        grown = expanded(cache, 1)
        model(suffix[:1], cache=grown, position_ids=positions[:1])
        for step in range(3):
            model(torch.tensor([[7]]), cache=grown, position_ids=torch.tensor([[30 + step]]))
        handle.remove()
    # the dummy prefix is reused, never rebuilt for the decoding steps
    assert [tuple(c) for c in calls] == [(1, 5), (1, 5)] + [(1, 1), (1, 1)] * 3


def test_refusals_and_evaluate(plugin, tmp_path):
    _, build_scheme, _, env = plugin
    from lpes_framework.model.info import ModelInfo

    for strength in (1.5, 0.0):  # 0: a no-op reported as fim
        with pytest.raises(LpesError, match="0 < strength <= 1"):
            build_scheme({"name": "fim", "strength": strength})
    with pytest.raises(LpesError, match="sliding-window"):
        build_scheme({"name": "fim"}).check_model(ModelInfo("g", "Gemma3ForCausalLM", 4, 4, 1, 16, 1e4, "default", 256))
    proc = run_cli("lpes_framework.commands.evaluate", *TINY_TASK, "methods.uniform=[]",
                   "+methods.schemes.fim-half={name:fim,strength:0.5}", f"hydra.run.dir={tmp_path}", env=env)
    assert "fim-half" in proc.stdout
    assert json.loads((tmp_path / "results.json").read_text())["methods"]["fim-half"]["scheme"]["strength"] == 0.5
