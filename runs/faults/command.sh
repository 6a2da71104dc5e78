#!/bin/bash
# Issue 26: the run-directory and bad-input faults of bench/faults.py on the tiny model, plus a truncated SmolLM2
# cache (--cache) in a fresh $LPES_CACHE; about 4 min on 2 cores. Output: faults.txt.
set -eo pipefail
cd bench && python faults.py --cache "$@" | tee ../runs/faults/faults.txt
