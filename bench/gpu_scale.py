"""What a 7B-class search costs: a randomly initialised model of Llama-3-8B's shape, measured per step.

Llama-3-8B's shape (hidden 4096, 32 heads / 8 KV heads, head 128, MLP 14336, vocab 128256, rope theta 5e5,
rope type llama3), ``--layers`` decoder layers (default 32 on a GPU, 2 on the CPU), no weights needed. At
each ``--lengths`` context (default 4K / 16K / 32K on a GPU, 4K on the CPU):

- prefill: one forward over the context, unpatched and with 32 distinct layer factors (the hooks);
- scoring: shared-prefix teacher-forced scoring of ``--queries`` questions against that context, per sample;
- gradient: one value-and-gradient pass over the same samples (forward with autograd + backward);
- peak memory of the gradient pass (GPU: ``max_memory_allocated``; CPU: the growth of peak RSS);
- decode: one cached decoding step of the decoder (the LM head, which the patch does not touch, left
  out) at that length, unpatched and patched, and the hooks' cost per layer in microseconds (what the
  patch adds to every generated token, whatever the device).

Times scale with the layer count (every layer costs the same), so ``docs/scaling.md`` extrapolates
CPU figures of 2 layers to 32, and says so. Last line: ``layers=<n> length=<longest> prefill_s=...
score_per_sample_s=... gradient_s=... gradient_peak_gb=... hook_us_per_layer=... decode_overhead=<patched
/ unpatched decoder step>``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

LLAMA3_8B = dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                 head_dim=128, vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5,
                 rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                  "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                  "original_max_position_embeddings": 8192})


def build(layers: int, device: str, dtype: torch.dtype):
    from transformers import AutoModelForCausalLM, LlamaConfig

    config = LlamaConfig(num_hidden_layers=layers, **LLAMA3_8B)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model.eval().requires_grad_(False)


def timed(fn, repeats: int, sync) -> float:
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def samples(length: int, queries: int, vocab: int):
    """``queries`` questions sharing a ``length``-token context, each answered by 4 context tokens."""
    from lpes_framework.tasks.base import Encoded, Sample

    rng = np.random.default_rng(0)
    context = rng.integers(10, vocab, size=length - 12).tolist()
    items = []
    for q in range(queries):
        where = int(q * (len(context) - 4) / max(queries - 1, 1))
        answer = context[where:where + 4]
        ids = context + [5, 6, 7 + q] + answer
        items.append(Encoded(ids=ids, answer_start=len(ids) - 4, sample=Sample(prompt="", answer="x", position=q, draw=0)))
    return items


def main() -> None:
    gpu = torch.cuda.is_available()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=32 if gpu else 2)
    parser.add_argument("--lengths", type=int, nargs="+", default=[4096, 16384, 32768] if gpu else [4096])
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--dtype", default="bfloat16" if gpu else "float32",
                        help="bfloat16 on a GPU; float32 on the CPU, where bfloat16 runs ~5x slower")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from lpes_framework.position.curves import build_curve
    from lpes_framework.judging.fitness import FitnessWeights
    from lpes_framework.position import apply_layer_scaling, build_scheme
    from lpes_framework.judging.fitness import sample_coefficients
    from lpes_framework.scoring.gradient import value_and_gradient
    from lpes_framework.scoring.teacher_forced import score_teacher_forced

    device = "cuda" if gpu else "cpu"
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    if not gpu:
        torch.set_num_threads(torch.get_num_threads())
    model = build(args.layers, device, getattr(torch, args.dtype))
    scheme = build_scheme({"name": "pi"})
    factors = list(np.linspace(0.8, 1.6, args.layers))
    curve = build_curve({"name": "free", "low": 0.5, "high": 3.0}, args.layers)
    print(f"Llama-3-8B shape, {args.layers} layers, {args.dtype} on {torch.cuda.get_device_name() if gpu else 'CPU'} "
          f"({torch.get_num_threads()} threads)")
    line = {}
    for length in args.lengths:
        ids = torch.randint(10, LLAMA3_8B["vocab_size"], (1, length), device=device)

        def prefill():
            with torch.no_grad():
                model(input_ids=ids, logits_to_keep=1)

        unpatched = timed(prefill, args.repeats, sync)
        with apply_layer_scaling(model, factors, scheme):
            patched = timed(prefill, args.repeats, sync)
        items = samples(length, args.queries, LLAMA3_8B["vocab_size"])
        with apply_layer_scaling(model, factors, scheme):
            score = timed(lambda: score_teacher_forced(model, items, batch_size=args.queries), args.repeats, sync)
            baseline = score_teacher_forced(model, items, batch_size=args.queries)
        coefficients = sample_coefficients({str(q) for q in range(args.queries)}, 1.0, FitnessWeights.defaults(), 1)
        if gpu:
            torch.cuda.reset_peak_memory_stats()
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        gradient = timed(lambda: value_and_gradient(model, {"t": items}, {"t": baseline}, {"t": coefficients},
                                                    np.asarray(factors), curve, scheme, batch_size=args.queries,
                                                    pad_id=0, share_prefix=True), 1, sync)
        peak = (torch.cuda.max_memory_allocated() if gpu else
                (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) * 1024) / 2**30
        with torch.no_grad():
            cache = model(input_ids=ids, use_cache=True, logits_to_keep=1).past_key_values
        step = torch.tensor([[11]], device=device)
        position = torch.tensor([[length]], device=device)

        decoder = model.get_decoder()  # without the LM head, whose weight read dominates a CPU step

        def decode():
            with torch.no_grad():
                decoder(input_ids=step, position_ids=position, past_key_values=cache, use_cache=True)
                cache.crop(-1)  # the next step decodes the same position again

        decode_unpatched = timed(decode, 20 * args.repeats, sync)
        with apply_layer_scaling(model, factors, scheme):
            decode_patched = timed(decode, 20 * args.repeats, sync)
        hook_us = (decode_patched - decode_unpatched) / args.layers * 1e6
        print(f"[{length} tokens] prefill {unpatched:.3f} s unpatched, {patched:.3f} s patched ({patched / unpatched:.3f}x); "
              f"scoring {score / args.queries:.3f} s per sample ({args.queries} questions, shared prefix); "
              f"gradient pass {gradient:.3f} s ({gradient / score:.2f}x the scoring), peak {peak:.2f} GB; "
              f"decode step {decode_unpatched * 1e3:.2f} ms unpatched, {decode_patched * 1e3:.2f} ms patched "
              f"({hook_us:+.0f} us per layer)")
        line = {"layers": args.layers, "length": length, "prefill_s": f"{unpatched:.3f}",
                "score_per_sample_s": f"{score / args.queries:.3f}", "gradient_s": f"{gradient:.3f}",
                "gradient_peak_gb": f"{peak:.2f}", "hook_us_per_layer": f"{hook_us:.0f}",
                "decode_overhead": f"{decode_patched / decode_unpatched:.4f}"}
    print(" ".join(f"{k}={v}" for k, v in line.items()))


if __name__ == "__main__":
    main()
