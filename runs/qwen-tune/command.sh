#!/bin/bash
# Issue 66, part 3: the recipe run from scratch on Qwen2.5-Coder-0.5B (lpes tune with its defaults: the
# default matrix's 14 columns, the general preset's mixture regime, validation at 20 haystacks a column) and
# test seed 7, which no run of this project has read. Started 2026-12-07 from a git worktree in the background;
# the same command resumes it (finished stages are skipped, the running one resumes by key).
set -eo pipefail
python -m lpes_framework tune model=qwen2.5-0.5b tune.test_seed=7 threads=2 progress=false \
    hydra.run.dir=runs/qwen-tune "$@"
