#!/bin/bash
# Issue 41, part 1: a factor per layer per rotary frequency on Qwen2.5-Coder-0.5B's key-value haystacks at ~1K
# tokens. NTK factors on pos.bands=per_frequency (32 bands of one frequency each: 24 x 32 = 768 genes), started
# at the shipped band-wise preset redrawn on those bands (lpes factors --bands per_frequency: the same tables),
# trained by the gradient with the preset's budget (16 Adam steps of 3 haystacks, cosine 0.03 -> 0.003,
# validation top 2) and a smoothness penalty of 0.01 x the squared differences of the log factors' change
# between neighbouring frequencies and layers (optimizer.smoothness; at a typical 0.1 drift per gene the
# penalty is ~0.3, the size of one step's objective). Held out like runs/qwen-headscale against the unpatched
# model and the preset, rows reused. Resumable: pass resume=true.
set -eo pipefail
run=runs/qwen-perfreq
mkdir -p $run
[ -e $run/start.json ] || python -m lpes_framework factors qwen2.5-coder-0.5b --bands per_frequency --out $run/start.json
python -m lpes_framework experiment=qwen-gradient pos=ntk '+pos.bands=per_frequency' optimizer.start=$run/start.json \
    optimizer.smoothness=0.01 optimizer.schedule=cosine optimizer.lr=0.03 optimizer.lr_min=0.003 optimizer.steps=16 \
    optimizer.eval_every=8 optimizer.contexts_per_step=3 validation.top_k=2 model.device=cpu threads=2 progress=false \
    hydra.run.dir=$run/search "$@"
SAMPLES=200 bash runs/retest-kv1k.sh $run
