"""Shipping a schedule: a preset (a factors file that carries its held-out evidence, written where asked) and the
self-contained export of a factors file and its model (``lpes preset``, ``lpes export`` and ``lpes tune``'s
last stage)."""

from __future__ import annotations

import re
from pathlib import Path

from ..evaluate.methods import file_method_names
from ..errors import LpesError
from ..io.atomic import file_digest, write_json_atomic
from ..io.store import cache_key, read_results
from ..model.factors_file import load_factors


def with_evidence(record: dict, results: dict, found: str) -> dict:
    """``record`` whose test metrics are an evaluate run's ``results`` (``found``: the record's own row)."""
    if found not in results["methods"]:
        raise LpesError(f"the evaluate results hold no row {found!r} (rows: {', '.join(results['methods'])}): "
                        "not a re-test of this factors file")
    tested = results["methods"][found]
    # the row is found by the file's name; its factors and scheme say whether it re-tested this file
    if tested.get("factors") is None or cache_key(tested["factors"], {}) != cache_key(record["factors"], {}) \
            or tested.get("scheme") != record["scheme"]:
        raise LpesError(f"the evaluate results' row {found!r} scored other factors or another scheme than this file: "
                        "not a re-test of it")
    task = (record.get("task") or (record.get("run") or {}).get("config", {}).get("task") or {}).get("name")
    tested_tasks = sorted({t.get("name") for t in (results.get("tasks") or {}).values() if isinstance(t, dict)})
    if task is not None and task not in tested_tasks:  # a preset's evidence is of the task it was made for
        raise LpesError(f"the evaluate results re-tested {', '.join(map(str, tested_tasks)) or 'no task'}, and this "
                        f"file was made for {task}: not its evidence")
    names = {name: "found" if name == found else name for name in results["methods"]}
    prefix = f"{found} - "
    tested = {
        "test": {names[name]: {"scores": method["scores"]} for name, method in results["methods"].items()},
        "intervals": {f"found - {pair[len(prefix):]}": interval for pair, interval in results["intervals"].items()
                      if pair.startswith(prefix)},
    }
    return record | {"metrics": record["metrics"] | tested}


def portable(value):
    """``value`` with every string that names a file on this machine written as that file's name and digest
    (``best_factors.json blake2b:...``): a preset travels, and a path into the run folders it was made in
    (``runs/...``) would say where the evidence lay here, not what it was. Model blocks are left as they are: they
    name the weights (a package's part, a hub name, a local GGUF), which the model's identity checks, not a run."""
    if isinstance(value, dict):
        return {k: v if k == "model" else portable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [portable(v) for v in value]
    if isinstance(value, str) and value and Path(value).is_file():
        return f"{Path(value).name} blake2b:{file_digest(Path(value))}"
    return value


def make_preset(factors: str, heldout: Path, name: str, out: Path, replace: bool = False) -> Path:
    """``factors`` with the evidence of the evaluate folder ``heldout`` that re-tested it, as ``<out>/<name>.json``;
    an existing file there (a shipped preset) is replaced only with ``replace``."""
    # a preset is used by its name wherever a factors file is: a plain file name, not a path out of --out
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", name):
        raise LpesError(f"--name {name!r}: a preset's name is a plain file name (letters, digits, '.', '_', '-'; "
                        "at most 100, not starting with '.' or '-')")
    record = load_factors(factors)
    preset = with_evidence(record, read_results(Path(heldout)), file_method_names([factors])[factors])
    preset = preset | {k: portable(preset[k]) for k in ("metrics", "run") if k in preset}
    target = Path(out) / f"{name}.json"
    if (target.exists() or target.is_symlink()) and not replace:
        raise LpesError(f"{target} exists (a shipped or earlier preset); pass --replace to overwrite it")
    target.parent.mkdir(parents=True, exist_ok=True)  # only once the file is known to be written
    write_json_atomic(target, preset)
    return target


def export_with(factors: str, model_cfg, out: Path, replace: bool = False) -> Path:
    """``factors`` applied to the model of ``model_cfg`` (a model config), saved as a self-contained folder
    (over a folder no export made only with ``replace``)."""
    from ..model.factors_file import load_checked
    from ..model.load import identify, load_model
    from ..position import build_scheme
    from ..report.export import check_target, save_self_contained

    check_target(out, replace)  # before any weights load, as the file's checks are
    record = load_checked(factors, identify(model_cfg))
    scheme = build_scheme(record["scheme"])
    scheme.check_foldable()
    hf, tokenizer, _ = load_model(model_cfg)
    # a scheme that can be folded into the weights (head scales) leaves only its RoPE part to patch
    with scheme.fold(hf, record["factors"]) as handle:
        return save_self_contained(hf, handle, out, tokenizer, evidence=record.get("metrics"),
                                   folded=record["scheme"] if scheme.folds_into_weights else None, replace=replace)
