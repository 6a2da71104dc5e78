"""JSON that strict parsers accept: a missing or non-finite number (no perplexity task, a collapsed
candidate) is written as ``null``, never as the non-standard ``NaN``/``Infinity`` tokens, and read back
as NaN by the dataclasses that hold such numbers."""

from __future__ import annotations

import json
import math
from dataclasses import fields
from typing import Any


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


def nulls_to_nan(obj) -> None:
    """For a frozen dataclass of floats in ``__post_init__``: fields read back as None become NaN."""
    for f in fields(obj):
        if getattr(obj, f.name) is None:
            object.__setattr__(obj, f.name, math.nan)
