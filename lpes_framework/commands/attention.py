"""``lpes attention``: why it works (or not), the attention mass each layer puts on the gold span, by gold
position, unpatched and patched (``evaluate.attention`` says how it is measured).

    lpes attention <search run dir> [--factors FILE|PRESET] [--split test] [--samples 10] [--out DIR]

Writes ``attention.json`` and ``attention.png`` next to the run's outputs, or into ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..evaluate.attention import analyse
from .cli import one_line_errors


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="lpes attention", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a search (or evaluate) run directory: its run record's config is "
                        "reused")
    parser.add_argument("--factors", help="factors file or shipped preset (default: the run's best_factors.json)")
    parser.add_argument("--split", default="test", choices=["search", "test", "validation"])
    parser.add_argument("--samples", type=int, help="samples (contexts) per gold position (default: the run's)")
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    parser.add_argument("--allow-foreign", action="store_true",
                        help="apply a factors file searched on another model (or recording none) anyway")
    parser.add_argument("--out", type=Path, help="folder for attention.json and .png (default: the run directory)")
    parser.add_argument("--model", help="model config group to load (default: the shipped group the run's record "
                        "equals; a record naming another model needs this)")
    args = parser.parse_args(argv)
    one_line_errors(analyse)(args.run, args.factors, args.split, args.samples, args.threads, args.allow_foreign,
                             args.out, args.model)


if __name__ == "__main__":
    main()
