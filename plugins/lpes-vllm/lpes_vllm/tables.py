"""One rotary table per decoder layer of a vLLM model, from the tables an export wrote into its config.json.

``lpes export`` writes each layer's RoPE frequencies and cos/sin scaling (``lpes_tables``, bound to the ``lpes``
block they came from: ``lpes_tables.py``, the file the export copies into the folder too). vLLM shares one
rotary embedding between all layers with the same parameters (``get_rope`` caches them); each layer with a table
of its own gets a copy whose ``cos_sin_cache`` (vLLM's layout: the cosines then the sines of position x frequency,
times the scaling) is built from that table. Plain torch: nothing of lpes_framework is imported, so vLLM's
environment needs only this package.
"""

from __future__ import annotations

import copy
import logging
import re

import torch

from .lpes_tables import check_tables, cos_sin

_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")


class ServingError(ValueError):
    """What the plugin cannot serve: vLLM stops the engine at start with this one line."""


def cos_sin_cache(inv_freq: torch.Tensor, scaling: float, length: int) -> torch.Tensor:
    """vLLM's cos/sin cache of ``length`` positions for these frequencies: the first half of each of the
    cos/sin transformers computes (``lpes_tables.cos_sin``), so the values are the same numbers."""
    angles = torch.outer(torch.arange(length, dtype=torch.float), inv_freq.float())
    cos, sin = cos_sin(angles, scaling, torch.float32)
    half = inv_freq.numel()
    return torch.cat((cos[:, :half], sin[:, :half]), dim=-1)


def rotary_modules(model: torch.nn.Module) -> dict[int, list[tuple[torch.nn.Module, str]]]:
    """(parent, attribute) of every ``rotary_emb`` under a decoder layer, by layer index."""
    found: dict[int, list[tuple[torch.nn.Module, str]]] = {}
    for name, module in model.named_modules():
        layer = _LAYER.search(f"{name}.")
        if layer is not None and isinstance(getattr(module, "rotary_emb", None), torch.nn.Module):
            found.setdefault(int(layer.group(1)), []).append((module, "rotary_emb"))
    return found


def _rotary_dim(stock: torch.nn.Module, index: int) -> int:
    cache, dim = getattr(stock, "cos_sin_cache", None), getattr(stock, "rotary_dim", None)
    if not isinstance(cache, torch.Tensor) or not isinstance(dim, int) or cache.shape[-1] != dim:
        raise ServingError(f"lpes-vllm: layer {index}'s rotary embedding ({type(stock).__name__}) is not one cos/sin "
                           "table; not supported")
    return dim


def install(model: torch.nn.Module, config, n_layers: int, max_model_len: int) -> int:
    """Give each layer of ``model`` (a vLLM model) the table ``config`` (its config, with ``lpes_tables``) holds
    for it; returns how many layers were given one of their own (the others keep vLLM's shared table)."""
    modules = rotary_modules(model)
    if sorted(modules) != list(range(n_layers)):
        raise ServingError(f"lpes-vllm: {type(model).__name__} has rotary embeddings in layers {sorted(modules)}, not "
                           f"in each of its {n_layers}; this architecture is not supported")
    dims = {_rotary_dim(getattr(parent, attr), index) for index, found in modules.items() for parent, attr in found}
    if len(dims) != 1:
        raise ServingError(f"lpes-vllm: the layers' rotary embeddings rotate {sorted(dims)} dimensions; one width "
                           "is supported")
    try:
        tables = check_tables(config, n_layers, dims.pop() // 2)
    except ValueError as exc:
        raise ServingError(f"lpes-vllm: {exc}") from None
    if tables["length_dependent"] and max_model_len > tables["window"]:
        raise ServingError(f"lpes-vllm: this schedule's tables change with the length from {tables['window'] + 1} "
                           f"tokens on and a vLLM table is fixed: serve with max_model_len <= {tables['window']}, or "
                           f"export the factors file that `lpes factors <file> --hold-to {max_model_len}` makes (then "
                           "re-test it held out: it is another schedule)")
    own = 0
    for index, (inv_freq, scaling) in enumerate(zip(tables["inv_freq"], tables["scaling"])):
        if inv_freq is None:
            continue  # the model's own frequencies: vLLM's shared table
        for parent, attr in modules[index]:
            stock = getattr(parent, attr)
            mine = copy.deepcopy(stock)
            cache = stock.cos_sin_cache
            mine.cos_sin_cache = cos_sin_cache(torch.tensor(inv_freq), float(scaling), cache.shape[0]).to(
                cache.device, cache.dtype)
            setattr(parent, attr, mine)
        own += 1
    return own


def install_from_config(model: torch.nn.Module, model_config) -> int:
    """The loader hook: an exported folder's tables served, nothing where its config has none."""
    config = model_config.hf_config
    if getattr(config, "lpes_tables", None) is None:
        if getattr(config, "lpes", None) is not None or getattr(model_config.hf_text_config, "lpes", None) is not None:
            raise ServingError("lpes-vllm: this folder holds an lpes block without its per-layer tables (save_patched "
                               "writes those): serve the folder `lpes export` makes")
        return 0
    n_layers = int(model_config.hf_text_config.num_hidden_layers)
    own = install(model, config, n_layers, int(model_config.max_model_len))
    logging.getLogger("vllm").info("lpes-vllm: %d of %d layers serve their own rotary table (pos=%s)", own, n_layers,
                                   config.lpes["scheme"].get("name"))
    return own
