"""Issue 10: pick each scheme's best uniform factor on the search split by the search's own fitness
(unpatched search-split scores from the search run), write it as a factors file with its scheme, and
the held-out test (test.sh) runs unpatched + those + Ms-PoE (plugin defaults) in one evaluate."""
import json, sys
from pathlib import Path
from lpes_framework.model.factors import factors_record, load_factors, write_json_atomic
from lpes_framework.evaluation.fitness import FitnessWeights, task_score
from lpes_framework.evaluation.results import scores_from_json

out = Path(sys.argv[1])
run = Path("docs/runs/qwen-bezier-pi")
base = next(scores_from_json(r["scores"]) for r in map(json.loads, (run / "evaluations.jsonl").open())
            if r["kind"] == "baseline")["kv_retrieval"]
preset = load_factors("qwen2.5-coder-0.5b")
summary = {}
for scheme in ("ntk", "yarn"):
    payload = json.loads((out / f"tune-{scheme}" / "results.json").read_text())
    fits = {name: task_score(scores_from_json(m["scores"])["kv_retrieval"], base, FitnessWeights())
            for name, m in payload["methods"].items()}
    best = max(fits, key=fits.get)
    summary[scheme] = {"fitness": fits, "best": best}
    m = payload["methods"][best]
    (out / f"{scheme}-best").mkdir(exist_ok=True)
    write_json_atomic(out / f"{scheme}-best" / "best_factors.json",
                      factors_record(model=preset["model"], scheme=m["scheme"], factors=m["factors"]))
write_json_atomic(out / "summary.json", summary)
print(json.dumps(summary, indent=1))
