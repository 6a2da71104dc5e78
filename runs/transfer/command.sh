#!/bin/bash
# Issue 37: the transfer matrix on Qwen2.5-Coder-0.5B (bench/transfer.py), held out (test split). The KV ~1K
# column starts from the shipped preset's 200-haystack re-test rows (runs/qwen-gradient-bands/heldout,
# copied to kv-1k/rows.jsonl), so its unpatched, uniform and preset rows are reused. Resumable: run again and
# every column reuses what it holds. First pass (baseline rows): unpatched and the KV preset on every column;
# then the general preset's row, the uniform scaling and the competitors (pip install plugins/lpes-posscale plugins/lpes-fim).
set -eo pipefail
# cheapest answers first: KV shares each haystack as a prefix (one forward a haystack), RULER moves its needle
COLUMNS="kv-1k niah_multikey_1-1k kv-2k kv-4k mdqa-1k vt-1k cwe-1k niah_multivalue-1k mdqa-2k niah_multikey_1-2k vt-2k niah_multivalue-2k cwe-2k"
# The general preset's row (part 5): the mixture search's answer, until it ships under its preset name.
GENERAL=${GENERAL:-runs/qwen-general/from-kv/best_factors.json}
python bench/transfer.py --columns $COLUMNS --methods unpatched "KV preset" "$@"
python bench/transfer.py --columns $COLUMNS --general $GENERAL --methods unpatched "general preset" "$@"
python bench/transfer.py --columns $COLUMNS --general $GENERAL "$@" | tee runs/transfer/transfer.txt
# The candidate general row (issue 37, twelfth session): the widened schedule with the ten factors the vt ablation
# found put back to 1 (runs/qwen-vt-ablation, picked on validation contexts), on the eleven columns of the bar
CANDIDATE=runs/qwen-vt-ablation/no-layers-8-15-band-1-layers-9-11-band-2/best_factors.json
python bench/transfer.py --also "widened, 10 factors at 1=$CANDIDATE" --methods unpatched "widened, 10 factors at 1" \
    --columns kv-1k vt-1k niah_multivalue-1k cwe-1k mdqa-2k kv-4k mdqa-1k niah_multikey_1-1k cwe-2k kv-2k niah_multikey_1-2k "$@"
