"""The evaluate job: score the methods side by side on one split, by gold position, and write
``results.json``, ``table.txt`` and ``by_position.png`` (``lpes evaluate`` is its command line).

Each method's per-sample rows go to ``rows.jsonl`` as soon as it is scored (fsynced), and while it is
scored after every ``record_every`` draws (haystacks per position), so a long comparison killed half way
keeps its finished methods and the finished draws of the one it was scoring: run it again in the same
folder with ``resume=true`` and only the missing draws are scored. Draw j of a task does not depend on how
many are drawn, so a resume with more ``samples_per_position`` scores only the new draws of each finished method
(60 haystacks per position grow to 100 at 40% of the cost), and one with fewer reuses a subset.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from ..config import build_tasks, plain, prepare, scoring_regime, task_configs
from ..errors import LpesError
from ..judging.comparison import Comparison, format_intervals, format_lengths, format_table
from ..judging.results import rows_from_json, rows_to_json, scores_to_json
from ..execution import Job, encode_splits
from ..execution.local import LocalExecutor
from ..io.spec import KEY, RunSpec
from ..io.store import JsonLog, RunLock, read_rows
from ..io.atomic import write_json_atomic
from ..model.load import identify
from ..position import build_scheme, check_scheme_for
from ..position.bands import resolve_bands
from ..report.plots import plot_by_position
from .methods import interval_pairs, plan_methods
from .rows import check_agreeing, method_key, scored_before


def run_evaluate(cfg: DictConfig, out_dir: Path) -> dict:
    """Score the methods (reusing ``out_dir``'s rows with ``resume``) and write results.json, the table and the
    plot; returns results.json's payload plus ``rows``: each method's per-sample rows by task, the very rows
    its scores were made from (a caller that analyses rows takes these, not a lookup by name), and ``comparison``
(those rows with their intervals)."""
    info, tasks, methods = _plan(cfg)
    sample_sets = encode_splits(cfg, tasks, [cfg.split], info=info)  # prompts checked before any weights load
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = RunSpec(command="evaluate", config=plain(cfg), model=info.as_dict())
    with RunLock(out_dir):
        return _score_methods(cfg, out_dir, tasks, methods, sample_sets, spec)


def _plan(cfg: DictConfig) -> tuple:
    """(the model's identity, the tasks, the methods), all checked from configs alone."""
    prepare(cfg)
    info = identify(cfg.model)
    scheme_cfg = resolve_bands(plain(cfg.pos), info)
    check_scheme_for(build_scheme(scheme_cfg), info)
    tasks = build_tasks(cfg)
    return info, tasks, plan_methods(cfg, scheme_cfg, info)


def scored_rows(cfg: DictConfig, out_dir: Path) -> dict[str, dict[str, list]]:
    """What an evaluate of ``cfg`` would reuse from ``out_dir``'s rows.jsonl, scoring nothing and loading no
    weights: method name -> task -> rows, for the methods scored on every sample ``cfg`` asks for (found by
    their key, whatever name they were scored under)."""
    info, tasks, methods = _plan(cfg)
    counts = _counts(tasks)
    log = JsonLog(out_dir / "rows.jsonl")
    done = _reusable(log, counts, _jobs(methods), scoring_regime(cfg, tasks, cfg.split)) if log.exists() else {}
    return {name: rows for name, rows in done.items()
            if rows and all(len({r.draw for r in rows.get(task, [])}) == n for task, n in counts.items())}


def _counts(tasks: dict) -> dict[str, int]:
    return {k: t.samples_per_position for k, t in tasks.items()}


def _jobs(methods: dict) -> dict:
    return {name: (f, None if f is None else s) for name, (f, s) in methods.items()}


def _reusable(log: JsonLog, counts: dict[str, int], jobs: dict, regime: dict) -> dict[str, dict[str, list]]:
    """Each method's rows already in ``log`` (``rows.scored_before``), by its key; ``counts``: task -> samples a
    position asked for."""
    prior = [(record["key"], rows_from_json(record["rows"])) for record in read_rows(log.path)
             if record.get("kind") != KEY]
    check_agreeing(prior, log.path)
    return {name: scored_before(prior, counts, lambda n, job=job: method_key(*job, regime, n))
            for name, job in jobs.items()}


def _runs(rest, every: int) -> list:
    """The runs of draws ``[start, stop)`` (``Job.draws``) a group of methods still lacks, one record each:
    ``rest``'s runs of ``every`` draws that hold a sample, or the whole of ``rest`` (None) at 0."""
    if not every:
        return [None] if rest.samples else []
    return [run for run in rest.runs(every) if rest.between(*run).samples]


def _score_methods(cfg: DictConfig, out_dir: Path, tasks: dict, methods: dict, sample_sets: dict,
                   spec: RunSpec) -> dict:
    log = JsonLog(out_dir / "rows.jsonl")
    if log.exists() and not cfg.resume:
        raise LpesError(f"{out_dir} already holds scored methods (rows.jsonl); pass resume=true to reuse them")
    jobs = _jobs(methods)
    regime = scoring_regime(cfg, tasks, cfg.split)
    counts = _counts(tasks)
    done = _reusable(log, counts, jobs, regime) if cfg.resume and log.exists() else {name: {} for name in jobs}
    log.repair()  # a line a kill cut short is dropped before this run's records follow
    log.append(spec.record())  # each run's own record: a resume may score more samples or methods
    parts: dict[tuple, list[str]] = {}  # methods that miss the same draws: scored on one sample set of those
    for name, rows in done.items():
        scored = tuple(sorted((task, frozenset(r.draw for r in per)) for task, per in rows.items()))
        parts.setdefault(scored, []).append(name)
    todo = []
    for i, (scored, names) in enumerate(parts.items()):
        rest = sample_sets[cfg.split].without(dict(scored))
        part = cfg.split  # nothing scored yet: the whole split, no second copy of its samples
        if scored:
            part = f"{cfg.split} rest {i}"
            sample_sets[part] = rest
        runs = _runs(rest, int(cfg.record_every))
        # a method's runs one after another, so that each method is whole as early as it can be
        todo += [(Job(part, *jobs[name], draws=run), name) for name in names for run in runs]
    executor = LocalExecutor(plain(cfg), task_configs(cfg), list(sample_sets), sample_sets=sample_sets)
    info = executor.info
    pending = {name for _, name in todo}
    extended = sum(bool(done[name]) for name in pending)
    note = f"; {len(jobs) - len(pending)} of {len(jobs)} methods reused from {log.path}" if cfg.resume else ""
    print(info.line() + note + (f", {extended} extended: only their new samples scored" if extended else ""))
    scoring = executor.run([job for job, _ in todo], desc=cfg.split)
    for (_, name), (new, seconds) in zip(todo, scoring):
        rows = {task: sorted(done[name].get(task, []) + new.get(task, []), key=lambda r: r.draw) for task in counts}
        # what this record's new samples cost on its worker: a matrix grown across runs says its cost from these
        held = {task: len({r.draw for r in per}) for task, per in rows.items()}  # the first draws of each task
        log.append({"key": method_key(*jobs[name], regime, held), "method": name, "rows": rows_to_json(rows),
                    "cost": {"seconds": seconds, "samples": sum(len(r) for r in new.values())}})
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
    (out_dir / "table.txt").write_text(table + "\n")
    if cfg.plots:
        plot_by_position(results, out_dir / "by_position.png", title=f"{info.name} ({cfg.split} split)")
    print(f"wrote {out_dir / 'results.json'}" + (f" and {out_dir / 'by_position.png'}" if cfg.plots else ""))
    return payload | {"rows": done, "comparison": comparison}
