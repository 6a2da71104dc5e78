"""Judging scored rows: per-position summaries, intervals, the fitness, comparisons, the choice."""
