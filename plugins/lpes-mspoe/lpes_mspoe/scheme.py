"""The Ms-PoE scheme (see the package docstring): head-wise ratios applied by q/k projection hooks."""


from __future__ import annotations

import torch
from transformers.models.llama.modeling_llama import rotate_half  # the rotation the models apply

from lpes_framework.errors import LpesError
from lpes_framework.position import PatchHandle, Scheme, rope_layout, rotary_tables, validate_factors
from lpes_framework.tasks import FILLER

ORDERS = ("position_awareness", "sequential")
RECENT = 16


class MsPoE(Scheme):
    def __init__(self, *, min_ratio: float = 1.2, max_ratio: float = 1.8, start_layer: int = 2,
                 head_order: str = "position_awareness", calibration_tokens: int = 256):
        if not 0 < min_ratio <= max_ratio:
            raise LpesError(f"mspoe: need 0 < min_ratio <= max_ratio, got {min_ratio}, {max_ratio}")
        if min_ratio == max_ratio == 1:  # every head at ratio 1 is the unpatched model under mspoe's name
            raise LpesError("mspoe: min_ratio = max_ratio = 1 leaves every head unscaled; give a ratio other than 1")
        if head_order not in ORDERS:
            raise LpesError(f"mspoe: head_order must be one of {ORDERS}, got '{head_order}'")
        if start_layer < 0 or calibration_tokens < RECENT + 1:
            raise LpesError("mspoe: start_layer must be >= 0 and calibration_tokens > 16")
        self.min_ratio, self.max_ratio = min_ratio, max_ratio
        self.start_layer, self.head_order = start_layer, head_order
        self.calibration_tokens = calibration_tokens

    def check_model(self, info) -> None:
        if self.start_layer >= info.n_layers:
            raise LpesError(f"mspoe: start_layer={self.start_layer} leaves no layer to scale in {info.name} "
                            f"({info.n_layers} layers)")

    def install(self, model, factors) -> "HeadwiseScaling":
        return HeadwiseScaling(model, factors, self)

    def group_ratios(self, model, n_groups: int, n_layers: int) -> torch.Tensor:
        """(layers, kv groups) ratios; rows of untouched layers are 1."""
        ratios = torch.linspace(self.min_ratio, self.max_ratio, n_groups)
        table = torch.ones(n_layers, n_groups)
        order = self._order(model, n_groups, n_layers)
        for layer in range(self.start_layer, n_layers):
            table[layer, order[layer]] = ratios
        return table

    def _order(self, model, n_groups: int, n_layers: int) -> list[torch.Tensor]:
        """Per layer: group indices from most to least position-aware (or 0..G-1)."""
        if self.head_order == "sequential":
            return [torch.arange(n_groups)] * n_layers
        vocab = model.config.get_text_config().vocab_size
        ids = torch.tensor([[(ord(c) * 7919) % vocab for c in (FILLER * 64)[: self.calibration_tokens]]])
        previous = model.config._attn_implementation
        model.set_attn_implementation("eager")
        try:
            with torch.no_grad():
                attentions = model(ids.to(model.device), output_attentions=True).attentions
        finally:
            model.set_attn_implementation(previous)
        orders = []
        for att in attentions:  # (1, heads, q, k)
            local = torch.stack([att[0, :, q, max(0, q - RECENT):q + 1].sum(-1) for q in range(RECENT, att.shape[-1])], -1)
            per_group = local.mean(-1).view(n_groups, -1).mean(-1)
            orders.append(torch.argsort(per_group, descending=True))
        return orders


class HeadwiseScaling(PatchHandle):
    """Handle of an installed Ms-PoE patch."""

    def __init__(self, model, factors, scheme: MsPoE):
        decoder, layers, ropes = rope_layout(model)
        self.factors = validate_factors(factors, len(layers))
        self.scheme = scheme
        config = model.config.get_text_config()
        n_heads = config.num_attention_heads
        n_groups = getattr(config, "num_key_value_heads", None) or n_heads
        attn = layers[0].self_attn
        if not (hasattr(attn, "q_proj") and hasattr(attn, "k_proj")) or hasattr(attn, "q_norm"):
            raise LpesError(f"mspoe: {type(model).__name__} has fused or normalised q/k projections; not supported")
        self.ratios = scheme.group_ratios(model, n_groups, len(layers)) * torch.tensor(self.factors)[:, None]
        self._ropes, self._heads, self._groups = ropes, n_heads, n_groups
        self._position_ids = None
        self._handles = []
        for idx, layer in enumerate(layers):
            self._handles.append(layer.register_forward_pre_hook(self._identity_rotation, with_kwargs=True))
            self._handles.append(layer.self_attn.q_proj.register_forward_hook(self._rotate(idx, n_heads)))
            self._handles.append(layer.self_attn.k_proj.register_forward_hook(self._rotate(idx, n_groups)))

    def _identity_rotation(self, module, args, kwargs):
        self._position_ids = kwargs["position_ids"]
        cos, _ = kwargs["position_embeddings"]
        kwargs["position_embeddings"] = (torch.ones_like(cos), torch.zeros_like(cos))
        return args, kwargs

    def _rotate(self, idx: int, n_heads: int):
        rope = self._ropes[idx]
        per_head = self.ratios[idx].repeat_interleave(n_heads // self._groups)

        def hook(module, args, out):
            b, length, _ = out.shape
            x = out.view(b, length, n_heads, -1)
            inv = rope.inv_freq[None, :] / per_head[:, None]  # (heads, rotary_dim / 2)
            cos, sin = rotary_tables(self._position_ids[:, :, None], inv[None, None].to(out.device),
                                     rope.attention_scaling, out.dtype)
            rot = cos.shape[-1]  # partial rotary models rotate only the first dimensions
            x_rot = x[..., :rot] * cos + rotate_half(x[..., :rot]) * sin
            return torch.cat((x_rot, x[..., rot:]), dim=-1).view(b, length, -1)

        return hook
