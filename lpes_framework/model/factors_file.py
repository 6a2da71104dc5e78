"""The factors file (``best_factors.json``), and applying it to a model for inference.

Schema ``lpes.factors`` version 1 (a JSON object)::

    schema:   "lpes.factors"           version: 1
    model:    {name, architecture, n_layers, ...}   what the factors were searched on
    scheme:   {name, **options}        position scheme config (rope | pi | ntk | yarn | a plugin's)
    curve:    {name, n_genes, low, high, monotone} or null
    genome:   [float, ...] or null     the curve's genes
    factors:  [float, ...]             one factor per decoder layer (what inference uses); under a scheme
                                       with ``bands``, one list of band factors per layer
    metrics:  {...}                    free-form: scores of the search and the held-out test
    task:     {name, **options} or absent   the task the factors were searched on (re-test regime)
    run:      {command, config, model} or absent   the search's run record (``spec.RunSpec``)

``apply_factors_file(model, path)`` is the one-line way to use a result. Every path that applies a file
(this API, evaluate, attention, lm-eval, a saved patched model) first compares its ``model`` block with
the model at hand (``check_identity``), before the weights load wherever the config can be read first. Wherever a factors file is
accepted, the name of a preset shipped in ``lpes_framework/presets/`` (the file name without ``.json``)
works too: ``apply_factors_file(model, "qwen2.5-coder-0.5b")``.
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..io import jsonio
from ..io.atomic import write_atomic
from ..io.records import check_factors_file
from ..io.spec import RunSpec
from ..errors import LpesError
from ..position import (SCHEMES, LayerScaling, apply_layer_scaling, brings_own_patch, build_scheme, check_scheme_for, layer_width,
                        validate_factors)
from ..position.bands import check_width, factors_json

SCHEMA = "lpes.factors"
VERSION = 1
PRESETS = Path(__file__).resolve().parent.parent / "presets"  # factors files that ship with the package


def factors_record(*, model: dict, scheme: dict, factors, curve: dict | None = None, genome=None,
                   metrics: dict | None = None, task: dict | None = None) -> dict:
    record = {"schema": SCHEMA, "version": VERSION, "model": model, "scheme": dict(scheme),
              "curve": curve, "genome": None if genome is None else [float(g) for g in genome],
              "factors": factors_json(factors), "metrics": metrics or {}}
    return record | ({"task": dict(task)} if task else {})


def own_patch(name: str) -> bool:
    """Whether ``name`` is a plugin scheme with its own patch (which decides its factors' width itself)."""
    return name in SCHEMES.names() and brings_own_patch(name)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(path, jsonio.dumps(data, indent=2))


def validate_record(record: Any, source: str) -> dict:
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise LpesError(f"{source}: not an lpes factors file (schema '{SCHEMA}' missing)")
    if record.get("version") != VERSION:
        raise LpesError(f"{source}: factors schema version {record.get('version')} is not supported (want {VERSION})")
    factors = record.get("factors")
    if not isinstance(factors, list) or not factors or not all(_number(f) or (
            isinstance(f, list) and f and all(map(_number, f))) for f in factors):
        raise LpesError(f"{source}: 'factors' must be a non-empty list of numbers (or of lists of numbers, one per band)")
    try:
        values = validate_factors(factors, len(factors))
    except LpesError as exc:
        raise LpesError(f"{source}: {exc}") from None
    if not isinstance(record.get("scheme"), dict) or "name" not in record["scheme"]:
        raise LpesError(f"{source}: 'scheme' must be an object with a 'name'")
    bands = record["scheme"].get("bands")
    if bands is not None and not isinstance(bands, list):
        raise LpesError(f"{source}: the scheme's 'bands' must be a list of wavelengths, got {bands!r}")
    if isinstance(values[0], tuple) and not own_patch(record["scheme"]["name"]):  # validate_factors: one width
        check_width(len(values[0]), bands, source)  # a scheme with its own patch checks it on the model
    check_factors_file(record, source)
    jsonio.refuse_interpolations(record, source)  # its run record and task block become configs (lpes retest)
    if record.get("run") is not None:
        RunSpec.from_json(record["run"], f"{source}: its run record")
    return record


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS.glob("*.json"))


def is_preset(name: str | os.PathLike) -> bool:
    """A shipped preset's name that is not also an existing path (a file on disk wins)."""
    return not Path(name).exists() and str(name) in preset_names()


def resolve_factors(name_or_path: str | os.PathLike) -> Path:
    """The file behind a factors argument: an existing path, else a shipped preset of that name. A path that
    shadows a preset's name is said on stderr: a file of that name in the folder a command runs in (a
    received repository, say) would otherwise stand in for the shipped default without a word."""
    if is_preset(name_or_path):
        return PRESETS / f"{name_or_path}.json"
    if str(name_or_path) in preset_names():
        _say_shadowed(str(Path(name_or_path).resolve()), str(name_or_path))
    return Path(name_or_path)


@cache
def _say_shadowed(path: str, name: str) -> None:
    # once a process: a command resolves one argument several times (checks, then the patch)
    print(f"lpes: {name} is the file {path}, not the shipped preset of that name", file=sys.stderr)


def load_factors(path: str | os.PathLike) -> dict:
    """A factors file (or shipped preset, by name), checked against the schema."""
    p = resolve_factors(path)
    try:
        record = jsonio.loads(p.read_text())
    except FileNotFoundError:
        presets = ", ".join(preset_names()) or "none"
        raise LpesError(f"factors file not found: {p} (nor a shipped preset of that name; presets: {presets})") from None
    except IsADirectoryError:
        raise LpesError(f"{p} is a folder, not a factors file (a search writes <run>/best_factors.json)") from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise LpesError(f"{p}: corrupted factors file ({exc})") from None
    return validate_record(record, str(p))


# What must match between the model a file was searched on and the model it is applied to: factors
# tuned for one RoPE layout mean something else on another, even at the same layer count.
IDENTITY = ("architecture", "n_layers", "n_heads", "n_kv_heads", "head_dim", "rope_theta", "rope_type",
            "rope_parameters")
FOREIGN_HINT = "allow_foreign=true applies it anyway"


def check_identity(record: dict, have, source: str, allow_foreign: bool = False) -> None:
    """Refuse factors searched on another model than ``have`` (a ``ModelInfo``), comparing every identity
    field the file records (files of older versions record fewer), and a file that records no model."""
    if allow_foreign:
        return
    want = record.get("model")
    if not isinstance(want, dict) or not any(want.get(key) is not None for key in IDENTITY):
        # a block with only a name (or nothing) says nothing the loaded model could be compared with
        raise LpesError(f"{source}: holds no 'model' block with an identity field ({', '.join(IDENTITY[:3])}, ...), so "
                        f"nothing says which model its factors were searched on ({FOREIGN_HINT})")
    have = have.as_dict()
    for key in IDENTITY:
        if want.get(key) is not None and key in have and want[key] != have[key]:
            raise LpesError(f"{source}: searched on {want.get('name') or 'a model'} with {key}={want[key]!r}, this "
                            f"model has {have[key]!r}; factors do not transfer between RoPE layouts ({FOREIGN_HINT})")


def apply_record(model, record: dict, source: str, allow_foreign: bool = False) -> LayerScaling:
    from .info import identify_loaded

    check_identity(record, identify_loaded(model), source, allow_foreign)
    return apply_layer_scaling(model, record["factors"], build_scheme(record["scheme"]))


def apply_factors_file(model, path: str | os.PathLike, allow_foreign: bool = False) -> LayerScaling:
    """Patch ``model`` with a saved search result; returns the removable handle. Refuses a file that
    records no model, or whose model differs from this one in architecture, layer or head counts, head
    size or any RoPE parameter, unless ``allow_foreign``."""
    return apply_record(model, load_factors(path), str(resolve_factors(path)), allow_foreign)


def load_checked(path: str | os.PathLike, info, allow_foreign: bool = False) -> dict:
    """A factors file checked against a model's identity (``models.identify``, read before its weights), its
    layer count and its scheme's own refusals of the model (``check_scheme_for``): what the commands call
    before they load anything."""
    source = str(resolve_factors(path))
    record = load_factors(path)
    check_identity(record, info, source, allow_foreign)
    try:
        validate_factors(record["factors"], info.n_layers)
    except LpesError as exc:
        raise LpesError(f"{source}: {exc}") from None
    scheme = build_scheme(record["scheme"])
    check_scheme_for(scheme, info)  # bad options or an unsupported model, before it loads
    width, want = len(np.atleast_1d(record["factors"][0])), layer_width(scheme, info)
    if width != want:
        raise LpesError(f"{source}: its layer factors hold {width} numbers each; pos={record['scheme']['name']} "
                        f"needs {want} on {info.name}")
    return record


def save_patched(model, handle: LayerScaling, path: str | os.PathLike, tokenizer=None) -> None:
    """``save_pretrained`` plus an ``lpes`` block in config.json (stock transformers ignores it)."""
    from .info import identify_loaded
    from .cache import save_dequantised

    identity = identify_loaded(model).as_dict()
    model.config.lpes = factors_record(model=identity, scheme=handle.scheme.config, factors=handle.factors)
    try:
        save_dequantised(model, path)
    finally:
        del model.config.lpes
    if tokenizer is not None:
        tokenizer.save_pretrained(path)


def check_tables_bound(config, source: str) -> bool:
    """Whether ``config`` (a model's config) is an export's, holding per-layer tables; refused where its tables
    are not the ones its ``lpes`` block makes (an edited folder), so that every reader (the exported modeling
    file, ``load_patched``, the vLLM plugin) serves the same schedule or none."""
    tables, block = getattr(config, "lpes_tables", None), getattr(config, "lpes", None)
    if tables is None:
        return False
    from .lpes_modeling import tables_digest

    try:
        bound = tables.get("digest") == tables_digest(block["scheme"], block["factors"], tables)
    except (AttributeError, KeyError, TypeError, ValueError):
        bound = False
    if not bound:
        raise LpesError(f"{source}: its lpes_tables are not those of its lpes block (the folder was edited): "
                        "export it again")
    return True


def load_patched(path: str | os.PathLike, **kwargs):
    """Load a saved model and re-apply its ``lpes`` block: (model, handle or None when it has none). The block is
    checked before the weights load, and in an exported folder so are its tables against it; such a folder loads
    as its base class (its modeling file would patch it a second time)."""
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(path, **kwargs)
    block = getattr(config, "lpes", None)
    source = f"{path}/config.json (lpes block)"
    if block is not None:
        validate_record(block, source)
    loader = AutoModelForCausalLM
    if check_tables_bound(config, f"{path}/config.json"):
        loader = getattr(transformers, (config.architectures or [""])[0], None) or AutoModelForCausalLM
    model = loader.from_pretrained(path, **kwargs).eval()
    if block is None:
        return model, None
    return model, apply_record(model, block, source)
