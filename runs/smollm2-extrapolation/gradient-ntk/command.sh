#!/bin/bash
# Issue 24, the layer-specific extrapolation search with gradients: Adam on a free NTK factor per layer
# (curve=free, 30 genes, all ones = dynamic NTK) on SmolLM2 at 12K tokens, the objective of the Bezier GA
# beside it (search-ntk) less its passkey: the mean log-prob of the tokens beyond the 8K window given the 8K
# before them, with the inside-window guard (8K windows, at most 2% worse than unpatched). The passkey is left
# out of the search (`~extra_tasks.passkey`): its 12K shared prefix writes a KV cache, so its activations
# cannot be checkpointed (~12 GB) and it would double a step; the held-out bench scores it.
# Budget: one fresh 12K window and one 8K guard window a step, layer activations recomputed in the backward
# pass (checkpoint_layers); 5 cosine steps from lr 0.1; the genes scored on the fixed search split (one 12K
# window, one 8K window) at the start and the end; validation top 2; then the test split next to the uniform
# baselines (bench/extrapolation.py, which reuses runs/smollm2-extrapolation/12288's rows).
# The experiment's GA settings are deleted (`~optimizer.population` ...): optimizer=gradient takes none of them.
# Resumable: the same command continues a killed run.
set -eo pipefail
run=runs/smollm2-extrapolation/gradient-ntk
resume=$([ -f $run/evaluations.jsonl ] && echo true || echo false)  # a first start has nothing to resume
python -m lpes_framework experiment=smollm2-extrapolation optimizer=gradient curve=free '~extra_tasks.passkey' \
    '~optimizer.population' '~optimizer.parents' '~optimizer.mutations' '~optimizer.crossovers' \
    '~optimizer.generations' '~optimizer.init_uniform' \
    threads=${THREADS:-2} progress=false resume=$resume \
    task.windows=1 extra_tasks.inside.windows=1 optimizer.checkpoint_layers=true optimizer.contexts_per_step=1 \
    optimizer.steps=5 optimizer.eval_every=5 optimizer.schedule=cosine optimizer.lr=0.1 optimizer.lr_min=0.01 \
    validation.top_k=2 hydra.run.dir=$run "$@"
python bench/extrapolation.py --factors $run/best_factors.json --control --threads ${THREADS:-2} | tee $run/extrapolation.txt
