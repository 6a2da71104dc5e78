"""The command-line entry points, one module per ``lpes`` subcommand (``lpes --help`` lists them with a line each:
search, tune, evaluate, retest, status, factors, preset, attention, analysis, seal, export, lm-eval), and their
shared glue (``cli``)."""
