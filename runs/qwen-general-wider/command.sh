#!/bin/bash
# Issue 37, part 5: the general schedule refined on a wider mixture. Its matrix row harms two columns the mixture
# never held: RULER vt ~1K (-0.009 [-0.015, -0.003] nats/token; a task no search used) and MDQA at ~2K (45
# documents, -0.132 [-0.185, -0.075]; the search saw MDQA at ~1K only, where it gains +0.286). The pulls at its
# answer (runs/qwen-general-pulls) found no mixture task pulling against vt (cosines +0.01 to +0.23). So: a few steps
# from that answer with vt (its length drawn from [1024, 2048], depths 0/50/100) and MDQA at 45 documents (gold at
# documents 0/22/44) added to the general search's own mixture, at a third of that search's first learning rate.
# Each step draws 2 fresh contexts of every task (~13 min a step before the two tasks were added, with the 2 cores
# to itself; the fixed split's baseline and start first); validation of the start and of each third step's
# schedule on the mixture's validation split. Resumes with resume=true.
# Then: bench/transfer.py --general runs/qwen-general-wider/best_factors.json --methods unpatched "general preset".
set -eo pipefail
START=runs/qwen-general/from-kv/best_factors.json RUN_DIR=runs/qwen-general-wider bash runs/qwen-general/command.sh \
    optimizer.steps=6 optimizer.lr=0.01 optimizer.lr_min=0.003 optimizer.eval_every=3 \
    +task@extra_tasks.vt=vt 'extra_tasks.vt.context_tokens=[1024,2048]' 'extra_tasks.vt.depths=[0,50,100]' \
    extra_tasks.vt.samples_per_position=6 \
    +task@extra_tasks.mdqa2k=mdqa extra_tasks.mdqa2k.path=runs/qwen-transfer/mdqa-capitals-45_docs.jsonl.gz \
    extra_tasks.mdqa2k.documents=45 extra_tasks.mdqa2k.chat_template=false 'extra_tasks.mdqa2k.gold_positions=[0,22,44]' \
    extra_tasks.mdqa2k.samples_per_position=6 "$@"
