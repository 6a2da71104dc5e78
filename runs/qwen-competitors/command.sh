#!/bin/bash
# Issue 25: PosScale and Found-in-the-Middle next to LPES on Qwen2.5-Coder-0.5B at ~1K tokens.
# 1. Each tuned on the SEARCH split the way uniform NTK and YaRN were (runs/qwen-baselines60/tune.sh:
#    10 haystacks x 10 positions, the best setting by the search's fitness against runs/qwen-bezier-pi's
#    unpatched scores of the same haystacks): PosScale's scale over the paper's band (and two other bands at
#    scale 0), Found-in-the-Middle's strength over the upper half (and the upper three quarters).
# 2. The two winners re-tested on the first 100 held-out haystacks x 10 positions of the shipped preset's own
#    re-test, whose unpatched / preset / previous-preset rows are reused (runs/qwen-gradient-ntk-preset/heldout):
#    paired intervals of the preset minus each, perplexity, then the latency ratios: bench/competitors.py.
# Needs pip install plugins/lpes-posscale plugins/lpes-fim. Resumable: run again (each folder reuses its rows).
set -eo pipefail
run=runs/qwen-competitors
TASK="model=qwen2.5-0.5b task.pairs=50 task.gold_positions=[0,5,11,16,22,27,33,38,44,49] task.samples_per_position=10 task.layout=queries batch_size=10 threads=2 progress=false split=search methods.baseline=false methods.uniform=[] resume=true"
python -m lpes_framework.commands.evaluate $TASK hydra.run.dir=$run/tune-posscale \
    '+methods.schemes.ps-m1={name:posscale,scale:-1.0}' '+methods.schemes.ps-m05={name:posscale,scale:-0.5}' \
    '+methods.schemes.ps-0={name:posscale,scale:0.0}' '+methods.schemes.ps-05={name:posscale,scale:0.5}' \
    '+methods.schemes.ps-0-upper={name:posscale,scale:0.0,layers:[0.5,1.0]}' \
    '+methods.schemes.ps-0-lower={name:posscale,scale:0.0,layers:[0.1,0.5]}'
python -m lpes_framework.commands.evaluate $TASK hydra.run.dir=$run/tune-fim \
    '+methods.schemes.fim-025={name:fim,strength:0.25}' '+methods.schemes.fim-05={name:fim,strength:0.5}' \
    '+methods.schemes.fim-1={name:fim,strength:1.0}' '+methods.schemes.fim-1-wide={name:fim,strength:1.0,layers:[0.25,1.0]}'
for method in posscale fim; do
    python -m lpes_framework.commands.factors $run/tune-$method --baseline runs/qwen-bezier-pi \
        --out $run/$method-best/best_factors.json  # metrics.search: every setting's fitness, the chosen one
done
mkdir -p $run/heldout
[ -e $run/heldout/rows.jsonl ] || cp runs/qwen-gradient-ntk-preset/heldout/rows.jsonl $run/heldout/rows.jsonl
python bench/competitors.py --samples 100 --out $run/heldout "$@" | tee $run/competitors.txt
