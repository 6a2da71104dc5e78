"""The search's answer picked and measured on data it never saw: its top candidates re-scored on the
validation split, the choice tested against the unpatched model and the best uniform scaling on the test
split. Every method's rows are written to ``heldout.jsonl`` as it finishes, so a kill re-scores only the
method it interrupted, and each distinct schedule is scored once."""

from __future__ import annotations

from ..errors import LpesError
from ..evaluation.comparison import Comparison
from ..evaluation.results import rows_from_json, rows_to_json
from ..io.store import RunStore, cache_key, read_rows


class HeldOut:
    def __init__(self, store: RunStore, sample_sets: dict, regime: dict, unpatched):
        """``regime``: the search split's cache regime (the split and scheme are set per method here);
        ``unpatched(factors, split)``: whether a schedule is the unpatched model on that split."""
        self.store, self.sample_sets, self.regime, self.unpatched = store, sample_sets, regime, unpatched
        self.held: dict[str, dict] = {}

    def load(self) -> None:
        """The rows a killed run had finished, by key, each checked now (before any weights load) to cover
        exactly its split's samples."""
        if not self.store.heldout.exists():
            return
        samples = {split: sorted((task, e.sample.draw, str(e.sample.position))
                                 for task, items in self.sample_sets[split].encoded.items() for e in items)
                   for split in ("validation", "test")}
        for record in read_rows(self.store.heldout.path):
            split = record.get("split")
            if split not in samples:
                raise LpesError(f"{self.store.heldout.path}: a record of split {split!r}; only validation and test "
                                "rows are kept there")
            rows = sorted((task, r.get("draw", 0), str(r["position"])) for task, per in record["rows"].items() for r in per)
            if rows != samples[split]:
                raise LpesError(f"{self.store.heldout.path}: the rows of {record['method']} ({split}) are not the "
                                "split's samples; the file was changed: delete it and resume=true scores them again")
            self.held[record["key"]] = record

    def compare(self, executor, split: str, methods: dict) -> Comparison:
        """``methods`` (name -> (factors, scheme config)) scored on ``split``: from ``heldout.jsonl`` where
        finished before, the rest by ``executor``, each written there as soon as it is done."""
        keys = {name: cache_key(factors, {**self.regime, "split": split, "scheme": scheme})
                for name, (factors, scheme) in methods.items()}
        scored = {key: rows_from_json(self.held[key]["rows"]) for key in keys.values() if key in self.held}
        todo: dict[str, str] = {}  # each unscored schedule under the first name it has
        for name, key in keys.items():
            if key not in scored:
                todo.setdefault(key, name)
        jobs = [(split, *methods[name]) for name in todo.values()]
        for (key, name), (rows, _) in zip(todo.items(), executor.run(jobs, desc=split)):
            self.store.heldout.append({"key": key, "method": name, "split": split, "rows": rows_to_json(rows)})
            scored[key] = rows
        return Comparison({name: scored[key] for name, key in keys.items()})

    def validate(self, executor, candidates: dict, others: dict) -> Comparison:
        """The candidates, the unpatched model and ``others`` scored on the validation split; the identity
        among the candidates (often the case when little beats it) takes the unpatched rows."""
        methods = {"unpatched": (None, None), **candidates, **others}
        same = {n for n, (f, _) in candidates.items() if self.unpatched(f, "validation")}
        validation = self.compare(executor, "validation", {n: m for n, m in methods.items() if n not in same})
        validation.rows = {n: validation.rows["unpatched" if n in same else n] for n in methods}
        return validation
