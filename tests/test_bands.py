"""Band-wise layer factors: one factor per layer per wavelength band (``pos.bands``), end to end."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
import torch

from conftest import TINY_TASK, model_block, read_jsonl, run_cli, same_logits, tiny_model
from lpes_framework.errors import LpesError
from lpes_framework.model.factors_file import factors_record, load_factors
from lpes_framework.io.atomic import write_json_atomic
from lpes_framework.position import RopeParams, TracedScaling, apply_layer_scaling, build_scheme, is_identity
from lpes_framework.position.bands import band_index, check_bands, factors_json
from lpes_framework.position.curves import build_curve

# the tiny model's 8 rotary frequencies (head_dim 16, theta 1e4) have wavelengths 6, 20, 63, 199, 628, 1987,
# 6283, 19869 tokens: bands [100, 1000] put 3 in band 0, 2 in band 1 and 3 in band 2
BANDS = [100, 1000]
SPEC = RopeParams(1.0 / 10000 ** (torch.arange(0, 16, 2) / 16), 1.0, 256, rope_theta=10000.0)
IDS = torch.randint(3, 90, (1, 200), generator=torch.Generator().manual_seed(0))


def logits(model):
    with torch.no_grad():
        return model(IDS).logits


def test_band_boundaries_are_checked_and_dimensions_are_binned_by_wavelength():
    assert band_index(SPEC.inv_freq, check_bands(BANDS)).tolist() == [0, 0, 0, 1, 1, 2, 2, 2]
    for bad in ([], [0, 10], [100, 100], [1000, 100], "64", [float("inf")], [True]):
        with pytest.raises(LpesError, match="bands must"):
            check_bands(bad)


@pytest.mark.parametrize("name", ["rope", "pi", "ntk"])
def test_equal_band_factors_are_the_scalar_factor_and_each_band_moves_only_its_dimensions(name):
    scheme, plain = build_scheme({"name": name, "bands": BANDS}), build_scheme({"name": name})
    assert scheme.n_bands == 3 and scheme.config["bands"] == BANDS
    scalar, _ = plain(SPEC, 1.7, 300)
    assert torch.equal(scheme(SPEC, [1.7, 1.7, 1.7], 300)[0], scalar)  # bit-identical: every band reads one result
    assert torch.equal(scheme(SPEC, 1.7, 300)[0], scalar)  # a plain number still applies to every band
    mixed, _ = scheme(SPEC, [1.0, 1.7, 1.0], 200)
    own, scaled = plain(SPEC, 1.0, 200)[0], plain(SPEC, 1.7, 200)[0]
    band = band_index(SPEC.inv_freq, BANDS)
    assert torch.equal(mixed[band == 1], scaled[band == 1]) and torch.equal(mixed[band != 1], own[band != 1])


def test_a_traced_band_factor_has_a_gradient_only_through_its_dimensions():
    scheme = build_scheme({"name": "pi", "bands": BANDS})
    assert scheme.differentiable
    factor = torch.tensor([1.2, 1.5, 2.0], dtype=torch.float64, requires_grad=True)
    inv_freq, _ = scheme(SPEC, factor, 100)
    inv_freq[4].backward()  # a band-1 dimension
    assert factor.grad.tolist()[0] == 0 and factor.grad.tolist()[2] == 0 and factor.grad.tolist()[1] < 0


@pytest.mark.parametrize("cfg, factor, message", [
    ({"name": "yarn", "global_factor": 2.0, "bands": BANDS}, None, "attention scaling depends on the factor"),
    ({"name": "pi", "bands": BANDS}, [1.0, 1.5], r"pos=pi: layer factors of 2 numbers under 3 band\(s\)"),
    ({"name": "pi", "bands": BANDS}, [1.5], r"pos=pi: layer factors of 1 numbers under 3 band\(s\)"),
    ({"name": "pi", "bands": [100, 10]}, None, "increase strictly"),
])
def test_what_cannot_be_banded_is_refused_in_one_line(cfg, factor, message):
    with pytest.raises(LpesError, match=message):
        build_scheme(cfg)(SPEC, factor, 100)


def test_on_a_model_all_ones_is_the_unpatched_model_and_equal_bands_are_the_scalar_schedule():
    model = tiny_model("llama")
    scheme = build_scheme({"name": "ntk", "bands": BANDS})
    reference = logits(model)
    assert is_identity(scheme, [(1.0, 1.0, 1.0)] * 4)
    with apply_layer_scaling(model, [(1.0, 1.0, 1.0)] * 4, scheme):
        assert torch.equal(logits(model), reference)
    schedule = [0.8, 1.3, 2.0, 1.1]
    with apply_layer_scaling(model, schedule, build_scheme({"name": "ntk"})):
        scalar = logits(model)
    with apply_layer_scaling(model, [(f, f, f) for f in schedule], scheme):
        assert torch.equal(logits(model), scalar)
    banded = [(1.0, f, 1.0) for f in schedule]
    with apply_layer_scaling(model, banded, scheme):
        patched = logits(model)
    assert not torch.equal(patched, reference)
    # the gradient optimizer's traced patch computes the same tables
    with torch.no_grad(), TracedScaling(model, torch.tensor(banded, dtype=torch.float64), scheme):
        assert torch.equal(model(IDS).logits, patched)


def test_a_model_without_dimensions_in_a_band_or_a_schedule_of_the_wrong_width_is_refused():
    model = tiny_model("llama")
    with pytest.raises(LpesError, match=r"band\(s\) \[2\] hold no rotary dimension of this model"):
        apply_layer_scaling(model, [(1.0, 1.2, 1.0)] * 4, build_scheme({"name": "pi", "bands": [100, 1e6]}))
    with pytest.raises(LpesError, match=re.escape("pos=pi: layer factors of 2 numbers under 1 band(s) (bands None)")):
        apply_layer_scaling(model, [(1.0, 1.2)] * 4, build_scheme({"name": "pi"}))
    with pytest.raises(LpesError, match="mix 2-band lists and single numbers"):
        apply_layer_scaling(model, [(1.0, 1.2), 1.0, 1.0, 1.0], build_scheme({"name": "pi", "bands": [100]}))
    with pytest.raises(LpesError, match="mix 1-band lists and single numbers"):  # width 1 either way, yet ragged
        apply_layer_scaling(model, [[1.2], 1.0, 1.0, 1.0], build_scheme({"name": "pi"}))


def test_a_band_wise_curve_is_one_curve_per_band():
    free = build_curve({"name": "free", "low": 0.5, "high": 2.0}, 4, n_bands=2)
    assert free.n_genes == 8 and free.settings()["bands"] == 2
    genes = [0.6, 0.7, 0.8, 0.9, 1.5, 1.6, 1.7, 1.8]
    np.testing.assert_array_equal(free.factors(genes), [[0.6, 1.5], [0.7, 1.6], [0.8, 1.7], [0.9, 1.8]])
    # a scalar schedule (a preset) fits as the same factor in every band: where a banded search starts
    np.testing.assert_allclose(free.factors(free.fit([0.9, 1.1, 1.3, 1.2])), [[f, f] for f in (0.9, 1.1, 1.3, 1.2)],
                               atol=1e-9)
    bezier = build_curve({"name": "bezier", "low": 0.5, "high": 2.0, "monotone": "increasing"}, 6, n_bands=2)
    repaired = bezier.repair([2.0, 1.0, 0.5, 1.5, 1.0, 1.0, 1.0, 1.0])  # sorted within each band, not across
    assert repaired.tolist() == [0.5, 1.0, 1.5, 2.0, 1.0, 1.0, 1.0, 1.0]
    assert (bezier.factors(repaired)[:, 1] == 1.0).all()  # equal genes give the constant exactly, band by band
    assert bezier.factors_tensor(torch.tensor(repaired, requires_grad=True)).requires_grad


def test_a_band_wise_factors_file_round_trips_and_a_width_without_bands_is_refused(tmp_path):
    path = tmp_path / "bands.json"
    factors = np.array([[0.9, 1.2], [1.0, 1.4], [1.1, 1.0], [1.3, 0.8]])
    write_json_atomic(path, factors_record(model=model_block(), scheme={"name": "pi", "bands": [100]}, factors=factors))
    assert load_factors(path)["factors"] == factors.tolist() == factors_json(factors)
    bad = tmp_path / "bad.json"
    write_json_atomic(bad, factors_record(model=model_block(), scheme={"name": "pi"}, factors=factors))
    with pytest.raises(LpesError, match=re.escape("bad.json: layer factors of 2 numbers under 1 band(s) (bands None)")):
        load_factors(bad)


def test_a_gradient_search_over_bands_runs_and_its_answer_is_evaluated(tmp_path):
    out = tmp_path / "run"
    run_cli("lpes_framework", *TINY_TASK, "optimizer=gradient", "optimizer.steps=2", "optimizer.eval_every=2",
            "curve=free", "curve.low=0.5", "curve.high=2.0", "pos=pi", "+pos.bands=[100]", "validation.top_k=1",
            f"hydra.run.dir={out}")
    steps = [r for r in read_jsonl(out / "evaluations.jsonl") if r["kind"] == "step"]
    assert len(steps[0]["genome"]) == 8 and steps[1]["genome"] != steps[0]["genome"]
    assert all(len(f) == 2 for f in steps[-1]["factors"])
    record = json.loads((out / "best_factors.json").read_text())
    assert record["curve"]["bands"] == 2 and record["scheme"]["bands"] == [100]
    assert all(len(f) == 2 and all(math.isfinite(v) for v in f) for f in record["factors"])
    assert re.search(r"`\(\d\.\d{3}, \d\.\d{3}\), ", (out / "report.md").read_text())  # a layer's two bands
    status = run_cli("lpes_framework.commands.status", str(out)).stdout
    assert re.search(r"factors \d\.\d{3}-\d\.\d{3}, generation", status)  # the range over every band
    evaluated = tmp_path / "eval"
    run_cli("lpes_framework.commands.evaluate", *TINY_TASK, f"methods.factors_files=[{out / 'best_factors.json'}]",
            "methods.uniform=[]", f"hydra.run.dir={evaluated}")
    assert "file run" in (evaluated / "results.json").read_text()


def test_an_empty_band_is_refused_from_the_config_before_the_weights_load(tmp_path):
    result = run_cli("lpes_framework", *TINY_TASK, "pos=pi", "+pos.bands=[100,1000000]", f"hydra.run.dir={tmp_path}",
                     check=False)
    assert result.returncode != 0 and "band(s) [2] hold no rotary dimension of tiny" in result.stderr
    assert not (tmp_path / "evaluations.jsonl").exists()


def test_a_band_wise_patched_model_generates_and_reloads_with_its_bands(tmp_path):
    from lpes_framework import load_patched, save_patched

    model = tiny_model("qwen2")
    prompt = torch.randint(3, 97, (1, 16), generator=torch.Generator().manual_seed(1))
    factors = [(1.0, 1.5, 2.0), (0.8, 1.0, 1.2), (1.3, 1.3, 1.3), (2.0, 0.7, 1.0)]
    handle = apply_layer_scaling(model, factors, build_scheme({"name": "pi", "bands": BANDS}))
    expected = model.generate(prompt, max_new_tokens=8, do_sample=False, min_new_tokens=8)  # batched decode tables
    save_patched(model, handle, tmp_path / "saved")
    reloaded, reloaded_handle = load_patched(tmp_path / "saved")
    assert reloaded_handle.factors == factors and reloaded_handle.scheme.n_bands == 3
    assert torch.equal(reloaded.generate(prompt, max_new_tokens=8, do_sample=False, min_new_tokens=8), expected)


def test_a_uniform_method_under_a_banded_scheme_is_keyed_as_the_unbanded_one():
    from lpes_framework.evaluate.methods import plan_methods
    from lpes_framework.config import compose_config
    from lpes_framework.model.load import identify

    cfg = compose_config("evaluate", ["model=tiny", "pos=ntk", "+pos.bands=[100]", "methods.uniform=[1.5]"])
    methods = plan_methods(cfg, {"name": "ntk", "bands": [100]}, identify(cfg.model))
    assert methods["uniform ntk 1.5"] == ([1.5] * 4, {"name": "ntk"})  # rows shared with pos=ntk's


def test_per_frequency_bands_give_every_rotary_frequency_its_own_band():
    from lpes_framework.model.info import ModelInfo
    from lpes_framework.position.bands import band_index, check_occupied, default_inv_freq, resolve_bands

    qwen = ModelInfo("q", "Qwen2ForCausalLM", 24, 14, 2, 64, 1e6, "default", 32768)
    cfg = resolve_bands({"name": "ntk", "bands": "per_frequency"}, qwen)
    inv_freq = default_inv_freq(qwen)
    assert len(cfg["bands"]) == 31 and cfg["name"] == "ntk"
    assert band_index(inv_freq.float(), cfg["bands"]).tolist() == list(range(32))  # dimension d is band d
    check_occupied(inv_freq, cfg["bands"], "qwen")
    assert resolve_bands({"name": "ntk", "bands": [128, 2048]}, qwen) == {"name": "ntk", "bands": [128, 2048]}
    with pytest.raises(LpesError, match="filled in from a model's config"):
        build_scheme({"name": "ntk", "bands": "per_frequency"})
    gemma = ModelInfo("g", "Gemma3ForCausalLM", 4, 4, 1, 16, None, "default", 256)
    with pytest.raises(LpesError, match="no single rope_theta"):
        resolve_bands({"name": "ntk", "bands": "per_frequency"}, gemma)


def test_a_search_with_a_factor_per_frequency_records_its_bands(tmp_path):
    proc = run_cli("lpes_framework", *TINY_TASK, "optimizer=gradient", "optimizer.steps=2", "optimizer.eval_every=2",
                   "optimizer.smoothness=1.0", "pos=ntk", "+pos.bands=per_frequency", "curve=free",
                   "validation.top_k=1", "validation.bootstrap_resamples=200", f"hydra.run.dir={tmp_path}")
    record = json.loads((tmp_path / "best_factors.json").read_text())
    assert len(record["scheme"]["bands"]) == 7  # the tiny model's 8 rotary frequencies (head size 16)
    assert {len(f) for f in record["factors"]} == {8}, proc.stdout


def test_a_file_redrawn_on_finer_bands_computes_the_same(tmp_path):
    from lpes_framework.model.info import identify_loaded

    model = tiny_model("llama", layers=4)
    factors = np.random.default_rng(0).uniform(0.6, 2.0, (4, 2)).tolist()
    write_json_atomic(tmp_path / "coarse.json", factors_record(
        model=identify_loaded(model).as_dict(), scheme={"name": "ntk", "bands": [20.0]}, factors=factors))
    run_cli("lpes_framework.commands.factors", str(tmp_path / "coarse.json"), "--bands", "per_frequency",
            "--out", str(tmp_path / "fine.json"))
    fine = load_factors(tmp_path / "fine.json")
    assert len(fine["scheme"]["bands"]) == 7 and {len(f) for f in fine["factors"]} == {8}
    assert same_logits(model, tmp_path / "coarse.json", tmp_path / "fine.json")
    straddles = run_cli("lpes_framework.commands.factors", str(tmp_path / "coarse.json"), "--bands", "[10, 1000]",
                        "--out", str(tmp_path / "bad.json"), check=False)
    assert straddles.returncode == 2 and "do not refine" in straddles.stderr
