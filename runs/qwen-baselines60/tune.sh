#!/bin/bash
# Issue 10: tune uniform NTK and YaRN factors on the SEARCH split (10 haystacks x 10 positions, the
# search's own regime), the way the search tuned uniform PI.
# Then the best of each sweep by the search's fitness, against the search's unpatched search-split scores
# (runs/qwen-bezier-pi, the same 10 haystacks), becomes a factors file; then test.sh.
set -e
OUT=${OUT:-runs/qwen-baselines60}
TASK="model=qwen2.5-0.5b task.pairs=50 task.gold_positions=[0,5,11,16,22,27,33,38,44,49] task.samples_per_position=10 task.layout=queries batch_size=10 threads=2 progress=false split=search methods.baseline=false"
python -m lpes_framework.commands.evaluate $TASK pos=ntk 'methods.uniform=[1.5,2.0]' hydra.run.dir=$OUT/tune-ntk
python -m lpes_framework.commands.evaluate $TASK pos=yarn 'methods.uniform=[1.5,2.0,4.0]' hydra.run.dir=$OUT/tune-yarn
for scheme in ntk yarn; do
    python -m lpes_framework.commands.factors $OUT/tune-$scheme --baseline runs/qwen-bezier-pi \
        --out $OUT/$scheme-best/best_factors.json  # metrics.search: every factor's fitness, the chosen one
done
