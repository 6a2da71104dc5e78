"""Layer-specific RoPE tables for this model, without lpes_framework (written by its self-contained export).

Each decoder layer listed in ``config.lpes_tables`` takes cos/sin computed from its own RoPE frequencies
(and cos/sin scaling) instead of the model's shared ones; the other layers are the model as it was. The
frequencies were computed by lpes_framework's scheme when the folder was exported, so loading needs only
torch and transformers::

    AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)
"""

import hashlib
import json
import math
from functools import partial

import torch
import transformers

ARCHITECTURE = "LlamaForCausalLM"  # replaced by the export with the model's own class
Base = getattr(transformers, ARCHITECTURE)


def tables_digest(scheme: dict, factors: list, tables: dict) -> str:
    """What binds the tables to the ``lpes`` block they were computed from (its scheme and factors): a folder
    edited in one and not the other would give other logits here than in vLLM or lpes_framework."""
    bound = {"scheme": scheme, "factors": factors, "inv_freq": tables["inv_freq"], "scaling": tables["scaling"],
             "window": tables["window"], "length_dependent": tables["length_dependent"]}
    return hashlib.sha256(json.dumps(bound, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def check_tables(config, n_layers: int, rotary_pairs: int) -> dict:
    """The exported tables, refused unless whole, finite and bound to the config's ``lpes`` block."""
    tables, block = getattr(config, "lpes_tables", None), getattr(config, "lpes", None)
    try:
        ok = isinstance(tables, dict) and isinstance(block, dict) and \
            tables.get("digest") == tables_digest(block["scheme"], block["factors"], tables)
    except (KeyError, TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError("config.json's lpes_tables are not those of its lpes block (the folder was edited): "
                         "export it again")
    if len(tables["inv_freq"]) != n_layers or len(tables["scaling"]) != n_layers:
        raise ValueError(f"config.json's lpes_tables hold {len(tables['inv_freq'])} layers; the model has {n_layers}")
    for index, (inv_freq, scaling) in enumerate(zip(tables["inv_freq"], tables["scaling"])):
        good = isinstance(scaling, (int, float)) and math.isfinite(scaling) and scaling > 0 and (
            inv_freq is None or (len(inv_freq) == rotary_pairs and all(math.isfinite(v) and v > 0 for v in inv_freq)))
        if not good:
            raise ValueError(f"config.json's lpes_tables: layer {index}'s table is not {rotary_pairs} positive "
                             "finite frequencies with a positive finite scaling")
    return tables


class LpesForCausalLM(Base):
    def __init__(self, config, *args, **kwargs):
        super().__init__(config, *args, **kwargs)
        # the model's own frequencies say how many a table holds (a partial rotary part included)
        pairs = next(m.inv_freq.numel() for m in self.modules() if isinstance(getattr(m, "inv_freq", None), torch.Tensor))
        tables = check_tables(config, len(self.get_decoder().layers), pairs)
        self.lpes_window = int(tables["window"])
        self.lpes_length_dependent = bool(tables["length_dependent"])
        for index, (inv_freq, scaling) in enumerate(zip(tables["inv_freq"], tables["scaling"])):
            if inv_freq is not None:
                layer = self.get_decoder().layers[index]
                # kept as numbers: from_pretrained builds the model on the meta device, where a tensor made
                # now would hold no data
                layer.register_forward_pre_hook(partial(self._lpes_table, index, inv_freq, float(scaling)),
                                                with_kwargs=True)

    def _lpes_table(self, index, inv_freq, scaling, module, args, kwargs):
        position_ids, own = kwargs.get("position_ids"), kwargs.get("position_embeddings")
        if position_ids is None or own is None:
            raise ValueError(f"decoder layer {index} was called without position_ids/position_embeddings")
        if self.lpes_length_dependent and int(position_ids.max()) >= self.lpes_window:
            raise ValueError(f"this model's layer scaling changes with the length from {self.lpes_window + 1} "
                             "tokens on; the exported tables hold up to there only (use lpes_framework)")
        # the elementwise operations of transformers' rotary modules, so the values equal lpes_framework's
        inv_freq = torch.tensor(inv_freq, dtype=torch.float32, device=position_ids.device)
        freqs = position_ids[..., None].float() * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        if scaling != 1.0:
            cos, sin = cos * scaling, sin * scaling
        kwargs["position_embeddings"] = (cos.to(own[0].dtype), sin.to(own[0].dtype))
        return args, kwargs
