#!/bin/bash
# Issue 10, the 1.5B fallback at ~4K tokens: at ~2K Qwen2.5-Coder-1.5B keeps an 8-point gap (ends 82.5%,
# middle 74.4%, qwen15-baseline-2k), short of a search regime (ends minus middle >= 20 points). 200 pairs,
# 10 queried positions, 20 haystacks per position as a probe (make install-qwen15 first). Expected ~70 min
# alone on the 2 cores (the 2K probe took ~30; the prefix doubles); it took 31 (docs/baselines.md).
python -m lpes_framework.commands.evaluate model=qwen2.5-1.5b split=search task.pairs=200 \
    'task.gold_positions=[0,22,44,66,88,111,133,155,177,199]' task.samples_per_position=20 task.layout=queries \
    batch_size=10 threads=2 progress=false 'methods.uniform=[]' hydra.run.dir=runs/qwen15-baseline-4k "$@"
