"""The PosScale scheme (see the package docstring): the positional channel scaled for the reading tokens.

What the paper's patch does, and how it is done here without copying an attention class:

- In each layer of the band, the attention input ``h`` of the reading tokens gets channel ``c`` times
  ``scale``; their queries and every key they see come from that scaled input, values from the plain one.
  The keys of the context are the scaled ones too (the paper's patch stores scaled keys in the cache), but
  the context's own attention rows stay as they were, so the context's representation does not change.
- The reading tokens are the last token of a forward that starts a sequence (the last prompt token) and
  every token of a forward that continues a cache (decoding, or the question + answer scored against a
  shared prefix).
- Scaling one input channel adds ``(scale - 1) * h_c * W[:, c]`` to a projection, and RoPE is linear, so
  the scaled queries and keys are the plain ones plus a rotated rank-1 delta per token. A pre-hook on the
  attention module computes the deltas; an attention function registered with transformers adds them and
  recomputes only the reading rows. The key deltas of earlier tokens are kept alongside the KV cache.
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.llama.modeling_llama import eager_attention_forward

from lpes_framework.errors import LpesError
from lpes_framework.position import PatchHandle, apply_layer_scaling, build_scheme, rope_layout, validate_factors
from lpes_framework.tasks import FILLER

from .channels import positional_channels

ATTENTION = "lpes_posscale"
# separate q/k projections without q/k norms (the delta is linear), full attention in every layer
SUPPORTED = ("LlamaForCausalLM", "Qwen2ForCausalLM", "MistralForCausalLM")


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class PosScale:
    identity_at_one = False  # the scaled channel changes the model at factor 1

    def __init__(self, *, scale: float = 0.5, layers=(0.3, 0.8), channels=None, top_k: int = 1,
                 calibration_tokens: int = 512, skip_tokens: int = 64, base: str = "rope"):
        start, end = (float(v) for v in layers)
        if not 0 <= start < end <= 1:
            raise LpesError(f"posscale: layers must be fractions 0 <= start < end <= 1, got {list(layers)}")
        if top_k < 1 or skip_tokens < 0 or calibration_tokens - skip_tokens < 64:
            raise LpesError("posscale: need top_k >= 1 and calibration_tokens - skip_tokens >= 64")
        if channels is not None and (not channels or any(int(c) < 0 for c in channels)):
            raise LpesError(f"posscale: channels must be null or non-negative indices, got {channels}")
        self.scale, self.band = float(scale), (start, end)
        self.channels = None if channels is None else [int(c) for c in channels]
        self.top_k, self.calibration_tokens, self.skip_tokens = top_k, calibration_tokens, skip_tokens
        self.base = build_scheme({"name": base})  # checked now: an unknown base fails before any weights load

    def check_model(self, info) -> None:
        if info.architecture not in SUPPORTED:
            raise LpesError(f"posscale supports {', '.join(SUPPORTED)} (separate q/k projections, no q/k norm, "
                            f"full attention); {info.name} is {info.architecture}")

    def layers(self, n_layers: int) -> range:
        return range(round(self.band[0] * n_layers), max(round(self.band[1] * n_layers), round(self.band[0] * n_layers) + 1))

    def find_channels(self, model) -> list[int]:
        """The configured channels, or the ``top_k`` most positional ones on a calibration pass of
        content-free text (cached on the model: the answer depends only on the weights and these settings)."""
        if self.channels is not None:
            return self.channels
        key = (self.top_k, self.calibration_tokens, self.skip_tokens)
        found = getattr(model, "_lpes_positional_channels", {})
        if key not in found:
            vocab = model.config.get_text_config().vocab_size
            text = (FILLER * (self.calibration_tokens // len(FILLER) + 1))[: self.calibration_tokens]
            ids = torch.tensor([[(ord(c) * 7919) % vocab for c in text]], device=model.device)
            with torch.no_grad():
                states = model(ids, output_hidden_states=True).hidden_states[1:]  # not the embeddings
            hidden = torch.stack([s[0].float() for s in states]).cpu().numpy()
            try:
                found[key] = positional_channels(hidden, self.top_k, self.skip_tokens)
            except ValueError as exc:
                raise LpesError(f"posscale: {exc}; give pos.channels explicitly") from None
            model._lpes_positional_channels = found
        return found[key]

    def install(self, model, factors) -> "ChannelScaling":
        return ChannelScaling(model, factors, self)


class ChannelScaling(PatchHandle):
    """Handle of an installed PosScale patch (layer factors under ``base`` included)."""

    def __init__(self, model, factors, scheme: PosScale):
        decoder, layers, _ = rope_layout(model)
        self.factors = validate_factors(factors, len(layers))
        self.scheme = scheme
        attn = layers[0].self_attn
        if not (hasattr(attn, "q_proj") and hasattr(attn, "k_proj")) or hasattr(attn, "q_norm"):
            raise LpesError(f"posscale: {type(model).__name__} has fused or normalised q/k projections; not supported")
        if any(getattr(layer.self_attn, "sliding_window", None) for layer in layers):
            raise LpesError(f"posscale: {type(model).__name__} has sliding-window layers; not supported")
        self.channels = scheme.find_channels(model)  # on the model as loaded, before any patch
        width = model.config.get_text_config().hidden_size
        if max(self.channels) >= width:
            raise LpesError(f"posscale: channel {max(self.channels)} is beyond the hidden size {width}")
        self.layers = set(scheme.layers(len(layers)))
        self._model, self._inner = model, model.config._attn_implementation
        self._deltas: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # this forward's (query, key) deltas
        self._key_deltas: dict[int, torch.Tensor] = {}  # every cached token's key delta, per layer
        self._rope = apply_layer_scaling(model, self.factors, scheme.base)
        self._handles = []
        for idx, layer in enumerate(layers):
            layer.self_attn._lpes_posscale = self
            if idx in self.layers:
                self._handles.append(layer.self_attn.register_forward_pre_hook(self._delta(idx), with_kwargs=True))
        AttentionInterface.register(ATTENTION, scaled_attention)
        AttentionMaskInterface.register(ATTENTION, ALL_MASK_ATTENTION_FUNCTIONS[self._inner]
                                        if self._inner in ALL_MASK_ATTENTION_FUNCTIONS else ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])
        self._layers = layers
        model.set_attn_implementation(ATTENTION)

    def _delta(self, idx: int):
        change = self.scheme.scale - 1.0

        def hook(module, args, kwargs):
            hidden = kwargs.get("hidden_states", args[0] if args else None)
            cos, sin = kwargs["position_embeddings"]
            picked = hidden[..., self.channels] * change  # (batch, tokens, channels)

            def rotated(proj):  # the rank-1 change of this projection, per head, with RoPE applied
                delta = picked @ proj.weight[:, self.channels].T
                delta = delta.view(*hidden.shape[:-1], -1, module.head_dim).transpose(1, 2)
                return delta * cos[:, None] + rotate_half(delta) * sin[:, None]

            self._deltas[idx] = (rotated(module.q_proj), rotated(module.k_proj))

        return hook

    def reading_attention(self, inner, module, query, key, value, attention_mask, **kwargs):
        idx = module.layer_idx
        if idx not in self.layers:
            return inner(module, query, key, value, attention_mask, **kwargs)
        dq, dk = self._deltas.pop(idx)
        tokens, past = query.shape[2], key.shape[2] - query.shape[2]
        earlier = self._key_deltas.get(idx) if past else None
        if earlier is not None:
            earlier = earlier[:, :, :past]  # a cache cropped or copied back to its prefix
            if earlier.shape[0] != key.shape[0]:  # a prefix cache repeated over a batch of suffixes
                earlier = earlier[:1].expand(key.shape[0], -1, -1, -1)
            dk = torch.cat([earlier, dk], dim=2)
        self._key_deltas[idx] = dk
        scaled_keys = key + dk
        if past:  # every token continues the sequence: all rows read
            return inner(module, query + dq, scaled_keys, value, attention_mask, **kwargs)
        out, weights = inner(module, query, key, value, attention_mask, **kwargs)
        mask = None if attention_mask is None else attention_mask[:, :, -1:]
        last, _ = inner(module, query[:, :, -1:] + dq[:, :, -1:], scaled_keys, value, mask, **kwargs)
        out = out.clone()
        out[:, -1:] = last  # (batch, tokens, heads, head_dim)
        return out, weights

    def remove(self) -> None:
        super().remove()
        self._rope.remove()
        for layer in self._layers:
            layer.self_attn.__dict__.pop("_lpes_posscale", None)
        self._model.set_attn_implementation(self._inner)
        self._deltas.clear()
        self._key_deltas.clear()


def scaled_attention(module, query, key, value, attention_mask, **kwargs):
    """The attention function the patched model runs: the model's own, plus the reading rows of the band."""
    patch = module._lpes_posscale
    inner = eager_attention_forward if patch._inner == "eager" else ALL_ATTENTION_FUNCTIONS[patch._inner]
    return patch.reading_attention(inner, module, query, key, value, attention_mask, **kwargs)

