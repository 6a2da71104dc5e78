#!/bin/bash
# Issue 10: variant C's answer (runs/qwen-bezier-ntk) re-tested on the 100 held-out haystacks per gold
# position of runs/qwen-lowfreq-heldout, whose unpatched rows it reuses (the unpatched model's rows
# do not depend on the scheme): run that one first. Scored here (~14 min each per 100 haystacks alone on
# the 2 cores, from 5.5 min per 40 measured): the found factors and uniform NTK at their mean, which asks whether the layer pattern
# matters or only the overall factor (the uniform factors the search tried, 0.8-1.5, scored far below;
# uniform NTK 1.5 and 2.0 on these haystacks: runs/qwen-baselines60).
set -eo pipefail
here=runs/qwen-ntk-heldout
found=runs/qwen-bezier-ntk/best_factors.json
# this folder's own methods, then every unpatched record of the other table (a record is reused by its key)
{ grep -v '"method": "unpatched"' $here/rows.jsonl 2>/dev/null || true
  grep '"method": "unpatched"' runs/qwen-lowfreq-heldout/rows.jsonl; } > $here/rows.jsonl.new
mv $here/rows.jsonl.new $here/rows.jsonl
mean=$(python -c "import json, sys; f = json.load(open(sys.argv[1]))['factors']; print(round(sum(f) / len(f), 2))" $found)
python bench/heldout_gain.py --preset $found --samples 100 --uniform $mean --out $here "$@"
