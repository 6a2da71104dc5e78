"""One exception type for every user-facing mistake (the CLI prints it as one line), and the one test of
a number."""

import math


class LpesError(ValueError):
    """Bad input (config, factors, model, file): reported as one line before expensive work starts."""


def is_number(value) -> bool:
    """A finite real number: not a bool (YAML's ``true``), not text, not NaN or infinite. Every option and
    field that must hold a number is checked with this one test."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
