#!/bin/bash
# A search's answer on Qwen2.5-Coder-0.5B's key-value haystacks at ~1K, re-tested held out next to the unpatched
# model and the shipped preset (and the factors files given after the run folder), reusing the rows of an
# earlier re-test (ROWS; default the preset's own, runs/qwen-gradient-bands/heldout): only new methods are scored.
# UNIFORM: the uniform factors scored alongside under the run's scheme (default 1.5: uniform NTK 1.5, the
# preset's baseline; empty for a scheme where a uniform factor means something else, e.g. head scales).
#   [ROWS=<rows.jsonl>] [SAMPLES=100] [UNIFORM=] bash runs/retest-kv1k.sh <run folder> [other factors files ...]
set -eo pipefail
run=$1
shift
here=$run/heldout
mkdir -p $here
[ -e $here/rows.jsonl ] || cp ${ROWS:-runs/qwen-gradient-bands/heldout/rows.jsonl} $here/rows.jsonl
python -m lpes_framework retest --preset $run/search/best_factors.json --samples ${SAMPLES:-100} --uniform ${UNIFORM-1.5} \
    --versus qwen2.5-coder-0.5b "$@" --out $here | tee $here/heldout.txt
