#!/bin/bash
# Issue 10: variant B's answer (docs/runs/qwen-bezier-lowfreq) re-tested on 100 held-out haystacks per gold
# position next to the unpatched model and the search's best uniform scaling (0.8 on the slow dimensions).
# 60 haystacks took 42 minutes alone on the 2 cores; rows.jsonl keeps every method's per-sample rows, so
# growing it (60 to 100 here) scores only the new haystacks of each method.
python bench/heldout_gain.py --preset docs/runs/qwen-bezier-lowfreq/best_factors.json --samples 100 \
    --out docs/runs/qwen-lowfreq-heldout "$@"
