#!/bin/bash
# Issue 37, part 5: which way each task pulls at the general schedule, RULER vt (the matrix's harmed column, in no
# search) included. One gradient step of the general search's own command from its answer
# (runs/qwen-general/from-kv/best_factors.json), vt ~1K (depths 0-100) added to its mixture of KV ~1K and ~2K, MDQA
# and niah_multikey_1: the step's record holds each task's part of the gradient at that schedule, in units of each
# task's unpatched spread on the search split (fitness.normalise=true), read by
#   lpes analysis pulls runs/qwen-general-pulls
# Small fixed, validation and test splits (only the step is the point: the fixed split sets each task's unit),
# 3 fresh contexts a task for the step. Resumes with resume=true.
set -eo pipefail
START=runs/qwen-general/from-kv/best_factors.json RUN_DIR=runs/qwen-general-pulls bash runs/qwen-general/command.sh \
    optimizer.steps=1 optimizer.contexts_per_step=3 task.samples_per_position=4 validation.top_k=1 \
    extra_tasks.kv2k.samples_per_position=2 extra_tasks.mdqa.samples_per_position=3 extra_tasks.mk.samples_per_position=3 \
    +task@extra_tasks.vt=vt extra_tasks.vt.context_tokens=1024 extra_tasks.vt.samples_per_position=3 "$@"
