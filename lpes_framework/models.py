"""Load the model to patch: an embedded GGUF shipped in a pip package, a hub id, a local directory,
or a tiny randomly initialised model (for tests and smoke runs).

GGUF files are de-quantised by transformers on every load (about 30 s for SmolLM2 on 2 cores); the
result is cached once as safetensors under ``$LPES_CACHE`` (default ``~/.cache/lpes_framework``) so
later loads take a second. Nothing here touches the network unless a hub id is given.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import asdict, dataclass, fields
from importlib import metadata
from pathlib import Path
from typing import Any

from .atomic import atomic_file, replace_folder
from .errors import LpesError

_DTYPES = {"float32", "bfloat16", "float16", "auto"}


@dataclass(frozen=True)
class ModelSpec:
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
    def of(cls, cfg) -> "ModelSpec":
        if isinstance(cfg, ModelSpec):
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
        spec = cls(**data)
        if spec.dtype not in _DTYPES:
            raise LpesError(f"model.dtype '{spec.dtype}' is not one of {sorted(_DTYPES)}")
        if spec.attn_implementation not in {"sdpa", "eager"}:
            raise LpesError(f"model.attn_implementation '{spec.attn_implementation}' is not sdpa or eager")
        return spec


def text_config(config):
    """The language model's part of a config (multimodal configs nest it)."""
    return config.get_text_config() if hasattr(config, "get_text_config") else config


@dataclass(frozen=True)
class ModelInfo:
    name: str
    architecture: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    rope_theta: float | None
    rope_type: str
    trained_context: int

    def line(self) -> str:
        return (f"{self.name}: {self.architecture}, {self.n_layers} layers, {self.n_heads} heads "
                f"({self.n_kv_heads} kv), head_dim {self.head_dim}, rope theta {self.rope_theta} "
                f"({self.rope_type}), trained context {self.trained_context}")

    def as_dict(self) -> dict:
        return asdict(self)


def cache_dir() -> Path:
    return Path(os.environ.get("LPES_CACHE", Path.home() / ".cache" / "lpes_framework"))


def _installed_file(ref: str) -> Path:
    """'distribution:relative/path' -> absolute path inside that installed distribution."""
    dist_name, _, rel = ref.partition(":")
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        raise LpesError(f"embedded model package '{dist_name}' is not installed (run `make install`)") from None
    path = Path(dist.locate_file(rel))
    if not path.is_file():
        raise LpesError(f"'{rel}' is missing from the installed package '{dist_name}'")
    return path


def embedded_gguf(parts: list[str], filename: str) -> Path:
    """The GGUF behind an embedded model; split files are joined once into the cache."""
    paths = [_installed_file(p) for p in parts]
    if len(paths) == 1:
        return paths[0]
    target = cache_dir() / "gguf" / filename
    expected = sum(p.stat().st_size for p in paths)
    if not target.is_file() or target.stat().st_size != expected:
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(target, "wb") as out:
            for p in paths:
                with open(p, "rb") as src:
                    shutil.copyfileobj(src, out, 1 << 24)
    return target


def _converted(gguf_dir: str, gguf_file: str, part: str) -> Path:
    """Cache folder for the tokenizer or model converted from one GGUF file (keyed by path, size, mtime)."""
    gguf = Path(gguf_dir) / gguf_file
    stat = gguf.stat()
    tag = hashlib.sha1(f"{gguf.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    return cache_dir() / "converted" / f"{gguf.stem}-{tag}" / part


def converted_dirs(cfg) -> tuple[Path, Path]:
    """(model folder, tokenizer folder) of the de-quantised copy of a GGUF model: a plain Hugging Face
    model any other tool can load (lm-eval's ``pretrained=``). Converts on first use."""
    spec = ModelSpec.of(cfg)
    source, gguf_file = resolve_source(spec)
    if not gguf_file:
        raise LpesError(f"model '{spec.name}' is not a GGUF file; use its name_or_path directly")
    model_dir = _converted(source, gguf_file, "model")
    if not model_dir.is_dir():
        load_model(spec)
    load_tokenizer(spec)
    return model_dir, _converted(source, gguf_file, "tokenizer")


def save_dequantised(model, path) -> None:
    """``save_pretrained`` for a model loaded from GGUF: its weights are already plain tensors, but the
    GGUF quantizer marks it unsaveable, so the marker is dropped for the duration of the save."""
    quantizer = getattr(model, "hf_quantizer", None)
    had_config = hasattr(model.config, "quantization_config")
    qconfig = getattr(model.config, "quantization_config", None)
    try:
        model.hf_quantizer = None
        if had_config:
            del model.config.quantization_config
        model.save_pretrained(path)
    finally:
        model.hf_quantizer = quantizer
        if had_config:
            model.config.quantization_config = qconfig


def _save_atomically(obj, target: Path) -> None:
    replace_folder(target, lambda tmp: save_dequantised(obj, tmp) if hasattr(obj, "hf_quantizer")
                   else obj.save_pretrained(tmp))


def resolve_source(spec: ModelSpec) -> tuple[str, str | None]:
    """(directory or hub id, gguf file name or None) for a model."""
    if spec.name_or_path:
        return str(spec.name_or_path), spec.gguf_file
    if not spec.embedded:
        raise LpesError(f"model '{spec.name}' has neither name_or_path nor embedded files")
    path = embedded_gguf(list(spec.embedded["parts"]), spec.embedded["filename"])
    return str(path.parent), path.name


def _check_config(config, name: str) -> None:
    params = getattr(text_config(config), "rope_parameters", None)
    if not params:
        archs = getattr(config, "architectures", None) or [config.model_type]
        raise LpesError(f"model '{name}' ({archs[0]}) has no rotary position embeddings; lpes patches RoPE models only")


def _resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise LpesError(f"device '{device}' asked for but CUDA is not available")
    return device


def _random_config(spec: ModelSpec, vocab_size: int):
    from transformers import AutoConfig

    options = {k: v for k, v in spec.random.items() if k not in ("model_type", "seed")}
    config = AutoConfig.for_model(spec.random["model_type"], vocab_size=vocab_size, **options)
    config._attn_implementation = spec.attn_implementation
    _check_config(config, spec.name)
    return config


def _random_model(spec: ModelSpec, tokenizer):
    import torch
    from transformers import AutoModelForCausalLM

    config = _random_config(spec, len(tokenizer))
    torch.manual_seed(spec.random.get("seed", 0))
    return AutoModelForCausalLM.from_config(config, dtype=getattr(torch, spec.dtype))


def _from_source(loader, source: str, **kwargs):
    """``loader.from_pretrained(source)``, with a missing folder or an unreachable hub id as one line."""
    try:
        return loader.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise LpesError(f"cannot load model.name_or_path='{source}': not a local folder with a model, nor in the "
                        f"local hub cache (offline runs cannot download) ({first})") from None


def _config(spec: ModelSpec):
    """(source, gguf file or None, checked config): the de-quantised cache replaces a GGUF once it exists."""
    from transformers import AutoConfig

    source, gguf_file = resolve_source(spec)
    if gguf_file and _converted(source, gguf_file, "model").is_dir():
        source, gguf_file = str(_converted(source, gguf_file, "model")), None
    config = _from_source(AutoConfig, source, gguf_file=gguf_file, trust_remote_code=spec.trust_remote_code)
    _check_config(config, spec.name)
    return source, gguf_file, config


def load_tokenizer(cfg):
    from transformers import AutoTokenizer

    spec = ModelSpec.of(cfg)
    source, gguf_file = resolve_source(spec)
    cached = _converted(source, gguf_file, "tokenizer") if gguf_file else None
    if cached is not None and cached.is_dir():
        return AutoTokenizer.from_pretrained(cached)
    tok = _from_source(AutoTokenizer, source, gguf_file=gguf_file, trust_remote_code=spec.trust_remote_code)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if cached is not None:
        _save_atomically(tok, cached)
    return tok


def load_model(cfg, tokenizer=None):
    """(model in eval mode, tokenizer, ModelInfo) for a ``model`` config group; pass the tokenizer if it
    was loaded already (commands load it first to check prompts before any weights)."""
    import torch
    from transformers import AutoModelForCausalLM

    spec = ModelSpec.of(cfg)
    device = _resolve_device(spec.device)
    tokenizer = tokenizer or load_tokenizer(spec)
    if spec.random:
        model = _random_model(spec, tokenizer)
    else:
        source, gguf_file, config = _config(spec)
        model = AutoModelForCausalLM.from_pretrained(
            source, gguf_file=gguf_file, config=config, trust_remote_code=spec.trust_remote_code,
            dtype=spec.dtype if spec.dtype == "auto" else getattr(torch, spec.dtype),
            attn_implementation=spec.attn_implementation,
        )
        if gguf_file:  # first load of this GGUF: keep the de-quantised model for next time
            _save_atomically(model, _converted(source, gguf_file, "model"))
    model.to(device).eval()
    return model, tokenizer, describe(model, spec.name)


def describe(model, name: str) -> ModelInfo:
    from .position import rope_layout

    _, layers, specs = rope_layout(model)  # refuses models the patch cannot handle
    config = text_config(model.config)
    params = config.rope_parameters
    if "rope_theta" not in params:  # per-layer-type parameters (Gemma3): report the global layers'
        params = params.get("full_attention", next(iter(params.values())))
    n_heads = config.num_attention_heads
    return ModelInfo(
        name=name,
        architecture=type(model).__name__,
        n_layers=len(layers),
        n_heads=n_heads,
        n_kv_heads=getattr(config, "num_key_value_heads", None) or n_heads,
        head_dim=getattr(config, "head_dim", None) or config.hidden_size // n_heads,
        rope_theta=params.get("rope_theta"),
        rope_type=params.get("rope_type", "default"),
        trained_context=max(s.max_position for s in specs),
    )


@dataclass(frozen=True)
class ModelShape:
    """What the commands check before loading weights: factor counts and prompt lengths."""

    n_layers: int
    trained_context: int


def trained_context(config) -> int:
    """The window the model was trained on: YaRN/linear-extended models keep it as
    ``original_max_position_embeddings``; per-layer-type parameters (Gemma3) take the largest."""
    params = getattr(config, "rope_parameters", None) or {}
    groups = [v for v in params.values() if isinstance(v, dict)] or [params]
    return max(int(g.get("original_max_position_embeddings") or config.max_position_embeddings) for g in groups)


def peek(cfg) -> ModelShape:
    """Layer count and trained context from the config alone (no weights)."""
    spec = ModelSpec.of(cfg)
    config = _random_config(spec, vocab_size=256) if spec.random else _config(spec)[2]
    text = text_config(config)
    return ModelShape(n_layers=int(text.num_hidden_layers), trained_context=trained_context(text))
