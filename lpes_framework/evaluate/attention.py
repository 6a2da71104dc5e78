"""Why it works (or not): the attention mass each layer puts on the gold span, by gold position.

The papers explain lost-in-the-middle by attention that drifts away from middle positions, and LPES by
scaled layers that spread it more evenly. This measures it: for each sample, the attention the last
prompt token (the one that predicts the answer) pays to the tokens of the gold value in the context,
averaged over heads, one number per layer. The run's own config (model, task, scheme) is reused; the
patched model is the run's ``best_factors.json`` unless ``--factors`` names another file or a preset.
Writes ``attention.json`` and ``attention.png`` next to the run's outputs, or into ``--out``.

Samples that share a context share its KV cache (as in scoring); the model runs with eager attention,
the one implementation that returns attention weights.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import LpesError
from ..tasks.base import Encoded


def gold_span(item: Encoded, tokenizer) -> tuple[int, int] | None:
    """Token range ``[start, end)`` of the prompt that covers the first occurrence of the gold answer's
    text (the value in the haystack), or None when the prompt does not contain it."""
    ids = item.ids[: item.answer_start]
    at = tokenizer.decode(ids).find(item.sample.answer)
    if at < 0:
        return None
    ks = range(len(ids) + 1)

    def chars(k: int) -> int:  # characters decoded from the first k tokens
        return len(tokenizer.decode(ids[:k]))

    start = bisect.bisect_right(ks, at, key=chars) - 1
    end = bisect.bisect_left(ks, at + len(item.sample.answer), key=chars)
    return start, end


def attention_mass(model, items: Sequence[Encoded], tokenizer,
                   progress: Callable[[int], None] | None = None) -> list[tuple[str, np.ndarray]]:
    """(gold position, attention mass on the gold span per layer) for every sample whose prompt holds
    its answer, in the order of ``items``. ``model`` must run eager attention."""
    import torch

    from ..scoring import expanded, prefix_cache, prefix_groups

    device = next(model.parameters()).device
    spans = [gold_span(item, tokenizer) for item in items]
    out: list = [None] * len(items)
    with torch.no_grad():
        for length, members in prefix_groups(items):
            members = [i for i in members if spans[i] is not None]
            if not members:
                continue
            cache = prefix_cache(model, items[members[0]].ids[:length])
            for i in members:
                item, (start, end) = items[i], spans[i]
                suffix = item.ids[length: item.answer_start]
                attn = model(input_ids=torch.tensor([suffix], device=device),
                             position_ids=torch.arange(length, item.answer_start, device=device)[None],
                             cache=expanded(cache, 1), use_cache=True, output_attentions=True,
                             logits_to_keep=1).attentions
                # each layer: (1, heads, suffix, keys); the last row is the token that predicts the answer
                mass = [float(a[0, :, -1, start:end].float().sum(-1).mean()) for a in attn]
                out[i] = (str(item.sample.position), np.asarray(mass))
                if progress:
                    progress(1)
    return [row for row in out if row is not None]


def mass_by_position(rows: list[tuple[str, np.ndarray]]) -> dict[str, list[float]]:
    """Mean mass per layer for each gold position, in the order positions first appear."""
    groups: dict[str, list[np.ndarray]] = {}
    for position, mass in rows:
        groups.setdefault(position, []).append(mass)
    return {p: np.mean(masses, axis=0).tolist() for p, masses in groups.items()}


def format_mass(methods: dict[str, dict[str, list[float]]]) -> str:
    """One row per method: mass on the gold span averaged over layers, by gold position (in percent)."""
    positions = list(next(iter(methods.values())))
    width = max(len(m) for m in methods) + 2
    lines = ["attention on the gold span, % of the answering token's attention, mean over layers",
             "method".ljust(width) + "".join(f"{p:>8}" for p in positions)]
    for name, per in methods.items():
        lines.append(name.ljust(width) + "".join(f"{100 * np.mean(per[p]):8.2f}" for p in positions))
    return "\n".join(lines)


def analyse(run_dir: Path, factors: str | None = None, split: str = "test", samples: int | None = None,
            threads: int | None = None, allow_foreign: bool = False, out: Path | None = None,
            model: str | None = None) -> dict:
    from omegaconf import open_dict

    from ..config import build_tasks, plain, prepare, task_configs
    from ..io.spec import model_differences, read_spec
    from ..model.choice import check_task_reads_no_files, chosen_model
    from ..model.factors_file import load_checked
    from ..model.presets import resolve_factors
    from ..io.atomic import write_json_atomic
    from ..model.load import identify, load_model
    from ..report.plots import plot_attention
    from ..position import apply_layer_scaling, build_scheme

    spec = read_spec(run_dir)
    cfg = spec.cfg()
    recorded_tasks = task_configs(cfg).values()
    if not any(t.get("name") != "perplexity" for t in recorded_tasks):
        raise LpesError(f"{run_dir}: the run scores no retrieval task, so there is no gold span to measure attention on")
    for task in recorded_tasks:
        check_task_reads_no_files(task, str(run_dir))
    with open_dict(cfg):  # the model is the user's choice (or the shipped group the record equals), never the record's
        cfg.model = chosen_model(model, plain(cfg.model))
    info = identify(cfg.model)
    differ = model_differences(spec.model or {}, info.as_dict())
    if differ and not allow_foreign:
        raise LpesError(f"{run_dir} was run on another model ({', '.join(differ[:4])} differ); pass --allow-foreign "
                        "to measure this one anyway")
    source = resolve_factors(factors) if factors else run_dir / "best_factors.json"
    # a file from another model is refused before its weights load
    record = load_checked(source, info, allow_foreign)
    if samples is not None:
        cfg.task.samples_per_position = samples
    if threads is not None:
        cfg.threads = threads
    prepare(cfg)
    scheme = build_scheme(record["scheme"])  # bad options are refused before the model loads
    tasks = build_tasks(cfg)
    cfg.model.attn_implementation = "eager"  # the only implementation that returns attention weights
    model, tokenizer, info = load_model(cfg.model)
    print(info.line())
    # retrieval tasks only: perplexity has no gold span
    encoded = {name: t.encode(split, tokenizer) for name, t in tasks.items() if t.metric == "accuracy"}
    results: dict[str, dict[str, dict[str, list[float]]]] = {}
    for method, factors_ in {"unpatched": None, "patched": record["factors"]}.items():
        handle = None if factors_ is None else apply_layer_scaling(model, factors_, scheme)
        try:
            for task, items in encoded.items():
                results.setdefault(task, {})[method] = mass_by_position(attention_mass(model, items, tokenizer))
        finally:
            if handle is not None:
                handle.remove()
    for task, methods in results.items():
        if not methods["unpatched"]:
            raise LpesError(f"{task}: no {split} sample holds its answer in the prompt; nothing to measure")
        print(f"[{task}] " + format_mass(methods))
    payload = {"model": info.as_dict(), "split": split, "factors_file": str(source), "scheme": record["scheme"],
               "factors": record["factors"], "mass": results}
    out = Path(out or run_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "attention.json", payload)
    plot_attention(results, out / "attention.png", title=f"{info.name}, {split} split ({Path(source).name})")
    print(f"wrote {out / 'attention.json'} and {out / 'attention.png'}")
    return payload
