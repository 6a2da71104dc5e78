"""lpes factors in vLLM: each decoder layer gets its own rotary table, read from an exported folder.

``lpes export`` writes each layer's RoPE frequencies into the model's config.json (``lpes_tables``, bound to
its ``lpes`` block). vLLM calls ``register`` in every process it starts (the ``vllm.general_plugins`` entry
point); it wraps the model loader so that, once the model is built and before any weight loads, a model whose
config holds such tables has each attention layer's shared rotary embedding replaced by a copy whose cos/sin
cache comes from that layer's table. Keys are rotated before they enter the paged KV cache, so prefix caching
and continuous batching work unchanged, and the forward does exactly the work it did (one table lookup per
layer). The plugin is plain torch: it imports nothing of lpes_framework.

A model without tables is served untouched. Anything the plugin cannot serve (an ``lpes`` block without
tables, tables edited apart from their block, a length-dependent schedule asked to serve beyond the length its
tables hold for, a model whose layers it cannot match) stops the engine at start with one ``ServingError``
line.
"""

from __future__ import annotations

_REGISTERED = False


def register() -> None:
    """Wrap vLLM's model creation (idempotent: vLLM may call plugins more than once in a process)."""
    global _REGISTERED
    if _REGISTERED:
        return
    from vllm.model_executor.model_loader.base_loader import BaseModelLoader

    from .tables import install_from_config

    create = BaseModelLoader.create_model

    def create_model(self, vllm_config, model_config, prefix: str = ""):
        model = create(self, vllm_config, model_config, prefix)
        install_from_config(model, model_config)
        return model

    BaseModelLoader.create_model = create_model
    _REGISTERED = True
