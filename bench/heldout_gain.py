"""Held-out gain of a shipped preset over the unpatched model, in the regime it was searched in (the
file's run record, or the ``task`` block of presets made before it), on its model's test split:
shared-prefix scoring, paired bootstrap intervals over haystacks (the preset minus unpatched and minus
each uniform scaling), and perplexity on held-out text (Python's bundled documentation), all through the
evaluate command's own code (``lpes retest``, whose options it takes). Writes the evaluate outputs to ``--out`` when given; run again with the same
``--out``, it reuses the methods already scored there (a long run spans sessions), and with a larger
``--samples`` scores only the new haystacks (60 per position grow to 100 at 40% of the cost). Last line:
middle_gain=<exact-match points, mean of the middle positions> ci_low=<lower 95% bound, points>
ends_delta=<worst change at the first or last position, points> ppl_ratio=<patched / unpatched perplexity>.
Targets: ci_low > 0, ends_delta >= -2, ppl_ratio <= 1.02."""

from __future__ import annotations

import math

import common  # noqa: F401  (puts the repository on the path)
from lpes_framework.commands.retest import parser as retest_parser, retest


def main() -> None:
    parser = retest_parser()
    parser.prog, parser.description = "heldout_gain.py", __doc__
    args = parser.parse_args()
    from lpes_framework.commands.cli import one_line_errors
    from lpes_framework.judging.positions import end_positions
    from lpes_framework.tasks.base import WHOLE_TEXT

    payload, names, task = one_line_errors(retest)(args.preset, args.model, args.samples, args.split, args.threads,
                                                   args.uniform, args.versus, args.out, args.seed)
    name = names[args.preset]
    scores = {m: payload["methods"][m]["scores"] for m in ("unpatched", name)}
    middle = payload["intervals"][f"{name} - unpatched"][task]["middle"]
    positions = list(scores["unpatched"][task])
    ends_delta = min((100 * (scores[name][task][p]["accuracy"] - scores["unpatched"][task][p]["accuracy"])
                      for p in end_positions(positions)), default=math.nan)  # nan: fewer than 3 positions
    ppl = {m: s["perplexity"][WHOLE_TEXT]["perplexity"] for m, s in scores.items()}
    print(f"middle_gain={middle['delta']:.2f} ci_low={middle['low']:.2f} ends_delta={ends_delta:.2f} "
          f"ppl_ratio={ppl[name] / ppl['unpatched']:.4f}")


if __name__ == "__main__":
    main()
