"""LPES factors inside lm-evaluation-harness: an ``lpes`` model type, lm-eval's ``hf`` backend with a
factors file applied to the loaded model before any request is scored.

    python -m lpes_framework.commands.lm_eval --model lpes \\
        --model_args pretrained=Qwen/Qwen2.5-7B-Instruct,factors=best_factors.json --tasks ruler ...

lm-eval 0.4 finds model types only in its own registry (no entry points for outside packages), so this
module registers ``lpes`` on import and then runs lm-eval's own command line: every lm-eval option and
task works as with ``lm_eval``. From Python, import this module before ``lm_eval.simple_evaluate``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path

# lm-eval imports its stock backends only into an empty registry: load them before adding ours
import lm_eval.models  # noqa: F401
from lm_eval.api.registry import register_model
from lm_eval.models.huggingface import HFLM

from ..errors import LpesError
from ..model.patched import apply_factors_file
from ..model.factors_file import load_checked

# lm-eval reads a doc field with Jinja; the data file path is quoted as JSON, which YAML accepts
_CHOICE_TASK = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: "{{{{answer}}}}"
metric_list:
  - metric: acc
"""


@register_model("lpes")
class LpesLM(HFLM):
    """lm-eval's ``hf`` backend (every ``hf`` model argument works) plus ``factors``: a
    ``best_factors.json`` whose per-layer RoPE factors are installed on the model, and ``allow_foreign``
    to apply a file searched on another model. The file is checked against ``pretrained``'s config before
    the weights load. Without ``factors`` it is exactly ``hf``."""

    def __init__(self, pretrained=None, factors: str | None = None, allow_foreign=False, **kwargs):
        if pretrained is None:  # lm-eval would fail deep in its constructor, with a traceback
            raise LpesError("lm-eval --model lpes needs --model_args pretrained=<hub id or folder>[,factors=<file>]")
        allow_foreign = str(allow_foreign).lower() in ("true", "1", "yes")  # model_args arrive as strings
        if factors:
            check_pretrained(pretrained, factors, allow_foreign, trust_remote_code=kwargs.get("trust_remote_code"))
        super().__init__(pretrained=pretrained, **kwargs)
        self.lpes_patch = apply_factors_file(self.model, factors, allow_foreign) if factors else None


def check_pretrained(pretrained, factors: str, allow_foreign: bool, trust_remote_code=None) -> None:
    """A factors file against the config of the model lm-eval is about to load (no weights read)."""
    from transformers import AutoConfig

    from ..model.info import model_info

    if not isinstance(pretrained, str):
        return  # an already loaded model: apply_factors_file checks it
    config = AutoConfig.from_pretrained(pretrained, trust_remote_code=bool(trust_remote_code))
    load_checked(factors, model_info(config, pretrained, pretrained), allow_foreign)


def write_choice_task(folder, name: str, rows: Iterable[dict]) -> Path:
    """An offline lm-eval multiple-choice task from your own rows ``{"question", "choices", "answer"}``
    (``answer``: index of the right choice): writes ``data.jsonl`` and ``task.yaml`` into ``folder`` and
    returns it. Pass the folder as ``--include_path`` and ``name`` as ``--tasks``; lm-eval scores every
    choice by its log-likelihood after the question (so choices usually start with a space)."""
    rows = list(rows)
    for i, row in enumerate(rows):
        choices = row.get("choices")
        if not isinstance(row.get("question"), str) or not choices or row.get("answer") not in range(len(choices)):
            raise LpesError(f"choice task row {i} needs a question, a non-empty choices list and an answer index "
                            f"into it, got {row}")
    if not rows:
        raise LpesError("a choice task needs at least one row")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "task.yaml").write_text(_CHOICE_TASK.format(name=name, data=json.dumps(str(data.resolve()))))
    return folder


def main(argv: list[str] | None = None) -> None:
    from lm_eval.__main__ import cli_evaluate

    from .cli import one_line_errors

    sys.argv = ["lm_eval", *(sys.argv[1:] if argv is None else argv)]
    one_line_errors(cli_evaluate)()


if __name__ == "__main__":
    main()
