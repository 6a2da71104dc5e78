"""Position schemes: pure functions (RoPE parameters, layer factor, sequence length) -> (inv_freq, attention scaling),
one module per scheme; ``base`` holds the maths they share (the contract of a built scheme is ``position.contract``)."""

from .base import (FACTOR_RANGE, RopeParams, as_factor, check_factor, is_one, scaled, straight_through, traced,
                   wavelength_ramp)

__all__ = ["FACTOR_RANGE", "RopeParams", "as_factor", "check_factor", "is_one", "scaled", "straight_through", "traced",
           "wavelength_ramp"]
