#!/bin/bash
# Issue 41, part 3: layer-specific extrapolation at 2x with bands. SmolLM2-135M (trained to 8,192 tokens) at
# 16,384: band-wise NTK factors per layer (+pos.bands=[512,8192]: 13 dimensions of wavelength up to 512 tokens,
# 7 between, 12 beyond the trained window, the ones YaRN's by-parts rule leaves to interpolation), 30 layers x
# 3 bands = 90 genes, all ones = dynamic NTK in every band. The objective of 4d (gradient-ntk) at 16K: the mean
# log-prob of the tokens beyond the window given the 8K before them, the inside-window guard at 1.02, the
# passkey left to the bench (its shared prefix writes a cache: no checkpointing). One fresh 16K window and one
# 8K guard window a step, layer checkpointing, cosine Adam 0.1 -> 0.01, 4 steps (4d measured 14 min a step at
# 12K; expect ~20 here), validation top 2; then bench/extrapolation.py at 16K with its control against YaRN and
# dynamic NTK, reusing the baselines' rows (runs/smollm2-extrapolation/16384). Resumable: the same command.
set -eo pipefail
run=runs/smollm2-extrapolation/gradient-bands-16k
resume=$([ -f $run/evaluations.jsonl ] && echo true || echo false)  # a first start has nothing to resume
python -m lpes_framework experiment=smollm2-extrapolation optimizer=gradient curve=free '~extra_tasks.passkey' \
    '~optimizer.population' '~optimizer.parents' '~optimizer.mutations' '~optimizer.crossovers' \
    '~optimizer.generations' '~optimizer.init_uniform' '+pos.bands=[512,8192]' \
    threads=${THREADS:-2} progress=false resume=$resume task.window_tokens=16384 \
    task.windows=1 extra_tasks.inside.windows=1 optimizer.checkpoint_layers=true optimizer.contexts_per_step=1 \
    optimizer.steps=4 optimizer.eval_every=4 optimizer.schedule=cosine optimizer.lr=0.1 optimizer.lr_min=0.01 \
    validation.top_k=2 hydra.run.dir=$run "$@"
python bench/extrapolation.py --factors $run/best_factors.json --length 16384 --control --threads ${THREADS:-2} \
    --out runs/smollm2-extrapolation/16384 | tee $run/extrapolation.txt
