"""Random corruptions of valid files of each kind a user receives (a factors file; a search's log,
checkpoint and held-out rows; an evaluate folder's rows and results) never raise anything but the
project's one-line error from the commands that read them, and never change the file they read."""

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from lpes_framework.errors import LpesError

# a corruption: cut the text, overwrite a byte, or put another JSON value in place of one of the file's
JUNK = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 30, 10 ** 30), st.floats(allow_nan=True),
                 st.text(max_size=8), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4),
                                                                                             st.integers(), max_size=2))
CORRUPTION = st.one_of(
    st.tuples(st.just("cut"), st.floats(0, 1)),
    st.tuples(st.just("byte"), st.floats(0, 1), st.integers(0, 255)),
    st.tuples(st.just("value"), st.integers(0, 10 ** 6), JUNK),
)


def corrupt(text: str, how) -> str:
    kind = how[0]
    if kind == "cut":
        return text[: int(how[1] * len(text))]
    if kind == "byte":
        at = min(int(how[1] * len(text)), len(text) - 1)
        return text[:at] + chr(how[2]) + text[at + 1:]
    lines = text.splitlines(keepends=True)
    index = how[1] % len(lines)
    try:
        data = json.loads(lines[index])
    except json.JSONDecodeError:  # a pretty-printed file: the whole text is one value
        data, index, lines = json.loads(text), 0, [text]
    paths = list(_paths(data))
    path = paths[how[1] % len(paths)]
    _set(data, path, how[2])
    lines[index] = json.dumps(data) + ("\n" if lines[index].endswith("\n") else "")
    return "".join(lines)


def _paths(data, prefix=()):
    yield prefix
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data[:4]):
            yield from _paths(v, (*prefix, i))


def _set(data, path, value):
    if not path:
        return
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def readers():
    from lpes_framework.evaluate.rows import logged_rows
    from lpes_framework.evaluate.best import best_candidate, best_method
    from lpes_framework.commands.status import status
    from lpes_framework.io.spec import read_spec
    from lpes_framework.io.store import RunStore, read_results, read_rows
    from lpes_framework.model.factors_file import load_factors

    return {
        "best_factors.json": [lambda d: load_factors(d / "best_factors.json"), read_spec],
        "evaluations.jsonl": [read_spec, status, best_candidate, lambda d: RunStore(d).evaluations.load()],
        "checkpoint.json": [lambda d: RunStore(d).load_checkpoint(), status],
        "heldout.jsonl": [lambda d: read_rows(d / "heldout.jsonl")],
        "rows.jsonl": [logged_rows, read_spec],
        "results.json": [read_results, best_method],
    }


@pytest.mark.parametrize("name", ["best_factors.json", "evaluations.jsonl", "checkpoint.json", "heldout.jsonl",
                                  "rows.jsonl", "results.json"])
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(how=CORRUPTION)
def test_a_corrupted_file_is_a_one_line_error_and_stays_as_it_was(ga_run, evaluate_run, tmp_path_factory, name, how):
    out = evaluate_run if name in ("rows.jsonl", "results.json") else ga_run[0]
    folder = tmp_path_factory.mktemp("corrupt")
    shutil.copytree(out, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".lpes.lock", "*.png"))
    path = folder / name
    path.write_text(corrupt(path.read_text(), how))
    before = path.read_bytes()
    for read in readers()[name]:
        try:
            read(folder)
        except LpesError as exc:
            assert "\n" not in str(exc)
        assert path.read_bytes() == before


def test_a_row_whose_position_changed_kind_is_a_damaged_line(evaluate_run, tmp_path):
    """Found by the corruptions above: one numbered position turned into a string reached the readers' sort as a
    TypeError."""
    from lpes_framework.evaluate.rows import logged_rows

    shutil.copytree(evaluate_run, tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".lpes.lock", "*.png"))
    path = tmp_path / "rows.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if json.loads(line).get("kind") != "spec")
    record = json.loads(lines[index])
    task = next(t for t, rows in record["rows"].items() if isinstance(rows[0]["position"], int))
    record["rows"][task][0]["position"] = "x"
    lines[index] = json.dumps(record) + "\n"
    path.write_text("".join(lines))
    with pytest.raises(LpesError, match=f"line {index + 1} is damaged: .*mixes numbered and named"):
        logged_rows(tmp_path)


def _run_copy(ga_run, tmp_path) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(ga_run[0], folder, ignore=shutil.ignore_patterns(".lpes.lock", "*.png"))
    return folder


@pytest.mark.parametrize("key, reader, words", [
    ("n_layers", "best_candidate", "gives no layer count"),  # reached lpes factors' curve as a KeyError
    ("optimizer", "status", "has no optimizer block"),  # reached lpes status as omegaconf's ConfigAttributeError
])
def test_a_run_record_whose_key_a_byte_renamed_is_one_line(ga_run, tmp_path, key, reader, words):
    """Found by the corruptions above: a flipped byte in a key of the run record (the log's first line)."""
    from lpes_framework.commands.status import status
    from lpes_framework.evaluate.best import best_candidate

    folder = _run_copy(ga_run, tmp_path)
    log = folder / "evaluations.jsonl"
    log.write_text(log.read_text().replace(f'"{key}"', f'"{key[:-1]}z"', 1))
    with pytest.raises(LpesError, match=words):
        {"best_candidate": best_candidate, "status": status}[reader](folder)


@pytest.mark.parametrize("key, where", [("scheme", "names no scheme"), ("model", "model")])
def test_a_results_file_whose_scheme_or_model_a_byte_renamed_is_damaged(evaluate_run, tmp_path, key, where):
    """Found by the corruptions above: a renamed "scheme" key in a patched method reached lpes factors as a
    KeyError; the model block it copies into the factors file it ships was unchecked the same way."""
    from lpes_framework.evaluate.best import best_method

    shutil.copytree(evaluate_run, tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".lpes.lock", "*.png"))
    path = tmp_path / "results.json"
    results = json.loads(path.read_text())
    patched = next(name for name, method in results["methods"].items() if method["factors"] is not None)
    target = results["methods"][patched] if key == "scheme" else results
    target[key + "z"] = target.pop(key)
    path.write_text(json.dumps(results))
    with pytest.raises(LpesError, match=f"results.json is damaged: .*{where}"):
        best_method(tmp_path)


def test_a_logged_schedule_whose_layer_turned_into_a_list_is_a_damaged_line(ga_run, tmp_path):
    """Found by the corruptions above with fresh draws: a candidate's factors [1.3, 1.4, [0], 1.5] (one layer
    made a one-number list) passed the log's schema and reached lpes status's factor table as numpy's
    ValueError."""
    from lpes_framework.commands.status import status

    log = _run_copy(ga_run, tmp_path) / "evaluations.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if json.loads(line).get("kind") == "candidate")
    record = json.loads(lines[index])
    record["factors"][2] = [record["factors"][2]]
    lines[index] = json.dumps(record) + "\n"
    log.write_text("".join(lines))
    with pytest.raises(LpesError, match=rf"line {index + 1} \(candidate\) is damaged: .*layer factors mix .*band lists and single numbers"):
        status(log.parent)
