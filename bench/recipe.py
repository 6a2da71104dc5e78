"""The recipe's evidence: what ``lpes tune`` made of a model, read from its run folder, scoring nothing by
default (``--run``: the committed run on Qwen2.5-Coder-0.5B). Printed: each stage's wall time, the diagnosis,
the validation rounds, the test matrix of the shipped candidate and, where scored (``--score-general``), the
hand-made general preset on the same fresh test haystacks, with the paired recipe-minus-general interval per
column. Last line:
columns=<n> harmed=<test columns whose log-prob interval lies below 0> helped=<above 0> kv_middle_gain=<points,
KV ~1K> kv_ci_low=<its lower bound> test_reads=<times the test split was read> cpu_hours=<wall hours of the
whole recipe on this machine, from scratch>."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import common  # noqa: F401  (puts the repository on the path)
from lpes_framework.commands.cli import one_line_errors

RUN = Path("runs/qwen-tune")
GENERAL_PRESET = "qwen2.5-coder-0.5b-general"


def tune_of(run: Path, threads: int):
    """(the Tune the run folder's recorded settings make, its state)."""
    from omegaconf import OmegaConf, open_dict

    from lpes_framework.io.store import read_json
    from lpes_framework.tune.recipe import Tune

    state = read_json(run / "tune.json")
    if not isinstance(state, dict) or not isinstance(state.get("settings"), dict):
        raise SystemExit(f"error: {run / 'tune.json'} holds no tune's state")
    cfg = OmegaConf.create(state["settings"])
    with open_dict(cfg):
        cfg.threads, cfg.progress, cfg.plots, cfg.resume = threads, False, False, False
        cfg.tune.until = "ship"  # where a run stopped is no setting of it
    return Tune(cfg, run), state


def versus_general(tune, done: dict, score: bool) -> list[str]:
    """Per test column: the general preset's cell and the recipe minus the general preset (paired, the same
    haystacks); where the general preset's rows are not scored there yet (and ``score`` is off), a note."""
    from lpes_framework.judging.results import paired
    from lpes_framework.judging.stats import logprob_bootstrap
    from lpes_framework.matrix import column_rows, column_task, file_cells, labelled
    from lpes_framework.model.factors_file import load_factors

    if load_factors(GENERAL_PRESET)["model"]["name"] != tune.model_id.name:
        return [f"(no general preset of {tune.model_id.name} to compare with)"]
    final = str(tune.out / done["final"])
    names = labelled([final, GENERAL_PRESET])
    lines = []
    for column, count in done["haystacks"].items():
        rows = column_rows(tune.cfg, tune.columns[column], tune.out / "test" / column, split="test",
                           seed=tune.test_seed, files=[final, GENERAL_PRESET], haystacks=count, score=score)
        if names[GENERAL_PRESET] not in rows or names[final] not in rows:
            lines.append(f"{column}: the general preset is not scored on these test haystacks (--score-general)")
            continue
        general = file_cells(rows, [GENERAL_PRESET])[GENERAL_PRESET]
        task = column_task(rows["unpatched"])
        versus = logprob_bootstrap(*paired(rows[names[final]][task], rows[names[GENERAL_PRESET]][task]))
        lines.append(f"{column}: general preset - unpatched {general.logprob.format(4)}; recipe - general preset "
                     f"{versus.format(4)} nats/token")
    return lines


@one_line_errors
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, default=RUN, help="a tune's run folder")
    parser.add_argument("--score-general", action="store_true", help="score the shipped general preset on the "
                        "run's test haystacks where it is not scored yet (the recipe's own choices are made by then)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    from lpes_framework.judging.stats import Interval
    from lpes_framework.matrix import Cell
    from lpes_framework.matrix.report import summary_line
    from lpes_framework.tune.access import SplitLog

    tune, state = tune_of(args.run, args.threads)
    stages = state["stages"]
    for name, result in stages.items():
        print(f"{name}: {result.get('seconds', math.nan) / 3600:.2f} h" + (f" ({result['stop']})" if "stop" in result else ""))
    for loss in (stages.get("diagnose") or {}).get("middle_loss", []):
        print(f"  {loss['column']}: middle {loss['points']:+.1f} points, {loss['logprob']:+.3f} nats/token below the ends")
    for r in (stages.get("validate") or {}).get("rounds", []):
        print(f"  validation {r['candidate']}: harmed {r['harmed'] or 'none'}, helped {len(r['helped'])}")
    if "test" not in stages:
        raise SystemExit(f"error: {args.run} has not reached the test stage (done: {', '.join(stages) or 'nothing'})")
    done = stages["test"]
    cells = {c: Cell(*(None if v is None else Interval(**v) for v in (cell["logprob"], cell["exact"], cell["middle"])))
             for c, cell in done["cells"].items()}
    print((args.run / "test" / "matrix.txt").read_text())
    print("\n".join(versus_general(tune, done, args.score_general)))
    kv = next((c for c, col in tune.columns.items() if col.task == "kv_retrieval"), None)
    line = summary_line(cells, kv)
    line = " ".join(part for part in line.split() if not part.startswith("mean_delta="))
    hours = sum(r.get("seconds", 0.0) for r in stages.values()) / 3600
    print(f"{line} test_reads={SplitLog(args.run).test_reads()} cpu_hours={hours:.1f}")


if __name__ == "__main__":
    main()
