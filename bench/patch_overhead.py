"""Forward time and peak memory of the embedded model at 2048 tokens, vanilla vs patched (30 distinct
factors under NTK), interleaved in one run. Last line: overhead_ratio=<patched/vanilla median>."""

from __future__ import annotations

import argparse
import subprocess
import sys

import torch

from common import embedded, interleaved


def forward(model, ids):
    with torch.no_grad():
        model(ids, use_cache=False)


def peak_rss_mb(patched: bool, tokens: int) -> float:
    """Peak resident memory of a fresh process running one forward (so the two do not mix)."""
    code = f"""
import resource, sys, torch
sys.path.insert(0, {repr(sys.path[0])})
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


def factors(n_layers: int) -> list[float]:
    return [1.0 + 0.9 * i / (n_layers - 1) for i in range(n_layers)]  # every layer different


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=5)
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
    medians = interleaved({"vanilla": vanilla, "patched": patched}, args.repeats)
    mem = {"vanilla": peak_rss_mb(False, args.tokens), "patched": peak_rss_mb(True, args.tokens)}
    print(f"{info.name}, {args.tokens} tokens, {args.repeats} interleaved repeats, torch threads {torch.get_num_threads()}")
    for name in medians:
        print(f"{name:8s} median {medians[name]:.3f} s   peak RSS {mem[name]:.0f} MB")
    print(f"memory_ratio={mem['patched'] / mem['vanilla']:.4f}")
    print(f"overhead_ratio={medians['patched'] / medians['vanilla']:.4f}")


if __name__ == "__main__":
    main()
