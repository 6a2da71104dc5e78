"""The PosScale scheme (see the package docstring): the positional channel scaled for the reading tokens.

What the paper's patch does, and how it is done here without copying an attention class:

- In each layer of its span (``layers``), the attention input ``h`` of the reading tokens (the last prompt token and
  every token after it: ``lpes_framework.position.attention_patch``) gets channel ``c`` times ``scale``; their
  queries and every key they see come from that scaled input, values from the plain one. The keys of the
  context are the scaled ones too (the paper's patch stores scaled keys in the cache), but the context's
  own attention rows stay as they were, so the context's representation does not change.
- Scaling one input channel adds ``(scale - 1) * h_c * W[:, c]`` to a projection, and RoPE is linear, so
  the scaled queries and keys are the plain ones plus a rotated rank-1 delta per token. A pre-hook on the
  attention module computes the deltas; the attention function adds them and recomputes only the reading
  rows. The key deltas of earlier tokens are kept alongside the KV cache.
"""

from __future__ import annotations

import torch
from transformers.models.llama.modeling_llama import rotate_half  # the rotation the models apply

from lpes_framework.errors import LpesError
from lpes_framework.position import Scheme, build_scheme, rope_layout
from lpes_framework.position.attention_patch import AttentionPatch, content_free_ids, layer_span, reading_rows

from .channels import positional_channels

# separate q/k projections without q/k norms (the delta is linear), full attention in every layer
SUPPORTED = ("LlamaForCausalLM", "Qwen2ForCausalLM", "MistralForCausalLM")


class PosScale(Scheme):  # the scaled channel changes the model at factor 1: not the identity there

    def __init__(self, *, scale: float = 0.5, layers=(0.3, 0.8), channels=None, top_k: int = 1,
                 calibration_tokens: int = 512, skip_tokens: int = 64, base: str = "rope"):
        layer_span(layers, 1, "posscale")  # checked now
        if top_k < 1 or skip_tokens < 0 or calibration_tokens - skip_tokens < 64:
            raise LpesError("posscale: need top_k >= 1 and calibration_tokens - skip_tokens >= 64")
        if scale == 1:  # the unpatched model under posscale's name (a negative scale flips the channel: allowed)
            raise LpesError(f"posscale: scale must be a number other than 1, got {scale}")
        if channels is not None and (not channels or any(int(c) < 0 for c in channels)):
            raise LpesError(f"posscale: channels must be null or non-negative indices, got {channels}")
        self.scale, self.layer_fractions = float(scale), layers
        self.channels = None if channels is None else [int(c) for c in channels]
        self.top_k, self.calibration_tokens, self.skip_tokens = top_k, calibration_tokens, skip_tokens
        self.base = build_scheme({"name": base})  # an unknown base fails before any weights load

    def check_model(self, info) -> None:
        if info.architecture not in SUPPORTED:
            raise LpesError(f"posscale supports {', '.join(SUPPORTED)} (separate q/k projections, no q/k norm, "
                            f"full attention); {info.name} is {info.architecture}")

    def find_channels(self, model) -> list[int]:
        """The configured channels, or the ``top_k`` most positional ones on a calibration pass of
        content-free input (cached on the model: the answer depends only on the weights and these settings)."""
        if self.channels is not None:
            return self.channels
        key = (self.top_k, self.calibration_tokens, self.skip_tokens)
        found = model.__dict__.setdefault("_lpes_positional_channels", {})
        if key not in found:
            ids = content_free_ids(model.config.get_text_config().vocab_size, self.calibration_tokens)
            with torch.no_grad():
                states = model(ids.to(model.device), output_hidden_states=True).hidden_states[1:]  # not the embeddings
            hidden = torch.stack([s[0].float() for s in states]).cpu().numpy()
            try:
                found[key] = positional_channels(hidden, self.top_k, self.skip_tokens)
            except ValueError as exc:
                raise LpesError(f"posscale: {exc}; give pos.channels explicitly") from None
        return found[key]

    def install(self, model, factors) -> "ChannelScaling":
        return ChannelScaling(model, factors, self)


class ChannelScaling(AttentionPatch):
    """Handle of an installed PosScale patch (layer factors under ``base`` included)."""

    name = "lpes_posscale"

    def __init__(self, model, factors, scheme: PosScale):
        self.scheme = scheme
        attn = rope_layout(model)[1][0].self_attn
        if not (hasattr(attn, "q_proj") and hasattr(attn, "k_proj")) or hasattr(attn, "q_norm"):
            raise LpesError(f"posscale: {type(model).__name__} has fused or normalised q/k projections; not supported")
        self.channels = scheme.find_channels(model)  # on the model as loaded, before any patch
        width = model.config.get_text_config().hidden_size
        if max(self.channels) >= width:
            raise LpesError(f"posscale: channel {max(self.channels)} is beyond the hidden size {width}")
        super().__init__(model, factors, scheme.base)
        self.layers = set(layer_span(scheme.layer_fractions, len(self._layers), "posscale"))
        self._deltas: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # this forward's (query, key) deltas
        self._key_deltas: dict[int, torch.Tensor] = {}  # every cached token's key delta, per layer
        self._handles += [self._layers[idx].self_attn.register_forward_pre_hook(self._delta(idx), with_kwargs=True)
                          for idx in sorted(self.layers)]

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

    def attend(self, module, query, key, value, attention_mask, **kwargs):
        inner, idx = self.inner(), module.layer_idx
        if idx not in self.layers:
            return inner(module, query, key, value, attention_mask, **kwargs)
        dq, dk = self._deltas.pop(idx)
        rows, past = reading_rows(query, key)
        earlier = self._key_deltas.get(idx) if past else None
        if earlier is not None:
            earlier = earlier[:, :, :past]  # a cache cropped or copied back to its prefix
            if earlier.shape[0] != key.shape[0]:  # a prefix cache repeated over a batch of suffixes
                earlier = earlier[:1].expand(key.shape[0], -1, -1, -1)
            dk = torch.cat([earlier, dk], dim=2)
        self._key_deltas[idx] = dk
        if past:  # every token continues the sequence: all rows read
            return inner(module, query + dq, key + dk, value, attention_mask, **kwargs)
        out, weights = inner(module, query, key, value, attention_mask, **kwargs)
        mask = None if attention_mask is None else attention_mask[:, :, rows]
        last, _ = inner(module, query[:, :, rows] + dq[:, :, rows], key + dk, value, mask, **kwargs)
        out = out.clone()
        out[:, rows] = last  # (batch, tokens, heads, head_dim)
        return out, weights

    def remove(self) -> None:
        super().remove()
        self._deltas.clear()
        self._key_deltas.clear()
