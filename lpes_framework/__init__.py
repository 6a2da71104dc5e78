"""lpes_framework: layer-specific RoPE scaling factors, searched, evaluated by gold position, and shipped.

Public API::

    from lpes_framework import apply_factors_file, apply_layer_scaling, build_scheme, load_model
    handle = apply_factors_file(model, "best_factors.json")   # patch; handle.remove() undoes it

The names load on first use, so importing the package (and composing configs) costs no torch import.
"""

from __future__ import annotations

import importlib

from .errors import LpesError

_LAZY = {"apply_factors_file": "model.patched", "load_factors": "model.factors_file", "load_patched": "model.patched",
         "save_patched": "model.patched", "load_model": "model.load", "apply_layer_scaling": "position",
         "build_scheme": "position"}

__all__ = ["LpesError", *_LAZY]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
