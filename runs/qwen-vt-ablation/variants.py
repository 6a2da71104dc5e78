"""Issue 37: which part of the widened schedule costs RULER vt? Writes factors files of that schedule with one
layer third, or one band, put back to 1 (the unpatched model's tables there), each in its own folder so that
evaluate names its row after it. Run from the repository root: python runs/qwen-vt-ablation/variants.py"""

import json
from pathlib import Path

from lpes_framework.model.factors_file import factors_record
from lpes_framework.io.atomic import write_json_atomic

SOURCE = Path("runs/qwen-general-wider/best_factors.json")
HERE = Path(__file__).parent

source = json.loads(SOURCE.read_text())
factors = source["factors"]  # per layer, one factor per band (wavelengths under 128, 128-2048, longer)
thirds = {"layers-0-7": range(0, 8), "layers-8-15": range(8, 16), "layers-16-23": range(16, 24)}
bands = range(len(factors[0]))


def reset(where) -> list[list[float]]:
    """The schedule with the factors at (layer, band) where ``where`` holds put back to 1."""
    return [[1.0 if where(layer, b) else x for b, x in enumerate(f)] for layer, f in enumerate(factors)]


variants = {f"no-{name}": reset(lambda layer, b, layers=layers: layer in layers) for name, layers in thirds.items()}
variants |= {f"no-band-{band}": reset(lambda layer, b, band=band: b == band) for band in bands}
# the second round: one band of the middle third (layers 8-15, whose reset took most of the cost away)
middle = thirds["layers-8-15"]
variants |= {f"no-layers-8-15-band-{band}": reset(lambda layer, b, band=band: b == band and layer in middle)
             for band in bands}
# the third round: that band (wavelengths over 2048 tokens, the one whose reset there took the vt cost away) one
# layer at a time, since the same eight factors also carry 40% of the KV ~1K gain
variants |= {f"no-layer-{one}-band-2": reset(lambda layer, b, one=one: b == 2 and layer == one) for one in middle}
# the fourth round: layer 9's long band (0.50, the curve's lower bound) alone held most of both vt's cost and the
# KV loss; halfway to 1 on the log scale, or with layer 11's (the next largest vt share) also at 1, or with the
# middle third's band 1 also at 1 (whose reset raised KV), does vt's cost fall faster than KV's gain?
halfway = [list(f) for f in factors]
halfway[9][2] = factors[9][2] ** 0.5
variants[f"layer-9-band-2-at-{halfway[9][2]:.2f}"] = halfway
variants["no-layers-9-11-band-2"] = reset(lambda layer, b: b == 2 and layer in (9, 11))
variants["no-layers-8-15-band-1-layer-9-band-2"] = reset(
    lambda layer, b: (b == 1 and layer in middle) or (b == 2 and layer == 9))
# the fifth round: layers 9 and 11's long bands at 1 took vt's cost away (layer 11's without a KV cost), and the
# middle third's band 1 at 1 gave back the KV gain that layer 9's reset lost: all three together
variants["no-layers-8-15-band-1-layers-9-11-band-2"] = reset(
    lambda layer, b: (b == 1 and layer in middle) or (b == 2 and layer in (9, 11)))
for name, values in variants.items():
    # the task block: the regime the source was searched in, which lpes retest re-tests a derived file in
    record = factors_record(model=source["model"], scheme=source["scheme"], factors=values, task=source["task"],
                            metrics={"derived_from": str(SOURCE), "reset_to_1": name})
    (HERE / name).mkdir(exist_ok=True)
    write_json_atomic(HERE / name / "best_factors.json", record)
    print(name)
