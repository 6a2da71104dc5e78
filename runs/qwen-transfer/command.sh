#!/bin/bash
# Issue 25, transfer: the shipped preset (searched on key-value retrieval) and the two competitors (tuned on
# it: runs/qwen-competitors) re-tested on other tasks at a similar length (~1K tokens), next to the
# unpatched model, on the test split:
# - the labelled passkey, queries layout: 30 haystacks of 1,024 tokens, a 5-digit key at each of 5 depths;
# - multi-document QA: the file make_mdqa_file.py writes (made-up countries' capitals, 20 documents, ~900
#   tokens), 10 records x 5 gold positions, as a plain prompt ending "Answer:" (task.chat_template=false): under
#   the chat template the answer turn would start with the space the plain format puts after "Answer:", a token
#   the model never writes there (first-token log-prob -11), and exact match is 0 at every position.
# Needs pip install plugins/lpes-posscale plugins/lpes-fim. Resumable (resume=true reuses the scored methods).
set -eo pipefail
run=runs/qwen-transfer
files="methods.factors_files=[qwen2.5-coder-0.5b,runs/qwen-competitors/posscale-best/best_factors.json,runs/qwen-competitors/fim-best/best_factors.json]"
COMMON="model=qwen2.5-0.5b split=test methods.uniform=[] threads=${THREADS:-2} progress=false resume=true batch_size=10"
python -m lpes_framework.commands.evaluate $COMMON "$files" task=passkey task.layout=queries \
    task.samples_per_position=30 hydra.run.dir=$run/passkey
[ -e $run/mdqa-capitals-20_docs.jsonl.gz ] || (cd $run && python make_mdqa_file.py)
python -m lpes_framework.commands.evaluate $COMMON "$files" task=mdqa task.path=$run/mdqa-capitals-20_docs.jsonl.gz \
    task.documents=20 task.chat_template=false 'task.gold_positions=[0,5,10,14,19]' task.samples_per_position=10 hydra.run.dir=$run/mdqa
