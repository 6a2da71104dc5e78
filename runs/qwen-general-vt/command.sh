#!/bin/bash
# Issue 37, part 5: the widened schedule (runs/qwen-general-wider) refined with vt held. Its matrix row harms RULER
# vt ~1K (-0.0094 [-0.015, -0.003] nats/token, 40 haystacks), the one harm of its first five columns: its six steps
# drew 2 vt contexts a step (6 rows), too few to see a 0.01 nats/token cost whose per-sample spread is 0.037. So
# six more steps from its answer at its learning rate (0.01 to 0.003), on the mixture of runs/qwen-general-from-ones:
# the same tasks, vt at 8 contexts a step (step_contexts=4) and 12 in the fixed, validation and test splits.
# The pulls at the general schedule (runs/qwen-general-pulls) found no task of the mixture against vt (cosines
# +0.01 to +0.23): the hope is that vt's cost goes at little cost to the rest. Started 2026-12-06; ~30-45 min a
# step at one thread beside other runs; resumes with resume=true.
# Then: bench/transfer.py --general runs/qwen-general-vt/best_factors.json --methods unpatched "general preset"
# --columns vt-1k ... (vt-1k first).
set -eo pipefail
START=runs/qwen-general-wider/best_factors.json RUN_DIR=runs/qwen-general-vt bash runs/qwen-general-from-ones/command.sh \
    optimizer.steps=6 optimizer.lr=0.01 optimizer.lr_min=0.003 optimizer.eval_every=3 "$@"
