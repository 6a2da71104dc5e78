#!/bin/bash
# Issue 41, part 2: band-wise NTK factors searched at ~2K tokens (100 pairs of 8-hex keys, 10 queried positions,
# queries layout; the unpatched model keeps under half of the middle there, docs/baselines.md), from the shipped
# preset (searched at ~1K), with its budget (16 Adam steps of 3 haystacks, cosine 0.03 -> 0.003, the fixed
# 20-haystack split every 8 steps, validation top 2). Then held out on 100 haystacks x 10 positions against the
# unpatched model and the preset at ~2K: the preset's own transfer to ~2K and what a search there adds.
# A step costs about twice the ~1K one (twice the tokens). Resumable: pass resume=true.
set -eo pipefail
run=runs/qwen-kv2k
KV2K=(task.pairs=100 'task.gold_positions=[0,11,22,33,44,55,66,77,88,99]')
python -m lpes_framework experiment=qwen-gradient pos=ntk '+pos.bands=[128,2048]' "${KV2K[@]}" \
    optimizer.start=qwen2.5-coder-0.5b optimizer.schedule=cosine optimizer.lr=0.03 optimizer.lr_min=0.003 \
    optimizer.steps=16 optimizer.eval_every=8 optimizer.contexts_per_step=3 validation.top_k=2 \
    model.device=cpu threads=2 progress=false hydra.run.dir=$run/search "$@"
mkdir -p $run/heldout
python -m lpes_framework retest --preset $run/search/best_factors.json --samples ${SAMPLES:-100} --uniform 1.5 \
    --versus qwen2.5-coder-0.5b --out $run/heldout | tee $run/heldout/heldout.txt
