#!/bin/bash
# Issue 23, one step finer than a factor per layer: NTK factors per layer per wavelength band, from the shipped
# preset (section 0g's optimum, +3.8 held out; a scalar schedule fits a band-wise curve exactly, the same factor
# in each band, so the search starts where 0g ended). Bands by wavelength: up to 128 tokens (7 of Qwen's 32
# rotary frequencies, 6-84 tokens: local order), 128-2048 (7, 129-1721 tokens: the ~1K context's own scale),
# above 2048 (18, 2.6K-4.1M tokens: barely turn over the context). The free curve over 24 layers x 3 bands = 72
# genes, Adam on log genes, cosine step 0.03 -> 0.003 (0g's), 16 steps of 3 fresh search-split haystacks, the
# current factors scored on the fixed 20-haystack search split every 8 steps, validation top 2 on 20 fresh
# haystacks; then 200 held-out test haystacks x 10 positions against the unpatched model and the preset,
# reusing 0g's rows (first run at 100, then grown to 200: only the new haystacks are scored). About 1 h 30 min
# alone on the 2 CPU cores; resumable: pass resume=true. Run from a git worktree (PYTHONPATH=<worktree>).
set -eo pipefail
run=runs/qwen-gradient-bands
# the preset this run started from and was tested against: 0g's schedule, shipped as qwen2.5-coder-0.5b until
# this run's answer replaced it; its file as shipped then is kept in previous/ (the search's record names it
# by the preset's name, which it was when the search ran)
previous=$run/previous/best_factors.json
python -m lpes_framework experiment=qwen-gradient pos=ntk '+pos.bands=[128,2048]' \
    optimizer.start=$previous optimizer.schedule=cosine optimizer.lr=0.03 optimizer.lr_min=0.003 \
    optimizer.steps=16 optimizer.eval_every=8 optimizer.contexts_per_step=3 validation.top_k=2 \
    model.device=cpu threads=2 progress=false hydra.run.dir=$run/search "$@"
here=$run/heldout
mkdir -p $here
[ -e $here/rows.jsonl ] || cp runs/qwen-gradient-ntk-preset/heldout/rows.jsonl $here/rows.jsonl
python bench/heldout_gain.py --preset $run/search/best_factors.json --samples 200 --uniform 1.5 \
    --versus $previous --out $here | tee $here/heldout.txt
python -m lpes_framework.commands.analysis versus $here --method "file search [dc36c3b0]" --blocks 0-99 100-199 | tee $here/versus.txt
