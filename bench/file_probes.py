"""Every kind of file a user receives, damaged field by field, given to every command that reads it without a
model (``status``, ``factors``, ``preset``, ``analysis``): each must end in one ``error:`` line naming the
damage and leave the file as it was. Called by ``bench/faults.py``; the commands run in this process
(their ``main`` with the user's arguments, output captured), so the ~100 probes take seconds, not the
minutes that as many interpreter starts would.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import traceback
from pathlib import Path
from typing import Callable

DEEP = "[" * 100_000 + "]" * 100_000  # nesting beyond the JSON parser's recursion limit


def inproc(main: Callable, argv: list[str]) -> subprocess.CompletedProcess:
    """A command's ``main(argv)`` as a finished process: its exit status and what it printed; an exception
    that escapes it is printed as the traceback a user would see."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception:  # noqa: BLE001 (what escapes is the finding)
            traceback.print_exc()
            code = 1
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def _json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write_lines(path: Path, records: list) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))


def _first(records: list[dict], kind: str) -> dict:
    return next(r for r in records if r.get("kind") == kind)


def _stats(record: dict) -> dict:
    """The first gold position's statistics of a record's first task."""
    per = next(iter(record["scores"].values()))
    return next(iter(per.values()))


def in_text(fn: Callable) -> Callable:
    """An edit of a JSON file's text: ``fn`` changes the parsed value in place."""
    def edit(text: str) -> str:
        data = json.loads(text)
        fn(data)
        return json.dumps(data)
    return edit


def in_record(index: int, fn: Callable) -> Callable:
    """An edit of a JSON-lines file's records: ``fn`` changes record ``index`` of a copy in place."""
    def edit(records: list) -> list:
        records = json.loads(json.dumps(records))
        fn(records[index])
        return records
    return edit


# each damage: (label, edit of the parsed records or file text, words the one-line error must hold)
def log_damages(records: list[dict]) -> list[tuple[str, Callable, str]]:
    spec, candidate = records[0], _first(records, "candidate")
    index = records.index(candidate)

    return [
        ("a fitness that is text", in_record(index, lambda r: r["outcome"].update(fitness="abc")), "outcome.fitness"),
        ("a negative generation", in_record(index, lambda r: r.update(generation=-1)), "generation"),
        ("a gene that is text", in_record(index, lambda r: r.update(genome=["a"] * len(r["genome"]))), "genome"),
        ("no layer factors", in_record(index, lambda r: r.update(factors=[])), "factors"),
        ("one layer's factor made a one-number list", in_record(index, lambda r: r["factors"].__setitem__(
            1, [r["factors"][1]])), "layer factors mix"),
        ("an accuracy of 1.5", in_record(index, lambda r: _stats(r).update(accuracy=1.5)), "accuracy"),
        ("negative seconds", in_record(index, lambda r: r.update(seconds=-1)), "seconds"),
        ("an unknown record kind", in_record(index, lambda r: r.update(kind="weird")), "not a search record"),
        ("a record without a key", in_record(index, lambda r: r.pop("key")), "no 'key'"),
        ("a gold position that is not a number", in_record(index, lambda r: next(iter(r["scores"].values())).update(
            abc=_stats(r))), "gold position 'abc'"),
        ("a NaN log-prob token", lambda rs: rs[:index] + [json.dumps(rs[index]).replace(
            '"logprob": ', '"logprob": NaN, "was": ', 1)] + rs[index + 1:], "logprob"),
        ("a line that is a list", lambda rs: rs[:index] + ["[1, 2]"] + rs[index + 1:], "not an lpes record"),
        ("a key named twice (parsers differ on which counts)", lambda rs: rs[:index] + [json.dumps(rs[index]).replace(
            '"genome": ', '"genome": [], "genome": ', 1)] + rs[index + 1:], "'genome' appears twice"),
        ("a line nested past the parser's limit", lambda rs: rs[:index] + [DEEP] + rs[index + 1:], "is corrupted"),
        ("a second run's records appended", lambda rs: rs + [spec], "a second run record"),
        ("a record repeated", lambda rs: rs + [candidate], "repeats key"),
        ("factors for another layer count", lambda rs: rs + [dict(candidate, key="other", factors=candidate[
            "factors"][:2])], "layer factors where the run has"),
        ("a run record whose config is text", lambda rs: [dict(spec, spec=dict(spec["spec"], config="x"))] + rs[1:],
         "damaged run record"),
        ("a run record with an interpolation", in_record(0, lambda r: r["spec"]["config"]["task"].update(
            answer_prefix="${oc.env:HOME}")), "holds an interpolation"),
    ]


def checkpoint_damages() -> list[tuple[str, Callable, str]]:
    return [
        ("a checkpoint cut short", lambda text: text[: len(text) // 2], "truncated or corrupted"),
        ("a checkpoint of version 2", in_text(lambda s: s.update(version=2)), "not a version 3"),
        ("a checkpoint bound to no record", in_text(lambda s: s.update(log_records=0)), "log_records"),
        ("a checkpoint digest that is not hex", in_text(lambda s: s.update(log_digest="zz")), "log_digest"),
        ("an optimizer state that is text", in_text(lambda s: s.update(optimizer="x")), "optimizer"),
        ("an optimizer generation that is text", in_text(lambda s: s["optimizer"].update(generation="abc")),
         "optimizer.generation"),
        ("a checkpoint bound to more records than the log", in_text(lambda s: s.update(log_records=10 ** 6)),
         "does not belong to"),
        ("a checkpoint nested past the parser's limit", lambda text: DEEP, "truncated or corrupted"),
        ("a checkpoint naming its version twice", lambda text: text.replace("{", '{"version": 0, ', 1),
         "the key 'version' appears twice"),
    ]


def factors_damages() -> list[tuple[str, Callable, str]]:
    return [
        ("a factor that is text", in_text(lambda r: r["factors"].__setitem__(0, "a")), "'factors' must be"),
        ("a NaN factor token", lambda text: text.replace('"factors": [', '"factors": [NaN, ', 1), "factors"),
        ("factors named twice (another tool may take the first)", lambda text: text.replace(
            '"factors": [', '"factors": [1.0], "factors": [', 1), "'factors' appears twice"),
        ("a 5,000-digit layer count (past Python's integer parsing limit)", lambda text: text.replace(
            '"n_layers": ', '"n_layers": ' + "9" * 5000 + ', "was": ', 1), "Exceeds the limit"),
        ("a negative factor", in_text(lambda r: r["factors"].__setitem__(0, -1.0)), "factors must be finite and in"),
        ("a factor of 1e300", in_text(lambda r: r["factors"].__setitem__(0, 1e300)), "factors must be finite and in"),
        ("layers of different widths", in_text(lambda r: r.update(factors=[[1.0, 1.1]] + r["factors"][1:])),
         "factors"),
        ("one layer's factor made a one-number list", in_text(lambda r: r["factors"].__setitem__(
            1, [r["factors"][1]])), "layer factors mix"),
        ("a scheme without a name", in_text(lambda r: r["scheme"].pop("name")), "'scheme' must be an object"),
        ("bands that are text", in_text(lambda r: r["scheme"].update(bands="x")), "'bands' must be a list"),
        ("a model block of another layer count", in_text(lambda r: r["model"].update(n_layers=3)),
         "its model has 3 layers"),
        ("a model with a negative rope theta", in_text(lambda r: r["model"].update(rope_theta=-1.0)),
         "model.rope_theta"),
        ("a model head of 10^9 dimensions (8 GB of frequencies)", in_text(lambda r: r["model"].update(head_dim=10 ** 9)),
         "model.head_dim"),
        ("a partial rotary factor that is text", in_text(lambda r: r["model"].update(
            rope_parameters={"rope_theta": 1e4, "partial_rotary_factor": "x"})), "partial_rotary_factor"),
        ("a genome that is text", in_text(lambda r: r.update(genome="x")), "genome"),
        ("a validation interval of three numbers", in_text(lambda r: r["metrics"]["validation"]["intervals"].update(
            {"top 1": [0.1, 0.2, 0.3]})), "metrics.validation.intervals"),
        ("a test accuracy that is text", in_text(lambda r: _stats(r["metrics"]["test"]["found"]).update(
            accuracy="x")), "metrics.test.found.scores"),
        ("a task setting that is an interpolation", in_text(lambda r: r["run"]["config"]["task"].update(
            answer_prefix="${oc.env:HOME}")), "holds an interpolation"),
        ("a scheme name that is a path", in_text(lambda r: r["scheme"].update(name="../evaluate")), "scheme.name"),
        ("a recorded task name that is a path", in_text(lambda r: r["run"]["config"]["task"].update(name="../config")),
         "no plain name"),
        ("no schema", in_text(lambda r: r.pop("schema")), "not an lpes factors file"),
        ("schema version 2", in_text(lambda r: r.update(version=2)), "version 2 is not supported"),
        ("an empty factors file", lambda text: "", "corrupted"),
        ("a factors file nested past the parser's limit", lambda text: DEEP, "corrupted"),
    ]


def results_damages() -> list[tuple[str, Callable, str]]:
    return [
        ("results without methods", in_text(lambda r: r.update(methods={})), "methods"),
        ("a method's accuracy that is text", in_text(lambda r: _stats(next(iter(r["methods"].values()))).update(
            accuracy="x")), "accuracy"),
        ("results without tasks", in_text(lambda r: r.pop("tasks")), "tasks"),
        ("results without the model block lpes factors copies", in_text(lambda r: r.pop("model")), "model"),
        ("a patched method naming no scheme", in_text(lambda r: next(
            m for m in r["methods"].values() if m["factors"] is not None).pop("scheme")), "names no scheme"),
        ("an interval bound that is text", in_text(lambda r: next(iter(next(iter(next(iter(
            r["intervals"].values())).values())).values())).update(low="x")), "low"),
        ("results cut short", lambda text: text[: len(text) // 2], "corrupted"),
        ("results that are a list", lambda text: "[]", "results.json is damaged"),
        ("results nested past the parser's limit", lambda text: DEEP, "corrupted"),
    ]


def rows_damages(records: list[dict]) -> list[tuple[str, Callable, str]]:
    index = next(i for i, r in enumerate(records) if "method" in r)

    def row(r):
        return next(iter(r["rows"].values()))[0]

    return [
        ("an exact match that is text", in_record(index, lambda r: row(r).update(exact="yes")), "exact"),
        ("a negative token count", in_record(index, lambda r: row(r).update(tokens=-1)), "tokens"),
        ("a null gold position", in_record(index, lambda r: row(r).update(position=None)), "position"),
        ("a negative draw", in_record(index, lambda r: row(r).update(draw=-1)), "draw"),
        ("a string match of 2", in_record(index, lambda r: row(r).update(match=2.0)), "match"),
        ("a log-prob that is text", in_record(index, lambda r: row(r).update(logprob="x")), "logprob"),
        ("a sample's row in place of another's (paired twice)", in_record(index, lambda r: [
            per.__setitem__(-1, per[0]) for per in r["rows"].values()]), "twice"),
        ("rows that are a list", in_record(index, lambda r: r.update(rows=[1])), "rows"),
        ("a rows record without its method", in_record(index, lambda r: r.pop("method")), "method"),
        ("a cost of negative seconds", in_record(index, lambda r: r.update(cost={"seconds": -1.0, "samples": 1})),
         "cost.seconds"),
        ("a cost whose samples are text", in_record(index, lambda r: r.update(cost={"seconds": 1.0, "samples": "x"})),
         "cost.samples"),
        ("a rows line nested past the parser's limit", lambda rs: rs[:index] + [DEEP] + rs[index + 1:],
         "is corrupted"),
    ]


def probe_files(tmp: Path, judge, reference: Path, evaluated: Path) -> None:
    """``reference``: a finished tiny search; ``evaluated``: a finished tiny evaluate folder."""
    from lpes_framework.commands import analysis, factors, preset, status

    def copy(src: Path, name: str, drop: tuple[str, ...] = ()) -> Path:
        folder = tmp / "files" / name
        shutil.copytree(src, folder, ignore=shutil.ignore_patterns(".lpes.lock", *drop))
        return folder

    def refused(label: str, folder: Path, path: Path, main, argv: list[str], words: str) -> None:
        before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
        judge.refused(label, inproc(main, argv), words, folder, before)

    def each(src, file, damages, readers, drop=(), lines=False):
        for i, (label, edit, words) in enumerate(damages):
            folder = copy(src, f"{file}-{i}", drop)
            path = folder / file
            if lines:
                _write_lines(path, edit(_json_lines(path)))
            else:
                path.write_text(edit(path.read_text()))
            for name, argv in readers(folder, path):
                refused(f"{file}: {label}, {name}", folder, path, *argv, words)

    out = tmp / "files-out"
    out.mkdir()
    each(reference, "evaluations.jsonl", log_damages(_json_lines(reference / "evaluations.jsonl")),
         lambda folder, path: [("status", (status.main, [str(folder)])),
                               ("factors", (factors.main, [str(folder), "--out", str(out / "f.json")]))], lines=True)
    each(reference, "checkpoint.json", checkpoint_damages(),
         lambda folder, path: [("status", (status.main, [str(folder)]))], drop=("best_factors.json",))
    each(reference, "best_factors.json", factors_damages(),
         lambda folder, path: [("factors --fit", (factors.main, [str(path), "--fit", "bezier", "--out",
                                                                 str(out / "fit.json")])),
                               ("factors --hold-to", (factors.main, [str(path), "--hold-to", "100", "--out",
                                                                     str(out / "held.json")])),
                               ("preset", (preset.main, [str(path), "--heldout", str(evaluated), "--name", "p",
                                                         "--out", str(out)]))])
    each(evaluated, "results.json", results_damages(),
         lambda folder, path: [("factors", (factors.main, [str(folder), "--out", str(out / "e.json")])),
                               ("analysis noise", (analysis.main, ["noise", str(folder), "--sample", "1"]))])
    each(evaluated, "rows.jsonl", rows_damages(_json_lines(evaluated / "rows.jsonl")),
         lambda folder, path: [("analysis noise", (analysis.main, ["noise", str(folder), "--sample", "1"])),
                               ("analysis versus", (analysis.main, ["versus", str(folder), "--method", "unpatched"]))],
         lines=True)

    # a folder or a link where a file should be
    for file, src, argv in (("checkpoint.json", reference, lambda f: (status.main, [str(f)])),
                            ("results.json", evaluated, lambda f: (factors.main, [str(f), "--out", str(out / "x.json")]))):
        folder = copy(src, f"{file}-folder", ("best_factors.json",))
        (folder / file).unlink()
        (folder / file).mkdir()
        refused(f"{file} that is a folder", folder, folder / file, *argv(folder), "is a folder")
        folder = copy(src, f"{file}-link", ("best_factors.json",))
        (folder / file).unlink()
        (folder / file).symlink_to(src / file)
        refused(f"{file} that is a link out of the folder", folder, folder / file, *argv(folder), "symbolic link")

    # a preset given another file's evidence: the evaluate row of its name (the run folder's) scored other factors
    folder = tmp / "files" / "stranger" / reference.name
    folder.mkdir(parents=True)
    record = json.loads((reference / "best_factors.json").read_text())
    record["factors"] = [f * 1.01 for f in record["factors"]]
    (folder / "best_factors.json").write_text(json.dumps(record))
    refused("preset --heldout with another file's row", folder, folder / "best_factors.json", preset.main,
            [str(folder / "best_factors.json"), "--heldout", str(evaluated), "--name", "p", "--out", str(out)],
            "scored other factors")
    # a file from before the trained window was recorded: where its tables start to move is unknown
    record = json.loads((reference / "best_factors.json").read_text())
    del record["model"]["trained_context"]
    folder = tmp / "files" / "windowless"
    folder.mkdir(parents=True)
    (folder / "best_factors.json").write_text(json.dumps(record))
    refused("factors --hold-to without a trained window", folder, folder / "best_factors.json", factors.main,
            [str(folder / "best_factors.json"), "--hold-to", "100", "--out", str(out / "held.json")], "no trained_context")
