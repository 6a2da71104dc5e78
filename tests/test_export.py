"""Factors files and saved patched models round-trip; corrupted files are one-line errors."""

import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import run_cli, tiny_model
from lpes_framework import apply_factors_file, apply_layer_scaling, build_scheme, load_patched, save_patched
from lpes_framework.errors import LpesError
from lpes_framework.model.factors_file import factors_record, load_factors
from lpes_framework.io.atomic import write_json_atomic

FACTORS = [1.0, 1.2, 1.6, 1.9]


def llama_block() -> dict:
    """The model block of ``tiny_model("llama")``, as a search on it records."""
    from lpes_framework.model.info import identify_loaded

    return identify_loaded(tiny_model("llama")).as_dict()


def write(tmp_path, record):
    path = tmp_path / "best_factors.json"
    write_json_atomic(path, record)
    return path


def test_factors_file_applies_in_one_line(tmp_path):
    model = tiny_model("llama")
    path = write(tmp_path, factors_record(model=llama_block(), scheme={"name": "ntk"}, factors=FACTORS))
    ids = torch.randint(3, 97, (1, 40))
    with torch.no_grad(), apply_factors_file(model, path):
        from_file = model(ids).logits
    with torch.no_grad(), apply_layer_scaling(model, FACTORS, build_scheme({"name": "ntk"})):
        direct = model(ids).logits
    assert torch.equal(from_file, direct)


def test_saved_patched_model_reloads_with_its_factors(tmp_path):
    model = tiny_model("qwen2")
    prompt = torch.randint(3, 97, (1, 16))
    handle = apply_layer_scaling(model, FACTORS, build_scheme({"name": "rope", "wavelength_low": 8.0}))
    expected = model.generate(prompt, max_new_tokens=10, do_sample=False, min_new_tokens=10)
    save_patched(model, handle, tmp_path / "saved")
    config = json.loads((tmp_path / "saved" / "config.json").read_text())
    assert config["lpes"]["factors"] == FACTORS and config["lpes"]["scheme"]["wavelength_low"] == 8.0
    reloaded, reloaded_handle = load_patched(tmp_path / "saved")
    assert reloaded_handle is not None and reloaded_handle.factors == FACTORS
    assert torch.equal(reloaded.generate(prompt, max_new_tokens=10, do_sample=False, min_new_tokens=10), expected)
    # stock loading ignores the block: the plain model comes back unpatched
    from transformers import AutoModelForCausalLM

    plain = AutoModelForCausalLM.from_pretrained(tmp_path / "saved").eval()
    handle.remove()
    with torch.no_grad():
        assert torch.equal(plain(prompt).logits, model(prompt).logits)


@pytest.mark.parametrize("content,match", [
    ('{"schema": "lpes.factors", "version": 1, "factors": [1.0, 1.', "corrupted factors file"),
    ('{"hello": 1}', "not an lpes factors file"),
    ('{"schema": "lpes.factors", "version": 9, "factors": [1.0]}', "version 9 is not supported"),
    ('{"schema": "lpes.factors", "version": 1, "factors": [1.0, -1.0], "scheme": {"name": "rope"}}', "factors must be finite and in"),
    ('{"schema": "lpes.factors", "version": 1, "factors": [1.0], "scheme": "rope"}', "'scheme' must be an object"),
    # a model block sizes what gets computed from it before any model loads (--bands, --hold-to)
    ('{"schema": "lpes.factors", "version": 1, "factors": [1.0], "scheme": {"name": "ntk"}, '
     '"model": {"head_dim": 1000000000, "rope_theta": 10000.0}}', "model.head_dim: Input should be less than"),
    ('{"schema": "lpes.factors", "version": 1, "factors": [1.0], "scheme": {"name": "ntk"}, '
     '"model": {"rope_parameters": {"partial_rotary_factor": "x"}}}', "partial_rotary_factor: Input should be a valid"),
])
def test_bad_factors_files(tmp_path, content, match):
    path = tmp_path / "f.json"
    path.write_text(content)
    with pytest.raises(LpesError, match=match):
        load_factors(path)
    with pytest.raises(LpesError, match="not found"):
        load_factors(tmp_path / "missing.json")


@pytest.mark.parametrize("other,extra,field", [
    ("qwen2", {}, "architecture"),
    ("llama", {"rope_parameters": {"rope_type": "default", "rope_theta": 500000.0}}, "rope_theta"),
    ("llama", {"head_dim": 32}, "head_dim"),
])
def test_factors_file_refuses_a_different_model(tmp_path, other, extra, field):
    searched = llama_block()
    path = write(tmp_path, factors_record(model=searched, scheme={"name": "rope"}, factors=FACTORS))
    apply_factors_file(tiny_model("llama", seed=1), path).remove()  # same layout, other weights: fine
    with pytest.raises(LpesError, match=f"{path}: searched on a model with {field}="):
        apply_factors_file(tiny_model(other, **extra), path)


def test_a_shipped_preset_loads_by_name_and_a_file_on_disk_wins(tmp_path, monkeypatch, capsys):
    from lpes_framework.model import presets as shipped
    from lpes_framework.evaluate.methods import file_method_names

    presets = tmp_path / "presets"
    presets.mkdir()
    write_json_atomic(presets / "tiny-ntk.json", factors_record(model=llama_block(), scheme={"name": "ntk"}, factors=FACTORS))
    monkeypatch.setattr(shipped, "PRESETS", presets)
    monkeypatch.chdir(tmp_path)
    model = tiny_model("llama")
    ids = torch.randint(3, 97, (1, 40))
    with torch.no_grad(), apply_factors_file(model, "tiny-ntk"):
        by_name = model(ids).logits
    with torch.no_grad(), apply_layer_scaling(model, FACTORS, build_scheme({"name": "ntk"})):
        direct = model(ids).logits
    assert torch.equal(by_name, direct)
    assert file_method_names(["tiny-ntk"]) == {"tiny-ntk": "preset tiny-ntk"}
    # two run folders of one name get whole paths; the others keep the names their rows were scored under
    assert file_method_names(["tiny-ntk", "a/search/best.json", "b/search/best.json", "c/best.json"]) == {
        "tiny-ntk": "preset tiny-ntk", "a/search/best.json": "file a/search/best.json",
        "b/search/best.json": "file b/search/best.json", "c/best.json": "file c"}
    write_json_atomic(tmp_path / "tiny-ntk", factors_record(model=llama_block(), scheme={"name": "pi"}, factors=FACTORS))
    capsys.readouterr()
    assert load_factors("tiny-ntk")["scheme"]["name"] == "pi"  # an existing path is never shadowed
    assert "tiny-ntk is the file" in capsys.readouterr().err  # but said: it stands in for the shipped preset
    with apply_factors_file(model, "tiny-ntk"):  # resolves the name twice: loading it, then naming the source
        pass
    assert "tiny-ntk is the file" not in capsys.readouterr().err  # said once, not at every resolution
    with pytest.raises(LpesError, match="nor a shipped preset of that name; presets: tiny-ntk"):
        load_factors("tiny-yarn")


def test_a_damaged_model_cache_is_detected_and_removed_with_a_line(tmp_path, capsys):
    from lpes_framework.model.cache import cache_intact, save_to_cache, damage

    folder = tmp_path / "model"
    save_to_cache(tiny_model("llama"), folder)
    assert damage(folder, hashes=True) is None and cache_intact(folder, hashes=True)
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF  # same size, other contents: only the hash sees it
    weights.write_bytes(bytes(data))
    assert damage(folder, hashes=False) is None
    assert damage(folder, hashes=True) == "model.safetensors does not match its hash"
    weights.write_bytes(bytes(data[:100]))  # cut short, as by a full disk
    assert damage(folder, hashes=False) == "model.safetensors is missing or has the wrong size"
    assert not cache_intact(folder) and not folder.exists()  # removed, so the next load converts again
    assert capsys.readouterr().err.strip().splitlines()[-1] == (f"lpes: the model cache {folder} is damaged (model.safetensors is "
                                                               "missing or has the wrong size); rebuilding it from the GGUF file")


def test_two_loads_of_one_new_gguf_convert_it_once(tmp_path, monkeypatch):
    """The second load waits on the first's lock, then reads its cache: it never converts again and swaps a
    second copy in under a reader (a CI run lost an lm-eval test to that race between two test workers)."""
    from concurrent.futures import ThreadPoolExecutor
    from transformers import AutoModelForCausalLM

    from lpes_framework.model import load
    from lpes_framework.model.settings import ModelSettings

    monkeypatch.setenv("LPES_CACHE", str(tmp_path / "cache"))
    (tmp_path / "tiny.gguf").write_bytes(b"stands in for a GGUF file")  # only its path, size and mtime are read
    real_source, real_load, conversions = load._from_source, AutoModelForCausalLM.from_pretrained, []

    def from_source(loader, source, gguf_file=None, **options):
        return tiny_model("llama").config if gguf_file else real_source(loader, source, **options)

    def from_pretrained(source, gguf_file=None, **options):
        if not gguf_file:
            return real_load(source, **options)
        conversions.append(source)
        time.sleep(0.5)  # a conversion takes a while: long enough for the other load to arrive
        return tiny_model("llama")

    monkeypatch.setattr(load, "_from_source", from_source)
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", from_pretrained)
    spec = ModelSettings(name="tiny", name_or_path=str(tmp_path), gguf_file="tiny.gguf", embedded=None, dtype="float32",
                     device="cpu", attn_implementation="sdpa", trust_remote_code=False)
    with ThreadPoolExecutor(2) as pool:
        models = [f.result()[0] for f in [pool.submit(load.load_model, spec, object()) for _ in range(2)]]
    assert len(conversions) == 1
    assert all(torch.equal(a, b) for a, b in zip(models[0].state_dict().values(), models[1].state_dict().values()))


def test_a_reinstalled_gguf_drops_the_copies_no_load_can_reach(tmp_path, monkeypatch):
    """Each venv (a new path) or reinstall (a new mtime) keys a new converted copy; the superseded ones went
    nowhere and filled a disk (16 GB of SmolLM2 copies here). Copies still reachable, or of unknown origin, stay."""
    import os

    from lpes_framework.model import cache

    monkeypatch.setenv("LPES_CACHE", str(tmp_path / "cache"))
    venvs = [tmp_path / "venv1", tmp_path / "venv2"]
    for venv in venvs:
        venv.mkdir()
        (venv / "m.gguf").write_bytes(b"stands in for a GGUF file")

    def convert(venv):
        with cache.converting(str(venv), "m.gguf"):
            folder = cache.converted_folder(str(venv), "m.gguf", "model")
            folder.mkdir(parents=True, exist_ok=True)
        return folder.parent

    first, second = convert(venvs[0]), convert(venvs[1])
    unknown = first.with_name("m-000000000000")
    unknown.mkdir()  # no source record (an older lpes): never removed
    other = first.with_name("n-111111111111")
    other.mkdir()  # another GGUF's copy whose source is gone: not a twin, left
    (other / cache.SOURCE).write_text(json.dumps({"path": str(tmp_path / "gone.gguf"), "size": 1, "mtime_ns": 1}))
    os.utime(venvs[0] / "m.gguf", ns=(1, 1))  # reinstalled: the first copy's key is gone
    third = convert(venvs[0])
    assert not first.exists() and not first.with_name(first.name + ".lock").exists()
    assert {p.name for p in third.parent.iterdir() if p.is_dir()} == {second.name, third.name, unknown.name, other.name}
    (venvs[1] / "m.gguf").unlink()  # a venv deleted: its copy goes when the next copy is made
    os.utime(venvs[0] / "m.gguf", ns=(2, 2))
    assert not convert(venvs[0]).with_name(second.name).exists()


def test_a_lock_that_cannot_be_taken_is_one_line(tmp_path, monkeypatch):
    from lpes_framework.model import cache

    monkeypatch.setenv("LPES_CACHE", str(tmp_path / "cache"))
    (tmp_path / "m.gguf").write_bytes(b"x")
    folder = cache.converted_folder(str(tmp_path), "m.gguf", "model").parent
    folder.parent.mkdir(parents=True)
    mine = tmp_path / "mine.txt"
    mine.write_text("my notes")
    Path(f"{folder}.lock").symlink_to(mine)  # planted: filelock refuses to follow it
    with pytest.raises(LpesError, match="cannot take the model cache's lock"):
        with cache.converting(str(tmp_path), "m.gguf"):
            pass
    assert mine.read_text() == "my notes"


def test_a_preset_names_the_files_it_came_from_by_digest_not_by_path(tmp_path, monkeypatch):
    from lpes_framework.io.atomic import file_digest
    from lpes_framework.tune.ship import portable

    monkeypatch.chdir(tmp_path)
    start = Path("runs/search/start.json")
    start.parent.mkdir(parents=True)
    start.write_text("{}")
    gguf = tmp_path / "weights.gguf"
    gguf.write_bytes(b"GGUF")
    record = {"held_to": {"from": str(start), "tokens": 8192},
              "run": {"config": {"optimizer": {"start": str(start)}, "model": {"gguf_file": str(gguf)},
                                 "task": {"name": "kv_retrieval", "path": None}}, "model": {"source": str(gguf)}}}
    named = f"start.json blake2b:{file_digest(start)}"
    assert portable(record) == {"held_to": {"from": named, "tokens": 8192},
                                "run": {"config": {"optimizer": {"start": named}, "model": {"gguf_file": str(gguf)},
                                                   "task": {"name": "kv_retrieval", "path": None}},
                                        "model": {"source": str(gguf)}}}
    assert portable("runs/gone/best_factors.json") == "runs/gone/best_factors.json"  # no file: nothing to digest


def test_a_preset_is_made_from_a_run_and_its_heldout_retest(tmp_path):
    from lpes_framework.tune.ship import make_preset

    source = write(tmp_path, factors_record(model=llama_block(), scheme={"name": "ntk"}, factors=FACTORS,
                                            metrics={"search": {"fitness": 0.3}}))
    heldout = tmp_path / "heldout"
    heldout.mkdir()
    scores = {"kv": {"0": {"count": 2, "accuracy": 0.5, "ci_low": 0.1, "ci_high": 0.9, "first_accuracy": 0.5,
                           "logprob": -0.5, "logprob_se": 0.1, "first_logprob": -0.7, "perplexity": None}}}
    interval = {"kv": {"middle": {"delta": 2.0, "low": 1.0, "high": 3.0}}}
    results = {"model": llama_block(), "tasks": {"kv": {"name": "kv_retrieval"}},
               "methods": {"unpatched": {"factors": None, "scheme": {"name": "ntk"}, "scores": scores},
                           f"file {tmp_path.name}": {"factors": FACTORS, "scheme": {"name": "ntk"}, "scores": scores}},
               "intervals": {f"file {tmp_path.name} - unpatched": interval, "unpatched - x": {}}}
    write_json_atomic(heldout / "results.json", results)
    target = make_preset(str(source), heldout, "mine", tmp_path / "presets")
    preset = json.loads(target.read_text())
    assert target == tmp_path / "presets" / "mine.json" and preset["factors"] == FACTORS
    assert preset["metrics"] == {"search": {"fitness": 0.3}, "test": {"unpatched": {"scores": scores},
                                                                       "found": {"scores": scores}},
                                 "intervals": {"found - unpatched": interval}}
    # a preset there (a shipped one) is replaced only when asked
    with pytest.raises(LpesError, match="mine.json exists .* pass --replace"):
        make_preset(str(source), heldout, "mine", tmp_path / "presets")
    assert make_preset(str(source), heldout, "mine", tmp_path / "presets", replace=True) == target
    # evidence of another task than the file was made for is not its evidence
    (tmp_path / "pk").mkdir()
    passkey = write(tmp_path / "pk", load_factors(source) | {"task": {"name": "passkey"}})
    results["methods"]["file pk"] = results["methods"][f"file {tmp_path.name}"]
    write_json_atomic(heldout / "results.json", results)
    with pytest.raises(LpesError, match="re-tested kv_retrieval, and this file was made for passkey"):
        make_preset(str(passkey), heldout, "pk", tmp_path / "presets")
    (tmp_path / "other").mkdir()
    stranger = write(tmp_path / "other", load_factors(source))  # a file the folder did not re-test
    with pytest.raises(LpesError, match="no row 'file other'"):
        make_preset(str(stranger), heldout, "x", tmp_path / "refused")
    assert not (tmp_path / "refused").exists()  # refused before --out is made
    for name in ("../escaped", "a/b", "", ".hidden", "x" * 101):
        with pytest.raises(LpesError, match="a plain file name"):
            make_preset(str(source), heldout, name, tmp_path / "presets")
    assert not (tmp_path / "escaped.json").exists()
    # a row of the same name that scored other factors (another run folder of that name) is not this file's evidence
    results["methods"][f"file {tmp_path.name}"]["factors"] = [1.0, 1.2, 1.6, 2.0]
    write_json_atomic(heldout / "results.json", results)
    with pytest.raises(LpesError, match="scored other factors or another scheme than this file"):
        make_preset(str(source), heldout, "x", tmp_path)
    results["methods"][f"file {tmp_path.name}"]["scores"]["kv"]["0"]["accuracy"] = "half"
    write_json_atomic(heldout / "results.json", results)
    with pytest.raises(LpesError, match=r"results.json is damaged: methods\..*accuracy"):
        make_preset(str(source), heldout, "x", tmp_path)


# run in a fresh interpreter where lpes_framework cannot be imported at all
_REMOTE = """
import sys, torch
sys.modules["lpes_framework"] = None
from transformers import AutoModelForCausalLM
folder = sys.argv[1]
model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True).eval()
ref = torch.load(folder + "/../ref.pt")
with torch.no_grad():
    logits = model(ref["ids"]).logits
    greedy = model.generate(ref["ids"], max_new_tokens=6, do_sample=False)
print(type(model).__name__, torch.equal(logits, ref["logits"]), torch.equal(greedy, ref["greedy"]))
"""


@pytest.mark.parametrize("arch,scheme,factors", [
    ("llama", {"name": "ntk", "bands": [20.0]}, [[1.0, 1.0], [1.5, 1.0], [2.0, 1.5], [1.0, 3.0]]),
    ("qwen2", {"name": "yarn"}, [1.0, 1.5, 2.0, 4.0]),
])
def test_a_self_contained_export_runs_without_lpes_framework(tmp_path, arch, scheme, factors):
    import subprocess
    import sys

    from lpes_framework.report.export import save_self_contained

    model = tiny_model(arch)
    ids = torch.randint(3, 97, (1, 40))
    evidence = {"intervals": {"found - unpatched": {"kv": {"middle": {"delta": 6.9, "low": 5.6, "high": 8.2}}}}}
    with torch.no_grad(), apply_layer_scaling(model, factors, build_scheme(scheme)) as handle:
        torch.save({"ids": ids, "logits": model(ids).logits,
                    "greedy": model.generate(ids, max_new_tokens=6, do_sample=False)}, tmp_path / "ref.pt")
        folder = save_self_contained(model, handle, tmp_path / "model", evidence=evidence)
    proc = subprocess.run([sys.executable, "-c", _REMOTE, str(folder)], capture_output=True, text=True, timeout=300)
    assert proc.stdout.split() == ["LpesForCausalLM", "True", "True"], proc.stderr[-2000:]
    config = json.loads((folder / "config.json").read_text())
    assert config["lpes"]["factors"] == factors and config["auto_map"]["AutoModelForCausalLM"].endswith("LpesForCausalLM")
    assert (folder / "factors.png").stat().st_size > 0
    assert "| found - unpatched | kv | middle | +6.9 | [+5.6, +8.2] |" in (folder / "README.md").read_text()
    # the folder still loads through lpes_framework's own patch, to the same logits
    reloaded, again = load_patched(folder)
    with torch.no_grad():
        assert torch.equal(reloaded(ids).logits, torch.load(tmp_path / "ref.pt")["logits"])
    again.remove()


@pytest.mark.parametrize("scheme,factors,window", [("ntk", [0.7, 1.0, 1.0, 1.0], 146), ("ntk", [0.5, 1.0, 1.0, 1.0], 1),
                                                   ("ntk", [1.5] * 4, 341), ("pi", [1.5] * 4, None)])
def test_the_card_says_how_long_an_input_the_fixed_tables_hold_for(tmp_path, scheme, factors, window):
    """NTK's dynamic term lifts a factor below 1 once 0.7 L / 256 + 0.3 > 0.7 (from 147 tokens on; at once for
    0.5) and 1.5 beyond the window (1.5 L / 256 - 0.5 > 1.5 from 342 on): the exported tables stop there, and the
    card says so; PI's tables never change."""
    from lpes_framework.report.export import save_self_contained

    model = tiny_model("llama")
    with apply_layer_scaling(model, factors, build_scheme({"name": scheme})) as handle:
        folder = save_self_contained(model, handle, tmp_path / "model")
    card = (folder / "README.md").read_text()
    tables = json.loads((folder / "config.json").read_text())["lpes_tables"]
    if window is None:
        assert not tables["length_dependent"] and "## Input length" not in card
    else:
        assert tables["window"] == window
        assert f"change with the input length from {window + 1} tokens on" in card
        assert f"inputs of at most {window} tokens" in card


def test_the_export_command_names_the_input_limit(tmp_path, capsys):
    from lpes_framework.commands.export import main
    from lpes_framework.config import compose_config
    from lpes_framework.model.load import identify

    info = identify(compose_config("config", ["model=tiny"]).model)
    write_json_atomic(tmp_path / "f.json", factors_record(model=info.as_dict(), scheme={"name": "ntk"},
                                                          factors=[0.5] + [1.0] * (info.n_layers - 1)))
    main([str(tmp_path / "f.json"), "--model", "tiny", "--out", str(tmp_path / "model")])
    assert "from 2 tokens on, so the folder (and vLLM) take inputs of at most 1 tokens" in capsys.readouterr().out


def test_a_schedule_held_to_a_length_keeps_its_tables_fixed_that_long_and_moves_nothing_else(tmp_path):
    """``lpes factors --hold-to``: on the tiny Llama (trained window 256) a band-wise NTK factor f < 1 holds up to
    256 (2f - 1) / f tokens, so holding to 200 lifts the factors below 256 / 312 = 0.8205 to that floor and no
    other; the export's own check on the real model then finds every table fixed up to 200 tokens. A static
    scheme (PI) is returned as it is, and a length beyond the trained window is refused in one line."""
    from lpes_framework.model.info import identify_loaded
    from lpes_framework.report.export import layer_tables

    model = tiny_model("llama", layers=4)
    factors = [[0.55, 1.3], [0.9, 0.7], [1.0, 1.0], [2.0, 0.81]]
    for scheme in ("ntk", "pi"):
        write_json_atomic(tmp_path / f"{scheme}.json", factors_record(
            model=identify_loaded(model).as_dict(), scheme={"name": scheme, "bands": [20.0]}, factors=factors))
        proc = run_cli("lpes_framework.commands.factors", str(tmp_path / f"{scheme}.json"), "--hold-to", "200",
                       "--out", str(tmp_path / f"{scheme}-200.json"))
        held = load_factors(tmp_path / f"{scheme}-200.json")
        if scheme == "pi":
            assert held["factors"] == factors and held["metrics"]["held_to"]["changed"] == 0
            continue
        floor = 256 / 312
        assert "3 factors raised in 3 layers" in proc.stdout
        expected = [[max(f, floor) for f in row] for row in factors]
        assert np.allclose(held["factors"], expected, rtol=2e-6)
        assert [f for row, old in zip(held["factors"], factors) for f, o in zip(row, old) if f != o] == \
            pytest.approx([floor] * 3, rel=2e-6)
        with apply_factors_file(model, tmp_path / "ntk.json") as handle:
            assert layer_tables(model, handle)["window"] < 200
        with apply_factors_file(model, tmp_path / "ntk-200.json") as handle:
            assert layer_tables(model, handle)["window"] >= 200
    beyond = run_cli("lpes_framework.commands.factors", str(tmp_path / "ntk.json"), "--hold-to", "300",
                     "--out", str(tmp_path / "bad.json"), check=False)
    assert beyond.returncode == 2 and "beyond the trained window of 256 tokens" in beyond.stderr
    assert len(beyond.stderr.strip().splitlines()) == 1 and not (tmp_path / "bad.json").exists()
    huge = run_cli("lpes_framework.commands.factors", str(tmp_path / "ntk.json"), "--hold-to", str(10**20),
                   "--out", str(tmp_path / "bad.json"), check=False)  # once an integer overflow's traceback
    assert huge.returncode == 2 and "a prompt length in tokens" in huge.stderr and not (tmp_path / "bad.json").exists()


def test_an_export_never_writes_over_or_through_what_it_did_not_make(tmp_path, monkeypatch):
    from lpes_framework.report import export as exporting

    model = tiny_model("llama")
    mine = tmp_path / "my-model"
    mine.mkdir()
    (mine / "README.md").write_text("my notes")
    outside = tmp_path / "outside.md"
    outside.write_text("untouched")
    linked = tmp_path / "linked"
    linked.symlink_to(mine)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with apply_layer_scaling(model, [1.5] * 4, build_scheme({"name": "pi"})) as handle:
        for target, words in ((mine, "holds files no export made"), (linked, "is a link"), (a_file, "is a file")):
            with pytest.raises(LpesError, match=words):
                exporting.save_self_contained(model, handle, target)
        assert (mine / "README.md").read_text() == "my notes" and a_file.read_text() == "x"
        first = exporting.save_self_contained(model, handle, tmp_path / "export")
        # a second export over the first replaces it whole; one that fails half way (a full disk) leaves it as it was
        stamp = (first / "config.json").read_bytes()

        def full_disk(*args, **kwargs):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(exporting, "plot_factors", full_disk)
        with pytest.raises(LpesError, match="No space left on device.*the folder there is as it was"):
            exporting.save_self_contained(model, handle, tmp_path / "export")
        assert (first / "config.json").read_bytes() == stamp and (first / "README.md").exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "export", "linked", "my-model", "outside.md"]
        monkeypatch.undo()
        assert exporting.save_self_contained(model, handle, mine, replace=True) == mine  # told to
    assert outside.read_text() == "untouched" and not (mine / "README.md").read_text() == "my notes"


def test_the_card_publishes_only_plain_names_and_ordered_intervals():
    from lpes_framework.report.export import evidence_rows

    good = {"delta": 6.9, "low": 5.6, "high": 8.2}
    intervals = {"found - unpatched": {"kv": {"middle": good, "0": {"delta": 9.0, "low": 5.0, "high": 3.0}}},
                 "found - x |\n## Load\nmodel = from_pretrained('evil', trust_remote_code=True)": {"kv": {"0": good}},
                 "found - uniform": {"kv`": {"0": good}, "kv": {"0": {"delta": float("nan"), "low": 0, "high": 1}}}}
    assert evidence_rows(intervals) == [("found - unpatched", "kv", "middle", good)]
    assert evidence_rows("not a mapping") == []


@pytest.mark.parametrize("edit,words", [
    (lambda c: c["lpes"].update(factors=[1.0, 1.0, 1.0, 9.0]), "not those of its lpes block"),
    (lambda c: c["lpes_tables"]["inv_freq"].__setitem__(1, [float("nan")] * 8), "not those of its lpes block"),
    (lambda c: c["lpes_tables"].update(inv_freq=c["lpes_tables"]["inv_freq"][:2]), "not those of its lpes block"),
])
def test_an_edited_export_is_refused_by_every_reader(tmp_path, edit, words):
    from transformers import AutoModelForCausalLM

    from lpes_framework.report.export import save_self_contained

    model = tiny_model("llama")
    with apply_layer_scaling(model, [1.0, 1.5, 2.0, 1.5], build_scheme({"name": "pi"})) as handle:
        folder = save_self_contained(model, handle, tmp_path / "model")
    config = json.loads((folder / "config.json").read_text())
    edit(config)
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(LpesError, match=words):
        load_patched(folder)
    with pytest.raises(ValueError, match="lpes_tables are not those of its lpes block"):
        AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)


@pytest.mark.parametrize("inv_freq,window,words", [
    ([["x"] * 8] * 4, 512, "layer 0's table is not 8 positive finite"),
    (3.0, 512, "hold no list of layers; the model has 4"),
    ([None, [1.0] * 7 + ["x"], None, None], 512, "layer 1's table is not 8 positive finite"),
    ([True] * 4, 512, "layer 0's table is not 8 positive finite"),
    ([None] * 4, True, "window must be a positive whole number"),
])
def test_tables_crafted_with_their_digest_recomputed_are_one_line(inv_freq, window, words):
    # the digest binds the tables to the block; anyone can recompute it, so each field is checked too
    from types import SimpleNamespace

    from lpes_framework.exported.lpes_tables import check_tables, tables_digest

    block = {"scheme": {"name": "pi"}, "factors": [1.5] * 4}
    tables = {"inv_freq": inv_freq, "scaling": [1.0] * 4, "window": window, "length_dependent": False}
    tables["digest"] = tables_digest(block["scheme"], block["factors"], tables)
    with pytest.raises(ValueError, match=words):
        check_tables(SimpleNamespace(lpes=block, lpes_tables=tables), 4, 8)


def test_load_patched_takes_its_own_export_with_trust_remote_code(tmp_path):
    from lpes_framework.report.export import save_self_contained

    model = tiny_model("llama")
    ids = torch.randint(3, 97, (1, 30))
    with torch.no_grad(), apply_layer_scaling(model, [1.0, 1.5, 2.0, 1.5], build_scheme({"name": "pi"})) as handle:
        expected = model(ids).logits
        folder = save_self_contained(model, handle, tmp_path / "model")
    reloaded, again = load_patched(folder, trust_remote_code=True)
    with torch.no_grad():
        assert type(reloaded).__name__ == "LlamaForCausalLM" and torch.equal(reloaded(ids).logits, expected)
    again.remove()
