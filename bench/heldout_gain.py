"""Held-out gain of a shipped preset over the unpatched model, in the regime it was searched in (the
file's run record, or the ``task`` block of presets made before it), on its model's test split:
shared-prefix scoring, paired bootstrap intervals over haystacks (the preset minus unpatched and minus
each uniform scaling), and perplexity on held-out text (Python's bundled documentation), all through the
evaluate command's own code. Writes the evaluate outputs to ``--out`` when given; run again with the same
``--out``, it reuses the methods already scored there (a long run spans sessions), and with a larger
``--samples`` scores only the new haystacks (60 per position grow to 100 at 40% of the cost). Last line:
middle_gain=<exact-match points, mean of the middle positions> ci_low=<lower 95% bound, points>
ends_delta=<worst change at the first or last position, points> ppl_ratio=<patched / unpatched perplexity>.
Targets: ci_low > 0, ends_delta >= -2, ppl_ratio <= 1.02."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import common  # noqa: F401  (puts the repository on the path)

DEFAULT_PRESET = "qwen2.5-coder-0.5b"
DEFAULT_MODEL = "qwen2.5-0.5b"


def retest(preset: str, model: str, samples: int, split: str, threads: int, uniform: list[float] | None,
           versus: list[str], out: Path | None, seed: int | None = None) -> tuple[dict, dict[str, str], str]:
    """(evaluate payload, method name of each file, task name): ``preset`` re-tested in its own regime
    next to the unpatched model, ``uniform`` factors and the ``versus`` files, with paired intervals of the
    preset minus each; ``out`` keeps the evaluate outputs and reuses the methods already scored there.
    ``seed`` draws the haystacks with another seed than the preset's search had (the seed picks the split's
    haystacks): two searches run with different seeds are re-tested on the same ones that way."""
    from omegaconf import open_dict

    from lpes_framework.evaluation.comparison import uniform_method_name
    from lpes_framework.config import compose_config
    from lpes_framework.errors import LpesError
    from lpes_framework.commands.evaluate import file_method_names, run_evaluate
    from lpes_framework.model.choice import check_task_reads_no_files
    from lpes_framework.model.factors import load_factors

    record = load_factors(preset)
    run = record.get("run")  # the search's run record: its model and task; presets made before it, the task block
    if run is None and "task" not in record:
        raise SystemExit(f"error: {preset} has no run record nor 'task' block: the regime to re-test it in "
                         "is unknown")
    if uniform is None:  # the search's own baseline, named "uniform <scheme> <factor>" in its test block
        uniform = [float(name.split()[-1]) for name in record["metrics"].get("test", {}) if name.startswith("uniform ")]
    recorded_task = run["config"]["task"] if run else record["task"]
    try:
        check_task_reads_no_files(recorded_task, preset)  # a received file never chooses what is read
    except LpesError as exc:
        raise SystemExit(f"error: {exc}") from None
    task = recorded_task["name"]
    cfg = compose_config("evaluate", [f"model={model}", f"task={task}", f"split={split}",
                                      f"pos={record['scheme']['name']}",
                                      f"threads={threads}", "progress=false", "resume=true",
                                      f"methods.uniform=[{','.join(map(str, uniform))}]",
                                      f"methods.factors_files=[{','.join([preset, *versus])}]",
                                      "+task@extra_tasks.perplexity=perplexity"])
    with open_dict(cfg):
        if run:  # the model is --model's, never the record's: factors searched on another are refused by evaluate
            cfg.task = run["config"]["task"]
            cfg.seed = run["config"]["seed"] if seed is None else seed
        else:
            cfg.task.merge_with({k: v for k, v in record["task"].items() if k != "seed"})
            if seed is not None:
                cfg.seed = seed
        cfg.pos.merge_with(record["scheme"])  # uniform scalings under the preset's own scheme
        cfg.task.samples_per_position = samples
        names = file_method_names([preset, *versus])
        cfg.methods.compare_to = [uniform_method_name(record["scheme"]["name"], u) for u in uniform] + [
            names[v] for v in versus]  # the preset minus each uniform and each other file
    with tempfile.TemporaryDirectory() as tmp:
        try:
            payload = run_evaluate(cfg, out or Path(tmp))
        except LpesError as exc:
            raise SystemExit(f"error: {exc}") from None
    return payload, names, task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default=DEFAULT_PRESET, help="shipped preset name or factors file")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model config group of a file without a run record")
    parser.add_argument("--samples", type=int, default=60, help="haystacks per gold position (>= 60)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--uniform", type=float, nargs="*", help="uniform factors to show alongside (default: the "
                        "best uniform scaling the preset's search tested, if it records one)")
    parser.add_argument("--versus", nargs="*", default=[], help="other factors files or presets to score alongside: "
                        "the preset gets paired intervals against each (e.g. the shipped preset, for a new schedule)")
    parser.add_argument("--out", type=Path, help="keep the evaluate outputs (results.json, plot, table) here; "
                        "methods already scored there are reused")
    parser.add_argument("--seed", type=int, help="draw the haystacks with this seed instead of the preset's search "
                        "seed (to re-test searches run with different seeds on the same haystacks)")
    args = parser.parse_args()
    from lpes_framework.evaluation.stats import middle_positions
    from lpes_framework.tasks.base import WHOLE_TEXT

    payload, names, task = retest(args.preset, args.model, args.samples, args.split, args.threads, args.uniform,
                                  args.versus, args.out, args.seed)
    name = names[args.preset]
    scores = {m: payload["methods"][m]["scores"] for m in ("unpatched", name)}
    middle = payload["intervals"][f"{name} - unpatched"][task]["middle"]
    positions = list(scores["unpatched"][task])
    ends = [p for p in positions if p not in middle_positions(positions)]  # shallowest and deepest
    ends_delta = min(100 * (scores[name][task][p]["accuracy"] - scores["unpatched"][task][p]["accuracy"]) for p in ends)
    ppl = {m: s["perplexity"][WHOLE_TEXT]["perplexity"] for m, s in scores.items()}
    print(f"middle_gain={middle['delta']:.2f} ci_low={middle['low']:.2f} ends_delta={ends_delta:.2f} "
          f"ppl_ratio={ppl[name] / ppl['unpatched']:.4f}")


if __name__ == "__main__":
    main()
