#!/bin/bash
# Issue 37, part 5: the general schedule refined with RULER vt in its mixture. The general preset's row harms vt ~1K
# (-0.009 [-0.015, -0.003] nats/token, the matrix's one harmed column) and the pulls at its answer
# (runs/qwen-general-pulls) found no mixture task pulling against vt (cosines +0.01 to +0.23): so a few steps from
# that answer with vt (its length drawn from [1024, 2048], depths 0/50/100) added to the general search's own
# mixture, at a tenth of that search's first learning rate, should lift vt without giving back the rest. Each step
# draws 2 fresh contexts of every task (~13-16 min a step with the 2 cores to itself, the fixed split's baseline
# ~12 min first); validation of the start and of each third step's schedule on the mixture's validation split.
# Resumes with resume=true. Then: bench/transfer.py --general runs/qwen-general-vt/best_factors.json.
set -eo pipefail
START=runs/qwen-general/from-kv/best_factors.json RUN_DIR=runs/qwen-general-vt bash runs/qwen-general/command.sh \
    optimizer.steps=6 optimizer.lr=0.01 optimizer.lr_min=0.003 optimizer.eval_every=3 \
    +task@extra_tasks.vt=vt 'extra_tasks.vt.context_tokens=[1024,2048]' 'extra_tasks.vt.depths=[0,50,100]' \
    extra_tasks.vt.samples_per_position=6 "$@"
