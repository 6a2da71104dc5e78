#!/bin/bash
# Issue 10: the free GA of the search-efficiency run (runs/qwen-search-efficiency/free-ga, one gene per
# layer, NTK, [0.5, 3]) reached a search-split fitness of +0.317, about 4 sd of the 10-haystack noise floor
# (0.08) and twice variant C's best; that run has no validation step, so its best candidate is re-tested
# here on the 100 held-out haystacks per gold position of runs/qwen-lowfreq-heldout, whose unpatched
# rows it reuses. Its factors file takes the model, scheme and task blocks of variant C's answer (the same
# regime). ~14 min per method and 100 haystacks alone on the 2 cores: first 100 haystacks (unpatched reused),
# then 100 fresh ones that no other method has seen (halves.txt), then uniform NTK 1.5 on all 200.
set -eo pipefail
here=runs/qwen-free-ga-heldout
# best_factors.json: the best candidate of runs/qwen-search-efficiency/free-ga (by its search fitness), with
# the model, scheme and task blocks of variant C's answer (runs/qwen-bezier-ntk/best_factors.json, the
# same regime). That folder predates the run record, so the file was made once by hand; for a run with a
# record: python -m lpes_framework.commands.factors <search run> --out $here/best_factors.json
[ -e $here/rows.jsonl ] || grep '"method": "unpatched"' runs/qwen-lowfreq-heldout/rows.jsonl > $here/rows.jsonl
# uniform NTK 1.5: the best uniform NTK on the search split (runs/qwen-baselines60/ntk-best/best_factors.json, metrics.search)
python bench/heldout_gain.py --preset $here/best_factors.json --samples 200 --uniform 1.5 --out $here "$@"
python -m lpes_framework.commands.analysis versus $here --method "file qwen-free-ga-heldout" --blocks 0-99 100-199 \
    | tee $here/halves.txt  # the reused and the fresh haystacks apart
# the attention analysis in the regime this search ran in: variant C's run record
python -m lpes_framework.commands.attention runs/qwen-bezier-ntk --factors $here/best_factors.json --samples 5 \
    --out $here
