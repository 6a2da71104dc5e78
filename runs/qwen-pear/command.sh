#!/bin/bash
# Issue 67, part 1: PEAR's suppression heads of Qwen2.5-Coder-0.5B-Instruct, found with the copying proxy task
# (random nouns, seed 0), run 2026-12-08 from main beside the recipe run on the same 2 cores:
# heads.json: 8 lists of 200 nouns, first-order effects (3 min); heads-800.json: 4 lists of 800 nouns (~2.3K tokens,
# 5.5 min). compare.py prints how far they agree (summary.txt). Not finished: the loop below (2 lists of 200 nouns,
# each head removed exactly against its first-order estimate on the same samples) was stopped after 2 h of the shared
# cores (672 forwards), to let CI run; its files do not exist yet.
set -eo pipefail
python -m lpes_headscale.suppression --model qwen2.5-0.5b --top 16 --samples 8 --words 200 --out runs/qwen-pear/heads.json
python -m lpes_headscale.suppression --model qwen2.5-0.5b --top 16 --samples 4 --words 800 --out runs/qwen-pear/heads-800.json
for m in ablation gradient; do
    python -m lpes_headscale.suppression --model qwen2.5-0.5b --top 16 --samples 2 --words 200 --method $m \
        --out runs/qwen-pear/heads-2x200-$m.json
done
python runs/qwen-pear/compare.py > runs/qwen-pear/summary.txt
