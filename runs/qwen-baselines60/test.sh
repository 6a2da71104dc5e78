#!/bin/bash
# Issue 10: held-out test split, 60 haystacks x 10 positions: unpatched, Ms-PoE (plugin defaults, the
# `uniform mspoe 1` row), and uniform NTK / YaRN at the factor that won on the search split (factors files
# written by tune.sh, each under its own scheme); perplexity on held-out text for each.
set -e
OUT=${OUT:-runs/qwen-baselines60}  # pos=mspoe needs the plugin: pip install plugins/lpes-mspoe
python -m lpes_framework.commands.evaluate model=qwen2.5-0.5b task.pairs=50 'task.gold_positions=[0,5,11,16,22,27,33,38,44,49]' \
    task.samples_per_position=60 task.layout=queries batch_size=10 threads=2 progress=false split=test \
    pos=mspoe 'methods.uniform=[1.0]' "methods.factors_files=[$OUT/ntk-best/best_factors.json,$OUT/yarn-best/best_factors.json]" \
    +task@extra_tasks.perplexity=perplexity hydra.run.dir=$OUT/test60
