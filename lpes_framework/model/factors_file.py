"""The factors file (``best_factors.json``): its schema, its one loader and its identity rule.

Schema ``lpes.factors`` version 1 (a JSON object)::

    schema:   "lpes.factors"           version: 1
    model:    {name, architecture, n_layers, ...}   what the factors were searched on
    scheme:   {name, **options}        position scheme config (rope | pi | ntk | yarn | a plugin's)
    curve:    {name, n_genes, low, high, monotone} or null
    genome:   [float, ...] or null     the curve's genes
    factors:  [float, ...]             one factor per decoder layer (what inference uses); under a scheme
                                       with ``bands``, one list of band factors per layer
    metrics:  {...}                    scores of the search and the held-out test
    task:     {name, **options} or absent   the task the factors were searched on (re-test regime)
    run:      {command, config, model} or absent   the search's run record (``spec.RunSpec``)

Every reader goes through ``validate_record`` (``load_factors`` for a file or a preset's name, ``load_checked``
with a model's identity before its weights load): a received file is refused in one line naming the field.
The ``model`` block is compared with the model at hand (``check_identity``) on the fields of ``ModelInfo``
that decide what a factor means. Presets are ``model.presets``; applying a file and saving a patched model,
``model.patched``.
"""

from __future__ import annotations

import json
import os
from dataclasses import fields
from typing import Any

import numpy as np
from pydantic import ValidationError

from ..errors import LpesError
from ..io import jsonio
from ..io.records import Finite, Metrics, ModelBlock, NamedBlock, Schedule, Record, one_line
from ..io.spec import RunSpec
from ..position import brings_own_patch, build_scheme, check_scheme_for, layer_width, validate_factors
from ..position.bands import check_width, factors_json
from .info import ModelInfo
from .presets import preset_names, resolve_factors

SCHEMA = "lpes.factors"
VERSION = 1


def factors_record(*, model: dict, scheme: dict, factors, curve: dict | None = None, genome=None,
                   metrics: dict | None = None, task: dict | None = None) -> dict:
    record = {"schema": SCHEMA, "version": VERSION, "model": model, "scheme": dict(scheme),
              "curve": curve, "genome": None if genome is None else [float(g) for g in genome],
              "factors": factors_json(factors), "metrics": metrics or {}}
    return record | ({"task": dict(task)} if task else {})


class FactorsFile(Record):
    """Every block of a factors file or preset beyond its schedule (checked first, ``validate_record``): the
    model's identity, the genome, the evidence, the scheme and task named as config groups."""
    model: ModelBlock = ModelBlock()
    scheme: NamedBlock
    factors: Schedule
    curve: dict | None = None
    genome: list[Finite] | None = None
    metrics: Metrics = Metrics()
    task: NamedBlock | None = None
    run: dict | None = None


def _check_blocks(record: dict, source: str) -> None:
    try:
        parsed = FactorsFile.model_validate(record)
    except ValidationError as exc:
        raise LpesError(f"{source} is damaged: {one_line(exc)}") from None
    layers = parsed.model.n_layers
    if layers is not None and layers != len(record["factors"]):
        raise LpesError(f"{source} is damaged: its model has {layers} layers but it holds {len(record['factors'])} "
                        "layer factors")


def validate_record(record: Any, source: str) -> dict:
    """The one check of a factors record (a file, a preset, a saved model's ``lpes`` block), field by field."""
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise LpesError(f"{source}: not an lpes factors file (schema '{SCHEMA}' missing)")
    if record.get("version") != VERSION:
        raise LpesError(f"{source}: factors schema version {record.get('version')} is not supported (want {VERSION})")
    if not isinstance(record.get("scheme"), dict) or "name" not in record["scheme"]:
        raise LpesError(f"{source}: 'scheme' must be an object with a 'name'")
    bands = record["scheme"].get("bands")
    if bands is not None and not isinstance(bands, list):
        raise LpesError(f"{source}: the scheme's 'bands' must be a list of wavelengths, got {bands!r}")
    _check_blocks(record, source)  # types and the form rule (every layer a number, or a list of one width)
    try:
        values = validate_factors(record["factors"], len(record["factors"]))  # each factor in range
    except LpesError as exc:
        raise LpesError(f"{source}: {exc}") from None
    if isinstance(values[0], tuple) and not brings_own_patch(record["scheme"]["name"]):  # its own width
        check_width(len(values[0]), bands, source)  # a scheme with its own patch checks it on the model
    jsonio.refuse_interpolations(record, source)  # its run record and task block become configs (lpes retest)
    if record.get("run") is not None:
        RunSpec.from_json(record["run"], f"{source}: its run record")
    return record


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
# tuned for one RoPE layout mean something else on another, even at the same layer count. Every field of
# ModelInfo but its labels and the trained window (which a file may be applied beyond).
IDENTITY = tuple(f.name for f in fields(ModelInfo) if f.name not in ("name", "trained_context", "source"))
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


