#!/bin/bash
# Issue 10: variant C's answer (docs/runs/qwen-bezier-ntk) re-tested on the 60 held-out haystacks per gold
# position of docs/runs/qwen-lowfreq-heldout60, whose unpatched rows it reuses (the unpatched model's rows
# do not depend on the scheme). Scored here (~12 min each alone on the 2 cores): the found factors and
# uniform NTK at their mean, which asks whether the layer pattern matters or only the overall factor
# (the uniform factors the search tried, 0.8-1.5, scored far below; uniform NTK 1.5 and 2.0 on these
# haystacks: docs/runs/qwen-baselines60). --samples 100 grows it like the others.
here=docs/runs/qwen-ntk-heldout60
found=docs/runs/qwen-bezier-ntk/best_factors.json
[ -e $here/rows.jsonl ] || grep '"method": "unpatched"' docs/runs/qwen-lowfreq-heldout60/rows.jsonl > $here/rows.jsonl
mean=$(python -c "import json, sys; f = json.load(open(sys.argv[1]))['factors']; print(round(sum(f) / len(f), 2))" $found)
python bench/heldout_gain.py --preset $found --samples 60 --uniform $mean --out $here "$@"
