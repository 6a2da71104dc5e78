"""List the shipped presets, or make one from a run: a factors file that carries its held-out evidence, ready
to ship or share.

    lpes preset     (each shipped preset: its model, scheme, the task it was re-tested on and its held-out gain)
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


def preset_lines() -> list[str]:
    """A line a shipped preset: name, model, factors' shape, and its held-out middle gain over unpatched."""
    from ..model.factors_file import preset_names

    lines = []
    for name in preset_names():
        record = load_factors(name)
        factors = record["factors"]
        bands = len(factors[0]) if isinstance(factors[0], list) else 1
        task = record["task"]["name"]
        middle = record["metrics"]["intervals"]["found - unpatched"][task]["middle"]
        lines.append(f"{name:30} {record['model']['name']}, {record['scheme']['name']} x {len(factors)} layers x "
                     f"{bands} band{'s' * (bands > 1)}; held out on {task}: middle exact {middle['delta']:+.1f} "
                     f"[{middle['low']:+.1f}, {middle['high']:+.1f}] points over unpatched")
    return lines


def main(argv: list[str] | None = None) -> None:
    from .cli import one_line_errors

    parser = argparse.ArgumentParser(prog="python -m lpes_framework.commands.preset", description=__doc__.split("\n\n")[0])
    parser.add_argument("factors", nargs="?", help="the factors file (a search's best_factors.json); without it, "
                        "the shipped presets are listed")
    parser.add_argument("--heldout", type=Path, help="the evaluate folder that re-tested it")
    parser.add_argument("--name", help="the preset's name (its file name without .json)")
    parser.add_argument("--out", type=Path, default=PRESETS, help="folder to write into (default: the package's "
                        "presets)")
    args = parser.parse_args(argv)
    if args.factors is None:
        print("\n".join(one_line_errors(preset_lines)()))
        return
    if args.heldout is None or args.name is None:
        parser.error("making a preset needs --heldout and --name")
    print(f"wrote {one_line_errors(make_preset)(args.factors, args.heldout, args.name, args.out)}")


if __name__ == "__main__":
    main()
