#!/bin/bash
# Issue 10: variant B's answer (runs/qwen-bezier-lowfreq) re-tested on 100 held-out haystacks per gold
# position next to the unpatched model and the search's best uniform scaling (0.8 on the slow dimensions).
# 60 haystacks took 42 minutes alone on the 2 cores; rows.jsonl keeps every method's per-sample rows, so
# growing it (60 to 100 here) scores only the new haystacks of each method.
python bench/heldout_gain.py --preset runs/qwen-bezier-lowfreq/best_factors.json --samples 100 \
    --out runs/qwen-lowfreq-heldout "$@"
# The search's noise floor from these rows (a few seconds, no model): each method's fitness with its interval,
# its spread over random 10-haystack subsets, and the separation under other fitness weights.
for penalty in 2.0 0.5 0.0; do
    for weight in 0.1 1.0 10.0 100.0; do
        echo "end_penalty=$penalty logprob_weight=$weight"
        python -m lpes_framework.commands.analysis noise runs/qwen-lowfreq-heldout --end-penalty $penalty --logprob-weight $weight
    done
done | tee runs/qwen-lowfreq-heldout/noise_floor.txt
