"""Layer-specific RoPE tables for this model, without lpes_framework (written by its self-contained export).

Each decoder layer listed in ``config.lpes_tables`` takes cos/sin computed from its own RoPE frequencies
(and cos/sin scaling) instead of the model's shared ones; the other layers are the model as it was. The
frequencies were computed by lpes_framework's scheme when the folder was exported, so loading needs only
torch and transformers (and ``lpes_tables.py`` beside this file)::

    AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)
"""

from functools import partial

import torch
import transformers

from .lpes_tables import check_tables, cos_sin  # copied beside this file by the export

ARCHITECTURE = "LlamaForCausalLM"  # replaced by the export with the model's own class
Base = getattr(transformers, ARCHITECTURE)


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
        inv_freq = torch.tensor(inv_freq, dtype=torch.float32, device=position_ids.device)
        kwargs["position_embeddings"] = cos_sin(position_ids[..., None].float() * inv_freq, scaling, own[0].dtype)
        return args, kwargs
