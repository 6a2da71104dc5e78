#!/bin/bash
# Issue 37, part 5: a general preset for Qwen2.5-Coder-0.5B. Band-wise NTK factors (the shipped preset's scheme:
# +pos.bands=[128,2048]) searched by the gradient on a mixture of the search splits of key-value retrieval (50
# pairs, ~1K; 100 pairs, ~2K), multi-document QA (the capitals file, 20 documents, ~1K) and RULER's
# niah_multikey_1 (essay haystack, its length drawn from [1024, 2048]), each task's term over its unpatched
# spread (fitness.normalise=true) and the perplexity guarded at 1.02; from the KV preset (START=qwen2.5-coder-0.5b,
# the default) and, as a second run, from all ones (START=1.0 RUN=from-ones). Each step draws 2 fresh contexts of
# every task. Measured: 11-13 min a step with the 2 CPU cores to itself (659-750 s: ~3 min the unpatched minibatch,
# ~9 min forward and backward; the RULER and MDQA terms move their gold item, so each sample is its own forward),
# 20-77 min when they are shared; so this spans sessions: run it from a git worktree in the background; the same
# command resumes (resume=true after the first start).
# Layer checkpointing: the MDQA and RULER prompts (no shared prefix) go through the gradient in batches of 10
# whole prompts, whose activations without it took the process past 23 GB (killed twice by the OOM killer).
# Then the matrix: bench/transfer.py --general $run/search/best_factors.json.
set -eo pipefail
START=${START:-qwen2.5-coder-0.5b}
run=${RUN_DIR:-runs/qwen-general/${RUN:-from-kv}}  # RUN_DIR: a folder elsewhere (runs/qwen-general-pulls)
# The run from the KV preset recorded the file where it lay then (docs/runs/...); resume it with that path in
# MDQA (a link from docs/runs/qwen-transfer to runs/qwen-transfer gives the same file).
mdqa=${MDQA:-runs/qwen-transfer/mdqa-capitals-20_docs.jsonl.gz}
python -m lpes_framework experiment=qwen-gradient pos=ntk '+pos.bands=[128,2048]' optimizer.start=$START \
    optimizer.schedule=cosine optimizer.lr=0.03 optimizer.lr_min=0.003 optimizer.steps=20 optimizer.eval_every=10 \
    optimizer.contexts_per_step=2 optimizer.checkpoint_layers=true validation.top_k=2 fitness.normalise=true task.samples_per_position=10 \
    +task@extra_tasks.kv2k=kv_retrieval extra_tasks.kv2k.pairs=100 'extra_tasks.kv2k.gold_positions=[0,11,22,33,44,55,66,77,88,99]' \
    extra_tasks.kv2k.layout=queries extra_tasks.kv2k.samples_per_position=6 \
    +task@extra_tasks.mdqa=mdqa extra_tasks.mdqa.path=$mdqa extra_tasks.mdqa.documents=20 extra_tasks.mdqa.chat_template=false \
    'extra_tasks.mdqa.gold_positions=[0,10,19]' extra_tasks.mdqa.samples_per_position=6 \
    +task@extra_tasks.mk=niah_multikey_1 'extra_tasks.mk.context_tokens=[1024,2048]' 'extra_tasks.mk.depths=[0,50,100]' \
    extra_tasks.mk.samples_per_position=6 \
    +task@extra_tasks.ppl=perplexity extra_tasks.ppl.max_ratio=1.02 extra_tasks.ppl.windows=2 extra_tasks.ppl.window_tokens=1024 \
    batch_size=10 model.device=cpu threads=2 progress=false hydra.run.dir=$run "$@"
