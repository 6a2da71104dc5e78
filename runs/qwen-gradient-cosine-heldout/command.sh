#!/bin/bash
# Issue 23: the cosine-step gradient search's answer (runs/qwen-gradient-cosine/best_factors.json)
# re-tested on 200 held-out haystacks x 10 gold positions in its own regime (the file's run record), next to
# the unpatched model and the shipped preset (the free GA's answer), whose rows it reuses from
# runs/qwen-free-ga-heldout: only the new schedule is scored (~30 min alone on 2 cores). table.txt holds
# the paired intervals of the new schedule minus each of them. No uniform PI is scored (--uniform with no
# value): the best uniform on this regime, NTK 1.5, is 4.9 points below the preset there (docs/results/index.md 0d).
set -eo pipefail
here=runs/qwen-gradient-cosine-heldout
[ -e $here/rows.jsonl ] || cp runs/qwen-free-ga-heldout/rows.jsonl $here/rows.jsonl
python bench/heldout_gain.py --preset runs/qwen-gradient-cosine/best_factors.json --samples 200 \
    --uniform --versus runs/qwen-free-ga-heldout/best_factors.json --out $here "$@" | tee $here/heldout.txt
python -m lpes_framework.commands.analysis versus $here --method "file qwen-gradient-cosine" --blocks 0-99 100-199 | tee $here/versus.txt
