"""Compress a finished run's logs for keeping (in git, or sent to a colleague):

    lpes seal runs/my-search [more folders]

Every ``*.jsonl`` log under the folders (evaluations, rows, held-out and search rows) moves into its sealed
twin ``<log>.xz``, about an eighth of the size. Everything that reads a run reads a sealed log as it read the
plain one (reuse by key, ``--report`` tables, ``lpes status``, a resume, whose new lines go to a fresh plain
file), so a sealed folder is still a live run folder. Each folder is sealed under its run lock: a run still
writing there is refused, not cut.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import LpesError
from ..io.store import SEALED, JsonLog, RunLock
from .cli import one_line_errors


def logs_under(folder: Path) -> list[Path]:
    """The plain logs under ``folder`` and its sub-folders, never through a link (a received folder could
    point one at a file of the user's)."""
    if folder.is_symlink() or not folder.is_dir():
        raise LpesError(f"{folder} is not a run folder")
    return sorted(p for p in folder.rglob("*.jsonl") if p.is_file() and not p.is_symlink())


def seal(folder: Path) -> list[tuple[Path, int, int]]:
    """Seal every log under ``folder``; (log, bytes before, bytes after) for each."""
    def size(path: Path) -> int:
        return path.stat().st_size if path.is_file() else 0

    logs = logs_under(folder)
    cut = [log for log in logs if not JsonLog(log).whole()]
    if cut:  # checked for all before any is sealed: a refusal changes nothing
        raise LpesError(f"{cut[0]}: its last line is cut short; resume the run (or let it finish) before sealing")
    sealed = []
    for log in logs:
        twin = log.with_name(log.name + SEALED)
        lock = RunLock(log.parent).acquire()
        try:
            before = size(log) + size(twin)
            JsonLog(log).seal()
            sealed.append((log, before, size(twin)))
        finally:
            lock.release()
    return sealed


@one_line_errors
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="lpes seal", description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="run folders (searched for logs below them too)")
    args = parser.parse_args(argv)
    total = [0, 0]
    for folder in args.folders:
        for log, before, after in seal(folder):
            total[0] += before
            total[1] += after
            print(f"{log}: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")
    print(f"sealed: {total[0] / 1e6:.1f} MB -> {total[1] / 1e6:.1f} MB")
