"""Position schemes as pure maths, checked against transformers' own rope functions."""

import math

import pytest
import torch
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

from lpes_framework.errors import LpesError
from lpes_framework.position import RopeParams, build_scheme, is_identity, ntk_alpha, wavelength_ramp

HEAD_DIM, THETA, MAX_POS = 64, 10000.0, 512


def toy_rope():
    inv = 1.0 / (THETA ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float) / HEAD_DIM))
    return RopeParams(inv_freq=inv, attention_scaling=1.0, max_position=MAX_POS, rope_theta=THETA)


def reference(rope_type: str, factor: float, seq_len: int | None = None):
    config = LlamaConfig(hidden_size=HEAD_DIM * 2, num_attention_heads=2, max_position_embeddings=MAX_POS,
                         rope_parameters={"rope_type": rope_type, "rope_theta": THETA, "factor": factor})
    return ROPE_INIT_FUNCTIONS[rope_type](config, "cpu", seq_len=seq_len)


@pytest.mark.parametrize("name", ["rope", "pi", "ntk", "yarn"])
def test_factor_one_returns_the_model_frequencies_unchanged(name):
    s = toy_rope()
    inv, scaling = build_scheme({"name": name})(s, 1.0, 100)
    assert inv is s.inv_freq and scaling == 1.0


@pytest.mark.parametrize("cfg, identity", [
    ({"name": "rope", "wavelength_low": 256}, True), ({"name": "ntk"}, True), ({"name": "yarn"}, True),
    ({"name": "pi", "global_factor": 2.0}, False), ({"name": "yarn", "global_factor": 2.0}, False),
    ({"name": "yarn", "attention_factor": 1.2}, False)])
def test_an_all_ones_schedule_is_the_identity_only_where_factor_one_changes_nothing(cfg, identity):
    scheme = build_scheme(cfg)
    assert is_identity(scheme, [1.0] * 4) is identity
    assert not is_identity(scheme, [1.0, 1.0, 1.01, 1.0]) and not is_identity(scheme, None)


def test_a_plugin_patch_is_not_assumed_to_be_the_identity_at_one():
    from lpes_framework.position import Scheme

    class Headwise(Scheme):  # like Ms-PoE: its own install, ratios that apply on top of the layer factor
        def install(self, model, factors):
            raise AssertionError("not called")

    assert not is_identity(Headwise(), [1.0] * 4)


def test_a_scheme_class_outside_the_contract_is_refused_before_any_model_loads(monkeypatch):
    from lpes_framework.registry import SCHEMES

    monkeypatch.setattr(SCHEMES, "_entries", dict(SCHEMES._entries))  # the registration ends with the test
    class Loose:  # an install method, but no Scheme: nothing says what the rest of the framework may ask
        def install(self, model, factors):
            raise AssertionError("not called")

    SCHEMES.register("loose_test_scheme")(Loose)
    with pytest.raises(LpesError, match="pos=loose_test_scheme registers a class that is not a "
                                        "lpes_framework.position.Scheme"):
        build_scheme({"name": "loose_test_scheme"})


@pytest.mark.parametrize("factor", [1.25, 2.0, 4.0])
def test_pi_matches_transformers_linear_scaling(factor):
    inv, scaling = build_scheme({"name": "pi"})(toy_rope(), factor, 100)
    ref_inv, ref_scaling = reference("linear", factor)
    torch.testing.assert_close(inv, ref_inv, rtol=1e-6, atol=0)
    assert scaling == ref_scaling


def test_pi_global_factor_multiplies_layer_factor():
    inv, _ = build_scheme({"name": "pi", "global_factor": 2.0})(toy_rope(), 1.5, 100)
    torch.testing.assert_close(inv, reference("linear", 3.0)[0])


@pytest.mark.parametrize("factor,seq_len", [(2.0, 2 * MAX_POS), (2.0, 4 * MAX_POS), (1.5, 3 * MAX_POS)])
def test_ntk_matches_transformers_dynamic_beyond_the_trained_length(factor, seq_len):
    inv, _ = build_scheme({"name": "ntk"})(toy_rope(), factor, seq_len)
    ref_inv, _ = reference("dynamic", factor, seq_len=seq_len)
    torch.testing.assert_close(inv, ref_inv, rtol=1e-5, atol=0)


def test_ntk_acts_inside_the_trained_window():
    s = toy_rope()
    inv, _ = build_scheme({"name": "ntk"})(s, 2.0, MAX_POS // 2)
    assert inv[0] == s.inv_freq[0]  # highest frequency untouched
    torch.testing.assert_close(inv[-1], s.inv_freq[-1] / 2.0)  # lowest divided by the factor
    assert ntk_alpha(2.0, MAX_POS // 2, MAX_POS) == 2.0
    assert ntk_alpha(2.0, 8 * MAX_POS, MAX_POS) == pytest.approx(2.0 * 8 - 1)


def test_wavelength_ramp_keeps_fast_dimensions():
    s = toy_rope()
    wavelength = 2 * math.pi / s.inv_freq
    step = wavelength_ramp(s.inv_freq, 256.0, None)
    assert torch.equal(step, (wavelength > 256).float())
    ramp = wavelength_ramp(s.inv_freq, 100.0, 1000.0)
    assert ramp.min() == 0 and ramp.max() == 1 and torch.all(ramp.diff() >= 0)
    inv, _ = build_scheme({"name": "rope", "wavelength_low": 256.0})(s, 1.5, 10)
    assert torch.equal(inv[wavelength <= 256], s.inv_freq[wavelength <= 256])
    torch.testing.assert_close(inv[wavelength > 256], s.inv_freq[wavelength > 256] / 1.5)


def yarn_reference(model, factor: float):
    """transformers' own yarn frequencies and attention factor for the model's config."""
    import copy

    config = copy.deepcopy(model.config)
    theta = config.rope_parameters["rope_theta"]
    config.rope_parameters = {"rope_type": "yarn", "rope_theta": theta, "factor": factor,
                              "original_max_position_embeddings": config.max_position_embeddings}
    return ROPE_INIT_FUNCTIONS["yarn"](config, "cpu")


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("factor", [1.5, 2.0, 4.0])
def test_yarn_with_one_factor_everywhere_is_transformers_yarn(arch, factor):
    from conftest import tiny_model

    from lpes_framework.position import rope_layout

    model = tiny_model(arch, max_positions=4096, rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
    _, layers, ropes = rope_layout(model)
    ref_inv, ref_scaling = yarn_reference(model, factor)
    for layer_rope in ropes:
        inv, scaling = build_scheme({"name": "yarn"})(layer_rope, factor, 100)
        torch.testing.assert_close(inv, ref_inv, rtol=1e-6, atol=0)
        assert scaling == pytest.approx(ref_scaling, rel=1e-12)
    # the mid band really is blended, not left alone or fully interpolated
    s = ropes[0]
    assert torch.any((inv < s.inv_freq * 0.99) & (inv > s.inv_freq / factor * 1.01))


def test_yarn_layer_factor_multiplies_the_global_factor():
    inv, scaling = build_scheme({"name": "yarn", "global_factor": 2.0})(toy_rope(), 1.5, 100)
    ref = build_scheme({"name": "yarn"})(toy_rope(), 3.0, 100)
    torch.testing.assert_close(inv, ref[0], rtol=0, atol=0)
    assert scaling == ref[1] == pytest.approx(0.1 * math.log(3.0) + 1)


@pytest.mark.parametrize("cfg,match", [
    ({"name": "ropee"}, "did you mean 'rope'"),
    ({"name": "rope", "wavelength_low": -3}, "wavelength_low"),
    ({"name": "rope", "wavelength_low": 300, "wavelength_high": 100}, "wavelength_low <= wavelength_high"),
    ({"name": "pi", "global_factor": 0}, "factors must be finite and in"),
    ({"name": "yarn", "beta_fast": 1, "beta_slow": 2}, "beta_slow < beta_fast"),
    ({"name": "ntk", "bogus": 1}, "unexpected keyword"),
])
def test_bad_scheme_options_fail_at_build(cfg, match):
    with pytest.raises(LpesError, match=match):
        build_scheme(cfg)


SCHEME_CFGS = [{"name": "rope"}, {"name": "pi", "global_factor": 1.5}, {"name": "ntk"},
               {"name": "yarn", "global_factor": 2.0}, {"name": "yarn"},
               {"name": "rope", "wavelength_low": 40, "wavelength_high": 400}, {"name": "ntk", "wavelength_low": 64}]


@pytest.mark.parametrize("cfg", SCHEME_CFGS, ids=lambda c: "-".join(map(str, c.values())))
@pytest.mark.parametrize("factor, seq_len", [(1.0, 100), (0.7, 100), (1.37, 100), (2.5, 4 * MAX_POS)])
def test_a_traced_factor_gives_bit_identical_tables_and_a_finite_difference_gradient(cfg, factor, seq_len):
    scheme = build_scheme(cfg)
    assert scheme.differentiable
    inv, scaling = scheme(toy_rope(), factor, seq_len)
    x = torch.tensor(factor, dtype=torch.float64, requires_grad=True)
    inv_t, scaling_t = scheme(toy_rope(), x, seq_len)
    assert torch.equal(inv_t.detach(), inv) and float(scaling_t) == scaling
    weights = torch.linspace(-1.0, 2.0, inv.numel())
    ((inv_t.double() * weights).sum() + 3 * torch.as_tensor(scaling_t)).backward()
    eps = 1e-3

    def value(f):
        i, s = scheme(toy_rope(), f, seq_len)
        return float((i.double() * weights).sum()) + 3 * float(s)

    if cfg["name"] == "yarn" and cfg.get("global_factor", 1.0) * factor == 1.0:
        return  # YaRN's attention factor has a kink at 1 (it starts there): no two-sided difference
    fd = (value(factor + eps) - value(factor - eps)) / (2 * eps)
    assert x.grad.item() == pytest.approx(fd, rel=2e-3, abs=1e-6)


def test_a_plugin_scheme_without_a_gradient_is_refused_in_one_line():
    from lpes_framework.position import require_gradient

    from lpes_framework.position import Scheme

    class Frozen(Scheme):  # its own patch, no traced one
        config = {"name": "frozen"}

    with pytest.raises(LpesError, match="pos=frozen computes its tables without a gradient"):
        require_gradient(Frozen())
    with pytest.raises(LpesError, match="pos=frozen computes its tables without a gradient"):
        Frozen().install_traced(None, None)
    require_gradient(build_scheme({"name": "ntk"}))


def test_a_fixed_table_holds_up_to_the_length_where_the_scheme_first_changes():
    from lpes_framework.position import fixed_table

    rope = RopeParams(torch.tensor([1.0, 0.1, 0.01]), 1.0, 256, rope_theta=10000.0)
    ntk, pi = build_scheme({"name": "ntk"}), build_scheme({"name": "pi"})
    inv_freq, _, holds = fixed_table(ntk, rope, 0.7, 1024)
    assert holds == 146  # below 1 NTK's dynamic term 0.7 L / 256 + 0.3 passes the factor from 147 tokens on
    assert torch.equal(inv_freq, ntk(rope, 0.7, 100)[0]) and not torch.equal(inv_freq, ntk(rope, 0.7, 147)[0])
    assert fixed_table(ntk, rope, 1.5, 1024)[2] == 341  # above 1, from where 1.5 L / 256 - 0.5 passes 1.5
    assert fixed_table(pi, rope, 1.5, 1024)[2] == 1024  # PI never changes with the length
