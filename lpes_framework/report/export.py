"""A patched model as a folder that runs without lpes_framework: weights, tokenizer, the ``lpes`` block,
each layer's RoPE frequencies (``lpes_tables`` in config.json), a modeling file (``lpes_modeling.py``,
registered through ``auto_map``, with the ``lpes_tables.py`` it reads them with) and a model card (README.md: the schedule's plot, its held-out evidence,
how to load it in transformers and in vLLM)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path

import torch

from ..errors import LpesError
from ..model.patched import save_patched
from ..exported.lpes_tables import tables_digest
from ..position.bands import factors_json
from ..position import fixed_table, rope_layout
from .plots import plot_factors

EXPORTED = Path(__file__).parents[1] / "exported"  # lpes_modeling.py and the lpes_tables.py it imports, copied in


def layer_tables(model, handle) -> dict:
    """Each layer's (inv_freq, cos/sin scaling) as one fixed table (``position.fixed_table``), None where it is
    the model's own; ``window``: the longest input all tables hold for (checked up to twice the trained window),
    and whether the scheme changes them with the length at all (then the modeling file stops at ``window``)."""
    _, _, ropes = rope_layout(model)
    inv, scales, window = [], [], None
    limit = 2 * max(s.max_position for s in ropes)
    for rope, factor in zip(ropes, handle.factors):
        inv_freq, scaling, holds = fixed_table(handle.scheme, rope, factor, limit)
        window = holds if window is None else min(window, holds)
        own = torch.equal(inv_freq, rope.inv_freq) and scaling == rope.attention_scaling
        inv.append(None if own else inv_freq.float().tolist())
        scales.append(float(scaling))
    return {"inv_freq": inv, "scaling": scales, "window": window, "length_dependent": window < limit}


def is_export(path: Path) -> bool:
    """Whether ``path`` is a folder an export made (its config.json holds the ``lpes`` block, beside the
    modeling file): the only non-empty folder an export replaces unasked."""
    try:
        return (path / "lpes_modeling.py").is_file() and "lpes" in json.loads((path / "config.json").read_text())
    except (OSError, ValueError, TypeError):
        return False


def check_target(path: str | os.PathLike, replace: bool = False) -> Path:
    """``path`` as an export's target, or one line before any weights load: never a link or a file, never a
    folder of something else (a model the user keeps there) unless ``replace``, and a parent one can write in."""
    path = Path(path)
    if path.is_symlink():
        raise LpesError(f"--out {path} is a link: an export is written to a folder of its own, never through one")
    if path.exists() and not path.is_dir():
        raise LpesError(f"--out {path} is a file: give a folder for the export")
    if path.is_dir() and any(path.iterdir()) and not is_export(path) and not replace:
        raise LpesError(f"--out {path} holds files no export made (a model's own folder?): give a new folder, or "
                        "--replace to replace it")
    parent = path.resolve().parent
    while not parent.exists():
        parent = parent.parent
    if not os.access(parent, os.W_OK | os.X_OK):
        raise LpesError(f"--out {path}: cannot write in {parent}")
    return path


def save_self_contained(model, handle, path: str | os.PathLike, tokenizer=None, evidence: dict | None = None,
                        folded: dict | None = None, replace: bool = False) -> Path:
    """``save_patched`` plus what loading without lpes_framework needs (``trust_remote_code=True``), as one
    transaction: written into a new folder beside ``path`` and renamed into place once whole, so a full disk or a
    kill leaves the folder that was there as it was. ``folded``: the settings of a scheme already multiplied into
    the weights (head scales), which the card names."""
    if not handle.scheme.one_table_per_layer:
        raise LpesError("a scheme with its own attention patch cannot be exported as RoPE tables")
    path = check_target(path, replace)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        _write(model, handle, staging, path.name, tokenizer, evidence, folded)
        if path.exists():  # the previous export (or, with replace, the folder given), swapped out whole
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old.", dir=path.parent))
            os.replace(path, old / path.name)
            os.replace(staging, path)
            shutil.rmtree(old)
        else:
            os.replace(staging, path)
    except OSError as exc:
        raise LpesError(f"cannot write the export to {path} ({exc.strerror or exc}); the folder there is as it "
                        "was") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return path


def export_tables(model, handle) -> dict:
    """``layer_tables`` bound to the ``lpes`` block ``save_patched`` writes beside them (``digest``): what an
    exported config.json holds as ``lpes_tables``."""
    tables = layer_tables(model, handle)
    tables["digest"] = tables_digest(dict(handle.scheme.config), factors_json(handle.factors), tables)
    return tables


def _write(model, handle, path: Path, name: str, tokenizer, evidence, folded) -> None:
    tables = export_tables(model, handle)
    model.config.lpes_tables = tables
    model.config.auto_map = {"AutoModelForCausalLM": "lpes_modeling.LpesForCausalLM"}
    try:
        save_patched(model, handle, path, tokenizer)
    finally:
        del model.config.lpes_tables, model.config.auto_map
    architecture = type(model).__name__
    code = (EXPORTED / "lpes_modeling.py").read_text()
    (path / "lpes_modeling.py").write_text(code.replace('ARCHITECTURE = "LlamaForCausalLM"', f'ARCHITECTURE = "{architecture}"'))
    (path / "lpes_tables.py").write_text((EXPORTED / "lpes_tables.py").read_text())
    plot_factors({"factor": list(handle.factors)}, path / "factors.png")
    window = tables["window"] if tables["length_dependent"] else None
    (path / "README.md").write_text(model_card(name, architecture, handle, evidence or {}, folded, window))


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._+\-]{0,79}")  # what a method, task or position label may be on the card


def evidence_rows(intervals) -> list[tuple[str, str, str, dict]]:
    """The (comparison, task, position, interval) rows a card may publish: the factors file's intervals whose
    names are plain labels (a received file's names could carry Markdown: a second "Load" section) and whose
    numbers are finite and ordered (low <= delta <= high); anything else is left off the card."""
    rows = []
    for pair, tasks in (intervals or {}).items() if isinstance(intervals, dict) else ():
        if not (isinstance(pair, str) and pair.startswith("found - ") and NAME.fullmatch(pair) and isinstance(tasks, dict)):
            continue
        for task, per in tasks.items():
            if not (isinstance(task, str) and NAME.fullmatch(task) and isinstance(per, dict)):
                continue
            for position, i in per.items():
                numbers = [i.get(k) for k in ("low", "delta", "high")] if isinstance(i, dict) else []
                if (isinstance(position, str) and NAME.fullmatch(position) and len(numbers) == 3
                        and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                                for v in numbers) and numbers[0] <= numbers[1] <= numbers[2]):
                    rows.append((pair, task, position, i))
    return rows


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
    rows = evidence_rows(evidence.get("intervals"))
    if rows:
        lines += ["## Held-out evidence", "", "Exact match, points, found schedule minus each reference (95% paired "
                  "bootstrap interval over haystacks):", "", "| comparison | task | gold position | delta | 95% interval |",
                  "|---|---|---|---|---|"]
        lines += [f"| {pair} | {task} | {position} | {i['delta']:+.1f} | [{i['low']:+.1f}, {i['high']:+.1f}] |"
                  for pair, task, position, i in rows]
        lines.append("")
    else:
        lines += ["## Held-out evidence", "", "None recorded with these factors: re-test them "
                  "(`bench/heldout_gain.py --preset <file>`) before relying on them.", ""]
    if window is not None:
        lines += ["## Input length", "", f"This schedule's RoPE tables change with the input length from {window + 1} "
                  f"tokens on ({handle.scheme.length_note()}). The modeling file and vLLM serve one fixed table a layer, so "
                  f"they take inputs of at most {window} tokens and refuse longer ones; `load_patched` (lpes_framework) "
                  "follows the length as the search did. For longer inputs, raise the schedule's low factors until its "
                  "tables hold that long (`lpes factors <file> --hold-to <tokens>`) and re-test that file held out.", ""]
    lines += ["## Load", "", "transformers (no lpes_framework needed):", "", "```python",
              "from transformers import AutoModelForCausalLM, AutoTokenizer",
              f'model = AutoModelForCausalLM.from_pretrained("{name}", trust_remote_code=True)',
              f'tokenizer = AutoTokenizer.from_pretrained("{name}")', "```", "",
              "vLLM, with the lpes plugin installed (`pip install plugins/lpes-vllm`; it serves the per-layer tables of "
              "config.json):", "", "```python", "from vllm import LLM",
              f'llm = LLM(model="{name}")', "```", "",
              "lpes_framework: `load_patched(folder)` re-applies the `lpes` block with the project's own patch.", ""]
    return "\n".join(lines)
