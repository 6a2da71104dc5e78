"""Per-layer RoPE tables as an export writes them into config.json (``lpes_tables``), read without lpes_framework.

An exported folder's config.json holds the schedule (its ``lpes`` block: scheme and factors) and, per decoder
layer, the frequencies the scheme gave that layer (``inv_freq``: one per rotary pair, or null where they are the
model's own) with its cos/sin ``scaling``; ``window`` is the longest input all tables hold for and
``length_dependent`` whether the scheme moves them with the length at all. ``digest`` binds the tables to the
block, so a folder edited in one and not the other is refused by every reader (the exported modeling file,
``load_patched``, the vLLM plugin) instead of serving two schedules. Standard library and torch only: this file
is copied into every export and shipped in the vLLM plugin as it is.
"""

import hashlib
import json
import math

import torch


def tables_digest(scheme: dict, factors: list, tables: dict) -> str:
    """What binds the tables to the ``lpes`` block they were computed from (its scheme and factors)."""
    bound = {"scheme": scheme, "factors": factors, "inv_freq": tables["inv_freq"], "scaling": tables["scaling"],
             "window": tables["window"], "length_dependent": tables["length_dependent"]}
    return hashlib.sha256(json.dumps(bound, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def is_bound(tables, block) -> bool:
    """Whether ``tables`` are the ones ``block`` (an ``lpes`` block) was exported with."""
    try:
        return isinstance(tables, dict) and isinstance(block, dict) and \
            tables.get("digest") == tables_digest(block["scheme"], block["factors"], tables)
    except (KeyError, TypeError, ValueError):
        return False


def _positive(value) -> bool:
    # errors.is_number's test, restated: this file runs where lpes_framework is not installed
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def check_tables(config, n_layers: int, rotary_pairs: int) -> dict:
    """The exported tables of ``config``, refused (ValueError, one line) unless bound to its ``lpes`` block, one
    per layer, and each ``rotary_pairs`` positive finite frequencies with a positive finite scaling. The digest
    says the two blocks agree, not that either is sound (anyone can recompute it): every field is checked."""
    tables = getattr(config, "lpes_tables", None)
    if not is_bound(tables, getattr(config, "lpes", None)):
        raise ValueError("config.json's lpes_tables are not those of its lpes block (the folder was edited): "
                         "export it again")
    inv, scales = tables["inv_freq"], tables["scaling"]
    if not (isinstance(inv, list) and isinstance(scales, list)) or len(inv) != n_layers or len(scales) != n_layers:
        held = len(inv) if isinstance(inv, list) else "no list of"
        raise ValueError(f"config.json's lpes_tables hold {held} layers; the model has {n_layers} (a table and a "
                         "scaling each)")
    for index, (inv_freq, scaling) in enumerate(zip(inv, scales)):
        good = _positive(scaling) and (inv_freq is None or (
            isinstance(inv_freq, list) and len(inv_freq) == rotary_pairs and all(map(_positive, inv_freq))))
        if not good:
            raise ValueError(f"config.json's lpes_tables: layer {index}'s table is not {rotary_pairs} positive "
                             "finite frequencies with a positive finite scaling")
    window = tables["window"]
    if not (_positive(window) and isinstance(window, int) and isinstance(tables["length_dependent"], bool)):
        raise ValueError("config.json's lpes_tables: window must be a positive whole number of tokens and "
                         "length_dependent true or false")
    return tables


def cos_sin(angles: torch.Tensor, scaling, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin exactly as transformers' rotary modules compute them from the rotary angles (position x frequency,
    float32, one per rotary pair): the angles repeated for both halves of the head, times the cos/sin scaling (a
    number, or a tensor that broadcasts), cast to ``dtype``. Every table the framework, an export and vLLM use
    comes from here."""
    emb = torch.cat((angles, angles), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    if not (isinstance(scaling, (int, float)) and scaling == 1.0):  # multiplying by 1 is exact: skip the passes
        cos, sin = cos * scaling, sin * scaling
    return cos.to(dtype), sin.to(dtype)
