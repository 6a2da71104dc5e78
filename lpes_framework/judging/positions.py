"""Where a gold position lies in its task: its relative depth, the ends and the middle. One definition for
the fitness (depth weights, the end guard), the intervals ("middle") and the reports.

Labels are gold position indices or depth percentages, as strings. The ends are the shallowest and the
deepest label, and only where something lies between them (three labels or more): with one or two
labels there is no middle to protect, so every label is middle and none is an end. The middle is thus
never empty, and no label is ever both.
"""

from __future__ import annotations

from typing import Iterable


def depths(positions: Iterable[str]) -> dict[str, float]:
    """Relative depth in [0, 1] of each label ((p - min) / (max - min); 0.5 for a single one)."""
    values = {p: float(p) for p in positions}
    low, high = min(values.values()), max(values.values())
    return {p: (v - low) / (high - low) if high > low else 0.5 for p, v in values.items()}


def end_positions(positions: Iterable[str]) -> list[str]:
    """The shallowest and the deepest label, in that order; none below three labels."""
    depth = depths(positions)
    if len(depth) < 3:
        return []
    return [min(depth, key=depth.get), max(depth, key=depth.get)]


def middle_positions(positions: Iterable[str]) -> list[str]:
    """The labels that are not ends, in their given order."""
    positions = list(positions)
    ends = set(end_positions(positions))
    return [p for p in positions if p not in ends]
