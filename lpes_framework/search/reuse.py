"""Scores that other searches already made under this run's keys (``reuse=[folder, ...]``).

Searches on the same model, tasks, seed and scheme score the same schedules on the same splits: the
unpatched baseline on the fixed search split (half an hour on a mixture on 2 CPU cores), the uniform
scalings a GA seeds, the unpatched rows of the validation and test splits. A key (``io.store.cache_key``)
binds a schedule to everything that changes its scores, data files by their content, so a score recorded
under the same key elsewhere is this run's score. The other folders are read as a resume reads its own
(each record checked against its schema, the log as one run's) and are never written; each score taken is
written to this run's own logs with the folder it came from (``reused_from``), so the run stays whole
without them. Scores made on another machine or torch are taken as they are."""

from __future__ import annotations

from pathlib import Path

from ..errors import LpesError
from ..io.spec import RunSpec, model_differences
from ..io.store import JsonLog, RunStore
from .resume import recorded_run

SCORED = ("baseline", "candidate")  # records that hold a schedule's fixed-split scores (steps hold gradients)


def other_runs(folders, here: Path) -> list[RunStore]:
    """The stores of the searches in ``folders`` (a list, as the config holds it), refused in one line unless
    each holds a search log other than this run's own (checked before any weights load)."""
    if folders is None:
        return []
    if not isinstance(folders, list) or not all(isinstance(f, str) and f for f in folders):
        raise LpesError(f"reuse must be a list of run folders, got {folders!r}")
    stores = []
    for folder in folders:
        path = Path(folder)
        if not JsonLog(path / "evaluations.jsonl").exists():
            raise LpesError(f"reuse: {folder} holds no search (no evaluations.jsonl)")
        if path.resolve() == Path(here).resolve():
            raise LpesError(f"reuse: {folder} is this run's own folder (resume=true continues it)")
        stores.append(RunStore(path))
    return stores


def fixed_split_scores(stores: list[RunStore], spec: RunSpec, expected: dict[str, dict[str, int]]) -> dict[str, dict]:
    """Key -> fixed-split evaluation record (the first folder that has one), each of this run's model and
    holding exactly ``expected``'s tasks, gold positions and sample counts (task -> position -> count)."""
    found: dict[str, dict] = {}
    for store in stores:
        records, recorded = recorded_run(store)
        differ = model_differences(recorded.model, spec.model)
        if differ:
            raise LpesError(f"reuse: {store.dir} searched another model ({', '.join(differ[:3])} differ)")
        for record in records[1:]:
            if record["kind"] not in SCORED or record["key"] in found:
                continue
            counts = {task: {pos: stats["count"] for pos, stats in per.items()} for task, per in record["scores"].items()}
            if counts != expected:
                raise LpesError(f"reuse: {store.evaluations.path}: the scores under key {record['key'][:12]} are not "
                                "of this run's search split (its tasks, positions and samples); the file was changed: "
                                "leave that folder out of reuse")
            found[record["key"]] = record | {"reused_from": str(store.dir)}
    return found
