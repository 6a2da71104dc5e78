#!/bin/bash
# Issue 10, item 1: the unpatched Qwen2.5-Coder-0.5B at ~2K tokens (100 pairs of 8-hex keys, each haystack
# asked for the keys at 10 evenly spread positions), 60 haystacks per position on the search split, as the
# ~1K baseline (runs/qwen-baseline-1k). Expected ~25-30 minutes alone on the 2 cores.
python -m lpes_framework.commands.evaluate model=qwen2.5-0.5b split=search task.pairs=100 \
    'task.gold_positions=[0,11,22,33,44,55,66,77,88,99]' task.samples_per_position=60 task.layout=queries \
    batch_size=10 threads=2 progress=false 'methods.uniform=[]' hydra.run.dir=runs/qwen-baseline-2k "$@"
