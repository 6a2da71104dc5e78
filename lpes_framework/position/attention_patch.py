"""What plugin schemes that change attention itself (PosScale, Found-in-the-Middle) share: an attention
function registered with transformers for the patched model, the "reading rows", and content-free input.

- ``AttentionPatch`` installs the layer factors under a base scheme (so LPES composes with the competitor),
  registers ``attend`` as the model's attention implementation (wrapping the one it had: SDPA, eager, ...)
  and restores everything on ``remove()``.
- The reading rows are the tokens that read the context: the last token of a forward that starts a
  sequence (the last prompt token) and every token of a forward that continues a cache (decoding, or the
  question + answer scored against a shared prefix). Methods that act on "the generated token's
  attention" act on these.
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.llama.modeling_llama import eager_attention_forward

from ..errors import LpesError
from .contract import apply_layer_scaling
from .patch import PatchHandle, rope_layout, validate_factors

TAG = "_lpes_attention_patch"


def content_free_ids(vocab_size: int, n: int) -> torch.Tensor:
    """(1, n) token ids drawn uniformly with a fixed seed: an input with no facts and no structure, for
    calibration passes that need no tokenizer (the same for every model with this vocabulary size)."""
    generator = torch.Generator().manual_seed(0)
    return torch.randint(0, vocab_size, (1, n), generator=generator)


def reading_rows(query: torch.Tensor, key: torch.Tensor) -> tuple[slice, int]:
    """(rows of ``query`` that read the context, tokens before this forward) for one attention call."""
    past = key.shape[2] - query.shape[2]
    return (slice(None) if past else slice(-1, None)), past


def layer_span(fractions, n_layers: int, what: str) -> range:
    """Decoder layers [start, end) from fractions of the depth (at least one layer)."""
    start, end = (float(v) for v in fractions)
    if not 0 <= start < end <= 1:
        raise LpesError(f"{what}: layers must be fractions 0 <= start < end <= 1, got {list(fractions)}")
    first = round(start * n_layers)
    return range(first, max(round(end * n_layers), first + 1))


class AttentionPatch(PatchHandle):
    """Layer factors under ``base`` plus an attention function of the subclass (``attend``) in every
    layer; ``name`` is what the model's attention implementation is called while installed."""

    name: str

    def __init__(self, model, factors, base):
        decoder, layers, _ = rope_layout(model)
        self.factors = validate_factors(factors, len(layers))
        if any(getattr(layer.self_attn, "sliding_window", None) for layer in layers):
            raise LpesError(f"{self.name}: {type(model).__name__} has sliding-window layers; not supported")
        self._model, self._layers, self._inner = model, layers, model.config._attn_implementation
        self._handles: list = []
        self._rope = apply_layer_scaling(model, self.factors, base)
        for layer in layers:
            setattr(layer.self_attn, TAG, self)
        AttentionInterface.register(self.name, _dispatch)
        AttentionMaskInterface.register(self.name, ALL_MASK_ATTENTION_FUNCTIONS[self._inner]
                                        if self._inner in ALL_MASK_ATTENTION_FUNCTIONS else ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])
        model.set_attn_implementation(self.name)

    def inner(self):
        """The attention function the model had (its eager one has the same maths as Llama's)."""
        return eager_attention_forward if self._inner == "eager" else ALL_ATTENTION_FUNCTIONS[self._inner]

    def attend(self, module, query, key, value, attention_mask, **kwargs):
        raise NotImplementedError

    def remove(self) -> None:
        super().remove()
        self._rope.remove()
        for layer in self._layers:
            layer.self_attn.__dict__.pop(TAG, None)
        self._model.set_attn_implementation(self._inner)


def _dispatch(module, query, key, value, attention_mask, **kwargs):
    return getattr(module, TAG).attend(module, query, key, value, attention_mask, **kwargs)
