#!/bin/bash
# Issue 10, the 1.5B fallback: Qwen2.5-Coder-1.5B showed no accuracy U at ~1K tokens (qwen15-baseline-1k), so
# its ~2K regime first: 100 pairs, 10 queried positions, 20 haystacks per position as a probe (make
# install-qwen15 first). Expected ~30 minutes alone on the 2 cores (about 3x the 0.5B per token).
python -m lpes_framework.commands.evaluate model=qwen2.5-1.5b split=search task.pairs=100 \
    'task.gold_positions=[0,11,22,33,44,55,66,77,88,99]' task.samples_per_position=20 task.layout=queries \
    batch_size=10 threads=2 progress=false 'methods.uniform=[]' hydra.run.dir=runs/qwen15-baseline-2k "$@"
