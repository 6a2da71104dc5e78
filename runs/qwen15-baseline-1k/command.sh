#!/bin/bash
# Issue 10: does Qwen2.5-Coder-1.5B lose the middle in the 0.5B's ~1K regime? A 12-haystack probe on the
# search split (make install-qwen15 first). About 4.5 minutes here, model load included.
python -m lpes_framework.commands.evaluate model=qwen2.5-1.5b split=search task.pairs=50 'task.gold_positions=[0,5,11,16,22,27,33,38,44,49]' \
    task.samples_per_position=12 task.layout=queries batch_size=10 threads=2 progress=false 'methods.uniform=[]' \
    hydra.run.dir=runs/qwen15-baseline-1k "$@"
