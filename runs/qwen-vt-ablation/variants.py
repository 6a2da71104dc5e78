"""Issue 37: which part of the widened schedule costs RULER vt? Writes factors files of that schedule with one
layer third, or one band, put back to 1 (the unpatched model's tables there), each in its own folder so that
evaluate names its row after it. Run from the repository root: python runs/qwen-vt-ablation/variants.py"""

import json
from pathlib import Path

from lpes_framework.model.factors_file import factors_record, write_json_atomic

SOURCE = Path("runs/qwen-general-wider/best_factors.json")
HERE = Path(__file__).parent

source = json.loads(SOURCE.read_text())
factors = source["factors"]  # per layer, one factor per band (wavelengths under 128, 128-2048, longer)
thirds = {"layers-0-7": range(0, 8), "layers-8-15": range(8, 16), "layers-16-23": range(16, 24)}
variants = {f"no-{name}": [[1.0] * len(f) if layer in layers else f for layer, f in enumerate(factors)]
            for name, layers in thirds.items()}
variants |= {f"no-band-{band}": [[1.0 if b == band else x for b, x in enumerate(f)] for f in factors]
             for band in range(len(factors[0]))}
# the second round: one band of the middle third (layers 8-15, whose reset took most of the cost away)
variants |= {f"no-layers-8-15-band-{band}": [[1.0 if b == band and layer in thirds["layers-8-15"] else x
                                              for b, x in enumerate(f)] for layer, f in enumerate(factors)]
             for band in range(len(factors[0]))}
# the third round: that band (wavelengths over 2048 tokens, the one whose reset there took the vt cost away) one
# layer at a time, since the same eight factors also carry 40% of the KV ~1K gain
variants |= {f"no-layer-{layer}-band-2": [[1.0 if b == 2 and i == layer else x for b, x in enumerate(f)]
                                          for i, f in enumerate(factors)] for layer in thirds["layers-8-15"]}
for name, values in variants.items():
    record = factors_record(model=source["model"], scheme=source["scheme"], factors=values,
                            metrics={"derived_from": str(SOURCE), "reset_to_1": name})
    (HERE / name).mkdir(exist_ok=True)
    write_json_atomic(HERE / name / "best_factors.json", record)
    print(name)
