"""Forward time and peak memory of the embedded model at 2048 tokens, and greedy decoding speed after it,
vanilla vs patched (30 distinct factors under NTK), interleaved in one run. Prints
decode_overhead_ratio=<vanilla tokens/s / patched tokens/s>, then (unless --decode-only)
memory_ratio= and, last, overhead_ratio=<patched/vanilla median>."""

from __future__ import annotations

import argparse
import copy
import subprocess
import sys
from pathlib import Path

import torch

from common import embedded, interleaved


def forward(model, ids):
    with torch.no_grad():
        model(ids, use_cache=False)


def peak_rss_mb(patched: bool, tokens: int) -> float:
    """Peak resident memory of a fresh process running one forward (so the two do not mix)."""
    code = f"""
import resource, sys, torch
sys.path.insert(0, {repr(str(Path(__file__).resolve().parent))})
from common import embedded
from patch_overhead import forward, factors
from lpes_framework.position import apply_layer_scaling, build_scheme
cfg, model, tok, info = embedded()
ids = torch.randint(0, len(tok), (1, {tokens}), generator=torch.Generator().manual_seed(0))
if {patched}:
    apply_layer_scaling(model, factors(info.n_layers), build_scheme({{"name": "ntk"}}))
forward(model, ids)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def decode(model, prefilled, first_token, steps: int) -> None:
    """``steps`` greedy decoding steps from a copy of one prefilled KV cache (both sides pay the copy;
    only speed is compared, so the patched side may continue the unpatched prefill)."""
    cache = copy.deepcopy(prefilled)
    token, position = first_token, cache.get_seq_length()
    with torch.no_grad():
        for _ in range(steps):
            out = model(token, cache=cache, position_ids=torch.tensor([[position]]), use_cache=True)
            token, position = out.logits[:, -1:].argmax(-1), position + 1


def factors(n_layers: int) -> list[float]:
    return [1.0 + 0.9 * i / (n_layers - 1) for i in range(n_layers)]  # every layer different


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--decode-tokens", type=int, default=128)
    parser.add_argument("--decode-only", action="store_true", help="only the decoding comparison")
    args = parser.parse_args()
    from lpes_framework.position import apply_layer_scaling, build_scheme

    cfg, model, tok, info = embedded()
    ids = torch.randint(0, len(tok), (1, args.tokens), generator=torch.Generator().manual_seed(0))
    scheme = build_scheme({"name": "ntk"})

    def vanilla():
        forward(model, ids)

    def patched():
        with apply_layer_scaling(model, factors(info.n_layers), scheme):
            forward(model, ids)

    forward(model, ids)  # warm-up
    medians = {} if args.decode_only else interleaved({"vanilla": vanilla, "patched": patched}, args.repeats)
    with torch.no_grad():
        prefill = model(ids, use_cache=True)
    first = prefill.logits[:, -1:].argmax(-1)

    def decode_vanilla():
        decode(model, prefill.cache, first, args.decode_tokens)

    def decode_patched():
        with apply_layer_scaling(model, factors(info.n_layers), scheme):
            decode(model, prefill.cache, first, args.decode_tokens)

    decoding = interleaved({"vanilla": decode_vanilla, "patched": decode_patched}, args.repeats)
    print(f"{info.name}, {args.tokens} tokens, {args.repeats} interleaved repeats, torch threads {torch.get_num_threads()}")
    for name in decoding:
        print(f"{name:8s} decoding {args.decode_tokens / decoding[name]:.1f} tokens/s")
    print(f"decode_overhead_ratio={decoding['patched'] / decoding['vanilla']:.4f}")
    if args.decode_only:
        return
    mem = {"vanilla": peak_rss_mb(False, args.tokens), "patched": peak_rss_mb(True, args.tokens)}
    for name in medians:
        print(f"{name:8s} median {medians[name]:.3f} s   peak RSS {mem[name]:.0f} MB")
    print(f"memory_ratio={mem['patched'] / mem['vanilla']:.4f}")
    print(f"overhead_ratio={medians['patched'] / medians['vanilla']:.4f}")


if __name__ == "__main__":
    main()
