"""Factors served in vLLM (plugins/lpes-vllm) against transformers + lpes, and what they cost there.

Runs in the vLLM environment (``make test-vllm`` builds it: vLLM, lpes-framework beside it without its
dependencies, the plugin):

    .venv-vllm/bin/python bench/serving.py [--model smollm2] [--factors <file or preset>] [--haystacks 8]

Three model folders are written once: the model with the factors (a self-contained export: the ``lpes``
block the plugin reads, and the modeling file transformers runs), the same scheme at all-ones
(``save_patched``), and the stock model. Prompts are key-value haystacks of the project's
task (``--pairs`` pairs, the gold at every ``--depths`` position, test split), given to both engines as
token ids. Greedy generations and the log-prob of each generated token come from vLLM + plugin and from
transformers + ``load_patched``; the same two figures for the stock model say how far the engines' kernels
differ anyway (the plugin must add nothing to that). Token agreement counts positions where both engines
produced the same token with the same tokens before it; log-prob differences are taken over those.
Speed: prefill and decode tokens per second of the patched and the stock engine, alternated over
``--rounds`` rounds (both engines held at once, so a round compares them under the same load).

Last line: ``token_agreement=<patched> stock_agreement=<stock> max_logprob_diff=<patched>
stock_logprob_diff=<stock> identity=<1 if all-ones equals stock vLLM exactly> throughput_ratio=<patched /
stock decode tokens/s> prefill_ratio=<the same for prefill> remote_code=<1 if the patched folder, a
self-contained export, generates the same greedy tokens with trust_remote_code where lpes_framework cannot
be imported>``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import common  # noqa: F401  (puts the repository on the path)
from vllm_parity import (ENGINE, agreement, close, folders, prompts, ramp_file, remote_code_tokens, transformers_outputs,
                         vllm_outputs)


def throughput(engines: dict, ids: list[list[int]], rounds: int, new_tokens: int) -> dict[str, dict[str, float]]:
    """Prefill and decode tokens per second of each engine, alternated round by round; medians."""
    from vllm import SamplingParams, TokensPrompt

    batch = [TokensPrompt(prompt_token_ids=p) for p in ids]
    prompt_tokens = sum(map(len, ids))
    speeds: dict[str, dict[str, list[float]]] = {name: {"prefill": [], "decode": []} for name in engines}
    names = list(engines)
    for round_ in range(rounds):
        for name in names if round_ % 2 == 0 else names[::-1]:  # ABBA: a drift in the machine's load cancels
            llm = engines[name]
            start = time.perf_counter()
            llm.generate(batch, SamplingParams(temperature=0, max_tokens=1), use_tqdm=False)
            prefill = time.perf_counter() - start
            start = time.perf_counter()
            llm.generate(batch, SamplingParams(temperature=0, max_tokens=new_tokens, ignore_eos=True), use_tqdm=False)
            whole = time.perf_counter() - start
            speeds[name]["prefill"].append(prompt_tokens / prefill)
            # the decode steps' rate: the second call's time less its own prefill
            speeds[name]["decode"].append(len(ids) * (new_tokens - 1) / max(whole - prefill, 1e-9))
    return {name: {k: statistics.median(v) for k, v in s.items()} for name, s in speeds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2", help="a model config group (default: the embedded SmolLM2)")
    parser.add_argument("--factors", help="a factors file or preset (default: a linear NTK ramp 1 -> 1.5)")
    parser.add_argument("--pairs", type=int, default=50, help="key-value pairs a haystack (50: ~1K tokens)")
    parser.add_argument("--depths", type=int, nargs="+", help="gold pair indices (default: 5 spread over the pairs)")
    parser.add_argument("--haystacks", type=int, default=4, help="haystacks a depth")
    parser.add_argument("--new-tokens", type=int, default=16, help="greedy tokens compared per prompt")
    parser.add_argument("--speed-tokens", type=int, default=64, help="tokens per prompt in the decode timing")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--memory", type=float, default=0.1, help="share of RAM each engine reserves for weights, "
                        "activations and KV cache (0.25 for Qwen2.5-0.5B in float32)")
    parser.add_argument("--out", type=Path, default=Path("outputs/serving"))
    args = parser.parse_args()

    from vllm import LLM

    out = args.out / args.model
    factors = args.factors or str(ramp_file(args.model, out))
    paths = folders(args.model, factors, out)
    depths = args.depths or sorted({round(i * (args.pairs - 1) / 4) for i in range(5)})
    ids = prompts(paths["stock"], args.pairs, depths, args.haystacks)
    longest = max(map(len, ids)) + max(args.new_tokens, args.speed_tokens)
    print(f"{len(ids)} prompts of {min(map(len, ids))}-{max(map(len, ids))} tokens, {args.new_tokens} new tokens")
    reference = {name: transformers_outputs(paths[name], ids, args.new_tokens) for name in ("patched", "stock")}
    engine = ENGINE | {"gpu_memory_utilization": args.memory}
    engines = {name: LLM(model=str(paths[name]), max_model_len=longest, **engine) for name in ("patched", "stock")}
    served = {name: vllm_outputs(llm, ids, args.new_tokens) for name, llm in engines.items()}
    token_agreement, logprob_diff = agreement(served["patched"], reference["patched"])
    stock_agreement, stock_diff = agreement(served["stock"], reference["stock"])
    _, changed = agreement(served["patched"], served["stock"])
    speeds = throughput(engines, ids, args.rounds, args.speed_tokens)
    close(engines["patched"])
    ones = vllm_outputs(LLM(model=str(paths["ones"]), max_model_len=longest, **engine), ids, args.new_tokens)
    identity = int(ones == served["stock"])
    for name, s in speeds.items():
        print(f"{name:>8}: prefill {s['prefill']:8.1f} tok/s   decode {s['decode']:7.1f} tok/s (median of {args.rounds})")
    print(f"patched vs stock in vLLM: log-probs of the same tokens differ by up to {changed:.3g} (the factors act)")
    summary = {"token_agreement": token_agreement, "stock_agreement": stock_agreement,
               "max_logprob_diff": logprob_diff, "stock_logprob_diff": stock_diff, "identity": identity,
               "throughput_ratio": speeds["patched"]["decode"] / speeds["stock"]["decode"],
               "prefill_ratio": speeds["patched"]["prefill"] / speeds["stock"]["prefill"],
               "remote_code": int(remote_code_tokens(paths["patched"], ids, args.new_tokens)
                                  == [r["tokens"] for r in reference["patched"]])}
    (out / "serving.json").write_text(json.dumps(summary, indent=2))
    print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in summary.items()))


if __name__ == "__main__":
    main()
