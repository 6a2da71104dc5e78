#!/bin/bash
# Issue 41, part 4: the rival that learns head scales (SEAL, arXiv 2501.15225) against the shipped preset, on
# Qwen2.5-Coder-0.5B's key-value haystacks at ~1K tokens. One scale per attention head (24 layers x 14 heads =
# 336 genes, pos=headscale from plugins/lpes-headscale), trained from all ones (SEAL's start) by the same
# gradient optimizer with the preset's budget (runs/qwen-gradient-bands: 16 Adam steps of 3 fresh search-split
# haystacks, cosine step 0.03 -> 0.003, the fixed 20-haystack split scored every 8 steps, validation of the top
# 2 on 20 fresh haystacks); scales bounded to [0.1, 3]. Then held out: --samples haystacks x 10 positions
# against the unpatched model and the preset, reusing the rows the preset's own re-test scored (only the new
# method is scored). Needs the plugin: pip install plugins/lpes-headscale. Resumable: pass resume=true.
set -eo pipefail
run=runs/qwen-headscale
python -m lpes_framework experiment=qwen-gradient pos=headscale curve.low=0.1 curve.high=3.0 optimizer.start=1.0 \
    optimizer.schedule=cosine optimizer.lr=0.03 optimizer.lr_min=0.003 optimizer.steps=16 optimizer.eval_every=8 \
    optimizer.contexts_per_step=3 validation.top_k=2 model.device=cpu threads=2 progress=false \
    hydra.run.dir=$run/search "$@"
UNIFORM= bash runs/retest-kv1k.sh $run
