"""Sealed logs (``lpes seal``): a folder reads, reports and resumes as before; a received sealed file that is
damaged, linked or too big to unpack is one line."""

import lzma
import shutil

import pytest

from conftest import TINY_SEARCH, run_cli
from lpes_framework.evaluate.rows import logged_rows
from lpes_framework.config import compose_config
from lpes_framework.errors import LpesError
from lpes_framework.io import store
from lpes_framework.io.store import JsonLog, RunLock, read_evaluations
from lpes_framework.search import run_search


@pytest.fixture
def sealed_run(ga_run, tmp_path):
    folder = tmp_path / "sealed"
    shutil.copytree(ga_run[0], folder, ignore=shutil.ignore_patterns(".lpes.lock"))
    return folder


def test_a_sealed_search_reads_and_resumes_as_before(sealed_run):
    log = sealed_run / "evaluations.jsonl"
    before, digest = read_evaluations(log), JsonLog(log).digest()
    proc = run_cli("lpes_framework", "seal", str(sealed_run))
    assert "sealed:" in proc.stdout.splitlines()[-1]
    assert not log.exists() and log.with_name("evaluations.jsonl.xz").is_file()
    assert read_evaluations(log) == before and JsonLog(log).digest() == digest  # the checkpoint stays bound
    run_search(compose_config("config", [*TINY_SEARCH, "resume=true", "optimizer.generations=4"]), sealed_run)
    after = read_evaluations(log)
    assert after[:len(before)] == before and len(after) > len(before)  # new lines only, in the plain file
    assert [r["key"] for r in JsonLog(log).read()] == [r["key"] for r in after]
    assert log.is_file() and len(log.read_text().splitlines()) == len(after) - len(before)


def test_sealed_rows_are_reused(evaluate_run, tmp_path):
    folder = tmp_path / "rows"
    shutil.copytree(evaluate_run, folder)
    before = logged_rows(folder)
    JsonLog(folder / "rows.jsonl").seal()
    assert logged_rows(folder) == before


def test_a_cut_tail_after_the_sealed_lines_is_repaired_alone(tmp_path):
    log = JsonLog(tmp_path / "log.jsonl")
    for key in "ab":
        log.append({"key": key})
    log.seal()
    log.append({"key": "c"})
    log.path.write_bytes(log.path.read_bytes() + b'{"key": "d, cut')
    log.repair()
    assert log.path.read_bytes() == b'{"key": "c"}\n' and [r["key"] for r in log.read()] == ["a", "b", "c"]


@pytest.mark.parametrize("damage, words", [
    (lambda p: p.write_bytes(p.read_bytes()[:-9]), "cut short"),
    (lambda p: p.write_bytes(b"not xz at all"), "not a sealed lpes log"),
    (lambda p: p.write_bytes(lzma.compress(b'{"key": "a"}\n{"key": "b", "cu')), "last line is cut short"),
])
def test_a_damaged_sealed_log_is_one_line(tmp_path, damage, words):
    log = JsonLog(tmp_path / "log.jsonl")
    log.append({"key": "a"})
    log.seal()
    damage(log.sealed)
    with pytest.raises(LpesError, match=words):
        log.read()


def test_a_sealed_log_that_unpacks_too_far_is_refused(tmp_path, monkeypatch):
    log = JsonLog(tmp_path / "log.jsonl")
    log.sealed.write_bytes(lzma.compress(b"\n" * 5000))  # a bomb in small: a few bytes that unpack to many
    monkeypatch.setattr(store, "SEALED_LIMIT", 1000)
    with pytest.raises(LpesError, match="unpacks to more than"):
        log.read()


def test_a_linked_sealed_log_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere.xz"
    elsewhere.write_bytes(lzma.compress(b'{"key": "a"}\n'))
    (tmp_path / "log.jsonl.xz").symlink_to(elsewhere)
    with pytest.raises(LpesError, match="symbolic link"):
        JsonLog(tmp_path / "log.jsonl").read()


def test_seal_refuses_a_running_folder_and_a_cut_log(tmp_path):
    log = JsonLog(tmp_path / "log.jsonl")
    log.append({"key": "a"})
    lock = RunLock(tmp_path).acquire()  # a run still writing there
    try:
        proc = run_cli("lpes_framework", "seal", str(tmp_path), check=False)
    finally:
        lock.release()
    assert proc.returncode == 2 and "in use by another lpes process" in proc.stderr
    log.path.write_bytes(log.path.read_bytes() + b'{"key": "b')
    proc = run_cli("lpes_framework", "seal", str(tmp_path), check=False)
    assert proc.returncode == 2 and "cut short" in proc.stderr and log.path.is_file() and not log.sealed.exists()
