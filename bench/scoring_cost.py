"""What scoring costs, on the embedded model (or ``--model``), each side measured in the same run.

1. The one-pass scorer vs plain forward passes over the same token sequences (default task, one sample
   per forward), and the agreement of teacher-forced exact match with real greedy generation.
2. Shared-prefix scoring at the size that matters: ``--contexts`` key-value haystacks of ~2K tokens,
   ``--queries`` questions each, scored from one cached prefix vs one forward per sample.

Last line: per_sample_ratio=<shared time per sample / one-forward time per sample>
max_abs_diff=<largest per-token log-prob difference> agreement=<teacher-forced vs generated exact match>.
"""

from __future__ import annotations

import argparse
import resource

import torch

from common import embedded, interleaved


def one_pass_vs_plain(model, tok, items, repeats: int, max_new_tokens: int) -> None:
    from lpes_framework.scoring.generate import score_generate
    from lpes_framework.scoring.teacher_forced import score_teacher_forced

    pad = tok.pad_token_id

    def plain():
        with torch.no_grad():
            for item in items:
                model(torch.tensor([item.ids]), use_cache=False)

    def scorer():
        score_teacher_forced(model, items, batch_size=1, pad_id=pad, share_prefix=False)

    medians = interleaved({"plain": plain, "scorer": scorer}, repeats)
    forced = score_teacher_forced(model, items, batch_size=1, pad_id=pad, share_prefix=False)
    generated = score_generate(model, items, batch_size=1, pad_id=pad, tokenizer=tok, max_new_tokens=max_new_tokens,
                               share_prefix=False)
    agree = sum(f.exact == g.exact for f, g in zip(forced, generated)) / len(items)
    print(f"[one pass] {len(items)} prompts (~{len(items[0].ids)} tokens), batch 1: plain forwards "
          f"{medians['plain']:.2f} s, scorer {medians['scorer']:.2f} s")
    print(f"scoring_cost_ratio={medians['scorer'] / medians['plain']:.4f} agreement={agree:.4f}")


def cache_mb(model, prefix_tokens: int, copies: int) -> float:
    """Size of ``copies`` KV caches of the prefix (keys and values of every layer)."""
    config = model.config.get_text_config()
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    per_token = 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * model.dtype.itemsize
    return per_token * prefix_tokens * copies / 2**20


def shared_vs_per_sample(model, tok, items, repeats: int, batch_size: int, max_new_tokens: int) -> None:
    from lpes_framework.scoring import prefix_groups
    from lpes_framework.scoring.generate import score_generate
    from lpes_framework.scoring.teacher_forced import score_teacher_forced

    pad = tok.pad_token_id
    results = {}

    def per_sample():
        results["per_sample"] = score_teacher_forced(model, items, batch_size=1, pad_id=pad, share_prefix=False)

    def shared():
        results["shared"] = score_teacher_forced(model, items, batch_size=batch_size, pad_id=pad, share_prefix=True)

    medians = interleaved({"per_sample": per_sample, "shared": shared}, repeats)
    diff = max(abs(a - b) for s, p in zip(results["shared"], results["per_sample"])
               for a, b in zip(s.token_logprobs, p.token_logprobs))
    same_flags = all(s.exact == p.exact for s, p in zip(results["shared"], results["per_sample"]))
    generated = score_generate(model, items, batch_size=batch_size, pad_id=pad, tokenizer=tok,
                               max_new_tokens=max_new_tokens, share_prefix=True)
    agree = sum(f.exact == g.exact for f, g in zip(results["shared"], generated)) / len(items)
    groups = prefix_groups(items)
    prefix = min(length for length, _ in groups)
    print(f"[shared prefix] {len(groups)} contexts x {len(items) // len(groups)} queries, prompts "
          f"~{len(items[0].ids)} tokens (shared prefix {prefix}), suffix batch {batch_size}")
    print(f"one forward per sample {medians['per_sample']:.2f} s, shared prefix {medians['shared']:.2f} s; "
          f"exact match {sum(r.exact for r in results['shared'])}/{len(items)}, identical flags {same_flags}, "
          f"generated {sum(g.exact for g in generated)}")
    print(f"KV cache of one suffix batch {cache_mb(model, prefix, batch_size):.0f} MB; process peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print(f"per_sample_ratio={medians['shared'] / medians['per_sample']:.4f} max_abs_diff={diff:.2e} "
          f"agreement={agree:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompts", type=int, default=20, help="part 1: prompts of the default task")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="smollm2", help="model config name (e.g. qwen2.5-0.5b)")
    parser.add_argument("--pairs", type=int, default=90, help="part 2: key-value pairs per haystack (~2K tokens)")
    parser.add_argument("--contexts", type=int, default=1)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=10, help="part 2: suffixes per forward")
    parser.add_argument("--shared-repeats", type=int, default=2)
    parser.add_argument("--skip-one-pass", action="store_true")
    args = parser.parse_args()
    from lpes_framework.config import build_tasks
    from lpes_framework.tasks import TASKS

    cfg, model, tok, info = embedded([f"model={args.model}"])
    print(f"{info.name}, torch threads {torch.get_num_threads()}")
    if not args.skip_one_pass:
        task = next(iter(build_tasks(cfg).values()))
        one_pass_vs_plain(model, tok, task.encode("test", tok)[: args.prompts], args.repeats, task.max_new_tokens)
    positions = [round(i * (args.pairs - 1) / (args.queries - 1)) for i in range(args.queries)]
    haystacks = TASKS.build({"name": "kv_retrieval", "pairs": args.pairs, "gold_positions": positions,
                             "samples_per_position": args.contexts, "key_kind": "hex", "answer_prefix": '"',
                             "layout": "queries"})
    shared_vs_per_sample(model, tok, haystacks.encode("test", tok), args.shared_repeats, args.batch_size,
                         haystacks.max_new_tokens)


if __name__ == "__main__":
    main()
