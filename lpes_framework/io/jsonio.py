"""JSON that strict parsers accept: a missing or non-finite number (no perplexity task, a collapsed
candidate) is written as ``null``, never as the non-standard ``NaN``/``Infinity`` tokens, and read back
as NaN by the dataclasses that hold such numbers; received JSON is read by ``loads``, which refuses an object
naming a key twice; and received JSON that would turn into a config is taken literally
(``refuse_interpolations``)."""

from __future__ import annotations

import json
import math
from dataclasses import fields
from typing import Any

from ..errors import LpesError


def strict(data: Any) -> Any:
    """A copy of ``data`` with every non-finite float replaced by None."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: strict(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [strict(v) for v in data]
    return data


def dumps(data: Any, **kwargs) -> str:
    return json.dumps(strict(data), allow_nan=False, **kwargs)


class Unreadable(json.JSONDecodeError):
    """Received JSON that parses but cannot be taken as written, raised as one more ``json.JSONDecodeError``
    so every reader reports it as the damage it already names."""

    def __init__(self, reason: str):
        ValueError.__init__(self, reason)
        self.msg, self.doc, self.pos, self.lineno, self.colno = reason, "", 0, 1, 1


def _unique(pairs: list) -> dict:
    # parsers disagree on which value of a repeated key counts (Python's json takes the last, others the
    # first): such a file could show a reader or another tool one schedule and lpes another
    out = {}
    for key, value in pairs:
        if key in out:
            raise Unreadable(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def loads(text: str | bytes) -> Any:
    """JSON of a received file (a factors file, a run folder's logs and records, a data file's records):
    ``json.loads`` that refuses a repeated key, and an integer past Python's 4,300-digit conversion limit
    (a ValueError json.loads lets through), as ``Unreadable``."""
    try:
        return json.loads(text, object_pairs_hook=_unique)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        raise Unreadable(str(exc).split(";")[0]) from None


def damage(exc: BaseException) -> str:
    """What a reader says of a received file it could not take: the refusal itself where ``loads`` refused it
    (which key is repeated), else the kind of damage (a parse error, bad UTF-8, nesting too deep)."""
    return str(exc) if isinstance(exc, Unreadable) else type(exc).__name__


def refuse_interpolations(data: Any, source: str, where: str = "") -> None:
    """A one-line error at the first string of a received record that OmegaConf would resolve when the record
    becomes a config (``${oc.env:WANDB_API_KEY}``, ``${other.setting}``): a run record or factors file would
    otherwise have the commands read environment variables into prompts and result files. Records lpes writes
    hold resolved configs, so none of their strings starts an interpolation."""
    if isinstance(data, str) and "${" in data:
        raise LpesError(f"{source}: {where or 'a value'} holds an interpolation ({data[:60]!r}); the settings of a "
                        "received file are taken literally, never resolved")
    if isinstance(data, dict):
        for key, value in data.items():
            refuse_interpolations(value, source, f"{where}.{key}" if where else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            refuse_interpolations(value, source, f"{where}[{i}]")


def nulls_to_nan(obj) -> None:
    """For a frozen dataclass of floats in ``__post_init__``: fields read back as None become NaN."""
    for f in fields(obj):
        if getattr(obj, f.name) is None:
            object.__setattr__(obj, f.name, math.nan)
