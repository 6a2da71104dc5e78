"""Curve properties: bounds, identity, monotonicity, any layer count."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lpes_framework.position.curves import CURVES, build_curve
from lpes_framework.position.curves.bezier import bernstein
from lpes_framework.errors import LpesError

NAMES = ["bezier", "spline", "linear", "step", "constant", "free"]


def make(name, n_layers, low=1.0, high=2.0, monotone=None):
    return build_curve({"name": name, "low": low, "high": high, "monotone": monotone}, n_layers)


@settings(max_examples=60)
@given(name=st.sampled_from(NAMES), n_layers=st.integers(1, 80), data=st.data(),
       low=st.floats(0.5, 1.0), span=st.floats(0.0, 3.0), monotone=st.sampled_from([None, "increasing", "decreasing"]))
def test_factors_stay_in_bounds_for_any_genome_and_layer_count(name, n_layers, data, low, span, monotone):
    curve = make(name, n_layers, low, low + span, monotone)
    genome = data.draw(st.lists(st.floats(-10, 10), min_size=curve.n_genes, max_size=curve.n_genes))
    f = curve.factors(genome)
    assert f.shape == (n_layers,)
    assert np.all(f >= curve.low) and np.all(f <= curve.high)
    if monotone == "increasing":
        assert np.all(np.diff(f) >= -1e-12)
    if monotone == "decreasing":
        assert np.all(np.diff(f) <= 1e-12)


@settings(max_examples=30)
@given(name=st.sampled_from(NAMES), n_layers=st.integers(1, 64), value=st.floats(1.0, 2.0))
def test_uniform_genome_gives_that_factor_everywhere(name, n_layers, value):
    curve = make(name, n_layers)
    np.testing.assert_allclose(curve.factors(curve.uniform(value)), value, rtol=1e-12)
    assert np.all(curve.factors(curve.uniform(1.0)) == 1.0)


def test_bezier_formula_endpoints_and_midpoint():
    control = torch.tensor([1.0, 2.0, 2.0, 1.0], dtype=torch.float64)
    t = torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64)
    np.testing.assert_allclose(bernstein(control, t), [1.0, 1.75, 1.0])  # (1 + 3*2 + 3*2 + 1) / 8


def test_bezier_basis_holds_for_many_control_points():
    """A constant control polygon draws that constant at any degree, and the basis splits one everywhere:
    the binomial coefficient as a float overflowed past ~1030 control points (a traceback, not a curve)."""
    t = torch.linspace(0, 1, 30, dtype=torch.float64)
    for n in (4, 1500, 100_000):
        np.testing.assert_allclose(bernstein(torch.full((n,), 1.3, dtype=torch.float64), t), 1.3, rtol=1e-9)
    curve = build_curve({"name": "bezier", "control_points": 2000, "low": 0.5, "high": 3.0}, 30)
    assert np.all(np.isfinite(curve.factors(np.linspace(0.5, 3.0, 2000))))


@settings(max_examples=60)
@given(genes=st.lists(st.floats(0.5, 3.0), min_size=2, max_size=7), n_layers=st.integers(2, 48))
def test_spline_is_scipys_pchip(genes, n_layers):
    from scipy.interpolate import PchipInterpolator

    from lpes_framework.position.curves.base import layer_grid

    t = layer_grid(n_layers)
    want = np.clip(PchipInterpolator(np.linspace(0, 1, len(genes)), genes)(t), 0.5, 3.0)
    curve = build_curve({"name": "spline", "control_points": len(genes), "low": 0.5, "high": 3.0}, n_layers)
    np.testing.assert_allclose(curve.factors(genes), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_every_curve_is_differentiable_and_its_gradient_is_the_finite_difference(name):
    curve = make(name, 12, low=0.5, high=3.0)
    rng = np.random.default_rng(1)
    genes = rng.uniform(0.8, 2.5, curve.n_genes)
    weights = torch.from_numpy(rng.normal(size=12))
    x = torch.tensor(genes, requires_grad=True)
    (curve.factors_tensor(x) * weights).sum().backward()
    eps = 1e-6
    for k in range(curve.n_genes):
        up, down = genes.copy(), genes.copy()
        up[k] += eps
        down[k] -= eps
        fd = float(((curve.factors(up) - curve.factors(down)) / (2 * eps)) @ weights.numpy())
        assert x.grad[k].item() == pytest.approx(fd, rel=1e-5, abs=1e-7), (name, k)
    assert curve.differentiable()


@pytest.mark.parametrize("name", NAMES)
def test_equal_genes_give_the_exact_constant_and_the_curves_own_gradient(name):
    curve = make(name, 10, low=0.5, high=3.0)
    x = torch.ones(curve.n_genes, dtype=torch.float64, requires_grad=True)
    factors = curve.factors_tensor(x)
    assert torch.equal(factors.detach(), torch.ones(10, dtype=torch.float64))
    factors.sum().backward()
    # every curve here is a partition of unity in its genes: moving all genes moves every layer
    assert x.grad.sum().item() == pytest.approx(10.0)
    if curve.n_genes > 1:
        assert (x.grad > 0).sum() > 1  # not just the first gene, as the constant shortcut alone would say


def test_gene_counts():
    assert make("bezier", 30).n_genes == 4
    assert build_curve({"name": "bezier", "control_points": 6}, 30).n_genes == 6
    assert make("free", 30).n_genes == 30
    assert make("linear", 30).n_genes == 2
    assert build_curve({"name": "step", "steps": 3}, 30).n_genes == 3


def test_step_blocks_cover_consecutive_layers():
    f = build_curve({"name": "step", "steps": 3, "high": 3.0}, 6).factors([1.0, 2.0, 3.0])
    assert f.tolist() == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]


@pytest.mark.parametrize("cfg,match", [
    ({"name": "bezier", "low": 2.0, "high": 1.0}, "0 < low <= high"),
    ({"name": "bezier", "low": 0.0}, "0 < low <= high"),
    ({"name": "bezier", "monotone": "up"}, "monotone"),
    ({"name": "bezier", "control_points": 0}, "at least one gene"),
    ({"name": "spline", "control_points": 10**11}, "more than 100000"),
    ({"name": "beziér"}, "did you mean 'bezier'"),
    ({"name": "spline", "knots": 3}, "unexpected keyword"),
])
def test_bad_curve_configs(cfg, match):
    with pytest.raises(LpesError, match=match):
        build_curve(cfg, 10)


def test_wrong_gene_count_and_nan_genome():
    curve = make("bezier", 10)
    with pytest.raises(LpesError, match="takes 4 genes, got 3"):
        curve.factors([1.0, 1.0, 1.0])
    with pytest.raises(LpesError, match="non-finite"):
        curve.factors([1.0, float("nan"), 1.0, 1.0])


def test_registry_lists_all_builtin_curves():
    assert set(NAMES) <= set(CURVES.names())
