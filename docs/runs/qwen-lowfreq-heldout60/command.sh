#!/bin/bash
# Issue 10: variant B's answer (docs/runs/qwen-bezier-lowfreq) re-tested on 60 held-out haystacks per gold
# position next to the unpatched model and the search's best uniform scaling (0.8 on the slow dimensions).
# 42 minutes alone on the 2 cores. rows.jsonl keeps every method's per-sample rows: the same command with
# --samples 100 scores only haystacks 60-99 of each method.
python bench/heldout_gain.py --preset docs/runs/qwen-bezier-lowfreq/best_factors.json --samples 60 \
    --out docs/runs/qwen-lowfreq-heldout60 "$@"
