"""What a finished search writes: best_factors.json (with its run record), pareto.json for a
multi-objective optimizer, report.md and the plots; and the summary it prints and returns."""

from __future__ import annotations

from ..judging.comparison import effect_lines, format_intervals, format_lengths, format_table
from ..judging.fitness import outcome
from ..judging.results import scores_to_json
from ..judging.selection import candidate_name
from ..model.factors_file import factors_record
from ..io.atomic import write_json_atomic
from ..report.artifacts import SearchSummary, write_artifacts


def write_result(search, choice, factors, test, uniform_name: str, uniform: float, top: list) -> dict:
    """``search``'s outputs for the validated ``choice`` (its ``factors``) and the held-out ``test``
    comparison; ``top``: the (genome, outcome) candidates validation chose among."""
    s = search
    methods = test.scores
    test_outcomes = {name: outcome(scores, methods["unpatched"], s.tasks, s.weights).__dict__
                     for name, scores in methods.items()}
    metrics = {"search": choice.search.__dict__,
               "validation": {"chosen": choice.name, "fitness": choice.fitness, "intervals": choice.intervals,
                              "genomes": {candidate_name(i): [float(x) for x in g] for i, (g, _) in enumerate(top)}},
               "test": {n: {"outcome": test_outcomes[n], "scores": scores_to_json(sc)} for n, sc in methods.items()},
               "intervals": test.as_json()["intervals"]}
    record = factors_record(model=s.info.as_dict(), scheme=s.scheme_cfg, factors=factors, curve=s.curve.settings(),
                            genome=choice.genome, metrics=metrics, task=s.task_configs[s.cfg.task.name])
    write_json_atomic(s.out / "best_factors.json", record | {"run": s.spec.as_json()})
    front = s.optimizer.front()
    if front:
        write_json_atomic(s.out / "pareto.json", [{"genome": g, **o.__dict__} for g, o in front])
    table = "\n".join(filter(None, [format_table(methods), format_lengths(test), format_intervals(test)]))
    write_artifacts(s.out, SearchSummary(
        model=s.info.name, settings={"scheme": s.scheme_cfg, "curve": s.curve.settings(),
                                     "optimizer": s.optimizer_cfg},
        log=s.log, factors=list(factors), uniform_name=uniform_name, uniform=uniform, best=choice.search,
        val_fitness=choice.fitness, val_intervals=choice.intervals, chosen=choice.name, test=test,
        test_outcomes=test_outcomes, table=table,
        history=[o for _, o in s.optimizer.history.values()], front=[o for _, o in front]), plots=bool(s.cfg.plots))
    print(table)
    effect = effect_lines(test, "found", "unpatched")  # none where no task has gold positions (perplexity only)
    if effect:
        print(f"\nWhat the search found ({choice.name}, chosen on the validation split), re-tested on the held-out "
              "test split against the unpatched model:")
        print("\n".join(effect))
    low, high = choice.intervals[choice.name]
    print(f"best search fitness {choice.search.fitness:.4f}; validation chose {choice.name} "
          f"({choice.fitness[choice.name]:+.4f}, 95% interval [{low:+.4f}, {high:+.4f}]); "
          f"test fitness found {test_outcomes['found']['fitness']:.4f} vs uniform "
          f"{test_outcomes[uniform_name]['fitness']:.4f}; wrote {s.out}")
    return {"search": choice.search.__dict__, "test": test_outcomes, "factors": factors.tolist(),
            "chosen": choice.name}
