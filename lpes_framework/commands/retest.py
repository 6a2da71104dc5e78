"""``lpes retest``: a preset or factors file re-tested held out in the regime it was searched in (the
file's run record, or the ``task`` block of presets made before it), on its model's test split: shared-prefix
scoring, paired bootstrap intervals over haystacks (the file minus unpatched, minus each uniform scaling and
minus each ``--versus`` file), and perplexity on held-out text (Python's bundled documentation), through the
evaluate command's own code. With ``--out``, run again, it reuses the methods already scored there (a long
run spans sessions), and with a larger ``--samples`` scores only the new haystacks."""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
from pathlib import Path

from omegaconf import open_dict

from ..errors import LpesError

# the default since it held off its search format: +15 middle points at ~1K, no harm on multi-document QA where
# the band-wise preset costs log-prob (docs/results/transfer.md 0m)
DEFAULT_PRESET = "qwen2.5-coder-0.5b-perfreq"
DEFAULT_MODEL = "qwen2.5-0.5b"


def retest(preset: str, model: str, samples: int, split: str, threads: int, uniform: list[float] | None,
           versus: list[str], out: Path | None, seed: int | None = None,
           progress: bool = False) -> tuple[dict, dict[str, str], str]:
    """(evaluate payload, method name of each file, task name): ``preset`` re-tested in its own regime
    next to the unpatched model, ``uniform`` factors and the ``versus`` files, with paired intervals of the
    preset minus each; ``out`` keeps the evaluate outputs and reuses the methods already scored there.
    ``seed`` draws the haystacks with another seed than the preset's search had (the seed picks the split's
    haystacks): two searches run with different seeds are re-tested on the same ones that way. ``progress``:
    tqdm bars on stderr."""
    from ..config import compose_config
    from ..judging.comparison import uniform_method_name
    from ..model.choice import check_task_reads_no_files
    from ..model.factors_file import load_factors
    from ..evaluate.methods import file_method_names
    from ..evaluate.run import run_evaluate

    if split not in ("validation", "test"):  # the search split is what the search was scored on
        raise LpesError(f"--split {split}: a re-test is held out, on the validation or the test split")
    record = load_factors(preset)
    run = record.get("run")  # the search's run record: its model and task; presets made before it, the task block
    if run is None and "task" not in record:
        raise LpesError(f"{preset} has no run record nor 'task' block: the regime to re-test it in is unknown")
    if uniform is None:  # the search's own baseline, named "uniform <scheme> <factor>" in its test block
        uniform = [float(name.split()[-1]) for name in record["metrics"].get("test", {}) if name.startswith("uniform ")]
    recorded_task = run["config"]["task"] if run else record["task"]
    check_task_reads_no_files(recorded_task, preset)  # a received file never chooses what is read
    task = recorded_task["name"]
    cfg = compose_config("evaluate", [f"model={model}", f"task={task}", f"split={split}",
                                      f"pos={record['scheme']['name']}",
                                      f"threads={threads}", f"progress={str(progress).lower()}", "resume=true",
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
        payload = run_evaluate(cfg, out or Path(tmp))
    return payload, names, task


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lpes retest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default=DEFAULT_PRESET, help="shipped preset name or factors file")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model config group of a file without a run record")
    parser.add_argument("--samples", type=int, default=60, help="haystacks per gold position (60 by default: intervals of a few points)")
    parser.add_argument("--split", default="test", help="validation or test (held out: never the search split)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--uniform", type=float, nargs="*", help="uniform factors to show alongside (default: the "
                        "best uniform scaling the preset's search tested, if it records one)")
    parser.add_argument("--versus", nargs="*", default=[], help="other factors files or presets to score alongside: "
                        "the preset gets paired intervals against each (e.g. the shipped preset, for a new schedule)")
    parser.add_argument("--out", type=Path, help="keep the evaluate outputs (results.json, plot, table) here; "
                        "methods already scored there are reused")
    parser.add_argument("--seed", type=int, help="draw the haystacks with this seed instead of the preset's search "
                        "seed (to re-test searches run with different seeds on the same haystacks)")
    return parser


def main(argv: list[str] | None = None) -> None:
    """The effect in plain words first, then the evaluate table and intervals it comes from."""
    from ..judging.comparison import effect_lines
    from .cli import one_line_errors

    args = parser().parse_args(argv)
    with contextlib.redirect_stdout(io.StringIO()) as table:
        payload, names, task = one_line_errors(retest)(args.preset, args.model, args.samples, args.split,
                                                       args.threads, args.uniform, args.versus, args.out, args.seed,
                                                       progress=True)  # bars on stderr while the table waits
    name = names[args.preset]
    print(f"{name}, re-tested on {args.samples} {task} samples per gold position that no search saw ({args.split} "
          "split), against the unpatched model:")
    print("\n".join(effect_lines(payload["comparison"], name, "unpatched")))
    print("\nThe table behind it (exact match % / gold log-prob by gold position, then every interval):")
    print(table.getvalue(), end="")


if __name__ == "__main__":
    main()
