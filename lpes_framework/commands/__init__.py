"""The command-line entry points: search, evaluate, attention, status, lm-eval, preset, analysis."""
