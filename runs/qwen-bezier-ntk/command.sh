#!/bin/bash
# Issue 10, variant C: Bezier GA with NTK as the searched scheme (per-layer base; NTK already leaves the
# fastest dimensions nearly untouched), two-sided bounds [0.5, 3.0], otherwise the regime and budget of
# variants A and B: ~1K tokens, 10 haystacks x 10 gold positions per candidate. Uniform NTK tuned on the
# same split scored -0.011 (1.5) and -0.046 (2.0) (runs/qwen-baselines60).
# Fitness weights: log-prob led (logprob_weight 10, end_penalty 0.5) instead of the defaults (0.1, 2):
# on the 60-haystack held-out rows they separated a real 2.5-point middle loss from 10-haystack noise
# 2.3x better (separation -1.78 vs -0.77); on the 100 they do now, 2.1x better (-1.60 vs -0.77,
# noise_floor.txt; runs/qwen-lowfreq-heldout/command.sh).
# Long: run it in the background from a git worktree with PYTHONPATH=<worktree>;
# `command.sh resume=true` continues it.
python -m lpes_framework model=qwen2.5-0.5b task.pairs=50 'task.gold_positions=[0,5,11,16,22,27,33,38,44,49]' \
    task.samples_per_position=10 task.layout=queries batch_size=10 pos=ntk \
    curve=bezier curve.low=0.5 curve.high=3.0 fitness.logprob_weight=10 fitness.end_penalty=0.5 \
    optimizer.population=8 optimizer.parents=6 optimizer.mutations=4 optimizer.crossovers=4 optimizer.generations=5 \
    'optimizer.init_uniform=[0.8,1.25,1.5]' threads=2 progress=false hydra.run.dir=runs/qwen-bezier-ntk "$@"
