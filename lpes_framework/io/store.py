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

import errno
import fcntl
import hashlib
import json
import lzma
import os
import stat
from pathlib import Path

from . import jsonio
from .atomic import write_atomic
from .records import check_checkpoint, check_log_record, check_results, check_rows_record
from ..errors import LpesError

CHECKPOINT_VERSION = 3  # 3: bound to the evaluation log (its record count and digest)
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


def open_in_run(path: Path, flags: int, mode: int = 0o644) -> int:
    """A file descriptor of ``path`` opened without following a symbolic link: a received run folder could
    point its files anywhere (a lock or a log linked to a file of the user's, which the run would truncate
    or append to)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LpesError(f"{path} is a symbolic link; lpes does not follow links in a run folder") from None
        raise


def read_in_run(path: Path) -> bytes:
    fd = open_in_run(path, os.O_RDONLY)
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.close(fd)
        raise LpesError(f"{path} is a folder, not a file")
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


SEALED = ".xz"  # a log's finished lines, compressed beside it (``seal``): committed results take an eighth of the room
SEALED_LIMIT = 1 << 31  # bytes a sealed log may hold once unpacked: a received archive is not allowed to fill memory


def _unsealed(path: Path) -> bytes:
    """The lines of a sealed log, unpacked within SEALED_LIMIT; ending on a whole line (seal writes only those)."""
    unpack = lzma.LZMADecompressor()
    try:
        data = unpack.decompress(read_in_run(path), max_length=SEALED_LIMIT)
    except lzma.LZMAError as exc:
        raise LpesError(f"{path}: not a sealed lpes log ({exc}); the file was damaged") from None
    if not unpack.eof:
        raise LpesError(f"{path}: cut short, or unpacks to more than {SEALED_LIMIT >> 30} GiB; the file was damaged")
    if data and not data.endswith(b"\n"):
        raise LpesError(f"{path}: its last line is cut short; the file was damaged")
    return data


class JsonLog:
    """Append-only JSON lines, each record fsynced before the caller moves on. A kill can cut only the
    last line short; readers skip it and a resume drops it (that record is simply made again). A log's
    first lines may be sealed beside it (``rows.jsonl.xz``): read first, never written; appends go to the
    plain file."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.sealed = self.path.with_name(self.path.name + SEALED)

    def exists(self) -> bool:
        # anything under the sealed name counts (a folder or a link there is then refused by the reader)
        return (self.path.is_file() and self.path.stat().st_size > 0) or self.sealed.exists() or self.sealed.is_symlink()

    def _complete(self) -> tuple[str, bool]:
        sealed = _unsealed(self.sealed) if self.sealed.exists() or self.sealed.is_symlink() else b""
        data = sealed + (read_in_run(self.path) if self.path.exists() or self.path.is_symlink() else b"")
        complete, _, partial = data.rpartition(b"\n")
        lines = complete.split(b"\n") if complete else []
        for i, line in enumerate(lines):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                raise LpesError(f"{self.path}: line {i + 1} is not UTF-8 text; the file was damaged") from None
        return complete.decode("utf-8"), bool(partial)

    @staticmethod
    def _lines(complete: str) -> list[str]:
        # records end at "\n" only: str.splitlines would also cut at U+2028 inside a received record's string
        return complete.split("\n") if complete else []

    def _parse(self, complete: str) -> list[dict]:
        records = []
        for i, line in enumerate(self._lines(complete)):
            try:
                record = jsonio.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                raise LpesError(f"{self.path}: line {i + 1} is corrupted ({jsonio.damage(exc)})") from None
            if not isinstance(record, dict) or not isinstance(record.get("key"), str):
                raise LpesError(f"{self.path}: line {i + 1} is not an lpes record (no 'key' text)")
            records.append(record)
        return records

    def read(self) -> list[dict]:
        """The complete records, without touching the file (safe while a writer is running)."""
        return self._parse(self._complete()[0])

    def load(self) -> dict[str, dict]:
        """The records by their ``key``, for a resume; the file is not touched (``repair`` drops a cut last
        line once the caller has accepted the log as its own)."""
        return {record["key"]: record for record in self._parse(self._complete()[0])}

    def digest(self, count: int | None = None) -> tuple[int, str]:
        """(records, SHA-1) of the first ``count`` complete lines (all of them by default): what a checkpoint
        is bound to."""
        lines = self._lines(self._complete()[0])[:count]
        return len(lines), hashlib.sha1("\n".join(lines).encode()).hexdigest()

    def repair(self) -> None:
        """Cut a last line that a kill left short, so that the next record starts a line of its own."""
        self._complete()  # refuses a damaged log before anything is cut
        if self.path.exists() or self.path.is_symlink():
            plain = read_in_run(self.path)
            whole = plain.rfind(b"\n") + 1
            if whole < len(plain):
                fd = open_in_run(self.path, os.O_WRONLY)
                try:
                    os.ftruncate(fd, whole)
                finally:
                    os.close(fd)

    def whole(self) -> bool:
        """Whether every line ends (a kill, or a run writing now, leaves the last one open)."""
        return not self._complete()[1]

    def seal(self) -> None:
        """Move every line into the sealed file (compressed; what reads the log reads the same records, and a
        checkpoint's digest still holds). The caller holds the run's lock: a line appended meanwhile would be
        lost."""
        complete, partial = self._complete()
        if partial:
            raise LpesError(f"{self.path}: its last line is cut short; resume the run (or let it finish) before sealing")
        if complete:
            write_atomic(self.sealed, lzma.compress((complete + "\n").encode(), preset=9))
        self.path.unlink(missing_ok=True)

    def append(self, record: dict) -> None:
        with os.fdopen(open_in_run(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a") as fh:
            fh.write(jsonio.dumps(record) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


def read_evaluations(path: Path) -> list[dict]:
    """The complete records of a search's ``evaluations.jsonl``, each checked against its schema (``records``),
    and the log as one run's: its run record only as the first line, each key once, every schedule of the
    recorded model's layer count. A log joined from two runs would otherwise be counted and resumed as one."""
    records = JsonLog(path).read()
    layers, keys = None, set()
    for line, record in enumerate(records, 1):
        check_log_record(record, path, line)
        if record["kind"] == "spec" and line > 1:
            raise LpesError(f"{path}: line {line} is a second run record; the log holds records of another run")
        if record["key"] in keys:
            raise LpesError(f"{path}: line {line} repeats key {record['key'][:12]}; the log holds records of another run")
        keys.add(record["key"])
        if record["kind"] == "spec":
            model = record["spec"].get("model", record["spec"].get("model_as_read"))
            layers = model.get("n_layers") if isinstance(model, dict) else None
        elif record.get("factors") is not None:
            layers = layers if layers is not None else len(record["factors"])
            if len(record["factors"]) != layers:
                raise LpesError(f"{path}: line {line} holds {len(record['factors'])} layer factors where the run has "
                                f"{layers}; the log holds records of another run")
    return records


def read_rows(path: Path) -> list[dict]:
    """The complete records of an evaluate folder's ``rows.jsonl``, each checked against its schema."""
    records = JsonLog(path).read()
    for line, record in enumerate(records, 1):
        check_rows_record(record, path, line)
    return records


def read_json(path: Path) -> object:
    """A JSON file of a run folder (not through a link), as one line where it is not JSON."""
    try:
        return jsonio.loads(read_in_run(path).decode("utf-8"))
    except FileNotFoundError:
        raise LpesError(f"{path} not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise LpesError(f"{path}: corrupted ({jsonio.damage(exc)})") from None


def read_results(folder: Path) -> dict:
    """An evaluate folder's ``results.json``, checked against its schema."""
    path = Path(folder) / "results.json"
    if not (path.exists() or path.is_symlink()):
        raise LpesError(f"{folder} holds no results.json: not a finished evaluate folder")
    return check_results(read_json(path), path)


class RunLock:
    """An advisory lock on a run directory, held by one process for the whole run (``flock`` on
    ``.lpes.lock``, which holds the holder's pid). The kernel drops it when the holder dies, so a stale
    lock is simply taken over; a live holder gets the second process a one-line error naming its pid."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / ".lpes.lock"
        self._fh = None

    def acquire(self) -> "RunLock":
        fh = os.fdopen(open_in_run(self.path, os.O_RDWR | os.O_CREAT), "r+")
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
        # each validation and test method's rows as it finishes: a kill during the held-out scoring (hours on
        # a 7B) re-scores only the method it interrupted
        self.heldout = JsonLog(self.dir / "heldout.jsonl")
        # the fixed search split's rows of a schedule being scored, a run of draws a record (its scores go to
        # evaluations.jsonl when whole): a kill during a half-hour scoring re-scores only the run it interrupted
        self.search_rows = JsonLog(self.dir / "search_rows.jsonl")
        # the unpatched rows of each gradient minibatch, by its draws (``search.minibatch``)
        self.minibatch_rows = JsonLog(self.dir / "minibatch_rows.jsonl")
        self.checkpoint = self.dir / "checkpoint.json"
        self.legacy = self.dir / LEGACY_CHECKPOINT

    def has_run(self) -> bool:
        return self.checkpoint.exists() or self.evaluations.exists() or self.heldout.exists() or self.legacy.exists()

    def save_checkpoint(self, state: dict) -> None:
        """The state, bound to the evaluation log as it stands (its record count and digest: the run record
        and every evaluation the state was made from)."""
        records, digest = self.evaluations.digest()
        write_atomic(self.checkpoint, jsonio.dumps({"version": CHECKPOINT_VERSION, "log_records": records,
                                                    "log_digest": digest, **state}))

    def load_checkpoint(self) -> dict | None:
        """The last checkpoint, or None; never executes anything from the folder."""
        if not (self.checkpoint.exists() or self.checkpoint.is_symlink()):
            if self.legacy.exists():
                raise LpesError(f"{self.legacy} is a checkpoint of an older lpes (a pickle, which is not read: "
                                "unpickling runs code); delete it and resume=true replays the run from "
                                "evaluations.jsonl, which keeps every evaluation")
            return None
        try:
            state = jsonio.loads(read_in_run(self.checkpoint).decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise LpesError(f"{self.checkpoint} is truncated or corrupted ({jsonio.damage(exc)}); delete it to "
                            f"replay the search from evaluations.jsonl, which keeps every evaluation") from exc
        replay = "delete it and resume=true replays the search from evaluations.jsonl, which keeps every evaluation"
        if not isinstance(state, dict) or state.get("version") != CHECKPOINT_VERSION:
            raise LpesError(f"{self.checkpoint} is not a version {CHECKPOINT_VERSION} lpes checkpoint; {replay}")
        check_checkpoint(state, self.checkpoint)
        records = state["log_records"]
        if self.evaluations.digest(records) != (records, state["log_digest"]):
            raise LpesError(f"{self.checkpoint} does not belong to {self.evaluations.path} (it was made from "
                            f"another log, or the log was changed since); {replay}")
        return state
