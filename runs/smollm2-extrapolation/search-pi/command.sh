#!/bin/bash
# Issue 24, the layer-specific extrapolation search over PI: a Bezier GA over PI factors per layer (times
# L / L_train = 1.5: all ones is uniform PI) on SmolLM2 at 12K tokens (experiment=smollm2-extrapolation:
# perplexity beyond the 8K window + passkey, inside-window guard 1.02), then its answer on the test split next
# to the uniform baselines (bench/extrapolation.py, which reuses runs/smollm2-extrapolation/12288's rows).
# The budget of the NTK search beside it (search-ntk/command.sh), so the two compare: one 12K window, one
# passkey haystack and one 8K guard window per candidate (~5 min on the 2 CPU cores), 9 candidates, validation
# top 2: ~1 h 20 min with validation and test. Resumable: the same command continues a killed run.
set -eo pipefail
run=runs/smollm2-extrapolation/search-pi
resume=$([ -f $run/evaluations.jsonl ] && echo true || echo false)  # a first start has nothing to resume
python -m lpes_framework experiment=smollm2-extrapolation pos=pi pos.global_factor=1.5 curve.low=0.667 curve.high=1.333 \
    threads=${THREADS:-2} progress=false resume=$resume \
    task.windows=1 extra_tasks.inside.windows=1 optimizer.population=6 optimizer.parents=3 \
    optimizer.mutations=2 optimizer.crossovers=1 optimizer.generations=2 validation.top_k=2 \
    hydra.run.dir=$run "$@"
python bench/extrapolation.py --factors $run/best_factors.json --control --threads ${THREADS:-2} | tee $run/extrapolation.txt
