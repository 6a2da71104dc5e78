"""Files that must survive a SIGKILL: a search's evaluation log and generation checkpoint, and the
evaluate command's per-method rows; and the lock that keeps a second process out of a run directory.

``evaluations.jsonl`` gets one line per evaluated candidate, flushed and fsynced before the search
moves on, so an evaluation is never lost; on resume it becomes the cache that answers every genome
already scored (a half-written last line from a kill is dropped). ``checkpoint.json`` holds the
optimizer state after each finished generation (plain JSON: reading a run folder someone sent you runs
no code) and is replaced atomically (write, fsync, rename). Checkpoints of older versions
(``checkpoint.pkl``) are never unpickled: the evaluation log alone replays a run.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from pathlib import Path

from . import jsonio
from .atomic import write_atomic
from ..errors import LpesError

CHECKPOINT_VERSION = 2
LEGACY_CHECKPOINT = "checkpoint.pkl"  # version 1: a pickle, refused unread


def _rounded(factor):
    """A layer factor to 1e-9: a number, or a band-wise factor's numbers (a sequence or an array row)."""
    if hasattr(factor, "__len__"):
        return [round(float(v), 9) for v in factor]
    return round(float(factor), 9)


def cache_key(factors, regime: dict) -> str:
    """Identity of an evaluation: the factors (to 1e-9) and everything that changes the scores."""
    rounded = None if factors is None else [_rounded(f) for f in factors]
    payload = json.dumps({"factors": rounded, **regime}, sort_keys=True, default=str)
    return hashlib.sha1(payload.encode()).hexdigest()


class JsonLog:
    """Append-only JSON lines, each record fsynced before the caller moves on. A kill can cut only the
    last line short; readers skip it and a resume drops it (that record is simply made again)."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def exists(self) -> bool:
        return self.path.exists() and self.path.stat().st_size > 0

    def _complete(self) -> tuple[str, bool]:
        data = self.path.read_bytes() if self.path.exists() else b""
        complete, _, partial = data.rpartition(b"\n")
        lines = complete.split(b"\n") if complete else []
        for i, line in enumerate(lines):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                raise LpesError(f"{self.path}: line {i + 1} is not UTF-8 text; the file was damaged") from None
        return complete.decode("utf-8"), bool(partial)

    def _parse(self, complete: str) -> list[dict]:
        records = []
        for i, line in enumerate(complete.splitlines()):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise LpesError(f"{self.path}: line {i + 1} is corrupted") from None
            if not isinstance(record, dict) or "key" not in record:
                raise LpesError(f"{self.path}: line {i + 1} is not an lpes record (no 'key')")
            records.append(record)
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


class RunLock:
    """An advisory lock on a run directory, held by one process for the whole run (``flock`` on
    ``.lpes.lock``, which holds the holder's pid). The kernel drops it when the holder dies, so a stale
    lock is simply taken over; a live holder gets the second process a one-line error naming its pid."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / ".lpes.lock"
        self._fh = None

    def acquire(self) -> "RunLock":
        fh = open(self.path, "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            fh.close()
            raise LpesError(f"{self.path.parent} is in use by another lpes process (pid {holder}); wait for it to "
                            "finish or use another output folder") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh
        return self

    def release(self) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class RunStore:
    def __init__(self, out_dir: Path):
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.evaluations = JsonLog(self.dir / "evaluations.jsonl")
        self.checkpoint = self.dir / "checkpoint.json"
        self.legacy = self.dir / LEGACY_CHECKPOINT

    def has_run(self) -> bool:
        return self.checkpoint.exists() or self.evaluations.exists() or self.legacy.exists()

    def save_checkpoint(self, state: dict) -> None:
        write_atomic(self.checkpoint, jsonio.dumps({"version": CHECKPOINT_VERSION, **state}))

    def load_checkpoint(self) -> dict | None:
        """The last checkpoint, or None; never executes anything from the folder."""
        if not self.checkpoint.exists():
            if self.legacy.exists():
                raise LpesError(f"{self.legacy} is a checkpoint of an older lpes (a pickle, which is not read: "
                                "unpickling runs code); delete it and resume=true replays the run from "
                                "evaluations.jsonl, which keeps every evaluation")
            return None
        try:
            state = json.loads(self.checkpoint.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise LpesError(f"{self.checkpoint} is truncated or corrupted ({type(exc).__name__}); delete it to "
                            f"replay the search from evaluations.jsonl, which keeps every evaluation") from exc
        if not isinstance(state, dict) or state.get("version") != CHECKPOINT_VERSION:
            raise LpesError(f"{self.checkpoint} is not a version {CHECKPOINT_VERSION} lpes checkpoint")
        return state
