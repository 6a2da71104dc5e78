"""PEAR in the head-scale plugin (``pos=pear``): only the listed heads' scales act (hooks, fold, gradient), the
suppression finder's effects against direct measurements, a search end to end, and the refusals."""

import json

import numpy as np
import pytest
import torch

from conftest import TINY_TASK, installed_plugin, read_jsonl, run_cli, tiny_model
from lpes_framework.errors import LpesError
from lpes_framework.model.info import identify_loaded
from lpes_framework.position import apply_layer_scaling, build_scheme, check_scheme_for, layer_width

HEADS = [[2, 0], [0, 3]]


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    with installed_plugin(tmp_path_factory, "lpes-headscale") as env:
        yield env


def random_table(layers=4, heads=4, seed=0):
    return [tuple(np.random.default_rng(seed + i).uniform(0.3, 2.0, heads)) for i in range(layers)]


def test_only_the_listed_heads_act_in_the_hooks_and_the_fold(plugin):
    model = tiny_model("qwen2", layers=4)
    pear, plain_scales = build_scheme({"name": "pear", "heads": HEADS}), build_scheme({"name": "headscale"})
    table = random_table()
    # the same schedule as head scales: every head not listed at 1
    kept = [tuple(s if [layer, head] in HEADS else 1.0 for head, s in enumerate(row)) for layer, row in enumerate(table)]
    ids = torch.randint(3, 90, (2, 40), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        unpatched = model(ids).logits
        with apply_layer_scaling(model, table, pear):
            hooked = model(ids).logits
        with apply_layer_scaling(model, kept, plain_scales):
            assert torch.equal(model(ids).logits, hooked)
        with apply_layer_scaling(model, [(1.0,) * 4] * 4, pear):
            assert torch.equal(model(ids).logits, unpatched)
        with pear.fold(model, table):
            folded = model(ids).logits
    assert not torch.allclose(hooked, unpatched, atol=1e-3)
    torch.testing.assert_close(folded, hooked, rtol=1e-5, atol=1e-5)
    assert layer_width(pear, identify_loaded(model)) == 4 and pear.folds_into_weights


def test_a_head_not_listed_takes_no_gradient(plugin):
    from lpes_headscale.suppression import copy_logprob

    model = tiny_model("llama", layers=4).double()
    scales = torch.tensor(random_table(), dtype=torch.float64, requires_grad=True)
    ids = torch.randint(3, 90, (60,), generator=torch.Generator().manual_seed(2)).tolist()
    with torch.enable_grad(), build_scheme({"name": "pear", "heads": HEADS}).install_traced(model, scales):
        copy_logprob(model, ids, 30).backward()
    listed = torch.zeros(4, 4, dtype=torch.bool)
    listed[2, 0] = listed[0, 3] = True
    assert torch.all(scales.grad[~listed] == 0) and torch.all(scales.grad[listed] != 0)


def test_the_finders_effects_are_what_removing_a_head_does(plugin):
    from lpes_headscale.suppression import copy_logprob, head_effects, suppression_heads

    model = tiny_model("llama", layers=4).double()
    gen = torch.Generator().manual_seed(5)
    half = [torch.randint(3, 90, (25,), generator=gen).tolist() for _ in range(2)]
    samples = [(h + h, 25) for h in half]  # a random sequence and its copy: the copy is what is scored
    base, ablated = head_effects(model, samples, "ablation")
    scheme = build_scheme({"name": "headscale"})

    def mean_logprob(changed: dict):
        scales = torch.ones(4, 4, dtype=torch.float64)
        for (layer, head), value in changed.items():
            scales[layer, head] = value
        with torch.no_grad(), scheme.install_traced(model, scales):
            return float(np.mean([float(copy_logprob(model, ids, start)) for ids, start in samples]))

    assert base == pytest.approx(mean_logprob({}))
    assert ablated[1, 1] == pytest.approx(mean_logprob({(1, 1): 0.0}) - base)
    assert ablated[1, 1] != 0
    # the first-order effect is minus the derivative at scale 1 (central difference)
    first, estimated = head_effects(model, samples, "gradient")
    assert first == pytest.approx(base)
    eps = 1e-4
    slope = (mean_logprob({(3, 2): 1 + eps}) - mean_logprob({(3, 2): 1 - eps})) / (2 * eps)
    assert estimated[3, 2] == pytest.approx(-slope, rel=1e-3, abs=1e-7)
    effects = np.array([[0.1, -0.2], [0.3, 0.0]])
    assert suppression_heads(effects, 5) == [[1, 0], [0, 0]]  # largest first; none that does not raise it
    assert suppression_heads(effects, 1) == [[1, 0]]


def test_the_finder_writes_heads_a_search_takes_and_the_search_trains_only_them(plugin, tmp_path):
    heads = tmp_path / "heads.json"
    proc = run_cli("lpes_headscale.suppression", "--model", "tiny", "--top", "3", "--samples", "2", "--words", "20",
                   "--out", str(heads), env=plugin)
    found = json.loads(heads.read_text())
    assert 1 <= len(found["heads"]) <= 3 and found["pos"] == {"name": "pear", "heads": found["heads"], "base": None}
    assert np.array(found["effects"]).shape == (found["model"]["n_layers"], found["model"]["n_heads"])
    assert "pos=pear 'pos.heads=" in proc.stdout
    listed = str(found["heads"]).replace(" ", "")
    run_cli("lpes_framework", *TINY_TASK, "pos=pear", f"pos.heads={listed}", "optimizer=gradient", "optimizer.steps=2",
            "optimizer.eval_every=2", "curve=free", "curve.low=0.1", "validation.top_k=1",
            "validation.bootstrap_resamples=200", f"hydra.run.dir={tmp_path / 'search'}", env=plugin)
    record = json.loads((tmp_path / "search" / "best_factors.json").read_text())
    assert record["scheme"] == {"name": "pear", "heads": found["heads"], "base": None}
    step = [r for r in read_jsonl(tmp_path / "search" / "evaluations.jsonl") if r["kind"] == "step"][-1]
    moved = {(layer, head) for layer, row in enumerate(step["factors"]) for head, v in enumerate(row) if v != 1.0}
    assert moved and moved <= {tuple(h) for h in found["heads"]}  # no head outside the list moved


def test_refusals_are_one_line_and_early(plugin):
    for heads in ([], [[0]], [[0, -1]], [[0, True]], [[0, 1], [0, 1]], "0,1", [[0, 1.5]]):
        with pytest.raises(LpesError, match="pear: heads"):
            build_scheme({"name": "pear", "heads": heads})
    info = identify_loaded(tiny_model("llama", layers=4))
    with pytest.raises(LpesError, match=r"heads \[\[4, 0\]\] are not in this model \(4 layers of 4 heads\)"):
        check_scheme_for(build_scheme({"name": "pear", "heads": [[4, 0], [1, 1]]}), info)
    missing = run_cli("lpes_framework", *TINY_TASK, "pos=pear", "optimizer=gradient", env=plugin, check=False)
    assert missing.returncode != 0 and "heads" in missing.stderr.strip().splitlines()[-1]
    for flag, value in (("--top", "0"), ("--words", "1"), ("--method", "path")):
        bad = run_cli("lpes_headscale.suppression", "--model", "tiny", flag, value, "--out", "x.json", env=plugin,
                      check=False)
        assert bad.returncode != 0 and f"suppression: {flag}" in bad.stderr.strip().splitlines()[-1]
