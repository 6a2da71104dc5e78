#!/bin/bash
# Issue 10: the benchmark line on the shipped preset, 60 held-out haystacks per gold position (test split),
# unpatched vs the preset vs the best uniform PI the search tried (1.05), perplexity on held-out text.
# Ran from a git worktree at 0f6f8e0 in the background, alone on 2 CPU cores: 42 min.
python bench/heldout_gain.py --samples 60 --out runs/qwen-heldout60 "$@"
