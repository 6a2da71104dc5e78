"""Make a preset from a run: a factors file that carries its held-out evidence, ready to ship or share.

    python -m lpes_framework.commands.preset <run>/best_factors.json --heldout <evaluate folder> --name my-model
        [--out lpes_framework/presets]

The factors file (a search's ``best_factors.json``) keeps its model block, scheme, curve, genome, task
and search metrics; from the evaluate folder that re-tested it (``bench/heldout_gain.py --out``) its
``test`` block gets every method scored there (the file's own row as ``found``) and ``intervals`` the
found-minus pairs, under the names a search's own test block uses, so ``bench/heldout_gain.py`` re-tests
the same uniform scalings by default. Written to ``<out>/<name>.json``; with the default ``--out`` it
becomes a preset of the package, usable by name wherever a factors file is.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ..errors import LpesError
from ..io.store import cache_key, read_results
from ..model.factors_file import PRESETS, load_factors, write_json_atomic


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
    names = {name: "found" if name == found else name for name in results["methods"]}
    prefix = f"{found} - "
    tested = {
        "test": {names[name]: {"scores": method["scores"]} for name, method in results["methods"].items()},
        "intervals": {f"found - {pair[len(prefix):]}": interval for pair, interval in results["intervals"].items()
                      if pair.startswith(prefix)},
    }
    return record | {"metrics": record["metrics"] | tested}


def make_preset(factors: str, heldout: Path, name: str, out: Path = PRESETS) -> Path:
    from ..compare.methods import file_method_names

    # a preset is used by its name wherever a factors file is: a plain file name, not a path out of --out
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", name):
        raise LpesError(f"--name {name!r}: a preset's name is a plain file name (letters, digits, '.', '_', '-'; "
                        "at most 100, not starting with '.' or '-')")
    record = load_factors(factors)
    preset = with_evidence(record, read_results(Path(heldout)), file_method_names([factors])[factors])
    target = Path(out) / f"{name}.json"
    target.parent.mkdir(parents=True, exist_ok=True)  # only once the file is known to be written
    write_json_atomic(target, preset)
    return target


def main(argv: list[str] | None = None) -> None:
    from .cli import one_line_errors

    parser = argparse.ArgumentParser(prog="python -m lpes_framework.commands.preset", description=__doc__.split("\n\n")[0])
    parser.add_argument("factors", help="the factors file (a search's best_factors.json)")
    parser.add_argument("--heldout", type=Path, required=True, help="the evaluate folder that re-tested it")
    parser.add_argument("--name", required=True, help="the preset's name (its file name without .json)")
    parser.add_argument("--out", type=Path, default=PRESETS, help="folder to write into (default: the package's "
                        "presets)")
    args = parser.parse_args(argv)
    print(f"wrote {one_line_errors(make_preset)(args.factors, args.heldout, args.name, args.out)}")


if __name__ == "__main__":
    main()
