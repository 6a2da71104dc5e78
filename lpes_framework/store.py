"""Files that must survive a SIGKILL: a search's evaluation log and generation checkpoint, and the
evaluate command's per-method rows.

``evaluations.jsonl`` gets one line per evaluated candidate, flushed and fsynced before the search
moves on, so an evaluation is never lost; on resume it becomes the cache that answers every genome
already scored (a half-written last line from a kill is dropped). ``checkpoint.pkl`` holds the
optimizer state after each finished generation and is replaced atomically (write, fsync, rename).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from pathlib import Path

from . import jsonio
from .atomic import write_atomic
from .errors import LpesError

CHECKPOINT_VERSION = 1


def cache_key(factors, context: dict) -> str:
    """Identity of an evaluation: the factors (to 1e-9) and everything that changes the scores."""
    payload = json.dumps({"factors": None if factors is None else [round(float(f), 9) for f in factors],
                          **context}, sort_keys=True, default=str)
    return hashlib.sha1(payload.encode()).hexdigest()


class JsonLog:
    """Append-only JSON lines, each record fsynced before the caller moves on. A kill can cut only the
    last line short; readers skip it and a resume drops it (that record is simply made again)."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def exists(self) -> bool:
        return self.path.exists() and self.path.stat().st_size > 0

    def _complete(self) -> tuple[str, bool]:
        text = self.path.read_text() if self.path.exists() else ""
        complete, _, partial = text.rpartition("\n")
        return complete, bool(partial)

    def _parse(self, complete: str) -> list[dict]:
        records = []
        for i, line in enumerate(complete.splitlines()):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                raise LpesError(f"{self.path}: line {i + 1} is corrupted") from None
        return records

    def read(self) -> list[dict]:
        """The complete records, without touching the file (safe while a writer is running)."""
        return self._parse(self._complete()[0])

    def load(self) -> dict[str, dict]:
        """The records by their ``key``, for a resume: a cut last line is removed from the file first."""
        complete, partial = self._complete()
        if partial:
            with open(self.path, "r+") as fh:
                fh.truncate(len((complete + "\n").encode()) if complete else 0)
        return {record["key"]: record for record in self._parse(complete)}

    def append(self, record: dict) -> None:
        with open(self.path, "a") as fh:
            fh.write(jsonio.dumps(record) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


class RunStore:
    def __init__(self, out_dir: Path):
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.evaluations = JsonLog(self.dir / "evaluations.jsonl")
        self.checkpoint = self.dir / "checkpoint.pkl"

    def has_run(self) -> bool:
        return self.checkpoint.exists() or self.evaluations.exists()

    def save_checkpoint(self, state: dict) -> None:
        write_atomic(self.checkpoint, pickle.dumps({"version": CHECKPOINT_VERSION, **state}))

    def load_checkpoint(self) -> dict | None:
        if not self.checkpoint.exists():
            return None
        try:
            with open(self.checkpoint, "rb") as fh:
                state = pickle.load(fh)
        except Exception as exc:  # truncated or garbage pickle: any unpickling error
            raise LpesError(f"{self.checkpoint} is truncated or corrupted ({type(exc).__name__}); delete it to "
                            f"replay the search from evaluations.jsonl, which keeps every evaluation") from exc
        if not isinstance(state, dict) or state.get("version") != CHECKPOINT_VERSION:
            raise LpesError(f"{self.checkpoint} is not a version {CHECKPOINT_VERSION} lpes checkpoint")
        return state
