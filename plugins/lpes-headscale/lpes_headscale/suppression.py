"""Suppression heads for ``pos=pear``: the heads whose output most lowers a model's copying of its context.

    python -m lpes_headscale.suppression --model qwen2.5-0.5b --top 16 --out heads.json

The proxy task (PEAR's first stage, arXiv 2409.19745): a list of random words (wonderwords' nouns, as RULER
draws its words), an instruction to repeat it, and the list again; the copy is scored by teacher forcing (the
mean log-prob of its tokens). A head's effect is how much that log-prob rises when the head's output is removed
(scale 0); the ``top`` heads of positive effect are the suppression heads. Where this departs from the paper:
PEAR patches paths against a corrupted run; here the whole head is removed (its total effect, not one path),
either exactly (``--method ablation``: a forward per head and sample) or by the first-order estimate
(``--method gradient``, the default: one forward and backward a sample, the effect being minus the copy
log-prob's gradient with respect to the head's scale at 1). The file holds every head's effect, the chosen list
and the ``pos`` settings a search takes; the scales are then learned by ``optimizer=gradient`` on the tasks
of the search (the paper learns them on the proxy task).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from lpes_framework.errors import LpesError

from .scheme import HeadScale

METHODS = ("gradient", "ablation")
INSTRUCTION = "\n\nRepeat the list above exactly, word for word:\n"


def proxy_samples(tokenizer, samples: int, words: int, seed: int) -> list[tuple[list[int], int]]:
    """(token ids, index of the copy's first token) of each proxy sample: the list, the instruction, the list."""
    from lpes_framework.tasks._ruler import word_list

    vocabulary = word_list("noun")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(samples):
        listing = " ".join(vocabulary[i] for i in rng.choice(len(vocabulary), size=words, replace=False))
        prompt = tokenizer(f"Here is a list of words:\n{listing}{INSTRUCTION}", add_special_tokens=True)["input_ids"]
        copy = tokenizer(listing, add_special_tokens=False)["input_ids"]
        out.append((list(prompt) + list(copy), len(prompt)))
    return out


def copy_logprob(model, ids: list[int], start: int) -> torch.Tensor:
    """Mean log-prob of tokens ``start`` on given the ones before them (a tensor: it carries a gradient where
    the head scales do)."""
    tokens = torch.tensor([ids])
    logits = model(tokens).logits[0, start - 1:-1]
    logits = logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits  # a float64 model stays so
    return torch.log_softmax(logits, dim=-1).gather(1, tokens[0, start:, None]).mean()


def head_effects(model, samples: list[tuple[list[int], int]], method: str = "gradient") -> tuple[float, np.ndarray]:
    """(the copy's mean log-prob, (layers, heads) rise of it when each head is removed) over ``samples``."""
    from lpes_framework.position import rope_layout
    from lpes_framework.scoring.gradient import frozen_weights

    if method not in METHODS:
        raise LpesError(f"suppression: method must be one of {', '.join(METHODS)}, got {method!r}")
    _, layers, _ = rope_layout(model)
    attn = layers[0].self_attn
    shape = (len(layers), attn.o_proj.in_features // attn.head_dim)
    scheme = HeadScale()
    if method == "gradient":
        scales = torch.ones(shape, dtype=torch.float64, requires_grad=True)
        total = 0.0
        with frozen_weights(model), scheme.install_traced(model, scales), torch.enable_grad():
            for ids, start in samples:
                lp = copy_logprob(model, ids, start) / len(samples)
                lp.backward()
                total += float(lp.detach())
        return total, -scales.grad.numpy()

    def mean_logprob(scales: torch.Tensor) -> float:
        # a tensor of scales, as the gradient path takes them: a scale of 0 (a head removed) is no layer factor
        with torch.no_grad(), scheme.install_traced(model, scales):
            return float(np.mean([float(copy_logprob(model, ids, start)) for ids, start in samples]))

    from tqdm import tqdm

    base = mean_logprob(torch.ones(shape, dtype=torch.float64))
    effects = np.zeros(shape)
    # a bar on a terminal, none in a log (its frames would be lines): a forward a head and sample
    for layer, head in tqdm(np.ndindex(*shape), total=effects.size, desc="heads removed", disable=None):
        scales = torch.ones(shape, dtype=torch.float64)
        scales[layer, head] = 0.0
        effects[layer, head] = mean_logprob(scales) - base
    return base, effects


def suppression_heads(effects: np.ndarray, top: int) -> list[list[int]]:
    """The ``top`` heads whose removal raises the copy's log-prob most (only those that raise it), largest first."""
    order = np.argsort(-effects, axis=None, kind="stable")
    picked = [divmod(int(i), effects.shape[1]) for i in order[:top]]
    return [[layer, head] for layer, head in picked if effects[layer, head] > 0]


def check_settings(top, samples, words, method) -> None:
    for name, value, least in (("top", top, 1), ("samples", samples, 1), ("words", words, 2)):
        if not isinstance(value, int) or value < least:
            raise LpesError(f"suppression: --{name} must be a whole number of at least {least}, got {value!r}")
    if method not in METHODS:
        raise LpesError(f"suppression: --method must be one of {', '.join(METHODS)}, got {method!r}")


def find(model_group: str, top: int = 16, samples: int = 8, words: int = 200, method: str = "gradient",
         seed: int = 0) -> dict:
    """Every head's effect on the proxy task for the model of config group ``model_group``, and the chosen list."""
    from lpes_framework.config import compose_config
    from lpes_framework.model.load import load_model

    check_settings(top, samples, words, method)  # before any weights load
    hf, tokenizer, info = load_model(compose_config("config", [f"model={model_group}"]).model)
    proxy = proxy_samples(tokenizer, samples, words, seed)
    logprob, effects = head_effects(hf, proxy, method)
    heads = suppression_heads(effects, top)
    if not heads:
        raise LpesError("suppression: no head's removal raises the copy's log-prob: nothing for PEAR to re-weight")
    return {"model": info.as_dict(), "proxy": {"samples": samples, "words": words, "seed": seed, "method": method,
                                               "tokens": max(len(ids) for ids, _ in proxy)},
            "copy_logprob": logprob, "effects": effects.tolist(), "heads": heads,
            "pos": {"name": "pear", "heads": heads, "base": None}}


def main(argv: list[str] | None = None) -> None:
    from lpes_framework.commands.cli import one_line_errors
    from lpes_framework.io.atomic import write_json_atomic

    parser = argparse.ArgumentParser(prog="python -m lpes_headscale.suppression", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a model config group, e.g. qwen2.5-0.5b")
    parser.add_argument("--top", type=int, default=16, help="heads to list (those of positive effect among them)")
    parser.add_argument("--samples", type=int, default=8, help="proxy samples")
    parser.add_argument("--words", type=int, default=200, help="words in each sample's list")
    parser.add_argument("--method", default="gradient", help="gradient (first order) or ablation (a forward a head)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    args = parser.parse_args(argv)
    found = one_line_errors(find)(args.model, args.top, args.samples, args.words, args.method, args.seed)
    write_json_atomic(args.out, found)
    layer, head = found["heads"][0]
    print(f"wrote {args.out}: {len(found['heads'])} suppression heads (copy log-prob {found['copy_logprob']:.3f}; "
          f"removing the first, layer {layer} head {head}, raises it by {found['effects'][layer][head]:+.3f})")
    print("search their scales with: pos=pear 'pos.heads=" + str(found["heads"]).replace(" ", "") + "'")


if __name__ == "__main__":
    main()
