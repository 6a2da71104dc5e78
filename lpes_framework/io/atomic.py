"""Replace a file or a folder whole: a reader, a second process or a resumed run sees the old version or
the new one, never half of either (write beside the target, flush to disk, then rename over it)."""

from __future__ import annotations

import hashlib
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from . import jsonio


@contextmanager
def atomic_file(target: str | os.PathLike, mode: str = "w") -> Iterator:
    """An open file that becomes ``target`` when the block ends without error (else it is discarded)."""
    target = Path(target)
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        # created afresh, never through a link planted under the temporary name (the rename then replaces
        # a link at ``target`` itself, not the file it points to)
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644), mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(target: str | os.PathLike, data: str | bytes) -> None:
    with atomic_file(target, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)


def replace_folder(target: str | os.PathLike, fill: Callable[[Path], None]) -> None:
    """Build a folder with ``fill(path)`` beside ``target``, then swap it in."""
    target = Path(target)
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    try:
        fill(tmp)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def file_digest(path: Path) -> str:
    """A file's blake2b digest, read in blocks (weights run to gigabytes)."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def write_json_atomic(path: str | os.PathLike, data) -> None:
    """``data`` as indented JSON (``jsonio``: non-finite numbers as null), replacing ``path`` whole."""
    write_atomic(path, jsonio.dumps(data, indent=2))
