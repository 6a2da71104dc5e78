"""lpes_framework: layer-specific RoPE scaling factors, searched, evaluated by gold position, and shipped.

Public API::

    from lpes_framework import apply_factors_file, apply_layer_scaling, build_scheme, load_model
    handle = apply_factors_file(model, "best_factors.json")   # patch; handle.remove() undoes it
"""

from .errors import LpesError
from .export import apply_factors_file, load_factors, load_patched, save_patched
from .models import load_model
from .position import apply_layer_scaling, build_scheme

__all__ = ["LpesError", "apply_factors_file", "apply_layer_scaling", "build_scheme", "load_factors", "load_model",
           "load_patched", "save_patched"]
__version__ = "0.1.0"
