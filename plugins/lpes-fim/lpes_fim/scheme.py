"""The Found-in-the-Middle scheme (see the package docstring).

The paper calibrates per document: the prior of slot k is the attention a dummy document gets at slot k,
one extra forward per slot (K + 1 forwards for K documents). A scheme sees token ids, not documents, so this
is the token-level variant: the prior is the reading tokens' attention to each position of an all-dummy
context (random token ids of the same length, ``content_free_ids``), from one extra forward per input:

- a fresh forward (whole text, a prompt before decoding, a shared prefix): one more forward of the same
  length, the dummy context followed by the real last token; its cache is kept (batch 1);
- a forward that continues a cache (a question + answer scored against a shared prefix, a decoding step):
  the suffix again, against that kept dummy cache (an all-dummy prefix is built only where none of the
  right length is kept); decoding steps continue the dummy cache as the real one grows.

So scoring and prefill cost about twice the unpatched model's, and the calibrated layers compute their
reading rows' attention explicitly (no fused kernel). The first ``keep_first`` tokens (the attention sink,
which the prior and the real input share) are left out of the calibration.
"""

from __future__ import annotations

import torch
from transformers.models.llama.modeling_llama import repeat_kv

from lpes_framework.errors import LpesError
from lpes_framework.position import Scheme, build_scheme, rope_layout
from lpes_framework.position.attention_patch import AttentionPatch, content_free_ids, layer_span, reading_rows
from lpes_framework.scoring import expanded


class FoundInTheMiddle(Scheme):  # the calibration changes the model at factor 1: not the identity there

    def __init__(self, *, strength: float = 1.0, layers=(0.5, 1.0), keep_first: int = 4, base: str = "rope"):
        layer_span(layers, 1, "fim")  # checked now
        if not 0 < strength <= 1 or keep_first < 0:  # strength 0 is the unpatched model under fim's name
            raise LpesError(f"fim: need 0 < strength <= 1 and keep_first >= 0, got {strength}, {keep_first}")
        self.strength, self.layer_fractions, self.keep_first = float(strength), layers, int(keep_first)
        self.base = build_scheme({"name": base})  # an unknown base fails before any weights load

    def check_model(self, info) -> None:
        if info.architecture.startswith("Gemma3"):
            raise LpesError(f"fim: {info.name} ({info.architecture}) has sliding-window layers, whose cache "
                            "does not hold every context position; not supported")

    def install(self, model, factors) -> "Calibration":
        return Calibration(model, factors, self)


def attention_weights(module, query, key, mask, scaling: float) -> torch.Tensor:
    """Softmax attention (float32) of ``query`` rows over every key, under a boolean or additive mask."""
    scores = query.float() @ repeat_kv(key, query.shape[1] // key.shape[1]).float().transpose(2, 3) * scaling
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask.float()
    return scores.softmax(-1)


LEFT_OVER = 1e-4  # share of the context's attention below which a calibrated row counts as empty


def calibrated(weights: torch.Tensor, prior: torch.Tensor, keep: int, context: int, strength: float) -> torch.Tensor:
    """Attention rows with context keys ``[keep, context)`` replaced by ``max(a - strength * prior, 0)``,
    rescaled to the attention mass those keys had; other keys unchanged. A row whose calibration leaves
    almost nothing (the input is as content-free as the prior: what is left is rounding, which rescaling
    would blow up) keeps its weights."""
    real = weights[..., keep:context]
    shifted = (real - strength * prior[..., keep:context]).clamp_min(0)
    total, mass = shifted.sum(-1, keepdim=True), real.sum(-1, keepdim=True)
    shifted = torch.where(total > LEFT_OVER * mass, shifted * mass / total.clamp_min(1e-30), real)
    return torch.cat([weights[..., :keep], shifted, weights[..., context:]], -1)


class Calibration(AttentionPatch):
    """Handle of an installed Found-in-the-Middle patch (layer factors under ``base`` included)."""

    name = "lpes_fim"

    def __init__(self, model, factors, scheme: FoundInTheMiddle):
        self.scheme = scheme
        super().__init__(model, factors, scheme.base)
        self.layers = set(layer_span(scheme.layer_fractions, len(self._layers), "fim"))
        self._vocab = model.config.get_text_config().vocab_size
        self._prior: dict[int, torch.Tensor] = {}  # reading rows' attention over the dummy context, per layer
        self._recording = False
        self._base: tuple[int, object] | None = None  # (length, cache) of the last dummy prefix, batch 1
        self._live: tuple[int, object] | None = None  # (batch, cache) the last prior pass continued
        decoder = rope_layout(model)[0]
        self._handles.append(decoder.register_forward_pre_hook(self._prior_pass, with_kwargs=True))

    def _prior_pass(self, decoder, args, kwargs):
        """Before each forward: the same reading tokens over a content-free context, recording the prior."""
        if self._recording:
            return
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:
            raise LpesError("fim needs input_ids (its prior pass replaces the context's tokens)")
        cache = kwargs.get("cache", kwargs.get("past_key_values"))
        past = cache.get_seq_length() if cache is not None else 0
        common = {"attention_mask": kwargs.get("attention_mask"), "position_ids": kwargs.get("position_ids")}
        self._recording, self._prior = True, {}
        try:
            with torch.no_grad():
                if past:
                    live = self._dummy_cache(decoder, past, ids.shape[0], ids.device)
                    decoder(input_ids=ids, cache=live, use_cache=True, **common)
                    self._live = (ids.shape[0], live)  # grows as the real cache does: decoding reuses it
                else:
                    filler = content_free_ids(self._vocab, ids.shape[1] - 1).to(ids.device).expand(ids.shape[0], -1)
                    single = ids.shape[0] == 1  # a prefix about to be continued: its dummy is kept as the base
                    out = decoder(input_ids=torch.cat([filler, ids[:, -1:]], 1), use_cache=single, **common)
                    self._base, self._live = ((ids.shape[1], out.cache) if single else None), None
        finally:
            self._recording = False

    def _dummy_cache(self, decoder, past: int, batch: int, device):
        """A cache of ``past`` dummy positions for a batch: the one the last prior pass grew (a decoding
        step), else a copy of the kept dummy prefix of that length (a suffix batch on a shared prefix),
        else a new all-dummy prefix."""
        if self._live is not None and self._live[0] == batch and self._live[1].get_seq_length() == past:
            return self._live[1]
        if self._base is None or self._base[0] != past:
            ids = content_free_ids(self._vocab, past).to(device)
            out = decoder(input_ids=ids, position_ids=torch.arange(past, device=device)[None], use_cache=True)
            self._base = (past, out.cache)
        return expanded(self._base[1], batch)

    def attend(self, module, query, key, value, attention_mask, **kwargs):
        inner, idx = self.inner(), module.layer_idx
        if idx not in self.layers:
            return inner(module, query, key, value, attention_mask, **kwargs)
        rows, past = reading_rows(query, key)
        context = past or key.shape[2] - 1
        mask = None if attention_mask is None else attention_mask[:, :, rows]
        weights = attention_weights(module, query[:, :, rows], key, mask, kwargs["scaling"])
        if self._recording:
            self._prior[idx] = weights[..., :context]
            return inner(module, query, key, value, attention_mask, **kwargs)
        weights = calibrated(weights, self._prior.pop(idx), self.scheme.keep_first, context, self.scheme.strength)
        read = (weights.to(value.dtype) @ repeat_kv(value, query.shape[1] // key.shape[1])).transpose(1, 2)
        if past:
            return read, None
        out, attn = inner(module, query, key, value, attention_mask, **kwargs)
        out = out.clone()
        out[:, rows] = read
        return out, attn

    def remove(self) -> None:
        super().remove()
        self._prior.clear()
        self._base = self._live = None
