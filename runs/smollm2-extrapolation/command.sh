#!/bin/bash
# Issue 24, the baselines beyond the trained window: SmolLM2-135M-Instruct (trained to 8,192 tokens) at 12K
# and 16K tokens (1.5x, 2x), test split: perplexity of the standard library's source (task.source=stdlib) by
# position bucket, and the labelled passkey (queries layout: a key at each of 5 depths of one haystack).
# Methods, each at factor 1 in every layer under its own scheme (methods.schemes): the unpatched model (raw
# extrapolation), uniform PI at L / L_train, dynamic NTK (pos=ntk's rule beyond the window), YaRN at
# L / L_train with its attention scaling. Then perplexity by 2K bucket with paired ratios to dynamic NTK.
# Lengths as arguments (default both); the regime is bench/extrapolation.py's, so the bench reuses these rows.
# Resumable (resume=true). THREADS sets the torch threads (default 2).
set -eo pipefail
run=runs/smollm2-extrapolation
for length in ${@:-12288 16384}; do
    factor=$(python -c "print($length / 8192)")
    python -m lpes_framework.commands.evaluate model=smollm2 split=test threads=${THREADS:-2} progress=false resume=true \
        allow_beyond_trained=true \
        task=perplexity task.source=stdlib task.window_tokens=$length task.windows=3 \
        +task@extra_tasks.passkey=passkey extra_tasks.passkey.context_tokens=$length \
        extra_tasks.passkey.layout=queries extra_tasks.passkey.samples_per_position=2 methods.uniform=[] \
        "+methods.schemes.pi={name:pi,global_factor:$factor}" '+methods.schemes.dynamic-ntk={name:ntk}' \
        "+methods.schemes.yarn={name:yarn,global_factor:$factor}" hydra.run.dir=$run/$length
    python -m lpes_framework.commands.analysis buckets $run/$length --edges $(seq 0 2048 $length) \
        --versus dynamic-ntk | tee $run/$length/buckets.txt
done
