#!/bin/bash
# Issue 24, the layer-specific extrapolation search: a Bezier GA over NTK factors per layer on SmolLM2 at 12K
# tokens (experiment=smollm2-extrapolation: perplexity beyond the 8K window + passkey, inside-window guard
# 1.02), then its answer on the test split next to the uniform baselines (bench/extrapolation.py, which
# reuses runs/smollm2-extrapolation/12288's rows).
# Budget: a 12K forward takes ~2 min on the 2 CPU cores (measured: the YaRN baseline's 5 forwards in 11 min),
# so the experiment's own GA (24 candidates of 3 x 12K + 2 x 8K forwards) would take ~3.5 h. This run keeps
# one 12K window, one passkey haystack and one 8K guard window per candidate (~5 min) and 9 candidates
# (identity, uniform 0.8 and 1.25, 3 random; one generation of 3 children): ~1 h 20 min with validation and
# test. Resumable (resume=true); more generations extend it (optimizer.generations=N, resume=true).
set -eo pipefail
run=runs/smollm2-extrapolation/search-ntk
resume=$([ -f $run/evaluations.jsonl ] && echo true || echo false)  # a first start has nothing to resume
python -m lpes_framework experiment=smollm2-extrapolation threads=${THREADS:-2} progress=false resume=$resume \
    task.windows=1 extra_tasks.inside.windows=1 optimizer.population=6 optimizer.parents=3 \
    optimizer.mutations=2 optimizer.crossovers=1 optimizer.generations=2 validation.top_k=2 \
    hydra.run.dir=$run "$@"
python bench/extrapolation.py --factors $run/best_factors.json --control --threads ${THREADS:-2} | tee $run/extrapolation.txt
