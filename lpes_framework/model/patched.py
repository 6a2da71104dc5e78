"""A factors file applied to a model, and a patched model saved and loaded again: the ``lpes`` block in its
config.json (what ``save_patched`` writes and ``load_patched`` re-applies) and, in an export, the per-layer tables
bound to that block."""

from __future__ import annotations

import os

from ..errors import LpesError
from ..exported.lpes_tables import is_bound
from ..position import LayerScaling, apply_layer_scaling, build_scheme
from .factors_file import check_identity, factors_record, load_factors, validate_record
from .info import identify_loaded
from .presets import resolve_factors


def apply_record(model, record: dict, source: str, allow_foreign: bool = False) -> LayerScaling:
    check_identity(record, identify_loaded(model), source, allow_foreign)
    return apply_layer_scaling(model, record["factors"], build_scheme(record["scheme"]))


def apply_factors_file(model, path: str | os.PathLike, allow_foreign: bool = False) -> LayerScaling:
    """Patch ``model`` with a saved search result; returns the removable handle. Refuses a file that
    records no model, or whose model differs from this one in architecture, layer or head counts, head
    size or any RoPE parameter, unless ``allow_foreign``."""
    return apply_record(model, load_factors(path), str(resolve_factors(path)), allow_foreign)


def save_patched(model, handle: LayerScaling, path: str | os.PathLike, tokenizer=None) -> None:
    """``save_pretrained`` plus an ``lpes`` block in config.json (stock transformers ignores it)."""
    from .cache import save_dequantised  # the GGUF reader, imported where a model is saved

    identity = identify_loaded(model).as_dict()
    model.config.lpes = factors_record(model=identity, scheme=handle.scheme.config, factors=handle.factors)
    try:
        save_dequantised(model, path)
    finally:
        del model.config.lpes
    if tokenizer is not None:
        tokenizer.save_pretrained(path)


def check_tables_bound(config, source: str) -> bool:
    """Whether ``config`` (a model's config) is an export's, holding per-layer tables; refused where its tables
    are not the ones its ``lpes`` block makes (an edited folder), so that every reader (the exported modeling
    file, ``load_patched``, the vLLM plugin) serves the same schedule or none."""
    tables = getattr(config, "lpes_tables", None)
    if tables is None:
        return False
    if not is_bound(tables, getattr(config, "lpes", None)):
        raise LpesError(f"{source}: its lpes_tables are not those of its lpes block (the folder was edited): "
                        "export it again")
    return True


def load_patched(path: str | os.PathLike, **kwargs):
    """Load a saved model and re-apply its ``lpes`` block: (model, handle or None when it has none). The block is
    checked before the weights load, and in an exported folder so are its tables against it; such a folder loads
    as its base class (its modeling file would patch it a second time)."""
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(path, **kwargs)
    block = getattr(config, "lpes", None)
    source = f"{path}/config.json (lpes block)"
    if block is not None:
        validate_record(block, source)
    loader = AutoModelForCausalLM
    if check_tables_bound(config, f"{path}/config.json"):
        loader = getattr(transformers, (config.architectures or [""])[0], None) or AutoModelForCausalLM
    model = loader.from_pretrained(path, **kwargs).eval()
    if block is None:
        return model, None
    return model, apply_record(model, block, source)
