#!/bin/bash
# Issue 10: variant C's answer (docs/runs/qwen-bezier-ntk) re-tested on the 60 held-out haystacks per gold
# position of docs/runs/qwen-lowfreq-heldout60, whose unpatched rows it reuses (the unpatched model's rows
# do not depend on the scheme), so only the found factors and the search's best uniform NTK are scored
# (~12 min each alone on the 2 cores). --samples 100 grows it like the others.
here=docs/runs/qwen-ntk-heldout60
[ -e $here/rows.jsonl ] || grep '"method": "unpatched"' docs/runs/qwen-lowfreq-heldout60/rows.jsonl > $here/rows.jsonl
python bench/heldout_gain.py --preset docs/runs/qwen-bezier-ntk/best_factors.json --samples 60 \
    --out $here "$@"
