"""Bad input matrix: each case is a one-line error before the model loads (or before the failing step).

The matrix runs in this process (a model load fails the case); one case goes through the command line
to check what a user sees: exit code 2 and one ``error:`` line."""

import re

import pytest

from conftest import TINY_TASK, model_block, run_cli
from lpes_framework.model.factors_file import factors_record
from lpes_framework.io.atomic import write_json_atomic
from lpes_framework.config import compose_config
from lpes_framework.position.curves import CURVES
from lpes_framework.errors import LpesError
from lpes_framework.registry import Registry

MODEL_LINE = "tiny-llama: LlamaForCausalLM"  # printed once the model has loaded


def last_error_line(proc) -> str:
    return proc.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("command,overrides,message", [
    ("evaluate", ["methods.genomes={g:[1.0,1.5]}"], "bezier curve takes 4 genes, got 2"),
    ("evaluate", ["methods.genomes={g:[1.0,1.5,9.0,1.0]}"], "methods.genomes.g: genes [9.0] lie outside the bezier curve's bounds"),
    ("search", ["curve.low=2.0", "curve.high=1.0"], "0 < low <= high"),
    ("search", ["curve.high=1e10"], "curve bounds must lie in"),
    ("search", ["pos.wavelength_low=-5"], "wavelength_low"),
    ("search", ["optimizer.parents=50"], "parents <= population"),
    ("search", ["task.name=kv_retreival"], "did you mean 'kv_retrieval'"),
    ("search", ["model.random.model_type=gpt2"], "has no rotary position embeddings"),
    ("search", ["model.dtype=float8"], "model.dtype 'float8'"),
    ("evaluate", ["methods.factors_files=[/nonexistent/best_factors.json]"], "factors file not found"),
    ("evaluate", ["task.pairs=400", "task.gold_positions=[0,399]"], "beyond the model's trained context"),
    ("search", ["task.pairs=400", "task.gold_positions=[0,399]"], "beyond the model's trained context"),
    ("search", ["model.random=null", "model.name_or_path=/nonexistent"], "model.name_or_path='/nonexistent'"),
    ("search", ["curve.low=abc"], "option low='abc' must be a finite number"),
    ("evaluate", ["methods.uniform=[abc]"], "methods.uniform: 'abc' is not a number"),
    ("evaluate", ["methods.compare_to=['uniform rope 9']"], "methods.compare_to: ['uniform rope 9'] are not among"),
    ("evaluate", ["scoring=greedy"], "unknown scoring 'greedy'"),
    ("search", ["executor=ray", "executor.workers=0"], "need 1 <= workers <= 4096"),
    ("search", ["executor=ray", "executor.workers=100000000000"], "need 1 <= workers <= 4096"),
    ("search", ["logger.name=tensorboard"], "unknown logger 'tensorboard'"),
    ("search", ["validation.top_k=0"], "validation.top_k must be a whole number >= 1"),
    ("search", ["validation.bootstrap_resamples=0"], "validation.bootstrap_resamples must be a whole number from 1 to"),
    ("evaluate", ["bootstrap_resamples=0"], "bootstrap_resamples must be a whole number from 1 to"),
    ("evaluate", ["record_every=-1"], "record_every must be a whole number >= 0, got -1"),
    ("evaluate", ["record_every=2.5"], "record_every must be a whole number >= 0, got 2.5"),
    ("search", ["record_every=-2"], "record_every must be a whole number >= 0, got -2"),
    ("search", ["optimizer=gradient", "+task.step_contexts=1.5"], "kv_retrieval: step_contexts must be a whole number"),
    ("search", ["optimizer.population=9.5"], "option population=9.5 must be a whole number"),
    ("search", ["batch_size=2.5"], "batch_size must be a whole number >= 1"),
    ("search", ["fitness.end_penalty=abc"], "fitness.end_penalty must be a finite number, got 'abc'"),
    ("search", ["fitness.middle_bonus=nan"], "fitness.middle_bonus must be a finite number"),
    ("search", ["curve.high=inf"], "option high=inf must be a finite number"),
    ("evaluate", ["methods.uniform=[1e300]"], "factors must be finite and in [1e-06, 1e+06]"),
    ("search", ["resume=true"], "holds no search to continue"),
    ("search", ["reuse=[/nonexistent/run]"], "reuse: /nonexistent/run holds no search (no evaluations.jsonl)"),
    ("search", ["reuse=runs"], "reuse must be a list of run folders, got 'runs'"),
    ("search", ["reuse=5"], "reuse must be a list of run folders, got 5"),
    ("search", ["reuse=[[a]]"], "reuse must be a list of run folders, got [['a']]"),
    ("search", ["task.weight=nan"], "weight must be a finite number"),
    ("search", ["task.weight=abc"], "weight must be a finite number"),
    ("search", ["task.max_new_tokens=0"], "max_new_tokens must be a whole number from 1 to"),
    ("search", ["task.chat_template=maybe"], "chat_template must be auto, true or false"),
    # too large to mean anything: a silent hang drawing 10^20 samples, an overflow traceback from torch
    ("search", ["task.samples_per_position=100000000000000000000"], "samples_per_position must be a whole number from 1"),
    ("search", ["threads=100000000000000000000"], "threads must be a whole number from 1 to 4096"),
    # budgets no run could mean: refused before the weights load, not a never-ending run or a failed allocation
    # in the first generation (NSGA-II), at the first step (the gradient) or after the search (the bootstrap)
    ("search", ["optimizer=nsga2", "optimizer.population=100000000000"], "a full run asks for 1000000000000 candidate"),
    ("search", ["optimizer=ga", "optimizer.generations=100000000000"], "candidate scorings, more than 1000000"),
    ("search", ["optimizer=gradient", "optimizer.contexts_per_step=100000000000"], "minibatch draws, more than"),
    ("search", ["validation.bootstrap_resamples=100000000000"], "bootstrap_resamples must be a whole number from 1"),
    ("search", ["optimizer=random", "optimizer.population=0"], "population must be a whole number >= 1"),
    ("search", ["task.hex_len=1"], "hex_len=1 leaves too few distinct keys"),
    ("search", ["model.device=cuda:7"], "model.device=cuda:7: no such device is available"),
    ("search", ["fitness.normalise=maybe"], "fitness.normalise must be true or false"),
    # a task passes **common on to its base: an option neither takes was a TypeError deep in the build
    ("search", ["+task.bogus=1"], "task 'kv_retrieval': unexpected keyword option(s) bogus (it takes pairs,"),
    # an experiment's GA keys merged under another optimizer: named, with the way to delete them
    ("search", ["optimizer=gradient", "+optimizer.population=8"],
     "optimizer 'gradient': unexpected keyword option(s) population (it takes lr,"),
    # a string or a lone number where a list of numbers goes: one line, not float() over its characters
    ("search", ["optimizer=ga", "optimizer.init_uniform=1.5x"], "ga: init_uniform must be a list of numbers"),
    ("search", ["optimizer=ga", "optimizer.init_uniform=2"], "ga: init_uniform must be a list of numbers, got 2"),
    ("search", ["optimizer=gradient", "optimizer.betas=0.9"], "gradient: betas must be 2 numbers"),
    ("search", ["optimizer=gradient", "optimizer.betas=[0.9,x]"], "gradient: betas must be 2 numbers"),
    # mixtures that mean nothing: the primary replaced by an extra of its name, a weight that drops a task or
    # searches against it, two copies of one task
    ("search", ["+task@extra_tasks.kv_retrieval=passkey"], "may not take the primary task's name (kv_retrieval)"),
    ("search", ["+task@extra_tasks.p=passkey", "extra_tasks.p.weight=-1"], "a searched task's weight must be positive"),
    ("search", ["+task@extra_tasks.p=passkey", "extra_tasks.p.weight=0"], "a searched task's weight must be positive"),
    ("search", ["+task@extra_tasks.a=passkey", "+task@extra_tasks.b=passkey", "extra_tasks.b.weight=2"],
     "tasks a and b are the same task with the same settings"),
    ("evaluate", ["+task@extra_tasks.kv_retrieval=passkey"], "may not take the primary task's name"),
    # scheme options checked like the rest: NaN, text, a flag given as text, a ramp beyond every wavelength
    ("search", ["pos=yarn", "pos.attention_factor=nan"], "attention_factor must be a positive finite number"),
    ("search", ["pos=yarn", "pos.attention_factor=0"], "attention_factor must be a positive finite number"),
    ("search", ["pos=yarn", "pos.truncate=maybe"], "option truncate='maybe' must be true or false"),
    ("search", ["pos=ntk", "pos.wavelength_low=nan"], "wavelength_low must be a finite number of tokens"),
    ("search", ["pos=ntk", "pos.wavelength_low=abc"], "wavelength_low must be a finite number of tokens"),
    ("evaluate", ["pos=ntk", "pos.wavelength_low=1e30"], "changes no frequency of tiny-llama at any factor"),
])
def test_bad_input_is_refused_before_the_model_loads(command, overrides, message, tmp_path, monkeypatch):
    from lpes_framework.model import load
    from lpes_framework.evaluate.run import run_evaluate
    from lpes_framework.search import run_search

    def no_weights(*_, **__):
        raise AssertionError("the model loaded before the bad input was refused")

    monkeypatch.setattr(load, "load_model", no_weights)
    run = {"search": run_search, "evaluate": run_evaluate}[command]
    out = tmp_path / "run"
    with pytest.raises(LpesError, match=re.escape(message)):
        run(compose_config("config" if command == "search" else "evaluate", [*TINY_TASK, *overrides]), out)
    # a refused command writes nothing but the folder's lock (which records no setting)
    assert not out.exists() or {p.name for p in out.iterdir()} <= {".lpes.lock"}


@pytest.mark.parametrize("module", ["lpes_framework", "lpes_framework.commands.evaluate"])
def test_an_unknown_plugin_option_is_the_registrys_line_not_hydras_listing(module):
    proc = run_cli(module, "model=tiny", "optimizer=nope", check=False)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "error: unknown optimizer 'nope'; valid: ga, gradient, nsga2, random"]
    proc = run_cli(module, "model=tiny", "curve=bezeir", check=False)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "error: unknown curve 'bezeir' (did you mean 'bezier'?); valid: bezier, constant, free, linear, spline, step"]


def test_a_user_sees_one_error_line_and_exit_code_2():
    proc = run_cli("lpes_framework", *TINY_TASK, "model.random=null", "model.name_or_path=nobody-xyz/not-cached-model",
                   check=False, env={"HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 2, proc.stderr[-2000:]
    line = last_error_line(proc)
    assert line.startswith("error: ") and "offline" in line and MODEL_LINE not in proc.stdout


def test_an_error_quoting_a_huge_received_list_stays_one_short_line(tmp_path):
    """A received factors file whose scheme lists a million bands: the error quoted them all (a megabyte)."""
    from lpes_framework.model.factors_file import load_factors

    record = load_factors("qwen2.5-coder-0.5b")
    record["scheme"]["bands"] = list(range(1, 1_000_001))
    write_json_atomic(tmp_path / "bands.json", record)
    proc = run_cli("lpes_framework.commands.factors", str(tmp_path / "bands.json"), "--hold-to", "100", "--out",
                   str(tmp_path / "out.json"), check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and len(lines[0]) < 1100 and " ... " in lines[0]


def test_corrupted_factors_file_fails_before_the_model_loads(tmp_path):
    bad = tmp_path / "best_factors.json"
    bad.write_text('{"schema": "lpes.factors", "version": 1, "factors": [1.0, 1.')
    proc = run_cli("lpes_framework.commands.evaluate", *TINY_TASK, f"methods.factors_files=[{bad}]", check=False)
    assert proc.returncode == 2 and "corrupted factors file" in last_error_line(proc)
    assert MODEL_LINE not in proc.stdout


@pytest.mark.parametrize("make, message", [
    (lambda p: p.mkdir(), "is a folder, not a factors file"),
    (lambda p: p.write_text("[" * 100000 + "]" * 100000), "corrupted factors file (maximum recursion depth"),
])
def test_a_folder_or_a_deeply_nested_file_given_as_factors_is_one_line(make, message, tmp_path):
    from lpes_framework.model.factors_file import load_factors

    path = tmp_path / "given.json"
    make(path)
    with pytest.raises(LpesError, match=re.escape(message)):
        load_factors(path)


def test_unknown_registry_name_suggests_and_lists():
    with pytest.raises(LpesError, match=r"unknown curve 'bezeir' \(did you mean 'bezier'\?\); valid: .*free"):
        CURVES.get("bezeir")


def test_plugin_whose_import_fails_is_a_clear_error(tmp_path, monkeypatch):
    dist = tmp_path / "broken_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[lpes_test.curves]\nbroken = no_such_module_xyz:Curve\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry("curve", "lpes_test.curves")
    assert "broken" in registry.names()
    assert registry.plugins()["broken"] == "no_such_module_xyz:Curve (broken-plugin)"
    with pytest.raises(LpesError, match="curve plugin 'broken' .* failed to import: ModuleNotFoundError"):
        registry.get("broken")


@pytest.mark.parametrize("module", ["lpes_framework", "lpes_framework.commands.evaluate"])
def test_mdqa_without_a_path_names_the_setting(module):
    proc = run_cli(module, "model=tiny", "task=mdqa", check=False)
    assert proc.returncode == 2 and "set task.path" in last_error_line(proc)


def test_unreadable_mdqa_file_fails_before_the_model_loads(tmp_path):
    bad = tmp_path / "qa.jsonl.gz"
    bad.write_bytes(b"not gzip at all")
    proc = run_cli("lpes_framework.commands.evaluate", "model=tiny", "task=mdqa", f"task.path={bad}", check=False)
    assert proc.returncode == 2 and "mdqa: cannot read" in last_error_line(proc)
    assert MODEL_LINE not in proc.stdout


def test_factors_file_with_the_wrong_layer_count_is_named(tmp_path):
    path = tmp_path / "run7" / "best_factors.json"
    path.parent.mkdir()
    for block, words in ((model_block(), "its model has 4 layers but it holds 2 layer factors"),  # the file contradicts itself
                         ({k: v for k, v in model_block().items() if k != "n_layers"}, "2 factors for a model with 4")):
        write_json_atomic(path, factors_record(model=block, scheme={"name": "rope"}, factors=[1.0, 1.2]))
        proc = run_cli("lpes_framework.commands.evaluate", *TINY_TASK, f"methods.factors_files=[{path}]", check=False)
        line = last_error_line(proc)
        assert proc.returncode == 2 and str(path) in line and words in line


def test_plugin_whose_import_fails_is_named_on_the_command_line(tmp_path):
    dist = tmp_path / "broken_scheme-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-scheme\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[lpes_framework.schemes]\nbroken = no_such_module_xyz:Scheme\n")
    import os

    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    proc = run_cli("lpes_framework", *TINY_TASK, "pos=broken", check=False, env={"PYTHONPATH": path})
    assert proc.returncode == 2
    assert "position scheme plugin 'broken' (no_such_module_xyz:Scheme) failed to import: ModuleNotFoundError" \
        in last_error_line(proc)


@pytest.mark.parametrize("args,words", [
    (["--help"], ["search", "evaluate", "retest", "status", "attention", "analysis", "factors", "preset", "lm-eval",
                  "--plugins"]),
    (["search", "--help"], ["per decoder layer", "--plugins", "lpes <name> --help", "evaluate (compare",
                            "curve: bezier", "resume=true"]),
    (["evaluate", "--help"], ["gold position", "methods.uniform", "pos: "]),
])
def test_help_describes_the_app(args, words):
    out = run_cli("lpes_framework", *args).stdout
    assert "powered by Hydra" not in out
    assert all(w in out for w in words), out[:1500]


def test_paper_preset_fits_a_4k_window():
    """Characters bound the tokens of any subword tokenizer from above: the preset fits Llama-2's 4096."""
    from lpes_framework.config import build_tasks
    from lpes_framework.config import compose_config

    cfg = compose_config("config", ["experiment=paper"])
    longest = max(len(s.prompt + s.prefix + s.answer) for task in build_tasks(cfg).values()
                  for split in ("search", "test") for s in task.samples(split))
    assert longest + 64 <= 4096


def test_a_retest_on_the_search_split_is_refused():
    proc = run_cli("lpes_framework.commands.retest", "--split", "search", check=False)
    assert proc.returncode == 2 and "a re-test is held out, on the validation or the test split" in proc.stderr


@pytest.mark.parametrize("edit,factors,message", [
    (lambda block: block | {"head_dim": 128}, [1.0, 1.2, 1.4, 1.6], "head_dim=128"),  # searched on another model
    (lambda block: block, [1.0, 5.0, 1.0, 1.0], "outside the curve bounds"),  # clipped, it would be another start
])
def test_a_gradient_start_file_is_checked_like_any_factors_file(tmp_path, monkeypatch, edit, factors, message):
    from lpes_framework.model import load
    from lpes_framework.search import run_search

    monkeypatch.setattr(load, "load_model", lambda *_, **__: pytest.fail("the model loaded first"))
    start = tmp_path / "start.json"
    write_json_atomic(start, factors_record(model=edit(model_block("tiny")), scheme={"name": "pi"}, factors=factors))
    cfg = compose_config("config", [*TINY_TASK, "optimizer=gradient", "curve=free", "pos=pi", f"optimizer.start={start}"])
    with pytest.raises(LpesError, match=re.escape(message)):
        run_search(cfg, tmp_path / "run")


def test_a_full_disk_or_a_read_only_folder_is_one_line(capsys):
    from lpes_framework.commands.cli import one_line_errors

    def writes():
        raise OSError(28, "No space left on device", "/runs/x/evaluations.jsonl")

    with pytest.raises(SystemExit) as exit_:
        one_line_errors(writes)()
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1
    assert err[0].startswith("error: No space left on device (/runs/x/evaluations.jsonl); what was written before is kept")
