"""List the shipped presets, or make one from a run: a factors file that carries its held-out evidence, ready
to ship or share.

    lpes preset     (each shipped preset: its model, scheme, the task it was re-tested on and its held-out gain)
    python -m lpes_framework.commands.preset <run>/best_factors.json --heldout <evaluate folder> --name my-model
        [--out outputs/presets] [--replace]

The factors file (a search's ``best_factors.json``) keeps its model block, scheme, curve, genome, task
and search metrics; from the evaluate folder that re-tested it (``bench/heldout_gain.py --out``) its
``test`` block gets every method scored there (the file's own row as ``found``) and ``intervals`` the
found-minus pairs, under the names a search's own test block uses, so ``bench/heldout_gain.py`` re-tests
the same uniform scalings by default. Written to ``<out>/<name>.json`` (``outputs/presets`` by default), never over a file there unless ``--replace``;
with ``--out lpes_framework/presets`` it becomes a preset of the package, usable by name wherever a factors file
is. The evidence must be a re-test of this very file (its factors and scheme) on the task it was made for.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import LpesError
from ..model.presets import PRESETS
from ..model.factors_file import load_factors
from ..tune.ship import make_preset

OUT = Path("outputs/presets")  # made presets land here, out of the package source, unless --out says otherwise


def preset_line(name: str) -> str:
    record = load_factors(name)
    factors = record["factors"]
    bands = len(factors[0]) if isinstance(factors[0], list) else 1
    task = record["task"]["name"]
    middle = record["metrics"]["intervals"]["found - unpatched"][task]["middle"]
    return (f"{name:30} {record['model']['name']}, {record['scheme']['name']} x {len(factors)} layers x "
            f"{bands} band{'s' * (bands > 1)}; held out on {task}: middle exact {middle['delta']:+.1f} "
            f"[{middle['low']:+.1f}, {middle['high']:+.1f}] points over unpatched")


def preset_lines() -> list[str]:
    """A line a shipped preset: name, model, factors' shape, and its held-out middle gain over unpatched."""
    from ..model.presets import preset_names

    lines = []
    for name in preset_names():
        try:
            lines.append(preset_line(name))
        except (LpesError, KeyError, TypeError, IndexError, AttributeError) as exc:  # one odd file, not the listing
            reason = str(exc) if isinstance(exc, LpesError) else f"{type(exc).__name__} {exc}"
            lines.append(f"{name:30} unreadable: {reason[:160]}")
    return lines


def main(argv: list[str] | None = None) -> None:
    from .cli import one_line_errors

    parser = argparse.ArgumentParser(prog="python -m lpes_framework.commands.preset", description=__doc__.split("\n\n")[0])
    parser.add_argument("factors", nargs="?", help="the factors file (a search's best_factors.json); without it, "
                        "the shipped presets are listed")
    parser.add_argument("--heldout", type=Path, help="the evaluate folder that re-tested it")
    parser.add_argument("--name", help="the preset's name (its file name without .json)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"folder to write into (default: {OUT}; "
                        f"{PRESETS.relative_to(PRESETS.parents[1])} ships it with the package)")
    parser.add_argument("--replace", action="store_true", help="overwrite a preset of that name already there")
    args = parser.parse_args(argv)
    if args.factors is None:
        print("\n".join(one_line_errors(preset_lines)()))
        return
    if args.heldout is None or args.name is None:
        parser.error("making a preset needs --heldout and --name")
    print(f"wrote {one_line_errors(make_preset)(args.factors, args.heldout, args.name, args.out, args.replace)}")


if __name__ == "__main__":
    main()
