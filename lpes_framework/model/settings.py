"""The ``model`` config group, parsed and checked once, before anything is read from disk or the hub."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ..errors import LpesError

_DTYPES = {"float32", "bfloat16", "float16", "auto"}


@dataclass(frozen=True)
class ModelSettings:
    """The ``model`` config group, parsed and checked once (its YAML holds every default)."""

    name: str
    name_or_path: str | None
    gguf_file: str | None
    embedded: Any  # {parts: ['distribution:path', ...], filename} or None
    dtype: str
    device: str
    attn_implementation: str
    trust_remote_code: bool
    random: Any = None  # {model_type, seed, **config options}: a randomly initialised model (tests)

    @classmethod
    def of(cls, cfg) -> "ModelSettings":
        if isinstance(cfg, ModelSettings):
            return cfg
        from omegaconf import DictConfig, OmegaConf

        data = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise LpesError(f"model: unknown option(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
        missing = sorted(f.name for f in fields(cls) if f.name not in data and f.name != "random")
        if missing:
            raise LpesError(f"model: missing {', '.join(missing)} (start from conf/model/smollm2.yaml)")
        settings = cls(**data)
        if settings.dtype not in _DTYPES:
            raise LpesError(f"model.dtype '{settings.dtype}' is not one of {sorted(_DTYPES)}")
        if settings.attn_implementation not in {"sdpa", "eager"}:
            raise LpesError(f"model.attn_implementation '{settings.attn_implementation}' is not sdpa or eager")
        return settings
