"""Compare the unpatched model, uniform scalings, saved factors and curve genomes by gold position.

    python -m lpes_framework.commands.evaluate task=kv_retrieval pos=rope methods.uniform=[1.25,1.5]

Writes ``results.json`` and ``by_position.png`` into the Hydra run directory and prints a table
(rows: methods; columns: gold positions; cells: exact match % and mean gold log-prob).

Each method's per-sample rows go to ``rows.jsonl`` as soon as it is scored (fsynced), so a long
comparison killed half way keeps its finished methods: run it again in the same ``hydra.run.dir``
with ``resume=true`` and only the missing ones are scored. Draw j of a task does not depend on how many
are drawn, so a resume with more ``samples_per_position`` scores only the new draws of each finished
method (60 haystacks per position grow to 100 at 40% of the cost), and one with fewer reuses a subset.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from .cli import build_tasks, check_plugin_overrides, number, one_line_errors, plain, prepare, task_specs
from ..position.bands import band_count
from ..position.curves import build_curve
from ..errors import LpesError
from ..evaluation.comparison import Comparison, format_intervals, format_lengths, format_table, uniform_method_name
from ..evaluation.results import ScoreRow, rows_from_json, rows_to_json, scores_to_json
from ..execution import Job, encode_splits
from ..execution.local import LocalExecutor
from ..model.factors import is_preset, load_checked, write_json_atomic
from ..model.load import identify
from ..report.plots import plot_by_position
from ..position import build_scheme, check_scheme_for, validate_factors
from ..io.spec import KEY, RunSpec
from ..io.store import JsonLog, RunLock, cache_key, read_rows


def file_method_names(paths) -> dict[str, str]:
    """Row names for factors files: ``preset <name>`` for a shipped preset, else the run folder's name, or
    the whole path where two folders share it."""
    short = {str(p): f"preset {p}" if is_preset(p) else f"file {Path(p).parent.name or p}" for p in paths}
    if len(set(short.values())) == len(short):
        return short
    return {str(p): f"preset {p}" if is_preset(p) else f"file {p}" for p in paths}


def plan_methods(cfg, scheme_cfg: dict, info) -> dict[str, tuple[list[float] | None, dict]]:
    """name -> (factors or None for unpatched, scheme config); all checked before the model loads, factors
    files against the model's identity ``info`` (``models.identify``)."""
    methods: dict[str, tuple[list[float] | None, dict]] = {}
    n_layers = info.n_layers
    m = cfg.methods
    if m.baseline:
        methods["unpatched"] = (None, scheme_cfg)
    # a uniform factor is one number in every band, the same tables with or without bands: keyed without
    # them, so its rows are shared with (and reused from) the unbanded scheme's
    uniform_cfg = {k: v for k, v in scheme_cfg.items() if k != "bands"}
    for s in m.uniform or []:
        s = number(s, "methods.uniform")
        methods[uniform_method_name(scheme_cfg["name"], s)] = (validate_factors([s] * n_layers, n_layers), uniform_cfg)
    for path, name in file_method_names(m.factors_files or []).items():
        record = load_checked(path, info, bool(cfg.allow_foreign))
        methods[name] = (record["factors"], record["scheme"])
    for name, options in (m.schemes or {}).items():  # a competitor's settings, at factor 1 in every layer
        options = plain(options)
        if not isinstance(options, dict) or "name" not in options:
            raise LpesError(f"methods.schemes.{name} must be scheme settings with a name, e.g. {{name: posscale}}, "
                            f"got {options!r} (a dot in a method name nests it: use posscale-05, not posscale-0.5)")
        check_scheme_for(build_scheme(options), info)
        methods[name] = (validate_factors([1.0] * n_layers, n_layers), options)
    if m.genomes:
        curve = build_curve(plain(cfg.curve), n_layers, bands=band_count(scheme_cfg))
        for name, genome in m.genomes.items():
            genes = curve.checked(list(genome), f"methods.genomes.{name}")
            methods[f"{curve.name} {name}"] = (curve.factors(genes).tolist(), scheme_cfg)
    if not methods:
        raise LpesError("no methods to evaluate: enable methods.baseline or give uniform/factors_files/schemes/genomes")
    unknown = [r for r in m.compare_to if r not in methods]
    if unknown:
        raise LpesError(f"methods.compare_to: {unknown} are not among the methods {list(methods)}")
    return methods


def interval_pairs(methods, references) -> list[tuple[str, str]]:
    """(a, b) for every method a against every reference b (unpatched first, where it is scored), each pair
    once: a reference compared to an earlier reference is not compared back."""
    refs = (["unpatched"] if "unpatched" in methods else []) + [r for r in references if r != "unpatched"]
    pairs: list[tuple[str, str]] = []
    for b in refs:
        pairs += [(a, b) for a in methods if a != b and (b, a) not in pairs]
    return pairs


def method_key(factors, scheme: dict | None, regime: dict, counts: dict[str, int]) -> str:
    """Identity of a method's rows: its factors and scheme, and everything that changes the samples or
    their scores, with each task's sample count given apart (draw j is the same whatever the count)."""
    tasks = {k: {**d, "samples_per_position": counts[k]} for k, d in regime["tasks"].items()}
    return cache_key(factors, {**regime, "tasks": tasks, "scheme": scheme})


def scored_before(prior: list[tuple[str, dict]], counts: dict[str, int], key_at) -> dict[str, list]:
    """The rows a method already has in ``rows.jsonl``, cut to the first ``counts[task]`` draws: from
    the record made with these counts, else from the one (made with other counts) covering most of them.
    A record counts when its key, recomputed for the draws its rows cover, is the key it was stored with."""
    best, cover, wanted = {}, 0, key_at(counts)
    for key, rows in prior:
        held = {task: {r.draw for r in per} for task, per in rows.items()}
        n = {task: len(c) for task, c in held.items()}
        if n.keys() != counts.keys() or any(c != set(range(n[t])) for t, c in held.items()):
            continue  # not the first n draws of every task: another design
        if key == wanted:
            return rows
        usable = sum(min(n[t], counts[t]) for t in counts)
        if usable > cover and key == key_at(n):
            best, cover = rows, usable
    return {task: [r for r in per if r.draw < counts[task]] for task, per in best.items()}


def logged_rows(out_dir) -> dict[str, dict[str, list[ScoreRow]]]:
    """Each method's per-sample rows in an evaluate folder, from its most complete ``rows.jsonl`` record (a
    method grown to more haystacks keeps its shorter records too): the input of analyses made afterwards.
    Rows come sorted by draw and position, so two methods' rows of the same draws pair up in order.

    Two records of one name whose rows differ on the samples both hold are two methods (rows reused from
    another folder whose run folder had the same name, e.g. two ``file search``): each is then named
    ``<name> [<first 8 hex of its first record's key>]`` (a name that stays as the method grows), never one
    silently taken for the other."""
    groups: dict[str, list[tuple[str, dict]]] = {}  # name -> [(first record key, rows by task)] of distinct methods
    for record in read_rows(Path(out_dir) / "rows.jsonl"):
        if record.get("kind") == KEY:
            continue
        per_task = {task: sorted(per, key=lambda r: (r.draw, r.position))
                    for task, per in rows_from_json(record["rows"]).items()}
        same = groups.setdefault(record["method"], [])
        match = next((i for i, (_, held) in enumerate(same) if _agree(held, per_task)), None)
        if match is None:
            same.append((record["key"], per_task))
        elif _size(per_task) >= _size(same[match][1]):
            same[match] = (same[match][0], per_task)
    return {name if len(same) == 1 else f"{name} [{key[:8]}]": per
            for name, same in groups.items() for key, per in same}


def _size(per_task: dict) -> int:
    return sum(map(len, per_task.values()))


def _agree(a: dict, b: dict) -> bool:
    """Whether two records' rows are the same on every (task, haystack, gold position) both hold."""
    for task in a.keys() & b.keys():
        mine = {(r.draw, str(r.position)): r for r in a[task]}
        if any(mine.get((r.draw, str(r.position)), r) != r for r in b[task]):
            return False
    return True


def run_evaluate(cfg: DictConfig, out_dir: Path) -> dict:
    """Score the methods (reusing ``out_dir``'s rows with ``resume``) and write results.json, the table and the
    plot; returns results.json's payload plus ``rows``: each method's per-sample rows by task, the very rows
    its scores were made from (a caller that analyses rows takes these, not a lookup by name)."""
    prepare(cfg)
    scheme_cfg = plain(cfg.pos)
    scheme = build_scheme(scheme_cfg)
    tasks = build_tasks(cfg)
    info = identify(cfg.model)
    check_scheme_for(scheme, info)
    methods = plan_methods(cfg, scheme_cfg, info)
    sample_sets = encode_splits(cfg, tasks, [cfg.split], info=info)  # prompts checked before any weights load
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = RunSpec(command="evaluate", config=plain(cfg), model=info.as_dict())
    with RunLock(out_dir):
        return _score_methods(cfg, out_dir, tasks, methods, sample_sets, spec)


def _score_methods(cfg: DictConfig, out_dir: Path, tasks: dict, methods: dict, sample_sets: dict,
                   spec: RunSpec) -> dict:
    log = JsonLog(out_dir / "rows.jsonl")
    if log.exists() and not cfg.resume:
        raise LpesError(f"{out_dir} already holds scored methods (rows.jsonl); pass resume=true to reuse them")
    prior = [(record["key"], rows_from_json(record["rows"])) for record in (read_rows(log.path) if cfg.resume else [])
             if record.get("kind") != KEY]
    log.repair()  # a line a kill cut short is dropped before this run's records follow
    log.append(spec.record())  # each run's own record: a resume may score more samples or methods
    jobs = {name: (f, None if f is None else s) for name, (f, s) in methods.items()}
    counts = {k: t.samples_per_position for k, t in tasks.items()}
    regime = {"model": plain(cfg.model), "split": cfg.split, "scoring": cfg.scoring,
               "share_prefix": cfg.share_prefix, "tasks": {k: t.settings() for k, t in tasks.items()}}
    done = {name: scored_before(prior, counts, lambda n, job=job: method_key(*job, regime, n))
            for name, job in jobs.items()}
    parts: dict[tuple, list[str]] = {}  # methods that miss the same draws: scored on one sample set of those
    for name, rows in done.items():
        scored = tuple(sorted((task, frozenset(r.draw for r in per)) for task, per in rows.items()))
        parts.setdefault(scored, []).append(name)
    todo = []
    for i, (scored, names) in enumerate(parts.items()):
        rest = sample_sets[cfg.split].without(dict(scored))
        if rest.samples:
            part = f"{cfg.split} part {i}" if scored else cfg.split  # the sample set's name
            sample_sets[part] = rest
            todo += [(part, name) for name in names]
    executor = LocalExecutor(plain(cfg), task_specs(cfg), list(sample_sets), sample_sets=sample_sets)
    info = executor.info
    extended = sum(bool(done[name]) for _, name in todo)
    note = f"; {len(jobs) - len(todo)} of {len(jobs)} methods reused from {log.path}" if cfg.resume else ""
    print(info.line() + note + (f", {extended} extended: only their new samples scored" if extended else ""))
    scoring = executor.run([Job(part, *jobs[name]) for part, name in todo], desc=cfg.split)
    for (_, name), (rows, _) in zip(todo, scoring):
        rows = {task: sorted(done[name].get(task, []) + rows.get(task, []), key=lambda r: r.draw) for task in counts}
        log.append({"key": method_key(*jobs[name], regime, counts), "method": name, "rows": rows_to_json(rows)})
        done[name] = rows
    comparison = Comparison(done)
    for a, b in interval_pairs(methods, cfg.methods.compare_to):
        comparison.add_intervals(a, b, resamples=cfg.bootstrap_resamples, seed=int(cfg.seed))
    results = comparison.scores
    table = "\n".join(filter(None, [format_table(results), format_lengths(comparison), format_intervals(comparison)]))
    print(table)
    summary = comparison.as_json()
    payload = {"model": info.as_dict(), "split": cfg.split, "scoring": cfg.scoring,
               "tasks": {k: t.settings() for k, t in tasks.items()},
               "methods": {name: {"factors": f, "scheme": s, "scores": scores_to_json(results[name])}
                           for name, (f, s) in methods.items()},
               "intervals": summary["intervals"], "by_length": summary["by_length"], "run": spec.as_json()}
    write_json_atomic(out_dir / "results.json", payload)
    plot_by_position(results, out_dir / "by_position.png", title=f"{info.name} ({cfg.split} split)")
    (out_dir / "table.txt").write_text(table + "\n")
    print(f"wrote {out_dir / 'results.json'} and {out_dir / 'by_position.png'}")
    return payload | {"rows": done}


@hydra.main(config_path="pkg://lpes_framework.conf", config_name="evaluate", version_base="1.3")
@one_line_errors
def _evaluate(cfg: DictConfig) -> None:
    run_evaluate(cfg, Path(HydraConfig.get().runtime.output_dir))


def main() -> None:
    one_line_errors(check_plugin_overrides)(sys.argv[1:])
    _evaluate()


if __name__ == "__main__":
    main()
