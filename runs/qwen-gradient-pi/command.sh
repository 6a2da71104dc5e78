#!/bin/bash
# Issue 23: the gradient optimizer in experiment=qwen's regime (experiment=qwen-gradient: Qwen2.5-Coder-0.5B,
# ~1K tokens, one PI factor per layer, free curve in [0.5, 3], Adam lr 0.05, 40 steps x 2 fresh haystacks,
# the fixed 20-haystack search split scored every 10 steps, validation top 3, test on 20 haystacks).
# About 40 min alone on the 2 CPU cores; run it from a git worktree (PYTHONPATH=<worktree>), resumable
# with resume=true. The run folder's evaluations.jsonl, best_factors.json, report.md and plots are kept here.
set -eo pipefail
python -m lpes_framework experiment=qwen-gradient model.device=cpu threads=2 progress=false \
    hydra.run.dir=runs/qwen-gradient-pi "$@"
