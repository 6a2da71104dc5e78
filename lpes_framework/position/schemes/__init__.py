"""Position schemes: pure functions (rope spec, layer factor, sequence length) -> (inv_freq, attention scaling),
one module per scheme; ``base`` holds the maths they share and the contract of a built scheme."""

from .base import (FACTOR_RANGE, BoundScheme, RopeSpec, Scheme, as_factor, brings_own_patch, build_scheme, check_factor,
                   check_scheme_for, fixed_table, is_identity, is_one, layer_width, require_gradient, scaled, straight_through,
                   traced, wavelength_ramp)

__all__ = ["FACTOR_RANGE", "BoundScheme", "RopeSpec", "Scheme", "as_factor", "brings_own_patch", "build_scheme", "check_factor",
           "check_scheme_for", "fixed_table", "is_identity", "is_one", "layer_width", "require_gradient", "scaled",
           "straight_through", "traced", "wavelength_ramp"]
