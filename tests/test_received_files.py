"""Files received from someone else: nothing they hold runs code, loads a model or reads a path of their
choosing, writes outside the run folder, or yields a silent wrong number; a refused command changes nothing."""

import json
import shutil

import pytest

from conftest import TINY_SEARCH, TINY_TASK, run_cli
from lpes_framework.search import run_search
from lpes_framework.config import compose_config
from lpes_framework.errors import LpesError
from lpes_framework.io.store import JsonLog, RunLock, RunStore
from lpes_framework.tasks import TASKS


def copy_run(ga_run, tmp_path):
    out, _ = ga_run
    dst = tmp_path / "copy"
    shutil.copytree(out, dst, ignore=shutil.ignore_patterns(".lpes.lock"))
    return dst


def resume(folder, words, *extra):
    """A resume of ``folder`` in this process, refused with a one-line error holding ``words``."""
    with pytest.raises(LpesError, match=words):
        run_search(compose_config("config", [*TINY_SEARCH, "resume=true", *extra]), folder)


def attention(folder, words, *extra):
    from lpes_framework.evaluate.attention import analyse

    with pytest.raises(LpesError, match=words):
        analyse(folder, *extra)


def test_a_linked_lock_never_writes_through(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    run = tmp_path / "run"
    run.mkdir()
    (run / ".lpes.lock").symlink_to(victim)
    with pytest.raises(LpesError, match="symbolic link"):
        RunLock(run).acquire()
    assert victim.read_text() == "precious"


def test_a_linked_log_is_refused_and_its_target_untouched(ga_run, tmp_path):
    folder = copy_run(ga_run, tmp_path)
    victim = tmp_path / "victim.jsonl"
    victim.write_text('{"key": "a"}\n{"key": "b", "cut')  # a last line without its newline
    (folder / "evaluations.jsonl").unlink()
    (folder / "evaluations.jsonl").symlink_to(victim)
    resume(folder, "symbolic link")
    assert victim.read_text() == '{"key": "a"}\n{"key": "b", "cut'
    for reader in (JsonLog(folder / "evaluations.jsonl").read, lambda: JsonLog(folder / "evaluations.jsonl").append({"key": 1})):
        with pytest.raises(LpesError, match="symbolic link"):
            reader()
    assert victim.read_text().endswith("cut")


def test_a_refused_resume_leaves_a_foreign_logs_cut_line(ga_run, tmp_path):
    folder = copy_run(ga_run, tmp_path)
    log = folder / "evaluations.jsonl"
    log.write_bytes(log.read_bytes() + b'{"key": "half')  # a line a kill cut short
    before = log.read_bytes()
    resume(folder, "other settings", "seed=1")
    assert log.read_bytes() == before  # not cut before refusing


def test_a_refused_command_writes_no_hydra_files(ga_run, tmp_path):
    folder = copy_run(ga_run, tmp_path)
    proc = run_cli("lpes_framework", *TINY_SEARCH, f"hydra.run.dir={folder}", check=False)
    assert proc.returncode == 2 and "already holds a search" in proc.stderr.strip().splitlines()[-1]
    assert not (folder / ".hydra").exists()


def test_a_checkpoint_from_another_run_is_refused(ga_run, tmp_path):
    folder = copy_run(ga_run, tmp_path)
    other = tmp_path / "other"
    run_search(compose_config("config", [*TINY_SEARCH, "seed=1", "optimizer.generations=1"]), other)
    shutil.copy(other / "checkpoint.json", folder / "checkpoint.json")
    resume(folder, "does not belong to")
    state = json.loads((folder / "checkpoint.json").read_text())
    state["log_digest"] = "0" * 40
    (folder / "checkpoint.json").write_text(json.dumps(state))
    resume(folder, "does not belong to")


def test_a_checkpoint_with_a_null_fitness_is_refused_not_resumed_to_nan(ga_run, tmp_path):
    folder = copy_run(ga_run, tmp_path)
    state = json.loads((folder / "checkpoint.json").read_text())
    state["optimizer"]["history"][0][1]["fitness"] = None
    (folder / "checkpoint.json").write_text(json.dumps(state))
    resume(folder, "does not hold a state this optimizer reads .ValueError: a candidate in its history has no fitness")


def test_a_log_without_its_run_record_or_with_a_nan_fitness_is_refused(ga_run, tmp_path):
    folder = copy_run(ga_run, tmp_path)
    (folder / "checkpoint.json").unlink()
    log = folder / "evaluations.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[1:]))
    resume(folder, "holds no run record", "model.random.num_hidden_layers=2")
    records = [json.loads(line) for line in lines]
    candidate = next(r for r in records if "outcome" in r)
    candidate["outcome"]["fitness"] = None  # NaN is stored as null
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    resume(folder, r"outcome.fitness: Input should be a valid number")


def test_a_log_joined_from_two_runs_is_refused_by_status_and_resume(ga_run, tmp_path):
    from lpes_framework.commands.status import status

    folder = copy_run(ga_run, tmp_path)
    log = folder / "evaluations.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    other = [json.loads(line) for line in lines]
    for record in other[1:]:
        record["key"] = "x" + record["key"][1:]  # another run's records: other keys
    two_layers = dict(other[2], factors=other[2]["factors"][:2])
    for joined, words in ((lines + [json.dumps(r) + "\n" for r in other], "a second run record"),
                          (lines + lines[2:3], "repeats key"),
                          (lines + [json.dumps(two_layers) + "\n"], "holds 2 layer factors where the run has 4")):
        log.write_text("".join(joined))
        with pytest.raises(LpesError, match=words):
            status(folder)
        resume(folder, words)


def test_attention_never_loads_the_model_a_record_names(ga_run, tmp_path):
    """A crafted record naming its own files to join (and a place to write them) and remote code is only
    compared with the shipped models; none matches, so the user must name one."""
    folder = copy_run(ga_run, tmp_path)
    target = tmp_path / "written.gguf"
    log = folder / "evaluations.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    model = records[0]["spec"]["config"]["model"]
    model.update(trust_remote_code=True, random=None,
                 embedded={"parts": ["lpes-framework:lpes_framework/__init__.py"], "filename": str(target)})
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    attention(folder, "names a model that is no shipped config group")
    assert not target.exists()


def with_recorded_task(ga_run, tmp_path, **settings):
    """A copy of the finished run whose run record's task holds ``settings``."""
    folder = copy_run(ga_run, tmp_path)
    log = folder / "evaluations.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    records[0]["spec"]["config"]["task"].update(settings)
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_a_recorded_task_that_reads_files_is_refused(ga_run, tmp_path):
    attention(with_recorded_task(ga_run, tmp_path, path="/etc/hostname"), "its task reads files")


def _crafted_preset(tmp_path, edit) -> str:
    from lpes_framework.model.factors_file import load_factors

    record = load_factors("qwen2.5-coder-0.5b")
    edit(record)
    path = tmp_path / "crafted.json"
    path.write_text(json.dumps(record))
    return str(path)


@pytest.mark.parametrize("edit,words", [
    # OmegaConf would resolve these once retest makes the record's task a config: the secret in the prompt
    (lambda r: r["run"]["config"]["task"].update(answer_prefix="${oc.env:LPES_TEST_SECRET}"),
     "run.config.task.answer_prefix holds an interpolation"),
    (lambda r: r["task"].update(answer_prefix="${seed}"), "task.answer_prefix holds an interpolation"),
    # composed as task=<name> / pos=<name>: a path loads another file of the config tree, a comma a list
    (lambda r: r["run"]["config"]["task"].update(name="../config"), "config.task has no plain name"),
    (lambda r: r["run"]["config"]["pos"].update(name="ntk,pi"), "config.pos has no plain name"),
    (lambda r: r["scheme"].update(name="../evaluate"), "scheme.name"),
    (lambda r: r["run"]["config"]["task"].pop("name"), "config.task has no plain name"),
])
def test_a_factors_file_never_has_the_config_resolve_or_load_anything(edit, words, tmp_path, monkeypatch):
    from lpes_framework.commands.retest import retest
    from lpes_framework.model.factors_file import load_factors

    monkeypatch.setenv("LPES_TEST_SECRET", "s3cret")
    path = _crafted_preset(tmp_path, edit)
    with pytest.raises(LpesError, match=words):
        load_factors(path)
    with pytest.raises(LpesError, match=words):  # refused before anything is composed or loaded
        retest(path, "qwen2.5-0.5b", 1, "test", 1, None, [], None)


def test_a_run_folders_record_is_taken_literally(ga_run, tmp_path):
    from lpes_framework.io.spec import read_spec

    folder = with_recorded_task(ga_run, tmp_path, answer_prefix="${oc.env:HOME}")
    with pytest.raises(LpesError, match="config.task.answer_prefix holds an interpolation"):
        read_spec(folder)
    resume(folder, "holds an interpolation")


@pytest.mark.parametrize("text,words", [("task:\n  name: kv\n  answer_prefix: ${oc.env:HOME}\n", "interpolation"),
                                        ("{{{: [\n", "corrupted"), ("- 1\n", "damaged run record")])
def test_a_legacy_hydra_config_is_read_literally_or_refused(text, words, tmp_path):
    from lpes_framework.io.spec import read_spec

    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text(text)
    with pytest.raises(LpesError, match=words):
        read_spec(tmp_path)


def test_kv_data_cannot_hold_an_ambiguous_gold_answer(tmp_path):
    path = tmp_path / "kv.jsonl"
    path.write_text(json.dumps({"ordered_kv_records": [["a", "1"], ["b", "2"], ["a", "3"]], "key": "a",
                                "value": "1"}) + "\n")
    with pytest.raises(LpesError, match="a key appears twice"):
        TASKS.build({"name": "kv_retrieval", "path": str(path)})
    # short generated keys are drawn again on a collision: every haystack's keys are distinct
    task = TASKS.build({"name": "kv_retrieval", "hex_len": 2, "pairs": 40, "gold_positions": [0, 39],
                        "samples_per_position": 25})
    for j, items, _ in task._draws("search"):
        assert len({k for k, _ in items}) == 40


@pytest.mark.parametrize("record, message", [
    ({"question": "q", "answers": "Paris", "ctxs": [{"title": "t", "text": "x"}]}, "answers must be a list"),
    ({"question": "q", "answers": ["Paris"], "ctxs": ["just text"]}, "ctxs must be a list of documents"),
    ({"question": ["q"], "answers": ["Paris"], "ctxs": [{"title": "t", "text": "x"}]}, "question must be text"),
])
def test_mdqa_records_of_the_wrong_types_are_named(record, message, tmp_path):
    path = tmp_path / "mdqa.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(LpesError, match=message):
        TASKS.build({"name": "mdqa", "path": str(path), "documents": 1, "gold_positions": [0]})


def test_json_that_parsers_read_differently_or_not_at_all_is_refused(ga_run, tmp_path):
    """Parsers disagree on which of two values of one key counts: a file showing a reader (or vLLM's loader)
    one schedule must not give lpes another."""
    from lpes_framework.model.factors_file import load_factors
    from lpes_framework.tasks.base import read_jsonl

    folder = copy_run(ga_run, tmp_path)
    factors = folder / "best_factors.json"
    factors.write_text(factors.read_text().replace('"factors": [', '"factors": [9.0], "factors": [', 1))
    with pytest.raises(LpesError, match="'factors' appears twice"):
        load_factors(factors)
    # an integer past Python's 4,300-digit conversion limit escaped json.loads as a bare ValueError (a traceback)
    factors.write_text(factors.read_text().replace('"factors": [9.0], ', '').replace('"n_layers": ', '"n_layers": ' + "9" * 5000 + ", \"was\": ", 1))
    with pytest.raises(LpesError, match="corrupted factors file .Exceeds the limit"):
        load_factors(factors)
    log = folder / "evaluations.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text(lines[0] + lines[1].replace('"kind":', '"kind": "spec", "kind":', 1) + "".join(lines[2:]))
    before = log.read_bytes()
    resume(folder, r"line 2 is corrupted \(the key 'kind' appears twice")
    assert log.read_bytes() == before
    # the checkpoint and a run folder's JSON files name the repeated key too, not only "corrupted"
    log.write_bytes(before.replace(b'"kind": "spec", "kind":', b'"kind":', 1))
    checkpoint = folder / "checkpoint.json"
    checkpoint.write_text(checkpoint.read_text().replace("{", '{"version": 0, ', 1))
    resume(folder, r"checkpoint.json is truncated or corrupted \(the key 'version' appears twice")
    from lpes_framework.io.store import read_json

    (folder / "results.json").write_text('{"n": 1, "n": 2}')
    with pytest.raises(LpesError, match=r"corrupted \(the key 'n' appears twice"):
        read_json(folder / "results.json")
    data = tmp_path / "kv.jsonl"
    data.write_text('{"ordered_kv_records": [["a", "1"]], "key": "a", "value": "2", "value": "1"}\n')
    with pytest.raises(LpesError, match="'value' appears twice"):
        read_jsonl(str(data), "kv_retrieval")


def test_a_compressed_data_file_that_expands_without_bound_is_refused(tmp_path, monkeypatch):
    import gzip

    import lpes_framework.tasks.base as base

    monkeypatch.setattr(base, "MAX_DATA_BYTES", 1 << 16)
    record = {"question": "q", "answers": ["Paris"], "ctxs": [{"title": "t", "text": "x"}]}
    bomb = tmp_path / "mdqa.jsonl.gz"
    with gzip.open(bomb, "wt") as f:  # ~2 KB on disk
        f.write(json.dumps(record | {"pad": " " * (1 << 20)}) + "\n")
    with pytest.raises(LpesError, match="more than 65,536 bytes of text once decompressed"):
        TASKS.build({"name": "mdqa", "path": str(bomb), "documents": 1, "gold_positions": [0]})
    # a record keeps a line separator inside its text (U+2028: str.splitlines would cut the record there)
    plain = tmp_path / "mdqa.jsonl"
    plain.write_text(json.dumps(record | {"question": "q\u2028r"}, ensure_ascii=False) + "\r\n")
    assert base.read_jsonl(str(plain), "mdqa")[0]["question"] == "q\u2028r"
    # and so does a run folder's log, whose record count binds the checkpoint
    log = JsonLog(tmp_path / "log.jsonl")
    log.path.write_text('{"key": "a\u2028b"}\n{"key": "c"}\n', encoding="utf-8")
    assert [r["key"] for r in log.read()] == ["a\u2028b", "c"] and log.digest()[0] == 2


def test_a_corrected_command_after_a_late_refusal_starts_afresh(tmp_path, monkeypatch):
    """A run refused while its executor starts (here: its weights fail to load) writes no run record, so
    the corrected command runs in the same folder instead of meeting 'already holds a search'."""
    from lpes_framework.model import load

    real = load.load_model

    def broken(*_, **__):
        raise LpesError("the weights are damaged")

    monkeypatch.setattr(load, "load_model", broken)
    cfg = compose_config("config", [*TINY_SEARCH, "optimizer.generations=1"])
    with pytest.raises(LpesError, match="damaged"):
        run_search(cfg, tmp_path)
    assert not RunStore(tmp_path).has_run()
    monkeypatch.setattr(load, "load_model", real)
    run_search(cfg, tmp_path)
    assert (tmp_path / "best_factors.json").exists()


def test_two_records_under_one_key_that_disagree_are_refused(evaluate_run, tmp_path):
    import shutil

    from lpes_framework.evaluate.run import scored_rows
    from lpes_framework.config import compose_config

    folder = tmp_path / "copy"
    shutil.copytree(evaluate_run, folder)
    log = folder / "rows.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    twin = json.loads(json.dumps(next(r for r in reversed(records) if r.get("method") == "unpatched")))
    task = next(iter(twin["rows"]))
    twin["rows"][task][0]["logprob"] += 1.0  # the same key, one sample's score changed
    log.write_text(log.read_text() + json.dumps(twin) + "\n")
    with pytest.raises(LpesError, match="hold rows under one key that differ on the same samples"):
        scored_rows(compose_config("evaluate", [*TINY_TASK, "methods.uniform=[1.5]"]), folder)
