"""Position schemes (pure maths), the per-layer patch that applies them to a model, and the scheme contract."""

from ..registry import SCHEMES
from .contract import (BoundScheme, Scheme, apply_layer_scaling, brings_own_patch, build_scheme, check_scheme_for,
                       fixed_table, is_identity, layer_width, require_gradient, traced_layer_scaling)
from .patch import LayerScaling, PatchHandle, TracedScaling, layer_specs, rope_layout, rotary_tables, validate_factors
from .schemes import RopeParams, wavelength_ramp
from .schemes.ntk import ntk_alpha

__all__ = [
    "SCHEMES", "BoundScheme", "LayerScaling", "PatchHandle", "RopeParams", "Scheme", "TracedScaling",
    "apply_layer_scaling", "brings_own_patch", "build_scheme", "check_scheme_for", "fixed_table", "is_identity",
    "layer_specs", "layer_width", "ntk_alpha", "require_gradient", "rope_layout", "rotary_tables",
    "traced_layer_scaling", "validate_factors", "wavelength_ramp",
]
