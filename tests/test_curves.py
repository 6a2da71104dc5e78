"""Curve properties: bounds, identity, monotonicity, any layer count."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lpes_framework.curves import CURVES, build_curve
from lpes_framework.curves.bezier import bernstein
from lpes_framework.errors import LpesError

NAMES = ["bezier", "spline", "linear", "step", "constant", "free"]


def make(name, n_layers, low=1.0, high=2.0, monotone=None):
    return build_curve({"name": name, "low": low, "high": high, "monotone": monotone}, n_layers)


@settings(max_examples=60, deadline=None)
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


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(NAMES), n_layers=st.integers(1, 64), value=st.floats(1.0, 2.0))
def test_uniform_genome_gives_that_factor_everywhere(name, n_layers, value):
    curve = make(name, n_layers)
    np.testing.assert_allclose(curve.factors(curve.uniform(value)), value, rtol=1e-12)
    assert np.all(curve.factors(curve.uniform(1.0)) == 1.0)


def test_bezier_formula_endpoints_and_midpoint():
    control = np.array([1.0, 2.0, 2.0, 1.0])
    t = np.array([0.0, 0.5, 1.0])
    np.testing.assert_allclose(bernstein(control, t), [1.0, 1.75, 1.0])  # (1 + 3*2 + 3*2 + 1) / 8


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
