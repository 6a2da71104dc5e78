"""LPES against the strongest zero-cost competitors on the held-out haystacks: the shipped preset re-tested
in its own regime (``heldout_gain.retest``) next to PosScale and Found-in-the-Middle, each a factors file
whose scheme holds the setting tuned on the search split (runs/qwen-competitors/command.sh), and learned
head scales (SEAL-style, runs/qwen-headscale/command.sh: trained like the preset), with paired bootstrap
intervals of the preset minus each; with ``--stacked`` (layer factors and head scales trained as one
vector) also the stacked file minus the preset. Then the inference cost of each method, timed side by side
against the unpatched model: a prefill of ``--latency-tokens`` and ``--decode`` greedy steps; head scales
both hooked and folded into ``o_proj`` (what an exported model runs). With the committed ``--out`` folder
every method's rows are reused, so the default run only times.
Needs pip install plugins/lpes-posscale plugins/lpes-fim plugins/lpes-headscale. Last line:
lpes_vs_posscale=<points, middle> ci_low=<lower bound> lpes_vs_fim=<points> ci_low_fim=<lower bound>
lpes_vs_headscale=<points> ci_low_headscale=<lower bound> [stacked_vs_lpes=<points> ci_low_stacked=<lower bound>]
posscale_latency=<ratio> fim_latency=<ratio> headscale_latency=<ratio, hooked> headscale_folded_latency=<ratio>
(latency: prefill + decode seconds over the unpatched model's)."""

from __future__ import annotations

import argparse
from pathlib import Path

import common
from lpes_framework.commands.cli import one_line_errors
from lpes_framework.commands.retest import DEFAULT_MODEL, DEFAULT_PRESET, retest

RUN = Path("runs/qwen-competitors")


def timed_methods(files: dict[str, str], model_group: str, tokens: int, steps: int, repeats: int,
                  folded: dict[str, str] | None = None) -> dict:
    """{method: {"prefill": s, "decode": s}} medians over ``repeats`` rounds after a warm-up round; each
    round runs every method in turn (the unpatched model and each factors file, its patch installed for the
    round; ``folded`` files on a copy of the model whose weights carry them), so machine noise hits all alike."""
    import copy
    import statistics
    import time

    import torch

    from lpes_framework.model.factors_file import load_factors
    from lpes_framework.position import apply_layer_scaling, build_scheme
    from lpes_framework.position.attention_patch import content_free_ids

    _, model, _, _ = common.embedded([f"model={model_group}"])
    ids = content_free_ids(model.config.get_text_config().vocab_size, tokens).to(model.device)
    records = {name: load_factors(path) for name, path in files.items()}
    models = {name: model for name in ["unpatched", *records]}
    fixed = {}  # the folded models' remaining RoPE patches, installed for the whole timing
    for name, path in (folded or {}).items():
        record = load_factors(path)
        models[name] = copy.deepcopy(model)
        fixed[name] = build_scheme(record["scheme"]).fold(models[name], record["factors"])

    def run_once(model, record) -> tuple[float, float]:
        patch = apply_layer_scaling(model, record["factors"], build_scheme(record["scheme"])) if record else None
        try:
            start = time.perf_counter()
            out = model(ids, use_cache=True)
            middle = time.perf_counter()
            token = out.logits[:, -1:].argmax(-1)
            for step in range(steps):
                out = model(token, cache=out.cache, position_ids=torch.tensor([[tokens + step]], device=model.device))
                token = out.logits[:, -1:].argmax(-1)
            return middle - start, time.perf_counter() - middle
        finally:
            if patch:
                patch.remove()

    rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in models}
    with torch.no_grad():
        for r in range(repeats + 1):
            for name in rounds:
                seconds = run_once(models[name], records.get(name))
                if r:  # round 0 warms up every method's code path
                    rounds[name].append(seconds)
    return {name: {"prefill": statistics.median(p for p, _ in runs), "decode": statistics.median(d for _, d in runs)}
            for name, runs in rounds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default=DEFAULT_PRESET, help="shipped preset name or factors file (LPES)")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--posscale", default=str(RUN / "posscale-best" / "best_factors.json"))
    parser.add_argument("--fim", default=str(RUN / "fim-best" / "best_factors.json"))
    parser.add_argument("--headscale", default="runs/qwen-headscale/search/best_factors.json")
    parser.add_argument("--stacked", default=None, help="layer factors and head scales trained together")
    parser.add_argument("--samples", type=int, default=100, help="haystacks per gold position (the first ones of the folder's rows are reused)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("outputs/competitors"), help="evaluate folder; its rows are reused "
                        f"(the committed one: {RUN / 'heldout'})")
    parser.add_argument("--latency-tokens", type=int, default=1024)
    parser.add_argument("--decode", type=int, default=32, help="greedy decoding steps timed after the prefill")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    others = [args.posscale, args.fim, args.headscale] + ([args.stacked] if args.stacked else [])
    payload, names, task = one_line_errors(retest)(args.preset, args.model, args.samples, "test", args.threads,
                                                   [1.5], others, args.out)
    lpes, ps, fim, hs = (names[f] for f in (args.preset, args.posscale, args.fim, args.headscale))
    versus = {other: payload["intervals"][f"{lpes} - {other}"][task]["middle"] for other in (ps, fim, hs)}
    folded = f"{hs} folded"
    times = timed_methods({lpes: args.preset, ps: args.posscale, fim: args.fim, hs: args.headscale}, args.model,
                          args.latency_tokens, args.decode, args.repeats, folded={folded: args.headscale})
    base = times["unpatched"]
    print(f"{'method':32} {'middle vs unpatched':>22} {'prefill':>9} {'decode':>9} (x unpatched, "
          f"{args.latency_tokens} tokens + {args.decode} steps)")
    for name in times:
        middle = payload["intervals"].get(f"{name} - unpatched", {}).get(task, {}).get("middle")
        gain = f"{middle['delta']:+.1f} [{middle['low']:+.1f}, {middle['high']:+.1f}]" if middle else "-"
        print(f"{name:32} {gain:>22} {times[name]['prefill'] / base['prefill']:9.3f} "
              f"{times[name]['decode'] / base['decode']:9.3f}")
    for other, middle in versus.items():
        print(f"{lpes} - {other}: middle {middle['delta']:+.1f} [{middle['low']:+.1f}, {middle['high']:+.1f}]")
    stacked = ""
    if args.stacked:  # the stacked file is scored against the preset by retest (the preset gets its intervals)
        middle = payload["intervals"][f"{lpes} - {names[args.stacked]}"][task]["middle"]
        stacked = f"stacked_vs_lpes={-middle['delta']:.2f} ci_low_stacked={-middle['high']:.2f} "

    def latency(name):
        return sum(times[name].values()) / sum(base.values())

    print(f"lpes_vs_posscale={versus[ps]['delta']:.2f} ci_low={versus[ps]['low']:.2f} "
          f"lpes_vs_fim={versus[fim]['delta']:.2f} ci_low_fim={versus[fim]['low']:.2f} "
          f"lpes_vs_headscale={versus[hs]['delta']:.2f} ci_low_headscale={versus[hs]['low']:.2f} {stacked}"
          f"posscale_latency={latency(ps):.3f} fim_latency={latency(fim):.3f} "
          f"headscale_latency={latency(hs):.3f} headscale_folded_latency={latency(folded):.3f}")


if __name__ == "__main__":
    main()
