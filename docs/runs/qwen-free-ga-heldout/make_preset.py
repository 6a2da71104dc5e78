"""Issue 10: ship the free GA's answer as the package preset ``qwen2.5-coder-0.5b``, carrying its held-out
evidence next to its search-split fitness: this folder's results.json (unpatched, found and any uniform
scaling scored with them; scores and the found-minus intervals over the test haystacks), under the names
a search's test block uses, so that bench/heldout_gain.py re-tests the same uniform scalings by default.
Run after command.sh: python docs/runs/qwen-free-ga-heldout/make_preset.py"""
import json
from pathlib import Path

from lpes_framework.evaluate import file_method_names
from lpes_framework.export import PRESETS, load_factors, write_json_atomic

here = Path(__file__).parent
source = str(here / "best_factors.json")
record = load_factors(source)
payload = json.loads((here / "results.json").read_text())
found = file_method_names([source])[source]
names = {name: "found" if name == found else name for name in payload["methods"]}
prefix = f"{found} - "
record["metrics"] |= {
    "test": {names[name]: {"scores": method["scores"]} for name, method in payload["methods"].items()},
    "intervals": {f"found - {pair[len(prefix):]}": interval for pair, interval in payload["intervals"].items()
                  if pair.startswith(prefix)},
}
write_json_atomic(Path(PRESETS) / "qwen2.5-coder-0.5b.json", record)
