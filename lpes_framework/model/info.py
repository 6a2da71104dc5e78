"""What a model is, as far as factors are concerned (``ModelInfo``): a pure function of its config, and
the name and source its outputs are labelled with."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from ..hf import global_rope, text_config, trained_context
from .settings import ModelSettings


@dataclass(frozen=True)
class ModelInfo:
    """What a model is, as far as factors are concerned: read from its config before any weights load
    (``identify``) and recorded in every output, so factors are never applied to another RoPE layout."""

    name: str  # the config group's name for an embedded model, else the hub id / folder it came from
    architecture: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    rope_theta: float | None
    rope_type: str
    trained_context: int
    rope_parameters: dict = field(default_factory=dict)  # every RoPE option (factor, llama3 bands, ...)
    source: str = ""  # the weights: 'distribution:file' of an embedded GGUF, a hub id or a folder (+ GGUF file)

    def line(self) -> str:
        return (f"{self.name}: {self.architecture}, {self.n_layers} layers, {self.n_heads} heads "
                f"({self.n_kv_heads} kv), head_dim {self.head_dim}, rope theta {self.rope_theta} "
                f"({self.rope_type}), trained context {self.trained_context}")

    def as_dict(self) -> dict:
        return asdict(self)


def _architecture(config) -> str:
    """The causal-LM class a config loads as, without loading it."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return (getattr(config, "architectures", None) or [MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(config.model_type,
                                                                                           config.model_type)])[0]


def model_info(config, name: str, source: str = "", architecture: str | None = None) -> ModelInfo:
    """The identity of a model from its config (a pure function of the config)."""
    text = text_config(config)
    params = dict(text.rope_parameters)
    rope = global_rope(params)
    n_heads = text.num_attention_heads
    return ModelInfo(
        name=name,
        architecture=architecture or _architecture(config),
        n_layers=int(text.num_hidden_layers),
        n_heads=n_heads,
        n_kv_heads=getattr(text, "num_key_value_heads", None) or n_heads,
        head_dim=getattr(text, "head_dim", None) or text.hidden_size // n_heads,
        rope_theta=rope.get("rope_theta"),
        rope_type=rope.get("rope_type", "default"),
        trained_context=trained_context(text),
        rope_parameters=json.loads(json.dumps(params, default=str)),  # JSON-clean, as it is recorded
        source=source,
    )


def label(spec: ModelSettings) -> tuple[str, str]:
    """(name, source) of a model spec: what outputs are labelled with and where the weights come from. A
    ``name_or_path`` overrides the group's embedded file, so it, not the group's name, labels the run."""
    if spec.random:
        return spec.name, f"random {spec.random.get('model_type')}"
    if spec.name_or_path:
        where = f"{spec.name_or_path}" + (f" ({spec.gguf_file})" if spec.gguf_file else "")
        return where, where
    return spec.name, " + ".join(spec.embedded["parts"]) if spec.embedded else ""


def identify_loaded(model, spec=None) -> ModelInfo:
    """The identity of a loaded model (checked patchable); ``spec`` (a model config group) names it."""
    from ..position import rope_layout

    rope_layout(model)  # refuses models the patch cannot handle
    name, source = label(ModelSettings.of(spec)) if spec is not None else (
        getattr(model.config, "name_or_path", "") or "", "")
    return model_info(model.config, name, source, architecture=type(model).__name__)
