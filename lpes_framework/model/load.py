"""Load the model to patch: an embedded GGUF shipped in a pip package, a hub id, a local directory,
or a tiny randomly initialised model (for tests and smoke runs); and its identity from its config alone.

GGUF files are de-quantised by transformers on every load (about 30 s for SmolLM2 on 2 cores); the
result is cached once as safetensors (``model.cache``) so later loads take a second. Nothing here touches
the network unless a hub id is given.
"""

from __future__ import annotations

import sys

from pathlib import Path

from ..errors import LpesError
from ..hf import text_config
from .cache import cache_intact, converted_folder, converting, embedded_gguf, save_to_cache
from .info import ModelInfo, identify_loaded, label, model_info
from .settings import ModelSettings


def converted_dirs(cfg) -> tuple[Path, Path]:
    """(model folder, tokenizer folder) of the de-quantised copy of a GGUF model: a plain Hugging Face
    model any other tool can load (lm-eval's ``pretrained=``). Converts on first use."""
    spec = ModelSettings.of(cfg)
    source, gguf_file = resolve_source(spec)
    if not gguf_file:
        raise LpesError(f"model '{spec.name}' is not a GGUF file; use its name_or_path directly")
    model_dir = converted_folder(source, gguf_file, "model")
    if not cache_intact(model_dir, hashes=True):
        load_model(spec)
    load_tokenizer(spec)
    return model_dir, converted_folder(source, gguf_file, "tokenizer")


def resolve_source(spec: ModelSettings) -> tuple[str, str | None]:
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


def _random_config(spec: ModelSettings, vocab_size: int):
    from transformers import AutoConfig

    options = {k: v for k, v in spec.random.items() if k not in ("model_type", "seed")}
    config = AutoConfig.for_model(spec.random["model_type"], vocab_size=vocab_size, **options)
    config._attn_implementation = spec.attn_implementation
    _check_config(config, spec.name)
    return config


def _random_model(spec: ModelSettings, tokenizer):
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


def _config(spec: ModelSettings, hashes: bool = False):
    """(source, gguf file or None, checked config): the de-quantised cache replaces a GGUF once it exists
    and is intact (sizes checked, and contents when ``hashes``: before its weights are read)."""
    from transformers import AutoConfig

    source, gguf_file = resolve_source(spec)
    if gguf_file and cache_intact(converted_folder(source, gguf_file, "model"), hashes):
        source, gguf_file = str(converted_folder(source, gguf_file, "model")), None
    config = _from_source(AutoConfig, source, gguf_file=gguf_file, trust_remote_code=spec.trust_remote_code)
    _check_config(config, spec.name)
    return source, gguf_file, config


def load_tokenizer(cfg):
    from transformers import AutoTokenizer

    spec = ModelSettings.of(cfg)
    source, gguf_file = resolve_source(spec)
    cached = converted_folder(source, gguf_file, "tokenizer") if gguf_file else None
    with converting(source, gguf_file):
        if cached is not None and cache_intact(cached, hashes=True):
            return AutoTokenizer.from_pretrained(cached)
        tok = _from_source(AutoTokenizer, source, gguf_file=gguf_file, trust_remote_code=spec.trust_remote_code)
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        if cached is not None:
            save_to_cache(tok, cached)
    return tok


def load_model(cfg, tokenizer=None):
    """(model in eval mode, tokenizer, ModelInfo) for a ``model`` config group; pass the tokenizer if it
    was loaded already (commands load it first to check prompts before any weights)."""
    import torch
    from transformers import AutoModelForCausalLM

    spec = ModelSettings.of(cfg)
    device = _resolve_device(spec.device)
    if not sys.stderr.isatty():  # in a log (CI, nohup, a notebook's file) every bar frame would be a line
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    tokenizer = tokenizer or load_tokenizer(spec)
    if spec.random:
        model = _random_model(spec, tokenizer)
    else:
        with converting(*resolve_source(spec)):
            source, gguf_file, config = _config(spec, hashes=True)
            model = AutoModelForCausalLM.from_pretrained(
                source, gguf_file=gguf_file, config=config, trust_remote_code=spec.trust_remote_code,
                dtype=spec.dtype if spec.dtype == "auto" else getattr(torch, spec.dtype),
                attn_implementation=spec.attn_implementation,
            )
            if gguf_file:  # first load of this GGUF: keep the de-quantised model for next time
                save_to_cache(model, converted_folder(source, gguf_file, "model"))
    model.to(device).eval()
    return model, tokenizer, identify_loaded(model, spec)


def identify(cfg) -> ModelInfo:
    """The model's identity from its config alone (no weights): layer count, window and RoPE layout."""
    spec = ModelSettings.of(cfg)
    config = _random_config(spec, vocab_size=256) if spec.random else _config(spec)[2]
    return model_info(config, *label(spec))


