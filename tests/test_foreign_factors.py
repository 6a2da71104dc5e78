"""Factors searched on another model (or recording none) are refused on every path that applies them,
in one line and before the weights load, unless allow_foreign says otherwise."""

import json

import pytest

from conftest import TINY_SEARCH, TINY_TASK, model_block, run_cli, tiny_model
from lpes_framework.errors import LpesError
from lpes_framework.model.patched import apply_factors_file
from lpes_framework.model.factors_file import factors_record
from lpes_framework.io.atomic import write_json_atomic

FACTORS = [1.0, 1.2, 1.4, 1.6]


def foreign(tmp_path, **changes):
    """A factors file of the tiny model's layer count whose model block differs in ``changes``."""
    return write(tmp_path, model_block() | changes)


def blockless(tmp_path):
    return write(tmp_path, {})


def write(tmp_path, block: dict):
    path = tmp_path / "foreign.json"
    write_json_atomic(path, factors_record(model=block, scheme={"name": "pi"}, factors=FACTORS))
    return path


def test_evaluate_refuses_them_before_the_model_loads_and_allow_foreign_applies_them(tmp_path):
    path = foreign(tmp_path, head_dim=128, rope_theta=1e6)
    proc = run_cli("lpes_framework.commands.evaluate", *TINY_TASK, f"methods.factors_files=[{path}]",
                   f"hydra.run.dir={tmp_path / 'run'}", check=False)
    line = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 2 and line == (
        f"error: {path}: searched on tiny-llama with head_dim=128, this model has 16; factors do not "
        "transfer between RoPE layouts (allow_foreign=true applies it anyway)")
    assert "layers" not in proc.stdout  # no model line: nothing loaded
    assert not (tmp_path / "run" / "rows.jsonl").exists()
    ok = run_cli("lpes_framework.commands.evaluate", *TINY_TASK, f"methods.factors_files=[{path}]", "allow_foreign=true",
                 "methods.uniform=[]", f"hydra.run.dir={tmp_path / 'run'}")
    assert "file " + tmp_path.name in ok.stdout


def test_a_file_without_a_model_block_is_refused_by_evaluate(tmp_path):
    path = blockless(tmp_path)
    proc = run_cli("lpes_framework.commands.evaluate", *TINY_TASK, f"methods.factors_files=[{path}]", check=False)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1] == (
        f"error: {path}: holds no 'model' block with an identity field (architecture, n_layers, n_heads, ...), so "
        "nothing says which model its factors were searched on (allow_foreign=true applies it anyway)")


def test_attention_refuses_them_before_the_model_loads(tmp_path, monkeypatch):
    from lpes_framework.model import load
    from lpes_framework.evaluate.attention import analyse

    run = tmp_path / "run"
    run_cli("lpes_framework", *TINY_SEARCH, "optimizer.generations=1", f"hydra.run.dir={run}")
    path = foreign(tmp_path, n_kv_heads=4)
    monkeypatch.setattr(load, "load_model", lambda *_, **__: pytest.fail("the model loaded"))
    with pytest.raises(LpesError, match=r"with n_kv_heads=4, this model has 2; factors do not transfer"):
        analyse(run, factors=str(path), samples=1)


def test_the_api_refuses_a_file_without_a_model_block_unless_allowed(tmp_path):
    path = blockless(tmp_path)
    model = tiny_model("llama")
    with pytest.raises(LpesError, match="holds no 'model' block"):
        apply_factors_file(model, path)
    apply_factors_file(model, path, allow_foreign=True).remove()
    record = json.loads(path.read_text())
    path.write_text(json.dumps(record | {"model": {"name": "tiny", "source": "somewhere"}}))  # no identity field
    with pytest.raises(LpesError, match="holds no 'model' block with an identity field"):
        apply_factors_file(model, path)


def test_lm_eval_checks_the_pretrained_config_before_its_weights(tmp_path):
    pytest.importorskip("lm_eval")
    from lpes_framework.commands.lm_eval import check_pretrained

    model = tiny_model("llama")
    model.save_pretrained(tmp_path / "model")
    (tmp_path / "model" / "model.safetensors").write_bytes(b"")  # weights that cannot load: none are read
    path = foreign(tmp_path, architecture="Qwen2ForCausalLM")
    with pytest.raises(LpesError, match="with architecture='Qwen2ForCausalLM', this model has 'LlamaForCausalLM'"):
        check_pretrained(str(tmp_path / "model"), str(path), allow_foreign=False)
    check_pretrained(str(tmp_path / "model"), str(path), allow_foreign=True)


def test_a_saved_patched_model_whose_block_names_another_model_is_refused_on_load(tmp_path):
    import json

    from lpes_framework import apply_layer_scaling, build_scheme, load_patched, save_patched

    model = tiny_model("llama")
    save_patched(model, apply_layer_scaling(model, FACTORS, build_scheme({"name": "pi"})), tmp_path / "saved")
    config = json.loads((tmp_path / "saved" / "config.json").read_text())
    config["lpes"]["model"]["rope_theta"] = 1e6  # the block of a model with another RoPE base
    (tmp_path / "saved" / "config.json").write_text(json.dumps(config))
    with pytest.raises(LpesError, match=r"config.json \(lpes block\): searched on .* with rope_theta=1000000.0"):
        load_patched(tmp_path / "saved")


def test_the_identity_fields_are_those_of_model_info():
    # a factors file's model block is checked (types, ranges) field by field; ModelInfo is what is compared:
    # a field added to one and not the other would be written but never checked, or checked but never compared
    from dataclasses import fields

    from lpes_framework.io.records import ModelBlock
    from lpes_framework.model.factors_file import IDENTITY
    from lpes_framework.model.info import ModelInfo

    assert set(ModelBlock.model_fields) == {f.name for f in fields(ModelInfo)}
    assert set(IDENTITY) < set(ModelBlock.model_fields) and "n_layers" in IDENTITY and "name" not in IDENTITY
