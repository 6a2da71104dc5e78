"""One exception type for every user-facing mistake (the CLI prints it as one line), and the one test of
a number (and of a count, and of a list of labels)."""

import math
from collections.abc import Sequence


class LpesError(ValueError):
    """Bad input (config, factors, model, file): reported as one line before expensive work starts."""


def is_number(value) -> bool:
    """A finite real number: not a bool (YAML's ``true``), not text, not NaN or infinite. Every option and
    field that must hold a number is checked with this one test."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def whole(value, setting: str, least: int, most: int | None = None) -> int:
    """``value`` as an int in [``least``, ``most``], or a one-line error naming the setting (a float that is
    whole, as YAML may give, counts)."""
    if not is_number(value) or not float(value).is_integer() or value < least or (most is not None and value > most):
        bounds = f">= {least}" if most is None else f"from {least} to {most}"
        raise LpesError(f"{setting} must be a whole number {bounds}, got {value!r}")
    return int(value)


def distinct_whole(values, what: str, low: int, high: int, one: str) -> list[int]:
    """``values`` (gold positions, needle depths: labels every mean over positions is taken by) as a
    non-empty list of distinct ints in [``low``, ``high``], or a one-line error: int() made 2.5 position 2
    silently (and nan a traceback), and a repeated label weighed twice in every mean. ``one`` names a single
    label in the repeat error."""
    out = list(values) if isinstance(values, Sequence) and not isinstance(values, str) else None
    if not out or not all(is_number(v) and float(v).is_integer() and low <= v <= high for v in out):
        raise LpesError(f"{what} {values!r} must be whole numbers in [{low}, {high}]")
    if len(set(out)) < len(out):
        raise LpesError(f"{what} {out} repeat a {one}")
    return [int(v) for v in out]


def one_form(layers: Sequence) -> None:
    """The form rule of a schedule, wherever one is read (a factors file, a log, a patch): every layer a number,
    or every one a list of one length (one number per band). A mix reaches the code that reads it back as a
    ragged table, and ``[1.2, [1.3], 1.5]`` too: a one-band list is not a number there."""
    forms = {f"{len(f)}-band lists" if isinstance(f, (list, tuple)) else "single numbers" for f in layers}
    if len(forms) > 1:
        raise LpesError(f"layer factors mix {' and '.join(sorted(forms))}: every layer needs as many numbers as bands")


def numbers(values, what: str, count: int | None = None) -> list[float]:
    """``values`` as a non-empty list of finite numbers (``count`` of them where given), or a one-line error:
    float() over a string took its characters one by one, and over a single number raised a TypeError."""
    out = list(values) if isinstance(values, Sequence) and not isinstance(values, str) else None
    if not out or not all(is_number(v) for v in out) or (count is not None and len(out) != count):
        many = f"{count} numbers" if count is not None else "a list of numbers"
        raise LpesError(f"{what} must be {many}, got {values!r}")
    return [float(v) for v in out]
