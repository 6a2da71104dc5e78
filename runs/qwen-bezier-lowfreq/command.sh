#!/bin/bash
# Issue 10, variant B: Bezier GA, PI (pos=rope) on the dimensions with wavelength > 256 tokens only (local
# order kept), two-sided bounds [0.5, 2.0], otherwise the regime and budget of variant A (qwen-bezier-pi):
# ~1K tokens, 10 haystacks x 10 gold positions per candidate. Started in the background from a git worktree
# at c50cfce and stopped at the session's end after the baseline and the identity seed (139 s and 206 s,
# evaluations.jsonl); continue it with `command.sh resume=true` (evaluations already scored are reused).
python -m lpes_framework model=qwen2.5-0.5b task.pairs=50 'task.gold_positions=[0,5,11,16,22,27,33,38,44,49]' \
    task.samples_per_position=10 task.layout=queries batch_size=10 pos=rope pos.wavelength_low=256 \
    curve=bezier curve.low=0.5 curve.high=2.0 \
    optimizer.population=8 optimizer.parents=6 optimizer.mutations=4 optimizer.crossovers=4 optimizer.generations=5 \
    'optimizer.init_uniform=[0.8,1.25,1.5]' threads=2 progress=false hydra.run.dir=runs/qwen-bezier-lowfreq "$@"
