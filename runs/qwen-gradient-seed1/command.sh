#!/bin/bash
# Issue 25, search-set sensitivity: the shipped preset's search (runs/qwen-gradient-ntk-preset: NTK per
# layer from the free GA's answer, cosine 0.03 -> 0.003, 30 steps x 3 fresh haystacks) repeated with seed 1,
# which draws other search-split haystacks for every step, the fixed split and validation. Its answer is then
# re-tested on the SAME 200 held-out haystacks as the preset (--seed 0: the preset's seed draws them), next
# to the preset, whose rows (and the unpatched ones) are reused. About 2 h alone on the 2 CPU cores;
# resumable (resume=true). Run from a git worktree (PYTHONPATH=<worktree>).
set -eo pipefail
run=runs/qwen-gradient-seed1
python -m lpes_framework experiment=qwen-gradient pos=ntk optimizer.start=runs/qwen-free-ga-heldout/best_factors.json \
    optimizer.schedule=cosine optimizer.lr=0.03 optimizer.lr_min=0.003 optimizer.steps=30 \
    optimizer.contexts_per_step=3 model.device=cpu threads=${THREADS:-2} progress=false seed=1 hydra.run.dir=$run/search "$@"
here=$run/heldout
mkdir -p $here
[ -e $here/rows.jsonl ] || cp runs/qwen-gradient-ntk-preset/heldout/rows.jsonl $here/rows.jsonl
python bench/heldout_gain.py --preset $run/search/best_factors.json --samples 200 --uniform --seed 0 --threads ${THREADS:-2} \
    --versus runs/qwen-gradient-ntk-preset/search/best_factors.json --out $here | tee $here/heldout.txt
