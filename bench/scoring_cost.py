"""One-pass scorer vs plain forward passes over the same token sequences (default task, embedded model),
and the agreement of teacher-forced exact match with real greedy generation.
Last line: scoring_cost_ratio=<scorer/plain> agreement=<share of prompts where both metrics agree>."""

from __future__ import annotations

import argparse

import torch

from common import embedded, interleaved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from lpes_framework.cli import build_tasks
    from lpes_framework.scoring import score_generate, score_teacher_forced

    cfg, model, tok, info = embedded()
    task = next(iter(build_tasks(cfg).values()))
    items = task.encode("test", tok)[: args.prompts]
    pad = tok.pad_token_id

    def plain():
        with torch.no_grad():
            for item in items:
                model(torch.tensor([item.ids]), use_cache=False)

    def scorer():
        score_teacher_forced(model, items, batch_size=1, pad_id=pad)

    medians = interleaved({"plain": plain, "scorer": scorer}, args.repeats)
    forced = score_teacher_forced(model, items, batch_size=1, pad_id=pad)
    generated = score_generate(model, items, batch_size=1, pad_id=pad, tokenizer=tok,
                               max_new_tokens=task.max_new_tokens)
    # greedy reproduces the answer tokens <=> the generated text holds the gold answer right away
    agree = sum(f.exact == g.exact for f, g in zip(forced, generated)) / len(items)
    first_agree = sum(f.first == g.first for f, g in zip(forced, generated)) / len(items)
    print(f"{info.name}, {len(items)} prompts of {task.name} (~{len(items[0].ids)} tokens), batch 1")
    print(f"plain forwards {medians['plain']:.2f} s, scorer {medians['scorer']:.2f} s")
    print(f"exact match: teacher-forced {sum(f.exact for f in forced)}, generation {sum(g.exact for g in generated)};"
          f" first-token agreement {first_agree:.2f}")
    print(f"scoring_cost_ratio={medians['scorer'] / medians['plain']:.4f} agreement={agree:.4f}")


if __name__ == "__main__":
    main()
