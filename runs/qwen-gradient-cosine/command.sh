#!/bin/bash
# Issue 23: experiment=qwen-gradient again with a cosine step (0.05 falling to 0.005 over 50 steps) instead
# of the constant one that overshot in runs/qwen-gradient-pi (fixed-split fitness +0.29 at step 20, -0.10
# at step 40). Same regime and seed otherwise; about an hour alone on the 2 CPU cores, resumable with
# resume=true. Run from a git worktree (PYTHONPATH=<worktree>).
set -eo pipefail
python -m lpes_framework experiment=qwen-gradient model.device=cpu threads=2 progress=false \
    optimizer.schedule=cosine optimizer.lr_min=0.005 optimizer.steps=50 \
    hydra.run.dir=runs/qwen-gradient-cosine "$@"
