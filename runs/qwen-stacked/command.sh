#!/bin/bash
# Issue 41, part 5: layer factors and head scales optimised jointly, one vector. Each of Qwen2.5-Coder-0.5B's
# 24 layers gets the shipped preset's three band-wise NTK factors and its 14 heads' scales (17 genes a layer,
# 408 in all), started at the preset with every scale at 1 (python -m lpes_headscale.stack: the start
# computes exactly what the preset does) and trained by the gradient with the preset's and the head-scale
# run's budget (16 Adam steps of 3 haystacks, cosine 0.03 -> 0.003, validation top 2); factors and scales
# bounded to [0.1, 3] (the preset's factors lie in [0.5, 3]). Held out like the head-scale run, next to the
# unpatched model, the preset and the head scales, rows reused. Needs pip install plugins/lpes-headscale and
# runs/qwen-headscale done first (its file is scored alongside). Resumable: pass resume=true.
set -eo pipefail
run=runs/qwen-stacked
mkdir -p $run
[ -e $run/start.json ] || python -m lpes_headscale.stack qwen2.5-coder-0.5b --out $run/start.json
python -m lpes_framework experiment=qwen-gradient pos=headscale 'pos.base={name:ntk,bands:[128,2048]}' \
    curve.low=0.1 curve.high=3.0 optimizer.start=$run/start.json \
    optimizer.schedule=cosine optimizer.lr=0.03 optimizer.lr_min=0.003 optimizer.steps=16 optimizer.eval_every=8 \
    optimizer.contexts_per_step=3 validation.top_k=2 model.device=cpu threads=2 progress=false \
    hydra.run.dir=$run/search "$@"
UNIFORM= ROWS=runs/qwen-headscale/heldout/rows.jsonl bash runs/retest-kv1k.sh $run runs/qwen-headscale/search/best_factors.json
