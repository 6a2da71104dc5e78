"""The unpatched model's rows of each gradient minibatch, kept by its draws (``minibatch_rows.jsonl``).

A gradient step scores its minibatch twice: unpatched (the reference of every term and the guards) and patched,
forward and backward; the unpatched half is a quarter to a third of the step. Within one search no draw comes
twice, but every search on the same model, tasks, seed and scoring draws the same minibatches in the same order
(a rival scheme's, a repaired mixture's, a resumed step's): the rows are the same, so they are kept here under a
key that binds them to all of that (the scheme left out: the unpatched model has none) and taken instead of
scored, from this run's log or another run's (``reuse``). Each record is checked, before any weights load, to
hold exactly its draws' samples (task, draw, gold position, length and answer tokens), as the fixed split's rows
are; a changed or foreign file is refused in one line, never scored against."""

from __future__ import annotations

from ..errors import LpesError
from ..io.store import JsonLog
from ..judging.results import rows_from_json, rows_to_json
from .heldout import KeptRows


def identities(sample_set) -> dict[str, list[tuple]]:
    """(draw, gold position, length, answer tokens) of each sample of each task, in scoring order."""
    return {task: [(e.sample.draw, str(e.sample.position), e.sample.length, len(e.ids) - e.answer_start)
                   for e in items] for task, items in sample_set.encoded.items()}


class MinibatchRows(KeptRows):
    remedy = "delete it and resume=true scores those minibatches again"

    def __init__(self, log: JsonLog, key: str, minibatch):
        """``key``: the unpatched model's identity on the search split; ``minibatch(draws)``: the sample set of a
        gradient job's draws (tokenised only), against which a kept record is checked."""
        super().__init__(log)
        self.key, self.minibatch = key, minibatch

    def _key(self, record: dict, path, remedy: str) -> tuple | None:
        if record.get("key") != self.key:
            return None  # another model, task set or scoring: not this run's minibatches
        draws = record.get("draws")
        if not (isinstance(draws, list) and draws and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                          for d in draws)):
            raise LpesError(f"{path}: a record's draws are {draws!r}, not a list of draw numbers; the file was "
                            f"changed: {remedy}")
        rows = rows_from_json(record["rows"])  # read_rows checked them against the rows schema
        have = {task: [(r.draw, str(r.position), r.length, r.tokens) for r in per] for task, per in rows.items()}
        if have != identities(self.minibatch(tuple(draws))):
            raise LpesError(f"{path}: the unpatched rows of minibatch draws {draws} are not those draws' samples; "
                            f"the file was changed: {remedy}")
        return tuple(draws)

    def get(self, draws) -> dict | None:
        """The kept rows (as JSON) of a job's draws, or None where they are to be scored."""
        record = self.held.get(tuple(draws)) or self.lent.get(tuple(draws))
        return None if record is None else record["rows"]

    def keep(self, draws, rows) -> None:
        """A step's unpatched rows, written once to this run's log (a lent record with where it came from)."""
        draws = tuple(draws)
        if draws in self.held:
            return
        record = self.lent.pop(draws, None) or {"key": self.key, "method": "unpatched", "draws": list(draws),
                                                "rows": rows_to_json(rows)}
        self.log.append(record)
        self.held[draws] = record
