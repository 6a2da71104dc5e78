#!/bin/bash
# Issue 10: Bezier GA vs free GA (one gene per layer) vs random search at an equal budget (32 evaluations
# each, generations=5) in variant C's regime and fitness (runs/qwen-bezier-ntk/command.sh): ~1K
# tokens, 10 haystacks x 10 gold positions per candidate, NTK, factors in [0.5, 3], log-prob led weights.
# ~2 min per candidate alone on the 2 cores: 96 candidates, about 3.2 h, so it spans sessions: run it in
# the background from a git worktree with PYTHONPATH=<worktree>; the same command resumes each method's
# search from runs/qwen-search-efficiency/<method>/ (a finished one is read back, not re-scored).
# Issue 23 added the gradient optimizer (free curve, from the unpatched model, a cosine step 0.05 -> 0.005,
# 24 steps of 2 fresh haystacks, the fixed 10-haystack split scored every 4 steps): about 25 min alone.
set -o pipefail  # a failed comparison fails the script, not hidden behind tee
python bench/search_efficiency.py --model qwen2.5-0.5b --generations 5 --out runs/qwen-search-efficiency \
    --plot runs/qwen-search-efficiency/convergence.png \
    --gradient optimizer.steps=24 optimizer.eval_every=4 optimizer.contexts_per_step=2 \
        optimizer.schedule=cosine optimizer.lr=0.05 optimizer.lr_min=0.005 \
    --overrides task.pairs=50 'task.gold_positions=[0,5,11,16,22,27,33,38,44,49]' task.samples_per_position=10 \
    task.layout=queries batch_size=10 pos=ntk curve.low=0.5 curve.high=3.0 \
    fitness.logprob_weight=10 fitness.end_penalty=0.5 threads=2 "$@" | tee runs/qwen-search-efficiency/summary.txt
