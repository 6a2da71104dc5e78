"""Reading a transformers config the same way everywhere: the language model's part of a multimodal
config, the RoPE parameters of the full-attention layers, the trained window. The lowest stage: it
imports nothing of the package, so the patch and the model loader both build on it."""

from __future__ import annotations


def text_config(config):
    """The language model's part of a config (multimodal configs nest it)."""
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def global_rope(params: dict) -> dict:
    """The RoPE parameters of the full-attention layers (Gemma3 keeps one dict per layer type)."""
    if "rope_theta" in params:
        return params
    return params.get("full_attention", next(iter(params.values())))


def trained_context(config) -> int:
    """The window the model was trained on: YaRN/linear-extended models keep it as
    ``original_max_position_embeddings``; per-layer-type parameters (Gemma3) take the largest."""
    params = getattr(config, "rope_parameters", None) or {}
    groups = [v for v in params.values() if isinstance(v, dict)] or [params]
    return max(int(g.get("original_max_position_embeddings") or config.max_position_embeddings) for g in groups)
