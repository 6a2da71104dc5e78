"""The presets shipped in the package: valid factors files that carry the regime they were searched in,
loadable by name, and (where their model is installed) applicable to it."""

import json
from pathlib import Path

import pytest

from conftest import OPTIONAL_MODELS
from lpes_framework.config import compose_config
from lpes_framework.model.presets import PRESETS, is_preset, preset_names, resolve_factors
from lpes_framework.model.factors_file import load_factors


def model_option(name: str) -> str | None:
    """The model config option whose model a preset was searched on (presets ship for the optional models)."""
    return next((o for o in OPTIONAL_MODELS if compose_config("config", [f"model={o}"]).model.name == name), None)


def test_presets_ship_with_the_package():
    from importlib.resources import files

    shipped = files("lpes_framework") / "presets"  # where the installed package keeps them
    assert "qwen2.5-coder-0.5b" in preset_names()
    for name in preset_names():
        assert is_preset(name) and resolve_factors(name) == Path(PRESETS) / f"{name}.json"
        assert (shipped / f"{name}.json").is_file()


@pytest.mark.parametrize("name", preset_names())
def test_a_preset_is_a_complete_factors_file(name):
    record = load_factors(name)
    assert record["task"]["name"] and record["model"]["n_layers"] == len(record["factors"])
    assert "found - unpatched" in record["metrics"]["intervals"]  # its held-out evidence travels with it
    assert model_option(record["model"]["name"]) is not None


@pytest.mark.parametrize("name", preset_names())
def test_a_preset_applies_to_its_model(name):
    from lpes_framework import apply_factors_file
    from lpes_framework.model.load import load_model

    option = model_option(load_factors(name)["model"]["name"])
    package, target = OPTIONAL_MODELS[option]
    pytest.importorskip(package, reason=f"the preset's model is not installed (make {target})")
    model, _, _ = load_model(compose_config("config", [f"model={option}"]).model)
    apply_factors_file(model, name).remove()  # the identity check (layers, head_dim, rope theta) passes


def test_lpes_preset_lists_each_shipped_preset_with_its_held_out_gain(capsys):
    from lpes_framework.commands.preset import main

    main([])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == preset_names()
    assert all("held out on kv_retrieval: middle exact +" in line for line in lines)  # every preset gains there


def test_one_odd_preset_does_not_break_the_listing(tmp_path, monkeypatch, capsys):
    import shutil

    from lpes_framework.commands import preset
    from lpes_framework.model import presets

    names = preset_names()
    for name in names:
        shutil.copy(Path(PRESETS) / f"{name}.json", tmp_path)
    odd = load_factors(names[0])
    del odd["metrics"]["intervals"]  # a preset made without a re-test's intervals
    (tmp_path / "odd.json").write_text(json.dumps(odd))
    monkeypatch.setattr(presets, "PRESETS", tmp_path)
    preset.main([])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(names) + 1
    assert [line for line in lines if line.startswith("odd ")] == ["odd                            unreadable: KeyError 'intervals'"]
