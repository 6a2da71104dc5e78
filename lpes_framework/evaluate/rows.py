"""An evaluate folder's per-sample rows (``rows.jsonl``): the key that binds a method's rows to what it
was scored with, the rows a resumed run reuses, and the rows analyses read afterwards (one folder, or
several joined: methods are joined by their rows' (haystack, gold position), never by list order, and
folders only when their unpatched rows agree on the haystacks they share, so a method scored in one
folder is compared with baselines scored in another)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..errors import LpesError
from ..judging.results import by_sample, rows_from_json
from ..io.spec import KEY
from ..io.store import cache_key, read_rows
from ..scoring.base import ScoreRow


def method_key(factors, scheme: dict | None, regime: dict, counts: dict[str, int]) -> str:
    """Identity of a method's rows: its factors and scheme, and everything that changes the samples or
    their scores, with each task's sample count given apart (draw j is the same whatever the count)."""
    tasks = {k: {**d, "samples_per_position": counts[k]} for k, d in regime["tasks"].items()}
    return cache_key(factors, {**regime, "tasks": tasks, "scheme": scheme})


def scored_before(prior: list[tuple[str, dict]], counts: dict[str, int], key_at) -> dict[str, list]:
    """The rows a method already has in ``rows.jsonl``, cut to the first ``counts[task]`` draws: from
    the record made with these counts, else from the one (made with other counts) covering most of them.
    A record counts when its key, recomputed for the draws its rows cover, is the key it was stored with."""
    best, cover, wanted = {}, 0, key_at(counts)
    for key, rows in prior:
        held = {task: {r.draw for r in per} for task, per in rows.items()}
        n = {task: len(c) for task, c in held.items()}
        if n.keys() != counts.keys() or any(c != set(range(n[t])) for t, c in held.items()):
            continue  # not the first n draws of every task: another design
        if key == wanted:
            return rows
        usable = sum(min(n[t], counts[t]) for t in counts)
        if usable > cover and key == key_at(n):
            best, cover = rows, usable
    return {task: [r for r in per if r.draw < counts[task]] for task, per in best.items()}


def check_agreeing(prior: list[tuple[str, dict]], path) -> None:
    """Records under one key are one method on one design: their rows must be equal on every sample both hold
    (a later record repeats an earlier one's draws). Two that differ mean the file was edited or merged from
    elsewhere, and whichever a reuse took would set the scores in silence."""
    seen: dict[str, tuple[int, dict]] = {}
    for line, (key, per_task) in enumerate(prior, 1):
        if key in seen and not _agree(seen[key][1], per_task):
            raise LpesError(f"{path}: records {seen[key][0]} and {line} hold rows under one key that differ on the "
                            "same samples; the file was changed: keep one of them (or score again in a new folder)")
        if key not in seen or _size(per_task) > _size(seen[key][1]):
            seen[key] = (line, per_task)


def logged_rows(out_dir) -> dict[str, dict[str, list[ScoreRow]]]:
    """Each method's per-sample rows in an evaluate folder, from its most complete ``rows.jsonl`` record (a
    method grown to more haystacks keeps its shorter records too): the input of analyses made afterwards.
    Rows come sorted by draw and position, so two methods' rows of the same draws pair up in order.

    Two records of one name whose rows differ on the samples both hold are two methods (rows reused from
    another folder whose run folder had the same name, e.g. two ``file search``): each is then named
    ``<name> [<first 8 hex of its first record's key>]`` (a name that stays as the method grows), never one
    silently taken for the other."""
    groups: dict[str, list[tuple[str, dict]]] = {}  # name -> [(first record key, rows by task)] of distinct methods
    for record in read_rows(Path(out_dir) / "rows.jsonl"):
        if record.get("kind") == KEY:
            continue
        per_task = {task: sorted(per, key=lambda r: (r.draw, r.position))
                    for task, per in rows_from_json(record["rows"]).items()}
        same = groups.setdefault(record["method"], [])
        match = next((i for i, (_, held) in enumerate(same) if _agree(held, per_task)), None)
        if match is None:
            same.append((record["key"], per_task))
        elif _size(per_task) >= _size(same[match][1]):
            same[match] = (same[match][0], per_task)
    return {name if len(same) == 1 else f"{name} [{key[:8]}]": per
            for name, same in groups.items() for key, per in same}


def _size(per_task: dict) -> int:
    return sum(map(len, per_task.values()))


def _agree(a: dict, b: dict) -> bool:
    """Whether two records' rows are the same on every (task, haystack, gold position) both hold."""
    for task in a.keys() & b.keys():
        mine = by_sample(a[task])
        if any(mine.get(key, r) != r for key, r in by_sample(b[task]).items()):
            return False
    return True


def folder_rows(folders: Sequence[Path], task: str) -> dict[str, list[ScoreRow]]:
    """Every method's rows of ``task`` in the folders; the unpatched rows of any two folders must agree
    on the haystacks both scored."""
    return merge_rows({folder: logged_rows(folder) for folder in folders}, task)


def merge_rows(logged: dict[Path, dict], task: str) -> dict[str, list[ScoreRow]]:
    """``folder_rows`` of folders already read: folder -> its ``logged_rows``."""
    merged: dict[str, list[ScoreRow]] = {}
    first = next(iter(logged), None)
    for folder, per_method in logged.items():
        rows = {m: per[task] for m, per in per_method.items() if task in per}
        if not rows:
            raise LpesError(f"{folder}: no {task} rows (rows.jsonl of an evaluate run)")
        if "unpatched" in rows and "unpatched" in merged:
            mine, theirs = (by_sample(r) for r in (rows["unpatched"], merged["unpatched"]))
            shared = mine.keys() & theirs.keys()
            if any(mine[k] != theirs[k] for k in shared):
                raise LpesError(f"{folder}: its unpatched rows differ from those of {first} on the same "
                                "haystacks: not the same samples, so their methods cannot be paired")
        for method, per in rows.items():
            merged[method] = sorted({**by_sample(merged.get(method, [])), **by_sample(per)}.values(),
                                    key=lambda r: (r.draw, r.position))
    return merged
