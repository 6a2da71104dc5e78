#!/bin/bash
# Issue 37, part 5, the second start: the general search from all ones (no KV preset behind it), on the widened
# mixture that runs/qwen-general-wider ended on: the general search's tasks (KV ~1K and ~2K, MDQA at 20 documents,
# RULER multikey at [1024, 2048] tokens, the perplexity guard) plus RULER vt at [1024, 2048] tokens and MDQA at 45
# documents, the two tasks the first row harmed. The general search's 20 steps at its learning rate (0.03 to
# 0.003), 2 fresh contexts of every task a step, but vt 8 (step_contexts=4: 24 rows a step, ~240 over the ~10
# steps Adam's momentum remembers, the matrix column's 200) and 12 vt contexts in the fixed, validation and test
# splits: at 6 rows a step the widened search could not see vt's -0.009 nats/token cost (a per-sample spread of
# 0.037). Started 2026-12-05 (a first start without the vt settings ran 2 steps and was dropped for this one).
# ~25-45 min a step on 2 CPU cores, so it spans sessions: run it from a git worktree in the background; the same
# command with resume=true goes on.
# Then: bench/transfer.py --general runs/qwen-general-from-ones/best_factors.json --methods unpatched "general preset"
# (vt-1k and mdqa-2k first: the columns the earlier rows harmed).
# START and RUN_DIR: another start on the same mixture (runs/qwen-general-vt).
set -eo pipefail
START=${START:-1.0} RUN_DIR=${RUN_DIR:-runs/qwen-general-from-ones} bash runs/qwen-general/command.sh \
    +task@extra_tasks.vt=vt 'extra_tasks.vt.context_tokens=[1024,2048]' 'extra_tasks.vt.depths=[0,50,100]' \
    extra_tasks.vt.samples_per_position=12 +extra_tasks.vt.step_contexts=4 \
    +task@extra_tasks.mdqa2k=mdqa extra_tasks.mdqa2k.path=runs/qwen-transfer/mdqa-capitals-45_docs.jsonl.gz \
    extra_tasks.mdqa2k.documents=45 extra_tasks.mdqa2k.chat_template=false 'extra_tasks.mdqa2k.gold_positions=[0,22,44]' \
    extra_tasks.mdqa2k.samples_per_position=6 "$@"
