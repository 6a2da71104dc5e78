"""The methods an evaluate run compares, all checked before any weights load: the unpatched model, uniform
scalings, factors files and presets, competitor schemes at factor 1, curve genomes; and which pairs get
paired intervals."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..config import number, plain
from ..errors import LpesError
from ..judging.comparison import uniform_method_name
from ..model.presets import is_preset
from ..model.factors_file import load_checked
from ..position import build_scheme, check_scheme_for, layer_width, validate_factors
from ..position.curves import build_curve


def file_method_names(paths) -> dict[str, str]:
    """Row names for factors files: ``preset <name>`` for a shipped preset, else the run folder's name, or
    the whole path where two folders share it (those two only: the others keep the names their rows were
    scored under, so a folder that adds a file reuses them)."""
    short = {str(p): f"preset {p}" if is_preset(p) else f"file {Path(p).parent.name or p}" for p in paths}
    shared = {name for name, n in Counter(short.values()).items() if n > 1}
    return {p: f"file {p}" if name in shared else name for p, name in short.items()}


def plan_methods(cfg, scheme_cfg: dict, info) -> dict[str, tuple[list[float] | None, dict]]:
    """name -> (factors or None for unpatched, scheme config); all checked before the model loads, factors
    files against the model's identity ``info`` (``models.identify``)."""
    methods: dict[str, tuple[list[float] | None, dict]] = {}
    n_layers = info.n_layers
    m = cfg.methods
    if m.baseline:
        methods["unpatched"] = (None, scheme_cfg)
    # a uniform factor is one number in every band, the same tables with or without bands: keyed without
    # them, so its rows are shared with (and reused from) the unbanded scheme's
    uniform_cfg = {k: v for k, v in scheme_cfg.items() if k != "bands"}
    for s in m.uniform or []:
        s = number(s, "methods.uniform")
        methods[uniform_method_name(scheme_cfg["name"], s)] = (validate_factors([s] * n_layers, n_layers), uniform_cfg)
    for path, name in file_method_names(m.factors_files or []).items():
        record = load_checked(path, info, bool(cfg.allow_foreign))
        methods[name] = (record["factors"], record["scheme"])
    for name, options in (m.schemes or {}).items():  # a competitor's settings, at factor 1 in every layer
        options = plain(options)
        if not isinstance(options, dict) or "name" not in options:
            raise LpesError(f"methods.schemes.{name} must be scheme settings with a name, e.g. {{name: posscale}}, "
                            f"got {options!r} (a dot in a method name nests it: use posscale-05, not posscale-0.5)")
        check_scheme_for(build_scheme(options), info)
        methods[name] = (validate_factors([1.0] * n_layers, n_layers), options)
    if m.genomes:
        curve = build_curve(plain(cfg.curve), n_layers, n_bands=layer_width(build_scheme(scheme_cfg), info))
        for name, genome in m.genomes.items():
            genes = curve.checked(list(genome), f"methods.genomes.{name}")
            methods[f"{curve.name} {name}"] = (curve.factors(genes).tolist(), scheme_cfg)
    if not methods:
        raise LpesError("no methods to evaluate: enable methods.baseline or give uniform/factors_files/schemes/genomes")
    unknown = [r for r in m.compare_to if r not in methods]
    if unknown:
        raise LpesError(f"methods.compare_to: {unknown} are not among the methods {list(methods)}")
    return methods


def interval_pairs(methods, references) -> list[tuple[str, str]]:
    """(a, b) for every method a against every reference b (unpatched first, where it is scored), each pair
    once: a reference compared to an earlier reference is not compared back."""
    refs = (["unpatched"] if "unpatched" in methods else []) + [r for r in references if r != "unpatched"]
    pairs: list[tuple[str, str]] = []
    for b in refs:
        pairs += [(a, b) for a in methods if a != b and (b, a) not in pairs]
    return pairs
