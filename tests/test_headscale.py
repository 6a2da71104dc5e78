"""The head-scale plugin package (SEAL-style learned head scales, alone and stacked on layer factors): the hooks
against the scales folded into the weights, the gradient against finite differences, a search and a factors
file end to end, and the refusals. Installed into a temporary folder."""

import json

import numpy as np
import pytest
import torch

from conftest import TINY_TASK, installed_plugin, read_jsonl, run_cli, same_logits, tiny_model
from lpes_framework.errors import LpesError
from lpes_framework.judging.fitness import FitnessWeights, sample_coefficients
from lpes_framework.model.info import identify_loaded
from lpes_framework.position import apply_layer_scaling, build_scheme, layer_width
from lpes_framework.position.curves import build_curve
from lpes_framework.scoring.gradient import value_and_gradient
from lpes_framework.scoring.teacher_forced import score_teacher_forced
from test_gradient import haystacks

STACKED = {"name": "headscale", "base": {"name": "ntk", "bands": [8.0]}}


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    with installed_plugin(tmp_path_factory, "lpes-headscale") as env:
        yield env


def random_factors(width: int, layers: int = 4, seed: int = 0) -> list[tuple]:
    rng = np.random.default_rng(seed)
    return [tuple(rng.uniform(0.5, 2.0, width)) for _ in range(layers)]


@pytest.mark.parametrize("cfg", [{"name": "headscale"}, {"name": "headscale", "per": "channel"}, STACKED])
def test_folded_weights_compute_what_the_hooks_do(plugin, cfg):
    model = tiny_model("qwen2", layers=4)
    scheme = build_scheme(cfg)
    factors = random_factors(layer_width(scheme, identify_loaded(model)))
    ids = torch.randint(3, 90, (2, 40), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        plain = model(ids).logits
        with apply_layer_scaling(model, factors, scheme):
            hooked = model(ids).logits
        assert torch.equal(model(ids).logits, plain)  # removed: the model as it was
        with scheme.fold(model, factors):  # weights changed for good; the base's RoPE factors patched
            folded = model(ids).logits
    assert not torch.allclose(hooked, plain, atol=1e-3)
    torch.testing.assert_close(folded, hooked, rtol=1e-5, atol=1e-5)


def test_all_ones_is_the_unpatched_model_bit_for_bit(plugin):
    model = tiny_model("llama", layers=4)
    scheme = build_scheme(STACKED)
    ids = torch.randint(3, 90, (1, 30), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        plain = model(ids).logits
        with apply_layer_scaling(model, [(1.0,) * layer_width(scheme, identify_loaded(model))] * 4, scheme):
            assert torch.equal(model(ids).logits, plain)
    assert scheme.identity_at_one


@pytest.mark.parametrize("cfg", [{"name": "headscale"}, STACKED])
def test_the_gradient_reaches_scales_and_layer_factors_and_is_the_finite_difference(plugin, cfg):
    model = tiny_model("llama", layers=4, max_positions=256).double()
    items = haystacks(1)
    scheme = build_scheme(cfg)
    width = layer_width(scheme, identify_loaded(model))
    curve = build_curve({"name": "free", "low": 0.1, "high": 3.0}, 4, n_bands=width)
    with torch.no_grad():
        baseline = score_teacher_forced(model, items, batch_size=2)
    coefficients = sample_coefficients({"0", "3", "7"}, 1.0, FitnessWeights.defaults(logprob_weight=1.0), per_position=1)
    genes = np.asarray(random_factors(width, seed=3)).ravel()

    def objective(g):
        return value_and_gradient(model, {"kv": items}, {"kv": baseline}, {"kv": coefficients}, g, curve, scheme,
                                  batch_size=2, pad_id=0, share_prefix=True)

    _, grad, _, _ = objective(genes)
    scale_genes = [width - 1, 2 * width - 1]  # the last head's scale in layers 0 and 1
    checked = scale_genes + ([0, width] if cfg.get("base") else [])  # and the first band's RoPE factor
    assert np.count_nonzero(grad) > len(grad) // 2
    eps = 1e-3  # smaller steps drown in the float32 log-softmax of the scoring (a double model still rounds there)
    for g in checked:
        up, down = genes.copy(), genes.copy()
        up[g] += eps
        down[g] -= eps
        fd = (objective(up)[0] - objective(down)[0]) / (2 * eps)
        assert grad[g] == pytest.approx(fd, rel=0.02, abs=1e-8)


def test_a_gradient_search_trains_head_scales_and_its_file_applies(plugin, tmp_path):
    proc = run_cli("lpes_framework", *TINY_TASK, "pos=headscale", "optimizer=gradient", "optimizer.steps=2",
                   "optimizer.eval_every=2", "curve=free", "curve.low=0.1", "validation.top_k=1",
                   "validation.bootstrap_resamples=200", f"hydra.run.dir={tmp_path}", env=plugin)
    record = json.loads((tmp_path / "best_factors.json").read_text())
    assert record["scheme"]["name"] == "headscale"
    assert {len(f) for f in record["factors"]} == {4}  # the tiny model's 4 heads, no RoPE genes
    steps = [r for r in read_jsonl(tmp_path / "evaluations.jsonl") if r["kind"] == "step"]
    assert len(steps) == 2 and any(g != 1.0 for g in steps[-1]["genome"]), proc.stdout
    # re-tested held out in its own regime, next to the search's mean-level control (every scale at the mean)
    run_cli("lpes_framework", "retest", "--preset", str(tmp_path / "best_factors.json"), "--model", "tiny",
            "--samples", "2", "--threads", "1", "--out", str(tmp_path / "re"), env=plugin)
    control = next(name for name in record["metrics"]["test"] if name.startswith("uniform headscale "))
    methods = json.loads((tmp_path / "re" / "results.json").read_text())["methods"]
    assert set(methods) == {"unpatched", f"file {tmp_path.name}", control}
    # a received file of the wrong width is refused before the model loads, in one line
    record["factors"] = [f[:3] for f in record["factors"]]
    (tmp_path / "narrow.json").write_text(json.dumps(record))
    bad = run_cli("lpes_framework.commands.evaluate", *TINY_TASK, f"+methods.factors_files=[{tmp_path / 'narrow.json'}]",
                  f"hydra.run.dir={tmp_path / 'eval'}", env=plugin, check=False)
    assert bad.returncode != 0 and "hold 3 numbers each; pos=headscale needs 4" in bad.stderr.strip().splitlines()[-1]


def test_refusals_are_one_line_and_early(plugin):
    with pytest.raises(LpesError, match="per must be one of"):
        build_scheme({"name": "headscale", "per": "layer"})
    with pytest.raises(LpesError, match="base must be null or scheme settings"):
        build_scheme({"name": "headscale", "base": "ntk"})
    with pytest.raises(LpesError, match="unknown|not a|no scheme"):
        build_scheme({"name": "headscale", "base": {"name": "nope"}})
    with pytest.raises(LpesError, match="one RoPE table per layer"):
        build_scheme({"name": "headscale", "base": {"name": "headscale"}})
    with pytest.raises(LpesError, match="needs 4 layer factors of 4 numbers"):
        apply_layer_scaling(tiny_model("llama"), [(1.0, 1.0)] * 4, build_scheme({"name": "headscale"}))


def test_a_stacked_start_computes_what_its_rope_file_does(plugin, tmp_path):
    from lpes_headscale.stack import main, stacked_start

    from lpes_framework.model.factors_file import factors_record
    from lpes_framework.io.atomic import write_json_atomic

    model = tiny_model("qwen2", layers=4)
    rope = {"name": "ntk", "bands": [8.0]}
    write_json_atomic(tmp_path / "rope.json", factors_record(model=identify_loaded(model).as_dict(), scheme=rope,
                                                             factors=random_factors(2)))
    main([str(tmp_path / "rope.json"), "--out", str(tmp_path / "start.json")])
    start = json.loads((tmp_path / "start.json").read_text())
    assert start["scheme"] == {"name": "headscale", "per": "head", "base": rope}
    assert {len(f) for f in start["factors"]} == {2 + 4}
    assert same_logits(model, tmp_path / "rope.json", tmp_path / "start.json")
    with pytest.raises(LpesError, match="brings its own patch"):
        stacked_start(str(tmp_path / "start.json"))


def test_export_folds_the_scales_into_o_proj(plugin, tmp_path):
    from transformers import AutoModelForCausalLM

    from lpes_framework.commands.export import export
    from lpes_framework.config import compose_config
    from lpes_framework.model.patched import apply_factors_file
    from lpes_framework.model.factors_file import factors_record
    from lpes_framework.io.atomic import write_json_atomic
    from lpes_framework.model.load import load_model

    cfg = compose_config("config", ["model=tiny"]).model
    model, _, info = load_model(cfg)
    scheme = build_scheme(STACKED)
    write_json_atomic(tmp_path / "stacked.json", factors_record(
        model=info.as_dict(), scheme=STACKED, factors=random_factors(layer_width(scheme, info), layers=info.n_layers)))
    ids = torch.randint(3, 90, (1, 50), generator=torch.Generator().manual_seed(3))
    with torch.no_grad(), apply_factors_file(model, tmp_path / "stacked.json"):
        hooked = model(ids).logits
    folder = export(str(tmp_path / "stacked.json"), "tiny", tmp_path / "model")
    exported = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True).eval()
    config = json.loads((folder / "config.json").read_text())
    assert config["lpes"]["scheme"]["name"] == "ntk"  # the scales live in the weights; only the RoPE part is patched
    card = (folder / "README.md").read_text()
    assert "unchanged" not in card and '"name": "headscale"' in card  # the card says the weights carry the scales
    with torch.no_grad():
        torch.testing.assert_close(exported(ids).logits, hooked, rtol=1e-5, atol=1e-5)
