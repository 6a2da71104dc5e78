"""Load the model to patch: an embedded GGUF shipped in a pip package, a hub id, a local directory,
or a tiny randomly initialised model (for tests and smoke runs).

GGUF files are de-quantised by transformers on every load (about 30 s for SmolLM2 on 2 cores); the
result is cached once as safetensors under ``$LPES_CACHE`` (default ``~/.cache/lpes_framework``) so
later loads take a second. Each cached folder carries a manifest of its files' sizes and hashes: a
folder that no longer matches it (a disk filled mid-copy, a truncated file) is rebuilt, with a line
saying so, instead of failing deep inside safetensors. Nothing here touches the network unless a hub id is given.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from dataclasses import asdict, dataclass, field, fields
from importlib import metadata
from pathlib import Path
from typing import Any

from ..io.atomic import atomic_file, replace_folder
from ..errors import LpesError
from ..hf import global_rope, text_config, trained_context

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
    if not _cached(model_dir, hashes=True):
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


MANIFEST = "lpes-manifest.json"


def _digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def _manifest(folder: Path) -> dict:
    return {p.name: {"size": p.stat().st_size, "blake2b": _digest(p)}
            for p in sorted(folder.iterdir()) if p.is_file() and p.name != MANIFEST}


def _save_atomically(obj, target: Path) -> None:
    def fill(tmp: Path) -> None:
        save_dequantised(obj, tmp) if hasattr(obj, "hf_quantizer") else obj.save_pretrained(tmp)
        (tmp / MANIFEST).write_text(json.dumps(_manifest(tmp), indent=1))

    replace_folder(target, fill)


def damage(folder: Path, hashes: bool) -> str | None:
    """What is wrong with a cached folder against its manifest (sizes always, contents when ``hashes``),
    or None when it is intact."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return "no readable manifest (written by an older lpes, or cut short)"
    for name, want in manifest.items():
        path = folder / name
        if not path.is_file() or path.stat().st_size != want["size"]:
            return f"{name} is missing or has the wrong size"
        if hashes and _digest(path) != want["blake2b"]:
            return f"{name} does not match its hash"
    return None


def _cached(folder: Path, hashes: bool = False) -> bool:
    """Whether a converted folder can be used; a damaged one is removed (and so rebuilt from the GGUF)."""
    if not folder.is_dir():
        return False
    problem = damage(folder, hashes)
    if problem is None:
        return True
    print(f"lpes: the model cache {folder} is damaged ({problem}); rebuilding it from the GGUF file", file=sys.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    return False


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


def _config(spec: ModelSpec, hashes: bool = False):
    """(source, gguf file or None, checked config): the de-quantised cache replaces a GGUF once it exists
    and is intact (sizes checked, and contents when ``hashes``: before its weights are read)."""
    from transformers import AutoConfig

    source, gguf_file = resolve_source(spec)
    if gguf_file and _cached(_converted(source, gguf_file, "model"), hashes):
        source, gguf_file = str(_converted(source, gguf_file, "model")), None
    config = _from_source(AutoConfig, source, gguf_file=gguf_file, trust_remote_code=spec.trust_remote_code)
    _check_config(config, spec.name)
    return source, gguf_file, config


def load_tokenizer(cfg):
    from transformers import AutoTokenizer

    spec = ModelSpec.of(cfg)
    source, gguf_file = resolve_source(spec)
    cached = _converted(source, gguf_file, "tokenizer") if gguf_file else None
    if cached is not None and _cached(cached, hashes=True):
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
        source, gguf_file, config = _config(spec, hashes=True)
        model = AutoModelForCausalLM.from_pretrained(
            source, gguf_file=gguf_file, config=config, trust_remote_code=spec.trust_remote_code,
            dtype=spec.dtype if spec.dtype == "auto" else getattr(torch, spec.dtype),
            attn_implementation=spec.attn_implementation,
        )
        if gguf_file:  # first load of this GGUF: keep the de-quantised model for next time
            _save_atomically(model, _converted(source, gguf_file, "model"))
    model.to(device).eval()
    return model, tokenizer, identify_loaded(model, spec)


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


def _label(spec: ModelSpec) -> tuple[str, str]:
    """(name, source) of a model spec: what outputs are labelled with and where the weights come from. A
    ``name_or_path`` overrides the group's embedded file, so it, not the group's name, labels the run."""
    if spec.random:
        return spec.name, f"random {spec.random.get('model_type')}"
    if spec.name_or_path:
        where = f"{spec.name_or_path}" + (f" ({spec.gguf_file})" if spec.gguf_file else "")
        return where, where
    return spec.name, " + ".join(spec.embedded["parts"]) if spec.embedded else ""


def identify(cfg) -> ModelInfo:
    """The model's identity from its config alone (no weights): layer count, window and RoPE layout."""
    spec = ModelSpec.of(cfg)
    config = _random_config(spec, vocab_size=256) if spec.random else _config(spec)[2]
    return model_info(config, *_label(spec))


def identify_loaded(model, spec=None) -> ModelInfo:
    """The identity of a loaded model (checked patchable); ``spec`` (a model config group) names it."""
    from ..position import rope_layout

    rope_layout(model)  # refuses models the patch cannot handle
    name, source = _label(ModelSpec.of(spec)) if spec is not None else (
        getattr(model.config, "name_or_path", "") or "", "")
    return model_info(model.config, name, source, architecture=type(model).__name__)
