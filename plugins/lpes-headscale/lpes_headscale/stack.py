"""A RoPE factors file (or shipped preset) as the start of a stacked search: the same layer factors under
``pos=headscale`` with ``base`` set to the file's scheme, and every head scale at 1, so the stacked search
starts exactly where the file's schedule is (the model computes the same thing).

    python -m lpes_headscale.stack qwen2.5-coder-0.5b --out start.json [--per channel]

then ``optimizer.start=start.json`` with ``pos=headscale '+pos.base=<the file's scheme>'``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from lpes_framework.errors import LpesError
from lpes_framework.model.factors_file import factors_record, load_factors
from lpes_framework.position import brings_own_patch
from lpes_framework.io.atomic import write_json_atomic

from .scheme import HeadScale


def stacked_start(path: str, per: str = "head") -> dict:
    """The factors record of ``path``'s RoPE factors followed by head scales of 1 in every layer."""
    record = load_factors(path)
    if brings_own_patch(record["scheme"]["name"]):
        raise LpesError(f"{path}: its scheme {record['scheme']['name']} brings its own patch; a stacked start needs "
                        "RoPE layer factors (rope, pi, ntk, yarn)")
    model = record["model"]
    if not all(isinstance(model.get(k), int) for k in ("n_heads", "head_dim")):
        raise LpesError(f"{path}: its model block records no head count and head size")
    scheme = HeadScale(per=per, base=record["scheme"])
    scales = [1.0] * scheme.scale_width(model["n_heads"], model["head_dim"])
    factors = [list(np.atleast_1d(f).astype(float)) + scales for f in record["factors"]]
    return factors_record(model=model, scheme={"name": "headscale", "per": per, "base": record["scheme"]},
                          factors=factors, metrics={"stacked_from": str(path)})


def main(argv: list[str] | None = None) -> None:
    from lpes_framework.commands.cli import one_line_errors

    parser = argparse.ArgumentParser(prog="python -m lpes_headscale.stack", description=__doc__.split("\n\n")[0])
    parser.add_argument("factors", help="a RoPE factors file or a shipped preset's name")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per", default="head", help="head or channel")
    args = parser.parse_args(argv)
    record = one_line_errors(stacked_start)(args.factors, args.per)
    write_json_atomic(args.out, record)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
