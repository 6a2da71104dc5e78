"""The Ms-PoE plugin package: installed with pip, found through entry points and Hydra's search path.

It is installed into a temporary folder put on the path of this process and of the commands it runs,
so the environment running the tests is left as it was."""

import json

import pytest
import torch

from conftest import TINY_TASK, installed_plugin, run_cli, tiny_model
from lpes_framework.errors import LpesError

@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    with installed_plugin(tmp_path_factory, "lpes-mspoe") as env:
        from lpes_framework.position import apply_layer_scaling, build_scheme

        yield apply_layer_scaling, build_scheme, env


def test_evaluate_command_runs_with_the_plugin_scheme(installed, tmp_path):
    env = installed[2]
    proc = run_cli("lpes_framework.commands.evaluate", *TINY_TASK, "pos=mspoe", "methods.uniform=[1.0]",
                   f"hydra.run.dir={tmp_path}", env=env)
    assert "uniform mspoe 1" in proc.stdout
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["methods"]["uniform mspoe 1"]["scheme"]["head_order"] == "position_awareness"
    listing = run_cli("lpes_framework", "--plugins").stdout  # this process: the package is on its path too
    assert "plugin mspoe: lpes_mspoe.scheme:MsPoE (lpes-mspoe)" in listing


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_mspoe_reduces_to_plain_rope_when_all_heads_share_a_ratio(installed, arch):
    apply_layer_scaling, build_scheme, _ = installed
    model = tiny_model(arch)
    ids = torch.randint(3, 97, (2, 40))
    with torch.no_grad():
        ref = model(ids).logits
        flat = build_scheme({"name": "mspoe", "head_order": "sequential"})
        flat.min_ratio = flat.max_ratio = 1.0  # refused as options (a no-op under mspoe's name); the maths holds
        with apply_layer_scaling(model, [1.0] * 4, flat):
            assert torch.allclose(model(ids).logits, ref, atol=1e-6)
        uniform = build_scheme({"name": "mspoe", "min_ratio": 1.5, "max_ratio": 1.5, "start_layer": 0,
                                "head_order": "sequential"})
        with apply_layer_scaling(model, [1.0] * 4, uniform):
            mspoe = model(ids).logits
        with apply_layer_scaling(model, [1.5] * 4, build_scheme({"name": "rope"})):
            rope = model(ids).logits
        torch.testing.assert_close(mspoe, rope, rtol=1e-5, atol=1e-5)
        assert torch.equal(model(ids).logits, ref)  # removed cleanly


def test_head_ratios_follow_the_paper(installed):
    _, build_scheme, _ = installed
    model = tiny_model("llama", num_key_value_heads=4)
    with installed[0](model, [1.0, 1.0, 1.0, 2.0], build_scheme({"name": "mspoe"})) as handle:
        ratios = handle.ratios
    assert torch.equal(ratios[:2], torch.ones(2, 4))  # first layers untouched
    torch.testing.assert_close(ratios[2].sort().values, torch.linspace(1.2, 1.8, 4))
    torch.testing.assert_close(ratios[3].sort().values, 2 * torch.linspace(1.2, 1.8, 4))  # times the layer factor


def test_gemma3_is_refused(installed):
    apply_layer_scaling, build_scheme, _ = installed
    from lpes_framework.model.info import ModelInfo

    with pytest.raises(LpesError, match="leaves every head unscaled"):
        build_scheme({"name": "mspoe", "min_ratio": 1.0, "max_ratio": 1.0})
    with pytest.raises(LpesError, match="start_layer=4 leaves no layer"):
        build_scheme({"name": "mspoe", "start_layer": 4}).check_model(ModelInfo("t", "LlamaForCausalLM", 4, 4, 1, 16, 1e4,
                                                                               "default", 256))
    with pytest.raises(LpesError, match="fused or normalised q/k"):
        apply_layer_scaling(tiny_model("gemma3_text"), [1.0] * 4, build_scheme({"name": "mspoe", "head_order": "sequential"}))
