#!/bin/bash
# Issue 10: section 0's baselines on the 100 held-out haystacks of runs/qwen-lowfreq-heldout, whose
# unpatched rows it reuses (same haystacks, tasks and scoring): Ms-PoE with the plugin's defaults (the
# `uniform mspoe 1` row; pip install plugins/lpes-mspoe), and uniform PI and YaRN at the factor each won
# with on the search split (PI 1.05 from the search's own seeds, runs/qwen-bezier-pi; YaRN 1.5 from
# runs/qwen-baselines60/tune.sh), each a factors file under its own scheme; perplexity of each.
# Uniform NTK 1.5 is scored on 200 haystacks in runs/qwen-free-ga-heldout.
# About 15 min a method alone on the 2 cores; a killed run resumes with the methods it finished.
# Then the analysis: the shipped preset minus each, on the same haystacks (versus_found.txt).
set -eo pipefail
here=runs/qwen-baselines100
tuned=runs/qwen-baselines60
mkdir -p $here/pi-best $here/test
[ -e $here/pi-best/best_factors.json ] || python -m lpes_framework.commands.factors runs/qwen-bezier-pi --uniform \
    --out $here/pi-best/best_factors.json  # the PI search's best non-identity uniform candidate (1.05)
[ -e $here/test/rows.jsonl ] || grep '"method": "unpatched"' runs/qwen-lowfreq-heldout/rows.jsonl > $here/test/rows.jsonl
python -m lpes_framework.commands.evaluate model=qwen2.5-0.5b task.pairs=50 'task.gold_positions=[0,5,11,16,22,27,33,38,44,49]' \
    task.samples_per_position=100 task.layout=queries batch_size=10 threads=2 progress=false split=test \
    pos=mspoe 'methods.uniform=[1.0]' \
    "methods.factors_files=[$here/pi-best/best_factors.json,$tuned/yarn-best/best_factors.json]" \
    +task@extra_tasks.perplexity=perplexity resume=true hydra.run.dir=$here/test "$@"
# the shipped preset (scored on 200 haystacks there) minus each, on the 100 haystacks both folders scored
python -m lpes_framework.commands.analysis versus $here/test runs/qwen-free-ga-heldout --method "file qwen-free-ga-heldout" \
    --blocks 0-99 | tee $here/versus_found.txt
