"""A patched model as a folder that runs without lpes_framework: weights, tokenizer, the ``lpes`` block,
each layer's RoPE frequencies (``lpes_tables`` in config.json), a modeling file (``lpes_modeling.py``,
registered through ``auto_map``) and a model card (README.md: the schedule's plot, its held-out evidence,
how to load it in transformers and in vLLM)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from ..errors import LpesError
from ..model.factors_file import save_patched
from ..position import fixed_table, rope_layout
from .plots import plot_factors

MODELING = Path(__file__).parents[1] / "model" / "lpes_modeling.py"  # a template: copied, never imported here


def layer_tables(model, handle) -> dict:
    """Each layer's (inv_freq, cos/sin scaling) as one fixed table (``position.fixed_table``), None where it is
    the model's own; ``window``: the longest input all tables hold for (checked up to twice the trained window),
    and whether the scheme changes them with the length at all (then the modeling file stops at ``window``)."""
    _, _, specs = rope_layout(model)
    inv, scales, window = [], [], None
    limit = 2 * max(s.max_position for s in specs)
    for spec, factor in zip(specs, handle.factors):
        inv_freq, scaling, holds = fixed_table(handle.scheme, spec, factor, limit)
        window = holds if window is None else min(window, holds)
        own = torch.equal(inv_freq, spec.inv_freq) and scaling == spec.attention_scaling
        inv.append(None if own else inv_freq.float().tolist())
        scales.append(float(scaling))
    return {"inv_freq": inv, "scaling": scales, "window": window, "length_dependent": window < limit}


def save_self_contained(model, handle, path: str | os.PathLike, tokenizer=None, evidence: dict | None = None,
                        folded: dict | None = None) -> Path:
    """``save_patched`` plus what loading without lpes_framework needs (``trust_remote_code=True``). ``folded``:
    the settings of a scheme already multiplied into the weights (head scales), which the card names."""
    if getattr(handle.scheme, "install", None) is not None:
        raise LpesError("a scheme with its own attention patch cannot be exported as RoPE tables")
    path = Path(path)
    tables = layer_tables(model, handle)
    model.config.lpes_tables = tables
    model.config.auto_map = {"AutoModelForCausalLM": "lpes_modeling.LpesForCausalLM"}
    try:
        save_patched(model, handle, path, tokenizer)
    finally:
        del model.config.lpes_tables, model.config.auto_map
    architecture = type(model).__name__
    code = MODELING.read_text().replace('ARCHITECTURE = "LlamaForCausalLM"', f'ARCHITECTURE = "{architecture}"')
    (path / "lpes_modeling.py").write_text(code)
    plot_factors({"factor": list(handle.factors)}, path / "factors.png")
    window = tables["window"] if tables["length_dependent"] else None
    (path / "README.md").write_text(model_card(path.name, architecture, handle, evidence or {}, folded, window))
    return path


def length_reason(handle) -> str:
    """Why a schedule's tables move with the length, in the words of its scheme."""
    if handle.scheme.config.get("name") == "ntk":
        return ("dynamic NTK: a layer factor below 1 is raised by its dynamic term as the input grows, and every "
                "factor beyond the trained window")
    return f"its scheme, {handle.scheme.config.get('name')}, depends on the length"


def model_card(name: str, architecture: str, handle, evidence: dict, folded: dict | None = None,
               window: int | None = None) -> str:
    """The folder's README.md, as the Hub shows it; ``folded``: the settings of a scheme whose changes are in
    the weights (the card must not call them the base model's); ``window``: the longest input its fixed tables
    hold for, where the schedule changes with the length (``layer_tables``)."""
    scheme = json.dumps(handle.scheme.config)
    weights = ("the weights are the base model's, unchanged" if folded is None else
               "the weights are the base model's except each attention output projection (`o_proj`), whose input "
               f"columns carry learned scales folded in (`{json.dumps(folded)}`)")
    lines = [f"# {name}: {architecture} with layer-specific RoPE scaling (lpes)", "",
             "Each decoder layer reads positions through its own RoPE scaling factor, searched by lpes_framework "
             f"against the lost-in-the-middle effect; {weights}, and a forward costs what the base model's does.", "",
             f"Scheme: `{scheme}`, {len(handle.factors)} layers.", "", "![factor per layer](factors.png)", ""]
    intervals = evidence.get("intervals", {})
    if intervals:
        lines += ["## Held-out evidence", "", "Exact match, points, found schedule minus each reference (95% paired "
                  "bootstrap interval over haystacks):", "", "| comparison | task | gold position | delta | 95% interval |",
                  "|---|---|---|---|---|"]
        for pair, tasks in intervals.items():
            for task, per in tasks.items():
                for position, i in per.items():
                    lines.append(f"| {pair} | {task} | {position} | {i['delta']:+.1f} | [{i['low']:+.1f}, {i['high']:+.1f}] |")
        lines.append("")
    else:
        lines += ["## Held-out evidence", "", "None recorded with these factors: re-test them "
                  "(`bench/heldout_gain.py --preset <file>`) before relying on them.", ""]
    if window is not None:
        lines += ["## Input length", "", f"This schedule's RoPE tables change with the input length from {window + 1} "
                  f"tokens on ({length_reason(handle)}). The modeling file and vLLM serve one fixed table a layer, so "
                  f"they take inputs of at most {window} tokens and refuse longer ones; `load_patched` (lpes_framework) "
                  "follows the length as the search did. For longer inputs, raise the schedule's low factors until its "
                  "tables hold that long (`lpes factors <file> --hold-to <tokens>`) and re-test that file held out.", ""]
    lines += ["## Load", "", "transformers (no lpes_framework needed):", "", "```python",
              "from transformers import AutoModelForCausalLM, AutoTokenizer",
              f'model = AutoModelForCausalLM.from_pretrained("{name}", trust_remote_code=True)',
              f'tokenizer = AutoTokenizer.from_pretrained("{name}")', "```", "",
              "vLLM, with the lpes plugin installed (`pip install plugins/lpes-vllm`; it reads the `lpes` block of "
              "config.json):", "", "```python", "from vllm import LLM",
              f'llm = LLM(model="{name}")', "```", "",
              "lpes_framework: `load_patched(folder)` re-applies the `lpes` block with the project's own patch.", ""]
    return "\n".join(lines)
