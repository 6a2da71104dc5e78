"""The gradient optimizer's two promises, on the embedded model (or ``--model``), measured in one run.

1. Exactness: the autograd gradient of the search objective w.r.t. one factor per layer (free curve,
   ``--scheme``) against central finite differences (step ``--eps`` on each gene), on one minibatch of
   ``--contexts`` key-value haystacks. This part runs in float64 (weights, and the cos/sin tables, which
   the patch builds in float32 as transformers does): float32 rounding moves a finite difference of a
   small step by a few percent, the size of the check. Layers whose gradient is below ``--negligible``
   of the largest are reported but not judged.
2. Cost: one value-and-gradient pass (forward with autograd + backward) against one scoring pass of
   the same patched model on the same samples, shared prefix on in both, interleaved ``--repeats`` times.

Last line: grad_rel_err=<worst relative error over the judged layers>
step_cost_ratio=<forward+backward seconds / forward seconds>. Targets: <= 0.02 and <= 3.5.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from common import embedded, interleaved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--scheme", default="pi")
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--contexts", type=int, default=2)
    parser.add_argument("--eps", type=float, default=1e-4)
    parser.add_argument("--negligible", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--spread", type=float, default=0.02, help="sd of log(factor) around 1 (every layer differs)")
    parser.add_argument("--layers", type=int, nargs="*", help="only these layers (default: all)")
    args = parser.parse_args()

    from lpes_framework.position.curves import build_curve
    from lpes_framework.execution import SampleSet
    from lpes_framework.judging.fitness import FitnessWeights
    from lpes_framework.position import build_scheme
    from lpes_framework.judging.fitness import sample_coefficients
    from lpes_framework.scoring.gradient import value_and_gradient
    from lpes_framework.tasks import TASKS

    positions = [0, args.pairs // 4, args.pairs // 2, 3 * args.pairs // 4, args.pairs - 1]
    cfg, model, tok, info = embedded([f"model={args.model}"])
    task = TASKS.build({"name": "kv_retrieval", "pairs": args.pairs, "gold_positions": positions,
                        "samples_per_position": args.contexts, "layout": "queries", "key_kind": "hex"})
    samples = SampleSet(tok, {"kv": task}, split="search", trained_context=info.trained_context, batch_size=8,
                          progress=False)
    items = samples.encoded["kv"]
    baseline = samples.rows(model)["kv"]
    curve = build_curve({"name": "free", "low": 0.5, "high": 3.0}, info.n_layers)
    scheme = build_scheme({"name": args.scheme})
    # the end guard's hinge has a kink where a sample's log-prob equals the unpatched one: a finite
    # difference across it is not a derivative, so the exactness check takes the smooth part alone
    weights = FitnessWeights.defaults(logprob_weight=10.0, end_penalty=0.0)
    from lpes_framework.position import patch

    float32_tables = patch.rotary_tables

    def float64_tables(position_ids, inv_freq, scaling, dtype):
        emb = position_ids[..., None].double() * inv_freq.double()
        emb = torch.cat((emb, emb), dim=-1)
        return (emb.cos() * scaling).to(dtype), (emb.sin() * scaling).to(dtype)
    coefficients = sample_coefficients({str(p) for p in positions}, 1.0, weights, per_position=args.contexts)
    rng = np.random.default_rng(0)
    genes = np.exp(rng.normal(0.0, args.spread, info.n_layers))  # near 1, every layer different

    def objective(g, items=items, baseline=baseline):
        return value_and_gradient(model, {"kv": items}, {"kv": baseline}, {"kv": coefficients}, g, curve, scheme,
                                  batch_size=8, pad_id=tok.pad_token_id, share_prefix=True)

    model.double()
    patch.rotary_tables = float64_tables
    exact_baseline = samples.rows(model)["kv"]
    value, grad, _, _ = objective(genes, baseline=exact_baseline)
    print(f"{info.name}: {len(items)} samples of ~{len(items[0].ids)} tokens, {args.scheme} factors per layer; "
          f"objective {value:+.6f}")
    judged, worst = 0, 0.0
    largest = np.abs(grad).max()
    layers = args.layers if args.layers else range(info.n_layers)
    for layer in layers:
        up, down = genes.copy(), genes.copy()
        up[layer] += args.eps
        down[layer] -= args.eps
        fd = (objective(up, baseline=exact_baseline)[0] - objective(down, baseline=exact_baseline)[0]) / (2 * args.eps)
        counted = abs(grad[layer]) >= args.negligible * largest
        err = abs(grad[layer] - fd) / max(abs(fd), 1e-12)
        if counted:
            judged += 1
            worst = max(worst, err)
        print(f"  layer {layer:2d}: autograd {grad[layer]:+.6f}  finite difference {fd:+.6f}  "
              f"rel err {err:.4f}{'' if counted else '  (negligible: not judged)'}")

    model.float()  # the cost in the model's own precision and tables
    patch.rotary_tables = float32_tables

    def forward():
        samples.rows(model, list(curve.factors(genes)), scheme)

    def forward_backward():
        objective(genes)

    forward(), forward_backward()  # warm-up: the first pass after a dtype change pays for allocations
    medians = interleaved({"forward": forward, "forward+backward": forward_backward}, args.repeats)
    print(f"{judged} of {len(layers)} layers judged; forward {medians['forward']:.2f} s, forward + backward "
          f"{medians['forward+backward']:.2f} s (median of {args.repeats}, interleaved)")
    print(f"grad_rel_err={worst:.4f} step_cost_ratio={medians['forward+backward'] / medians['forward']:.4f}")


if __name__ == "__main__":
    main()
