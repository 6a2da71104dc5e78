"""A factors file or preset and its model as one folder that runs without lpes_framework:

    python -m lpes_framework.commands.export <factors file or preset> --model <model config group> --out <folder>

The folder holds the weights (de-quantised where the model came as GGUF), the tokenizer, config.json with
the ``lpes`` block (what ``load_patched`` reads) and each layer's RoPE frequencies (what the modeling file and
the vLLM plugin serve), the modeling file ``AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)`` runs, and a model
card with the schedule's plot and the held-out evidence the file carries. Identity and factors are checked
before the model loads. A scheme that folds into the weights (``fold``: learned head scales, whose scales
multiply ``o_proj``'s columns) is folded, so the folder's ``lpes`` block holds only its RoPE part.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def export(factors: str, model: str, out: Path, replace: bool = False) -> Path:
    from ..config import compose_config
    from ..tune.ship import export_with

    return export_with(factors, compose_config("config", [f"model={model}"]).model, out, replace)


def main(argv: list[str] | None = None) -> None:
    from .cli import one_line_errors

    parser = argparse.ArgumentParser(prog="python -m lpes_framework.commands.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("factors", help="a factors file (a search's best_factors.json) or a shipped preset's name")
    parser.add_argument("--model", required=True, help="the model config group it was searched on, e.g. qwen2.5-0.5b")
    parser.add_argument("--out", type=Path, required=True, help="the folder to write (a new one, or an earlier "
                        "export: replaced whole once the new one is written)")
    parser.add_argument("--replace", action="store_true", help="replace a folder that holds something else")
    args = parser.parse_args(argv)
    folder = one_line_errors(export)(args.factors, args.model, args.out, args.replace)
    tables = json.loads((folder / "config.json").read_text())["lpes_tables"]
    print(f"wrote {folder}" + (f"; its tables change with the input length from {tables['window'] + 1} tokens on, so "
                               f"the folder (and vLLM) take inputs of at most {tables['window']} tokens: see its "
                               "README.md (`lpes factors <file> --hold-to <tokens>` makes a schedule that holds longer)"
                               if tables["length_dependent"] else ""))


if __name__ == "__main__":
    main()
