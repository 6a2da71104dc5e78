#!/bin/bash
# Issue 37: which layers or bands of the widened schedule (runs/qwen-general-wider) cost RULER vt ~1K? Its matrix
# cell is -0.0094 [-0.015, -0.003] nats per token, concentrated where the chain starts early (depths 0 and 25:
# -0.03 and -0.02). The schedule with one layer third, or one band, put back to 1 (variants.py), scored with it
# and the unpatched model on vt's *validation* split (fresh contexts, not the matrix's test haystacks, so a
# variant picked here is still tested clean there), depth 0 only (the larger cost), 40 haystacks (40 samples a method).
# Resumable: run again with the same arguments and every method already scored is reused.
set -eo pipefail
python runs/qwen-vt-ablation/variants.py
V=runs/qwen-vt-ablation
python -m lpes_framework.commands.evaluate model=qwen2.5-0.5b pos=ntk +pos.bands=[128,2048] task=vt split=validation \
    task.depths=[0] task.samples_per_position=40 batch_size=10 record_every=10 resume=true progress=false \
    methods.uniform=[] hydra.run.dir=$V/scores \
    "methods.factors_files=[runs/qwen-general-wider/best_factors.json,$V/no-layers-0-7/best_factors.json,$V/no-layers-8-15/best_factors.json,$V/no-layers-16-23/best_factors.json,$V/no-band-0/best_factors.json,$V/no-band-1/best_factors.json,$V/no-band-2/best_factors.json]" "$@"
