"""The PosScale plugin package: channel identification on a planted channel, the patch against a brute
force on the weights, the shared-prefix path, and the refusals. Installed into a temporary folder."""

import json

import numpy as np
import pytest
import torch

from conftest import TINY_TASK, installed_plugin, run_cli, tiny_model
from lpes_framework.errors import LpesError

PLANTED = 7


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    with installed_plugin(tmp_path_factory, "lpes-posscale") as env:
        from lpes_posscale import channels

        from lpes_framework.position import apply_layer_scaling, build_scheme

        yield apply_layer_scaling, build_scheme, channels, env


def planted(model, channel: int = PLANTED, slope: float = 0.02):
    """Hooks that add a ramp in the token index to one channel of every decoder layer's output."""
    def hook(module, args, out):
        hidden = out[0] if isinstance(out, tuple) else out
        ramp = slope * torch.arange(hidden.shape[1], dtype=hidden.dtype)
        hidden[..., channel] += ramp
        return out

    return [layer.register_forward_hook(hook) for layer in model.model.layers]


def test_identification_finds_a_planted_ramp_among_noise(plugin):
    channels = plugin[2]
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(8, 300, 32))
    hidden[:, :, 5] += np.linspace(0, 3, 300)  # smooth and monotonic in every layer
    hidden[:, :, 9] += np.where(np.arange(300) % 2, 2.0, 0.0) + np.linspace(0, 3, 300)  # monotonic trend, rough
    assert channels.positional_channels(hidden, top_k=1, skip=20) == [5]
    with pytest.raises(ValueError, match="no channel"):
        channels.positional_channels(rng.normal(size=(8, 300, 32)), skip=20)


def test_identification_finds_the_channel_planted_in_a_model(plugin):
    _, build_scheme, _, _ = plugin
    model = tiny_model("llama", layers=8)
    handles = planted(model)
    scheme = build_scheme({"name": "posscale", "calibration_tokens": 256, "skip_tokens": 32})
    assert scheme.find_channels(model) == [PLANTED]
    for h in handles:
        h.remove()


def brute_force(model, layer: int, channels: list[int], scale: float):
    """The paper's scaling in the last layer done on the weights: q_proj and k_proj read channel ``c`` times
    ``scale`` for every token (in the last layer, the context rows do not reach the next-token logits)."""
    attn = model.model.layers[layer].self_attn
    with torch.no_grad():
        for proj in (attn.q_proj, attn.k_proj):
            proj.weight[:, channels] *= scale


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_last_layer_scaling_matches_the_weights_brute_force(plugin, arch):
    apply_layer_scaling, build_scheme, _, _ = plugin
    model = tiny_model(arch)
    ids = torch.randint(3, 97, (2, 40))
    scheme = build_scheme({"name": "posscale", "scale": 0.3, "layers": [0.75, 1.0], "channels": [3, 11]})
    with torch.no_grad():
        plain = model(ids).logits
        with apply_layer_scaling(model, [1.0] * 4, scheme):
            patched = model(ids).logits
        assert torch.equal(model(ids).logits, plain)  # removed cleanly
        brute_force(model, 3, [3, 11], 0.3)
        brute = model(ids).logits
    torch.testing.assert_close(patched[:, -1], brute[:, -1], rtol=1e-5, atol=1e-5)  # the reading token
    torch.testing.assert_close(patched[:, :-1], plain[:, :-1], rtol=0, atol=0)  # the context is untouched
    assert not torch.allclose(patched[:, -1], plain[:, -1], atol=1e-4)


def test_shared_prefix_suffix_rows_match_the_brute_force(plugin):
    """A suffix batch scored against a repeated prefix cache: every suffix row reads with scaled keys of the
    prefix and of itself, as in the weights brute force (last layer only)."""
    apply_layer_scaling, build_scheme, _, _ = plugin
    from lpes_framework.scoring import expanded, prefix_cache

    model = tiny_model("qwen2")
    prefix = torch.randint(3, 97, (30,)).tolist()
    suffix = torch.randint(3, 97, (3, 6))
    positions = torch.arange(30, 36)[None].expand(3, -1)
    scheme = build_scheme({"name": "posscale", "scale": -0.5, "layers": [0.75, 1.0], "channels": [5]})
    with torch.no_grad(), apply_layer_scaling(model, [1.0] * 4, scheme):
        cache = prefix_cache(model, prefix)
        first = model(suffix, cache=expanded(cache, 3), position_ids=positions).logits
        again = model(suffix[:2], cache=expanded(cache, 2), position_ids=positions[:2]).logits  # the cache reused
    brute_force(model, 3, [5], -0.5)
    with torch.no_grad():
        whole = model(torch.cat([torch.tensor(prefix)[None].expand(3, -1), suffix], 1)).logits[:, 30:]
    torch.testing.assert_close(first, whole, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(again, first[:2], rtol=1e-5, atol=1e-5)


def test_scale_one_is_the_base_scheme_and_layer_factors_compose(plugin):
    apply_layer_scaling, build_scheme, _, _ = plugin
    model = tiny_model("llama")
    ids = torch.randint(3, 97, (1, 32))
    with torch.no_grad():
        with apply_layer_scaling(model, [1.0, 1.5, 2.0, 1.0], build_scheme({"name": "pi"})):
            pi = model(ids).logits
        scheme = build_scheme({"name": "posscale", "scale": 0.5, "channels": [0], "base": "pi"})
        scheme.scale = 1.0  # refused as an option (the unpatched model under posscale's name); the maths still holds
        with apply_layer_scaling(model, [1.0, 1.5, 2.0, 1.0], scheme):
            torch.testing.assert_close(model(ids).logits, pi, rtol=1e-6, atol=1e-6)


def test_refusals_are_one_line_and_early(plugin):
    apply_layer_scaling, build_scheme, _, _ = plugin
    from lpes_framework.model.info import ModelInfo

    with pytest.raises(LpesError, match="layers must be fractions"):
        build_scheme({"name": "posscale", "layers": [0.8, 0.3]})
    with pytest.raises(LpesError, match="scale must be a number other than 1"):
        build_scheme({"name": "posscale", "scale": 1.0})
    with pytest.raises(LpesError, match="unknown|not a|no scheme"):
        build_scheme({"name": "posscale", "base": "nope"})
    gemma = ModelInfo("g", "Gemma3ForCausalLM", 4, 4, 1, 16, 1e4, "default", 256)
    with pytest.raises(LpesError, match="posscale supports"):
        build_scheme({"name": "posscale"}).check_model(gemma)
    with pytest.raises(LpesError, match="fused or normalised"):
        apply_layer_scaling(tiny_model("gemma3_text"), [1.0] * 4, build_scheme({"name": "posscale", "channels": [0]}))


def test_evaluate_scores_a_competitor_as_a_scheme_method(plugin, tmp_path):
    env = plugin[3]
    proc = run_cli("lpes_framework.commands.evaluate", *TINY_TASK, "methods.uniform=[]",
                   "+methods.schemes.posscale-05={name:posscale,scale:0.5,channels:[3]}",
                   f"hydra.run.dir={tmp_path}", env=env)
    assert "posscale-05" in proc.stdout
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["methods"]["posscale-05"]["scheme"]["scale"] == 0.5
    assert set(results["methods"]["posscale-05"]["factors"]) == {1.0}
    nested = run_cli("lpes_framework.commands.evaluate", *TINY_TASK, "+methods.schemes.ps-0.5={name:posscale}",
                     f"hydra.run.dir={tmp_path / 'bad'}", env=env, check=False)
    assert nested.returncode != 0 and "a dot in a method name nests it" in nested.stderr
