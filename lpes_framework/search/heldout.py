"""Rows of long scorings kept a run of draws at a time, and the search's answer picked and measured on data it
never saw: its top candidates re-scored on the validation split, the choice tested against the unpatched model
and the best uniform scaling on the test split.

A schedule's rows are written after every ``every`` draws (contexts per position) of the split it is scored
on, so a kill re-scores only the run of draws it interrupted (a schedule on a mixture's split can take half an
hour, on the fixed search split as on the held-out ones), and each distinct schedule is scored once."""

from __future__ import annotations

from ..errors import LpesError
from ..judging.comparison import Comparison
from ..judging.results import rows_from_json, rows_to_json
from ..execution import Job
from ..io.store import JsonLog, RunStore, cache_key, read_rows


class KeptRows:
    """The records of one rows log, this run's (``held``, read by ``load`` on a resume) and other runs' kept
    under this run's keys (``lent``, from ``reuse``; their files are never touched), each checked by ``_key`` as
    it is read, before any weights load."""

    remedy = "delete it and resume=true scores them again"  # what to do about a damaged record of this run's

    def __init__(self, log: JsonLog):
        self.log = log
        self.held: dict[tuple, dict] = {}
        self.lent: dict[tuple, dict] = {}

    def load(self) -> None:
        self.held = self._read(self.log, self.remedy)

    def borrow(self, logs: list[JsonLog]) -> None:
        """Records other runs kept under this run's keys, checked as this run's own; taken where this run would
        score them, and then written to its own log."""
        for log in logs:
            # another run's file is never touched here: the way on is without it
            for found, record in self._read(log, "leave that folder out of reuse").items():
                self.lent.setdefault(found, record | {"reused_from": str(log.path.parent)})

    def _read(self, log: JsonLog, remedy: str) -> dict[tuple, dict]:
        if not log.exists():
            return {}
        keyed = ((self._key(record, log.path, remedy), record) for record in read_rows(log.path))
        return {key: record for key, record in keyed if key is not None}

    def _key(self, record: dict, path, remedy: str) -> tuple | None:
        """The record's key here once checked (None: a record of another run's kind, left unused)."""
        raise NotImplementedError


class SplitRows(KeptRows):
    def __init__(self, log: JsonLog, sample_sets: dict, splits: tuple, every: int, whole: bool):
        """Rows of schedules scored on ``splits``, kept in ``log`` a run of ``every`` draws a record (0: a
        schedule whole); ``whole``: whether a schedule scored in one run is written too (False where the caller
        keeps its scores elsewhere). Records of runs cut otherwise (another ``every``) are checked and left
        unused: their draws are scored again."""
        super().__init__(log)
        self.sample_sets, self.whole = sample_sets, whole
        # a split's runs of draws, a record each ([None]: a schedule whole)
        self.parts = {split: sample_sets[split].runs(every) if every else [None] for split in splits}

    def _key(self, record: dict, path, remedy: str) -> tuple:
        """(key, draws or None for the whole split), once the record is checked to cover exactly its split's
        samples of those draws."""
        split = record.get("split")
        if split not in self.parts:
            raise LpesError(f"{path}: a record of split {split!r}; only {' and '.join(self.parts)} rows are kept there")
        draws = _draws(record.get("draws"), path)
        samples = self.sample_sets[split]
        want = _samples(samples if draws is None else samples.between(*draws))
        rows = sorted((task, r.get("draw", 0), str(r["position"])) for task, per in record["rows"].items() for r in per)
        if not want or rows != want:
            span = "" if draws is None else f", draws {draws[0]}-{draws[1] - 1}"
            raise LpesError(f"{path}: the rows of {record.get('method')} ({split}{span}) are not "
                            f"the split's samples; the file was changed: {remedy}")
        return record["key"], draws

    def scored(self, executor, split: str, schedules: dict, desc: str):
        """(key, rows, seconds) of each of ``schedules`` (key -> (name, factors, scheme config)) on ``split``, in
        order, each as soon as it is whole: its runs from the log where finished before (or from another run's,
        ``borrow``), the rest by ``executor``, each run written there as soon as it is done. ``seconds``: what
        its new runs took."""
        def have(key, draws):
            return (key, draws) in self.held or (key, draws) in self.lent

        parts = {key: [None] if have(key, None) else self.parts[split] for key in schedules}
        todo = [(key, draws) for key, runs in parts.items() for draws in runs if not have(key, draws)]
        # every job at once (Ray workers take them side by side); their rows come back in this order
        results = executor.run([Job(split, *schedules[key][1:], draws) for key, draws in todo], desc=desc)
        for key, runs in parts.items():
            seconds = 0.0
            for draws in runs:
                if (key, draws) in self.held:
                    continue
                if (key, draws) in self.lent:
                    record = self.lent.pop((key, draws)) | {"method": schedules[key][0]}
                else:
                    rows, spent = next(results)
                    record = {"key": key, "method": schedules[key][0], "split": split, "rows": rows_to_json(rows)}
                    seconds += spent
                    if draws is not None:
                        record["draws"] = list(draws)
                if self.whole or len(runs) > 1:
                    self.log.append(record)
                self.held[key, draws] = record
            yield key, _joined([rows_from_json(self.held.pop((key, d))["rows"]) for d in runs]), seconds


class HeldOut:
    def __init__(self, store: RunStore, sample_sets: dict, regime: dict, unpatched, every: int = 0):
        """``regime``: the search split's cache regime (the split and scheme are set per method here);
        ``unpatched(factors, split)``: whether a schedule is the unpatched model on that split; ``every``:
        draws a record (0: a method whole)."""
        self.regime, self.unpatched = regime, unpatched
        self.kept = SplitRows(store.heldout, sample_sets, ("validation", "test"), every, whole=True)

    def load(self) -> None:
        self.kept.load()

    def borrow(self, stores: list[RunStore]) -> None:
        self.kept.borrow([store.heldout for store in stores])

    def compare(self, executor, split: str, methods: dict) -> Comparison:
        """``methods`` (name -> (factors, scheme config)) scored on ``split``: from ``heldout.jsonl`` where
        finished before, the rest by ``executor``, each run of draws written there as soon as it is done."""
        keys = {name: cache_key(factors, {**self.regime, "split": split, "scheme": scheme})
                for name, (factors, scheme) in methods.items()}
        names: dict[str, str] = {}  # each distinct schedule under the first name it has
        for name, key in keys.items():
            names.setdefault(key, name)
        schedules = {key: (name, *methods[name]) for key, name in names.items()}
        scored = {key: rows for key, rows, _ in self.kept.scored(executor, split, schedules, desc=split)}
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
    """One schedule's rows from its runs of draws, by task in draw order."""
    tasks = dict.fromkeys(task for rows in parts for task in rows)
    return {task: sorted((r for rows in parts for r in rows.get(task, [])), key=lambda r: r.draw) for task in tasks}
