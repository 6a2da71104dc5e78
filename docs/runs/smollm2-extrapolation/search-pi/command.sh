#!/bin/bash
# Issue 24, the layer-specific extrapolation search: a Bezier GA over PI factors per layer (times L / L_train = 1.5: all ones is uniform PI) on SmolLM2 at 12K
# tokens (experiment=smollm2-extrapolation: perplexity beyond the 8K window + passkey, inside-window guard
# 1.02), then its answer on the test split next to the uniform baselines (bench/extrapolation.py, which
# reuses docs/runs/smollm2-extrapolation/12288's rows). ~2 h alone on the 2 CPU cores; resumable (resume=true).
set -eo pipefail
run=docs/runs/smollm2-extrapolation/search-pi
resume=$([ -f $run/evaluations.jsonl ] && echo true || echo false)  # a first start has nothing to resume
python -m lpes_framework experiment=smollm2-extrapolation pos=pi pos.global_factor=1.5 curve.low=0.667 curve.high=1.333 threads=${THREADS:-2} progress=false resume=$resume \
    hydra.run.dir=$run "$@"
python bench/extrapolation.py --factors $run/best_factors.json --control --threads ${THREADS:-2} | tee $run/extrapolation.txt
