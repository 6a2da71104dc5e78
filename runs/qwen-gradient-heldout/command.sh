#!/bin/bash
# Issue 23: the gradient search's answer (runs/qwen-gradient-pi/best_factors.json) re-tested on the first
# 100 held-out haystacks x 10 gold positions of runs/qwen-free-ga-heldout, whose rows (unpatched, the
# shipped preset, uniform NTK 1.5) it reuses: only the new schedule is scored (~15 min alone on 2 cores).
# The analysis then gives the new schedule minus each of them with paired intervals over haystacks.
set -eo pipefail
here=runs/qwen-gradient-heldout
[ -e $here/rows.jsonl ] || cp runs/qwen-free-ga-heldout/rows.jsonl $here/rows.jsonl
python bench/heldout_gain.py --preset runs/qwen-gradient-pi/best_factors.json --samples 100 --uniform \
    --out $here "$@"
python -m lpes_framework.commands.analysis versus $here --method "file qwen-gradient-pi" | tee $here/versus.txt
