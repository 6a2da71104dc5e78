"""The factors file (``best_factors.json``), and applying it to a model for inference.

Schema ``lpes.factors`` version 1 (a JSON object)::

    schema:   "lpes.factors"           version: 1
    model:    {name, architecture, n_layers, ...}   what the factors were searched on
    scheme:   {name, **options}        position scheme config (rope | pi | ntk | yarn | a plugin's)
    curve:    {name, n_genes, low, high, monotone} or null
    genome:   [float, ...] or null     the curve's genes
    factors:  [float, ...]             one factor per decoder layer (what inference uses)
    metrics:  {...}                    free-form: scores of the search and the held-out test
    task:     {name, **options} or absent   the task the factors were searched on (re-test regime)

``apply_factors_file(model, path)`` is the one-line way to use a result. Wherever a factors file is
accepted, the name of a preset shipped in ``lpes_framework/presets/`` (the file name without ``.json``)
works too: ``apply_factors_file(model, "qwen2.5-coder-0.5b")``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from . import jsonio
from .atomic import write_atomic
from .errors import LpesError
from .position import LayerScaling, apply_layer_scaling, build_scheme, validate_factors

SCHEMA = "lpes.factors"
VERSION = 1
PRESETS = Path(__file__).parent / "presets"  # factors files that ship with the package


def factors_record(*, model: dict, scheme: dict, factors, curve: dict | None = None, genome=None,
                   metrics: dict | None = None, task: dict | None = None) -> dict:
    record = {"schema": SCHEMA, "version": VERSION, "model": model, "scheme": dict(scheme),
              "curve": curve, "genome": None if genome is None else [float(g) for g in genome],
              "factors": [float(f) for f in factors], "metrics": metrics or {}}
    return record | ({"task": dict(task)} if task else {})


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(path, jsonio.dumps(data, indent=2))


def validate_record(record: Any, source: str) -> dict:
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise LpesError(f"{source}: not an lpes factors file (schema '{SCHEMA}' missing)")
    if record.get("version") != VERSION:
        raise LpesError(f"{source}: factors schema version {record.get('version')} is not supported (want {VERSION})")
    factors = record.get("factors")
    if not isinstance(factors, list) or not factors or not all(isinstance(f, (int, float)) for f in factors):
        raise LpesError(f"{source}: 'factors' must be a non-empty list of numbers")
    try:
        validate_factors(factors, len(factors))
    except LpesError as exc:
        raise LpesError(f"{source}: {exc}") from None
    if not isinstance(record.get("scheme"), dict) or "name" not in record["scheme"]:
        raise LpesError(f"{source}: 'scheme' must be an object with a 'name'")
    return record


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS.glob("*.json"))


def is_preset(name: str | os.PathLike) -> bool:
    """A shipped preset's name that is not also an existing path (a file on disk wins)."""
    return not Path(name).exists() and str(name) in preset_names()


def resolve_factors(name_or_path: str | os.PathLike) -> Path:
    """The file behind a factors argument: an existing path, else a shipped preset of that name."""
    return PRESETS / f"{name_or_path}.json" if is_preset(name_or_path) else Path(name_or_path)


def load_factors(path: str | os.PathLike) -> dict:
    """A factors file (or shipped preset, by name), checked against the schema."""
    p = resolve_factors(path)
    try:
        record = json.loads(p.read_text())
    except FileNotFoundError:
        presets = ", ".join(preset_names()) or "none"
        raise LpesError(f"factors file not found: {p} (nor a shipped preset of that name; presets: {presets})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LpesError(f"{p}: corrupted factors file ({exc})") from exc
    return validate_record(record, str(p))


# What must match between the model a file was searched on and the model it is applied to: factors
# tuned for one RoPE layout mean something else on another, even at the same layer count.
IDENTITY = ("architecture", "n_layers", "head_dim", "rope_theta", "rope_type")


def check_model(model, record: dict, source: str) -> None:
    from .models import describe

    have = describe(model, "").as_dict()
    want = record.get("model") or {}
    for key in IDENTITY:
        if want.get(key) is not None and want[key] != have[key]:
            raise LpesError(f"{source}: searched on a model with {key}={want[key]!r}, this one has {have[key]!r}; "
                            "factors do not transfer between RoPE layouts")


def apply_record(model, record: dict, source: str) -> LayerScaling:
    check_model(model, record, source)
    return apply_layer_scaling(model, record["factors"], build_scheme(record["scheme"]))


def apply_factors_file(model, path: str | os.PathLike) -> LayerScaling:
    """Patch ``model`` with a saved search result; returns the removable handle. Refuses a model whose
    architecture, layer count, head size or RoPE base/type differ from the one searched on."""
    return apply_record(model, load_factors(path), str(resolve_factors(path)))


def save_patched(model, handle: LayerScaling, path: str | os.PathLike, tokenizer=None) -> None:
    """``save_pretrained`` plus an ``lpes`` block in config.json (stock transformers ignores it)."""
    from .models import save_dequantised

    from .models import describe

    identity = describe(model, getattr(model.config, "name_or_path", "") or "").as_dict()
    model.config.lpes = factors_record(model=identity, scheme=handle.scheme.config, factors=handle.factors)
    try:
        save_dequantised(model, path)
    finally:
        del model.config.lpes
    if tokenizer is not None:
        tokenizer.save_pretrained(path)


def load_patched(path: str | os.PathLike, **kwargs):
    """Load a saved model and re-apply its ``lpes`` block: (model, handle or None when it has none)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, **kwargs).eval()
    block = getattr(model.config, "lpes", None)
    if block is None:
        return model, None
    source = f"{path}/config.json (lpes block)"
    return model, apply_record(model, validate_record(block, source), source)
