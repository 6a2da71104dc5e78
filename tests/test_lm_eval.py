"""The ``lpes`` model type inside lm-evaluation-harness, offline: a local JSONL task on the embedded model."""


import pytest

from conftest import installed_plugin, model_block, run_cli
from lpes_framework.model.factors_file import factors_record
from lpes_framework.io.atomic import write_json_atomic

pytestmark = pytest.mark.slow
lm_eval = pytest.importorskip("lm_eval")



@pytest.fixture(scope="module")
def local_task(tmp_path_factory):
    from lpes_framework.commands.lm_eval import write_choice_task

    rows = [{"question": f"The value for key {k} is {v}. The value for key {k} is", "answer": 0,
             "choices": [f" {v}", f" {v + 17}", f" {v * 3 + 1}"]} for k, v in [(3, 41), (8, 77), (5, 12), (9, 60)]]
    return write_choice_task(tmp_path_factory.mktemp("lm_eval_task"), "lpes_local_choice", rows)


@pytest.mark.parametrize("rows", [[], [{"question": "q", "choices": [" a"], "answer": 1}],
                                  [{"question": "q", "choices": [], "answer": 0}], [{"choices": [" a"], "answer": 0}]])
def test_a_malformed_choice_task_is_refused_before_anything_is_written(rows, tmp_path):
    from lpes_framework.errors import LpesError
    from lpes_framework.commands.lm_eval import write_choice_task

    with pytest.raises(LpesError, match="choice task"):
        write_choice_task(tmp_path / "task", "t", rows)
    assert not (tmp_path / "task").exists()


@pytest.fixture(scope="module")
def embedded_dirs(smollm2):
    from lpes_framework.config import compose_config
    from lpes_framework.model.load import converted_dirs

    return converted_dirs(compose_config("config", ["model=smollm2"]).model)


def loglikelihoods(local_task, model_type: str, model_args: dict) -> list[float]:
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    import lpes_framework.commands.lm_eval  # noqa: F401  registers `lpes`

    out = simple_evaluate(model=model_type, model_args=model_args, tasks=["lpes_local_choice"], device="cpu",
                          batch_size=2, log_samples=True,
                          # the local task only: indexing lm-eval's own thousands of task files takes ~20 s a call
                          task_manager=TaskManager(include_path=str(local_task), include_defaults=False))
    return [float(r[0]) for s in out["samples"]["lpes_local_choice"] for r in s["filtered_resps"]]


def test_all_ones_equal_hf_and_other_factors_change_the_scores(local_task, embedded_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    model_dir, tok_dir = embedded_dirs
    args = {"pretrained": str(model_dir), "tokenizer": str(tok_dir), "dtype": "float32"}
    ones, scaled = tmp_path / "ones.json", tmp_path / "scaled.json"
    write_json_atomic(ones, factors_record(model=model_block("smollm2"), scheme={"name": "rope"}, factors=[1.0] * 30))
    write_json_atomic(scaled, factors_record(model=model_block("smollm2"), scheme={"name": "rope"}, factors=[2.0] * 30))
    hf = loglikelihoods(local_task, "hf", args)
    assert len(hf) == 12 and all(x < 0 for x in hf)
    assert loglikelihoods(local_task, "lpes", args | {"factors": str(ones)}) == hf
    changed = loglikelihoods(local_task, "lpes", args | {"factors": str(scaled)})
    assert max(abs(a - b) for a, b in zip(changed, hf)) > 0.1


@pytest.mark.parametrize("plugin, scheme", [("lpes-posscale", {"name": "posscale", "scale": 0.0}),
                                            ("lpes-fim", {"name": "fim"})])
def test_the_competitors_run_inside_the_harness(local_task, embedded_dirs, tmp_path_factory, tmp_path, monkeypatch,
                                                plugin, scheme):
    """A competitor's factors file (its settings as the scheme) drives the harness like an LPES one. Each
    choice is scored by one forward, whose last row (the reading token) is the one these methods change."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    model_dir, tok_dir = embedded_dirs
    args = {"pretrained": str(model_dir), "tokenizer": str(tok_dir), "dtype": "float32"}
    with installed_plugin(tmp_path_factory, plugin):
        path = tmp_path / "competitor.json"
        write_json_atomic(path, factors_record(model=model_block("smollm2"), scheme=scheme, factors=[1.0] * 30))
        hf = loglikelihoods(local_task, "hf", args)
        patched = loglikelihoods(local_task, "lpes", args | {"factors": str(path)})
    assert len(patched) == len(hf) == 12
    assert max(abs(a - b) for a, b in zip(patched, hf)) > 1e-3


def test_command_line_wrapper_knows_the_lpes_model(local_task, embedded_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    model_dir, tok_dir = embedded_dirs
    factors = tmp_path / "f.json"
    write_json_atomic(factors, factors_record(model=model_block("smollm2"), scheme={"name": "ntk"}, factors=[1.2] * 30))
    proc = run_cli("lpes_framework.commands.lm_eval", "run", "--model", "lpes", "--model_args",
                   f"pretrained={model_dir},tokenizer={tok_dir},factors={factors}", "--tasks", "lpes_local_choice",
                   "--include_path", str(local_task), "--device", "cpu", "--batch_size", "2")
    assert "lpes_local_choice" in proc.stdout and "acc" in proc.stdout


def test_the_lpes_backend_without_pretrained_is_one_line():
    from lpes_framework.commands.lm_eval import LpesLM
    from lpes_framework.errors import LpesError

    with pytest.raises(LpesError, match="needs --model_args pretrained="):
        LpesLM(factors="qwen2.5-coder-0.5b")
