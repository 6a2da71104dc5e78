"""Sealed logs (``lpes seal``), the tune's state and an export's two blocks, as a stranger would send them: a
sealed log damaged, linked, joined or from another run, given to the commands that read it; ``lpes seal``
pointed at what is no run folder or at a run still writing; a tune folder whose ``tune.json`` was edited; an
exported folder whose tables or block were edited, given to ``load_patched``. Called by ``bench/faults.py``
(its ``Judge``); the readers run in this process (``file_probes.inproc``), the tune in a subprocess.
"""

from __future__ import annotations

import json
import lzma
import shutil
import subprocess
import sys
from pathlib import Path

from file_probes import inproc


def _sealed(folder: Path, log: str, data: bytes) -> None:
    (folder / log).unlink(missing_ok=True)
    (folder / f"{log}.xz").unlink(missing_ok=True)
    (folder / f"{log}.xz").write_bytes(data)


def _damages(lines: list[bytes]) -> list[tuple[str, bytes, str]]:
    """(label, sealed file, words of the refusal): a sealed log damaged in each way a reader must name."""
    whole = b"".join(lines)
    packed = lzma.compress(whole)
    return [("cut short", packed[:len(packed) // 2], "cut short"),
            ("not xz", b"just some bytes", "not a sealed lpes log"),
            ("ending mid-line", lzma.compress(whole + b'{"key": "ha'), "last line is cut short"),
            ("a line not UTF-8", lzma.compress(whole + b'{"key": "\xff\xfe"}\n'), "not UTF-8"),
            ("a line not JSON", lzma.compress(lines[0] + b"{nope\n" + b"".join(lines[1:])), "corrupted"),
            ("a record without key", lzma.compress(whole + b'{"kind": "x"}\n'), "not an lpes record")]


def probe_sealed(tmp: Path, judge, reference: Path, evaluated: Path, cli, search: list[str]) -> None:
    from lpes_framework.commands import analysis, seal, status

    def copy(src: Path, name: str) -> Path:
        folder = tmp / "sealed" / name
        shutil.copytree(src, folder, ignore=shutil.ignore_patterns(".lpes.lock"))
        return folder

    def refused(label: str, folder: Path, main, argv: list[str], words: str) -> None:
        before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.name != ".lpes.lock"}
        judge.refused(label, inproc(main, argv), words, folder, before)

    # a sealed folder reads as the plain one did
    plain = inproc(status.main, [str(reference)])
    folder = copy(reference, "search")
    made = inproc(seal.main, [str(folder)])
    again = inproc(status.main, [str(folder)]).stdout.replace(str(folder), str(reference))
    judge.check("a sealed search reads as before", made.returncode == 0 and again == plain.stdout,
                "status prints the same" if again == plain.stdout else again[-120:])
    twice = inproc(seal.main, [str(folder)])
    judge.check("seal twice", twice.returncode == 0 and inproc(status.main, [str(folder)]).stdout.replace(
        str(folder), str(reference)) == plain.stdout, "the second changes nothing")
    resumed = cli("lpes_framework", *search, "optimizer.generations=3", "resume=true", f"hydra.run.dir={folder}")
    judge.check("a sealed search resumed for a generation more", resumed.returncode == 0
                and (folder / "evaluations.jsonl").is_file(), "its new lines in the plain log"
                if resumed.returncode == 0 else resumed.stderr.strip()[-120:])
    versus = ["versus", "--method", "unpatched"]
    rows_plain = inproc(analysis.main, [*versus, str(evaluated)])
    rows_folder = copy(evaluated, "rows")
    inproc(seal.main, [str(rows_folder)])
    rows_again = inproc(analysis.main, [*versus, str(rows_folder)]).stdout.replace(str(rows_folder), str(evaluated))
    judge.check("sealed rows read as before", rows_again == rows_plain.stdout and rows_plain.returncode == 0,
                "analysis prints the same" if rows_again == rows_plain.stdout else rows_again[-120:])

    evaluations = (reference / "evaluations.jsonl").read_bytes().splitlines(keepends=True)
    rows = (evaluated / "rows.jsonl").read_bytes().splitlines(keepends=True)
    for label, data, words in _damages(evaluations):
        folder = copy(reference, f"evaluations-{label}")
        _sealed(folder, "evaluations.jsonl", data)
        refused(f"sealed log {label}: status", folder, status.main, [str(folder)], words)
    for label, data, words in _damages(rows):
        folder = copy(evaluated, f"rows-{label}")
        _sealed(folder, "rows.jsonl", data)
        refused(f"sealed rows {label}: analysis", folder, analysis.main, [*versus, str(folder)], words)

    folder = copy(reference, "evaluations-joined")
    _sealed(folder, "evaluations.jsonl", lzma.compress(b"".join(evaluations) * 2))
    refused("sealed log joined to itself: status", folder, status.main, [str(folder)], "second run record")
    # a plain tail that does not continue its sealed lines
    folder = copy(reference, "tail-joined")
    inproc(seal.main, [str(folder)])
    (folder / "evaluations.jsonl").write_bytes(b"".join(evaluations))
    refused("a plain tail repeating the sealed lines: status", folder, status.main, [str(folder)], "second run record")
    folder = copy(reference, "tail-linked")
    (folder / "evaluations.jsonl").unlink()
    (folder / "evaluations.jsonl.xz").symlink_to(tmp / "sealed" / "search" / "evaluations.jsonl.xz")
    refused("a sealed log that is a link: status", folder, status.main, [str(folder)], "symbolic link")
    folder = copy(reference, "tail-folder")
    (folder / "evaluations.jsonl").unlink()
    (folder / "evaluations.jsonl.xz").mkdir()
    refused("a sealed log that is a folder: status", folder, status.main, [str(folder)], "is a folder")

    # lpes seal pointed at what it must not touch
    a_file = tmp / "sealed" / "a-file"
    a_file.write_text("x")
    linked = tmp / "sealed" / "linked"
    linked.symlink_to(reference)
    for label, target in (("seal: a folder that does not exist", tmp / "sealed" / "nowhere"),
                          ("seal: a file", a_file), ("seal: a linked folder", linked)):
        judge.refused(label, inproc(seal.main, [str(target)]), "is not a run folder")
    folder = copy(reference, "cut")
    with (folder / "evaluations.jsonl").open("ab") as fh:
        fh.write(b'{"key": "cut')
    refused("seal: a log whose last line a kill cut", folder, seal.main, [str(folder)], "cut short")
    victim = tmp / "sealed" / "users-notes.jsonl"
    victim.write_text("the user's own file\n")
    folder = copy(reference, "linked-log")
    (folder / "notes.jsonl").symlink_to(victim)
    inproc(seal.main, [str(folder)])
    judge.check("seal: a log linked to a user's file", victim.read_text() == "the user's own file\n"
                and not (folder / "notes.jsonl.xz").exists(), "the file and the link are left alone", "security")
    folder = copy(reference, "busy")
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from lpes_framework.io.store import RunLock; "
                               f"lock = RunLock({str(folder)!r}).acquire(); print('held', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    holder.stdout.readline()
    try:
        refused("seal: a folder a run is writing", folder, seal.main, [str(folder)], "in use by another lpes process")
    finally:
        holder.communicate("")


def probe_tune_state(tmp: Path, judge, cli) -> None:
    """A tiny tune stopped after its diagnosis, then its ``tune.json`` changed the ways a received folder is."""
    tune = ["tune", "model=tiny", "matrix=tiny", "tune.search_columns=[kv-short,kv-long]", "progress=false",
            "tune.until=diagnose"]
    folder = tmp / "tune-state"
    made = cli("lpes_framework", *tune, f"hydra.run.dir={folder}")
    judge.check("a tiny tune to its diagnosis", made.returncode == 0, made.stderr.strip()[-120:])
    state = json.loads((folder / "tune.json").read_text())
    settings = dict(state["settings"], seed=12345)
    for label, write, words in (
            ("tune.json not JSON", lambda p: p.write_text("{nope"), "corrupted"),
            ("tune.json a list", lambda p: p.write_text("[]"), "is not a tune's state"),
            ("tune.json with other settings", lambda p: p.write_text(json.dumps(dict(state, settings=settings))),
             "holds a tune with other settings"),
            ("tune.json with a stage no recipe has",
             lambda p: p.write_text(json.dumps(dict(state, stages=dict(state["stages"], deploy={})))),
             "is not a tune's state"),
            ("tune.json a link", lambda p: (p.unlink(), p.symlink_to(tmp / "tune-elsewhere.json")), "symbolic link")):
        (tmp / "tune-elsewhere.json").write_text(json.dumps(state))
        damaged = tmp / f"tune-{label.replace(' ', '-')}"
        shutil.copytree(folder, damaged, ignore=shutil.ignore_patterns(".lpes.lock"), symlinks=True)
        write(damaged / "tune.json")
        before = {p.name: p.read_bytes() for p in damaged.iterdir() if p.is_file() and not p.is_symlink()}
        judge.refused(label, cli("lpes_framework", *tune, f"hydra.run.dir={damaged}"), words, damaged, before)


def probe_export(tmp: Path, judge, reference: Path, cli) -> None:
    """An exported folder whose tables or block were edited: ``load_patched`` refuses it in one line."""
    from lpes_framework.errors import LpesError
    from lpes_framework.model.patched import load_patched

    out = tmp / "exported"
    made = cli("lpes_framework.commands.export", str(reference / "best_factors.json"), "--model", "tiny", "--out", str(out))
    judge.check("an export of the reference", made.returncode == 0, made.stderr.strip()[-120:])
    config = json.loads((out / "config.json").read_text())

    def edited(edit) -> dict:
        copy = json.loads(json.dumps(config))
        edit(copy)
        return copy

    def scaling(c, value):
        c["lpes_tables"]["scaling"][0] = value

    for label, data, words in (
            ("a layer's scaling changed", edited(lambda c: scaling(c, c["lpes_tables"]["scaling"][0] * 1.5)), "edited"),
            ("a layer's scaling NaN", edited(lambda c: scaling(c, float("nan"))), "edited"),
            ("a layer's scaling 0", edited(lambda c: scaling(c, 0)), "edited"),
            ("a layer's table dropped", edited(lambda c: c["lpes_tables"]["inv_freq"].pop()), "edited"),
            ("a layer's scaling dropped", edited(lambda c: c["lpes_tables"]["scaling"].pop()), "edited"),
            ("a frequency table added", edited(lambda c: c["lpes_tables"]["inv_freq"].__setitem__(0, [1.0])), "edited"),
            ("the window changed", edited(lambda c: c["lpes_tables"].__setitem__("window", 1)), "edited"),
            ("a block factor changed", edited(lambda c: c["lpes"]["factors"].__setitem__(0, 1.7)), ""),
            ("the digest removed", edited(lambda c: c["lpes_tables"].pop("digest")), "edited"),
            ("the tables as text", edited(lambda c: c.__setitem__("lpes_tables", "tables")), "edited")):
        folder = tmp / f"export-{label.replace(' ', '-')}"
        shutil.copytree(out, folder)
        (folder / "config.json").write_text(json.dumps(data))
        try:
            load_patched(str(folder))
            judge.check(f"load_patched: {label}", False, "loaded")
        except LpesError as exc:
            judge.check(f"load_patched: {label}", words in str(exc) and "\n" not in str(exc), str(exc)[:100])
        except Exception as exc:  # noqa: BLE001 (what a user would see as a traceback)
            judge.check(f"load_patched: {label}", False, f"{type(exc).__name__}: {exc}"[:100], "traceback")
