#!/bin/bash
# Issue 23: does the papers' parameterization lose anything? The shipped preset (the gradient optimum of
# runs/qwen-gradient-ntk-preset) redrawn as the closest cubic Bezier over the layer index (4 control
# points, least squares within the file's bounds), re-tested on the same 200 held-out haystacks x 10
# positions, paired against the optimum and the unpatched model (their rows reused from that run's heldout/:
# only the fit is scored, ~20 min alone on 2 cores). Then the attention analysis of the optimum: the mass
# each layer puts on the gold span by gold position, patched against unpatched, on 20 test haystacks.
# Resumable: run again and the scored methods are reused. Run from a git worktree (PYTHONPATH=<worktree>).
set -eo pipefail
run=runs/qwen-gradient-bezier-fit
optimum=runs/qwen-gradient-ntk-preset/search/best_factors.json
mkdir -p $run/heldout
python -m lpes_framework.commands.factors $optimum --fit bezier --out $run/bezier_fit.json
[ -e $run/heldout/rows.jsonl ] || cp runs/qwen-gradient-ntk-preset/heldout/rows.jsonl $run/heldout/rows.jsonl
python bench/heldout_gain.py --preset $run/bezier_fit.json --samples 200 --uniform --versus $optimum \
    --out $run/heldout | tee $run/heldout/heldout.txt
python -m lpes_framework.commands.analysis versus $run/heldout --method "file qwen-gradient-bezier-fit" --blocks 0-99 100-199 \
    | tee $run/heldout/versus.txt
python -m lpes_framework.commands.attention runs/qwen-gradient-ntk-preset/search --samples 20 --threads 2 \
    --out $run/attention | tee $run/attention/attention.txt
