"""One rotary table per decoder layer of a vLLM model, from the ``lpes`` block of its config.

vLLM shares one rotary embedding between all layers with the same parameters (``get_rope`` caches them);
each layer whose factor changes its table gets its own copy, whose ``cos_sin_cache`` (vLLM's layout: the
cosines then the sines of position x frequency, times the attention scaling) is computed from the
frequencies lpes_framework's scheme gives that layer. The model's own frequencies come from transformers'
rotary module built from the same config (no weights), exactly what ``apply_factors_file`` starts from.
"""

from __future__ import annotations

import copy
import importlib
import logging
import re

import torch

from lpes_framework.errors import LpesError
from lpes_framework.model.factors_file import check_identity, validate_record
from lpes_framework.model.patched import check_tables_bound
from lpes_framework.model.info import model_info
from lpes_framework.position import build_scheme, fixed_table, is_identity, layer_specs, validate_factors

SOURCE = "config.json (lpes block)"
_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")


def hf_rotary(config) -> torch.nn.Module:
    """transformers' rotary module for ``config``: the frequencies the model was trained with."""
    for name in dict.fromkeys((config.model_type, config.model_type.removesuffix("_text"))):
        try:
            module = importlib.import_module(f"transformers.models.{name}.modeling_{name}")
        except ModuleNotFoundError:
            continue
        classes = [c for n, c in vars(module).items()
                   if n.endswith("RotaryEmbedding") and isinstance(c, type) and c.__module__ == module.__name__]
        if classes:
            return classes[0](config=config)
    raise LpesError(f"lpes-vllm: transformers has no rotary embedding for model_type {config.model_type!r}")


def cos_sin_cache(inv_freq: torch.Tensor, scaling: float, length: int) -> torch.Tensor:
    """vLLM's cos/sin cache of ``length`` positions for these frequencies, computed in float32 as vLLM and
    transformers both do."""
    freqs = torch.outer(torch.arange(length, dtype=torch.float), inv_freq.float())
    cache = torch.cat((freqs.cos(), freqs.sin()), dim=-1)
    return cache if scaling == 1.0 else cache * scaling


def rotary_modules(model: torch.nn.Module) -> dict[int, list[tuple[torch.nn.Module, str]]]:
    """(parent, attribute) of every ``rotary_emb`` under a decoder layer, by layer index."""
    found: dict[int, list[tuple[torch.nn.Module, str]]] = {}
    for name, module in model.named_modules():
        layer = _LAYER.search(f"{name}.")
        if layer is not None and isinstance(getattr(module, "rotary_emb", None), torch.nn.Module):
            found.setdefault(int(layer.group(1)), []).append((module, "rotary_emb"))
    return found


def install(model: torch.nn.Module, block, config, max_model_len: int) -> int:
    """Give each layer of ``model`` (a vLLM model built from ``config``) its table; returns how many layers
    were given one of their own (layers at an identity factor keep vLLM's shared table)."""
    record = validate_record(block, SOURCE)
    scheme = build_scheme(record["scheme"])
    name = record["scheme"]["name"]
    if not scheme.one_table_per_layer:
        raise LpesError(f"lpes-vllm: pos={name} brings its own attention patch; vLLM serves schemes of one rotary "
                        "table per layer (rope, pi, ntk, yarn, band-wise)")
    arch = (getattr(config, "architectures", None) or [type(model).__name__])[0]
    info = model_info(config, getattr(config, "name_or_path", "") or "", architecture=arch)
    check_identity(record, info, SOURCE)
    factors = validate_factors(record["factors"], info.n_layers)
    specs = layer_specs(hf_rotary(config), config, info.n_layers, arch)
    modules = rotary_modules(model)
    if sorted(modules) != list(range(info.n_layers)):
        raise LpesError(f"lpes-vllm: {type(model).__name__} has rotary embeddings in layers {sorted(modules)}, not in "
                        f"each of its {info.n_layers}; this architecture is not supported")
    own = 0
    for index, (spec, factor) in enumerate(zip(specs, factors)):
        if is_identity(scheme, [factor]):
            continue  # vLLM's own shared table, bit for bit
        inv_freq, scaling, holds = fixed_table(scheme, spec, factor, max_model_len)
        if holds < max_model_len:
            raise LpesError(f"lpes-vllm: pos={name} changes layer {index}'s frequencies with the length from "
                            f"{holds + 1} tokens on and a vLLM table is fixed: serve with max_model_len <= {holds}, or "
                            f"serve the factors file that `lpes factors <file> --hold-to {max_model_len}` makes (then "
                            "re-test it held out: it is another schedule)")
        for parent, attr in modules[index]:
            stock = getattr(parent, attr)
            cache = getattr(stock, "cos_sin_cache", None)
            if cache is None or getattr(stock, "rotary_dim", None) != 2 * inv_freq.numel():
                raise LpesError(f"lpes-vllm: layer {index}'s rotary embedding ({type(stock).__name__}) is not one "
                                f"table of {2 * inv_freq.numel()} rotary dimensions; not supported")
            mine = copy.deepcopy(stock)
            mine.cos_sin_cache = cos_sin_cache(inv_freq, scaling, cache.shape[0]).to(cache.device, cache.dtype)
            setattr(parent, attr, mine)
        own += 1
    return own


def install_from_config(model: torch.nn.Module, model_config) -> int:
    """The loader hook: the model's ``lpes`` block applied, or nothing where its config has none."""
    block = getattr(model_config.hf_config, "lpes", None) or getattr(model_config.hf_text_config, "lpes", None)
    check_tables_bound(model_config.hf_config, SOURCE)  # an exported folder's tables, edited apart from its block
    if block is None:
        return 0
    own = install(model, block, model_config.hf_text_config, int(model_config.max_model_len))
    logging.getLogger("vllm").info("lpes-vllm: %d of %d layers serve their own rotary table (pos=%s)", own,
                                   len(block["factors"]), block["scheme"]["name"])
    return own
