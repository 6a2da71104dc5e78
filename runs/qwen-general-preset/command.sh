#!/bin/bash
# Issue 37: the general preset, qwen2.5-coder-0.5b-general. It is the widened schedule with ten of its 72 factors
# put back to 1 (runs/qwen-vt-ablation/no-layers-8-15-band-1-layers-9-11-band-2), whose row of the transfer matrix
# (runs/transfer) harms none of the eleven columns. Its held-out evidence is the matrix's KV ~1K column, the KV
# preset's own re-test regime (100 haystacks a gold position, test split, perplexity on held-out text): the last
# record of each method re-tested here (a later record of a method repeats its earlier draws) is copied from that
# column, so nothing is scored again, and lpes retest's code writes the evaluate outputs and the gain's last line.
# Then the factors file and that evidence become the package's preset. Run from the repository root.
set -eo pipefail
here=runs/qwen-general-preset/heldout
candidate=runs/qwen-vt-ablation/no-layers-8-15-band-1-layers-9-11-band-2/best_factors.json
mkdir -p $here
[ -e $here/rows.jsonl ] || python - "$here/rows.jsonl" <<'PY'
import json, sys
wanted = {"unpatched", "uniform ntk 1.5", "file no-layers-8-15-band-1-layers-9-11-band-2"}
lines = open("runs/transfer/kv-1k/rows.jsonl").readlines()
last = {json.loads(line).get("method"): i for i, line in enumerate(lines)}
open(sys.argv[1], "w").writelines(lines[i] for name, i in sorted(last.items(), key=lambda kv: kv[1]) if name in wanted)
PY
python bench/heldout_gain.py --preset $candidate --samples 100 --uniform 1.5 --threads 1 --out $here | tee $here/heldout.txt
python -m lpes_framework.commands.preset $candidate --heldout $here --name qwen2.5-coder-0.5b-general --out lpes_framework/presets --replace
