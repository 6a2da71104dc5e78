"""Position schemes (pure maths) and the per-layer patch that applies them to a model."""

from .patch import (LayerScaling, PatchHandle, TracedScaling, apply_layer_scaling, layer_specs, rope_layout, rotary_tables,
                    traced_layer_scaling, validate_factors)
from ..registry import SCHEMES
from .schemes import (RopeSpec, Scheme, brings_own_patch, build_scheme, check_scheme_for, fixed_table, is_identity, layer_width,
                      require_gradient, wavelength_ramp)
from .schemes.ntk import ntk_alpha

__all__ = [
    "SCHEMES", "LayerScaling", "PatchHandle", "RopeSpec", "Scheme", "TracedScaling", "apply_layer_scaling",
    "brings_own_patch", "build_scheme", "check_scheme_for", "fixed_table", "is_identity", "layer_specs", "layer_width", "ntk_alpha",
    "require_gradient", "rope_layout", "rotary_tables", "traced_layer_scaling", "validate_factors", "wavelength_ramp",
]
