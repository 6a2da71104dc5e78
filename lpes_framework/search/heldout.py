"""The search's answer picked and measured on data it never saw: its top candidates re-scored on the
validation split, the choice tested against the unpatched model and the best uniform scaling on the test
split. A method's rows are written to ``heldout.jsonl`` after every ``every`` draws (contexts per position)
of the split, so a kill re-scores only the run of draws it interrupted (a method on a mixture's split can
take half an hour), and each distinct schedule is scored once."""

from __future__ import annotations

from ..errors import LpesError
from ..evaluation.comparison import Comparison
from ..evaluation.results import rows_from_json, rows_to_json
from ..execution import Job
from ..io.store import RunStore, cache_key, read_rows


class HeldOut:
    def __init__(self, store: RunStore, sample_sets: dict, regime: dict, unpatched, every: int = 0):
        """``regime``: the search split's cache regime (the split and scheme are set per method here);
        ``unpatched(factors, split)``: whether a schedule is the unpatched model on that split; ``every``:
        draws a record (0: a method whole)."""
        self.store, self.sample_sets, self.regime, self.unpatched = store, sample_sets, regime, unpatched
        # a split's runs of draws, a record each ([None]: a method whole)
        self.parts = {split: sample_sets[split].runs(every) if every else [None] for split in ("validation", "test")}
        self.held: dict[tuple, dict] = {}  # (key, draws or None for the whole split) -> record

    def load(self) -> None:
        """The rows a killed run had finished, by key and run of draws, each checked now (before any weights
        load) to cover exactly its split's samples of those draws. Records of runs cut otherwise (another
        ``every``) are checked and left unused: their draws are scored again."""
        if not self.store.heldout.exists():
            return
        for record in read_rows(self.store.heldout.path):
            split = record.get("split")
            if split not in self.parts:
                raise LpesError(f"{self.store.heldout.path}: a record of split {split!r}; only validation and test "
                                "rows are kept there")
            draws = _draws(record.get("draws"), self.store.heldout.path)
            samples = self.sample_sets[split]
            want = _samples(samples if draws is None else samples.between(*draws))
            rows = sorted((task, r.get("draw", 0), str(r["position"])) for task, per in record["rows"].items() for r in per)
            if not want or rows != want:
                span = "" if draws is None else f", draws {draws[0]}-{draws[1] - 1}"
                raise LpesError(f"{self.store.heldout.path}: the rows of {record['method']} ({split}{span}) are not "
                                "the split's samples; the file was changed: delete it and resume=true scores them again")
            self.held[record["key"], draws] = record

    def compare(self, executor, split: str, methods: dict) -> Comparison:
        """``methods`` (name -> (factors, scheme config)) scored on ``split``: from ``heldout.jsonl`` where
        finished before, the rest by ``executor``, each run of draws written there as soon as it is done."""
        keys = {name: cache_key(factors, {**self.regime, "split": split, "scheme": scheme})
                for name, (factors, scheme) in methods.items()}
        names: dict[str, str] = {}  # each distinct schedule under the first name it has
        for name, key in keys.items():
            names.setdefault(key, name)
        parts = {key: [None] if (key, None) in self.held else self.parts[split] for key in names}
        todo = [(key, draws) for key, runs in parts.items() for draws in runs if (key, draws) not in self.held]
        jobs = [Job(split, *methods[names[key]], draws) for key, draws in todo]
        for (key, draws), (rows, _) in zip(todo, executor.run(jobs, desc=split)):
            record = {"key": key, "method": names[key], "split": split, "rows": rows_to_json(rows)}
            self.store.heldout.append(record | ({} if draws is None else {"draws": list(draws)}))
            self.held[key, draws] = record
        scored = {key: _joined([rows_from_json(self.held[key, draws]["rows"]) for draws in runs])
                  for key, runs in parts.items()}
        return Comparison({name: scored[key] for name, key in keys.items()})

    def validate(self, executor, candidates: dict, others: dict) -> Comparison:
        """The candidates, the unpatched model and ``others`` scored on the validation split; the identity
        among the candidates (often the case when little beats it) takes the unpatched rows."""
        methods = {"unpatched": (None, None), **candidates, **others}
        same = {n for n, (f, _) in candidates.items() if self.unpatched(f, "validation")}
        validation = self.compare(executor, "validation", {n: m for n, m in methods.items() if n not in same})
        validation.rows = {n: validation.rows["unpatched" if n in same else n] for n in methods}
        return validation


def _draws(value, path) -> tuple[int, int] | None:
    if value is None:
        return None
    if (not isinstance(value, list) or len(value) != 2 or not all(type(v) is int for v in value)
            or not 0 <= value[0] < value[1]):
        raise LpesError(f"{path}: a record's draws must be [start, stop) with 0 <= start < stop, got {value!r}")
    return value[0], value[1]


def _samples(samples) -> list:
    return sorted((task, e.sample.draw, str(e.sample.position)) for task, items in samples.encoded.items() for e in items)


def _joined(parts: list[dict]) -> dict:
    """One method's rows from its runs of draws, by task in draw order."""
    tasks = dict.fromkeys(task for rows in parts for task in rows)
    return {task: sorted((r for rows in parts for r in rows.get(task, [])), key=lambda r: r.draw) for task in tasks}
