#!/bin/bash
# Issue 10, variant A: Bezier GA, PI (pos=rope), factors >= 1 on all rotary dims, ~1K tokens (50 pairs),
# 10 haystacks x 10 gold positions per candidate (queries layout). It ran from a git worktree at eff2b36
# in the background (nohup), with progress=false; continue a killed run with resume=true.
python -m lpes_framework model=qwen2.5-0.5b task.pairs=50 'task.gold_positions=[0,5,11,16,22,27,33,38,44,49]' \
    task.samples_per_position=10 task.layout=queries batch_size=10 pos=rope curve=bezier curve.low=1.0 curve.high=1.5 \
    optimizer.population=8 optimizer.parents=6 optimizer.mutations=4 optimizer.crossovers=4 optimizer.generations=5 \
    'optimizer.init_uniform=[1.05,1.1,1.2]' threads=2 progress=false hydra.run.dir=runs/qwen-bezier-pi "$@"
