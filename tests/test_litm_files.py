"""The Lost-in-the-Middle benchmark's own files: key-value records (.jsonl, .gz, .xz) and the mdqa metric."""

import gzip
import json
import lzma
import random
import uuid

import pytest

from conftest import run_cli
from lpes_framework.errors import LpesError
from lpes_framework.tasks.metrics import best_subspan_em, normalize
from lpes_framework.tasks import TASKS


def litm_kv_records(n_records: int, pairs: int, seed: int = 0) -> list[dict]:
    """Records as the original generator writes them: uuid4 keys and values, the gold pair somewhere."""
    rng = random.Random(seed)
    out = []
    for _ in range(n_records):
        kv = [[str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(2)] for _ in range(pairs)]
        gold = kv[rng.randrange(pairs)]
        out.append({"ordered_kv_records": kv, "key": gold[0], "value": gold[1]})
    return out


def write_jsonl(path, records) -> str:
    text = "\n".join(json.dumps(r) for r in records) + "\n"
    opener = {".gz": gzip.open, ".xz": lzma.open}.get(path.suffix, open)
    with opener(path, "wt", encoding="utf-8") as fh:
        fh.write(text)
    return str(path)


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.xz"])
def test_kv_file_moves_the_gold_pair_and_splits_records(tmp_path, suffix):
    records = litm_kv_records(12, pairs=5)
    path = write_jsonl(tmp_path / f"kv-retrieval-5_keys{suffix}", records)
    task = TASKS.build({"name": "kv_retrieval", "path": path, "layout": "move", "gold_positions": [0, 2, 4],
                        "samples_per_position": 3, "pairs": 99})
    assert task.pairs == 5  # from the file, not the config
    search = task.samples("search")
    assert len(search) == 9
    first = records[0]
    for sample in search[:3]:
        lines = [line for line in sample.prompt.splitlines() if '": "' in line]
        assert len(lines) == 5 and first["key"] in lines[sample.position] and sample.answer == first["value"]
        others = [line for i, line in enumerate(lines) if i != sample.position]
        assert first["key"] not in "".join(others)
    splits = {s: {x.answer for x in task.samples(s)} for s in ("search", "validation", "test")}
    assert splits["search"].isdisjoint(splits["test"]) and splits["test"].isdisjoint(splits["validation"])
    assert splits["test"] == {records[i]["value"] for i in (1, 5, 9)}


@pytest.mark.parametrize("mutate,message", [
    (lambda r: r[1].pop("value"), "record 1 of .* lacks value"),
    (lambda r: r[2].update(key="not-a-key"), "record 2 of .*: its key/value pair is not among"),
    (lambda r: r[3].update(ordered_kv_records=[[r[3]["key"], r[3]["value"]]] + [[f"x{i}", "y"] for i in range(3)]),
     "record 3 of .* has 4 pairs, record 0 has 5: mixed pair counts"),
    (lambda r: r[0].update(ordered_kv_records=[["a", "b", "c"]]), "record 0 of .*: ordered_kv_records must be"),
])
def test_bad_kv_records_are_refused_naming_the_record(tmp_path, mutate, message):
    records = litm_kv_records(4, pairs=5)
    mutate(records)
    path = write_jsonl(tmp_path / "kv.jsonl", records)
    with pytest.raises(LpesError, match=message):
        TASKS.build({"name": "kv_retrieval", "path": path, "gold_positions": [0, 4]})


def test_gold_positions_beyond_the_files_pairs_are_refused_before_the_model_loads(tmp_path):
    path = write_jsonl(tmp_path / "kv.jsonl", litm_kv_records(4, pairs=5))
    proc = run_cli("lpes_framework.commands.evaluate", "model=tiny", f"task.path={path}", "task.gold_positions=[0,7]",
                   check=False)
    assert proc.returncode == 2 and "gold positions [0, 7] must be whole numbers in [0, 4]" in proc.stderr.strip().splitlines()[-1]
    assert "LlamaForCausalLM" not in proc.stdout


@pytest.mark.slow
def test_kv_file_evaluates_end_to_end_on_the_embedded_model(tmp_path):
    path = write_jsonl(tmp_path / "kv-retrieval-4_keys.jsonl.xz", litm_kv_records(8, pairs=4))
    out = tmp_path / "run"
    run_cli("lpes_framework.commands.evaluate", "model=smollm2", f"task.path={path}", "task.gold_positions=[0,3]",
            "task.samples_per_position=2", "task.layout=move", "methods.uniform=[1.1]", "progress=false",
            f"hydra.run.dir={out}")
    results = json.loads((out / "results.json").read_text())
    scores = results["methods"]["unpatched"]["scores"]["kv_retrieval"]
    assert list(scores) == ["0", "3"] and all(s["count"] == 2 for s in scores.values())
    assert results["tasks"]["kv_retrieval"]["pairs"] == 4
    assert "uniform rope 1.1 - unpatched" in results["intervals"]


def test_mdqa_metric_is_normalised_best_subspan_exact_match():
    assert normalize("The  Eiffel-Tower, in PARIS!") == "eiffeltower in paris"
    assert best_subspan_em("It was built by the Gustave Eiffel company.", ["Gustave Eiffel"])
    assert best_subspan_em("answer: an apple", ["Apple"])  # articles and case do not matter
    assert not best_subspan_em("Paris", ["Lyon", "Marseille"])
    assert best_subspan_em("In Lyon.", ["Paris", "lyon"])  # any of the answers
    task = TASKS.build({"name": "mdqa", "path": write_jsonl_mdqa()})
    assert task.matches("The answer is the Moon.", [" moon"]) and not task.matches("Mars", [" moon"])


def write_jsonl_mdqa():
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp())
    ctxs = [{"title": f"t{i}", "text": f"doc {i}", "isgold": i == 0} for i in range(10)]
    return write_jsonl(folder / "qa.jsonl.xz", [{"question": "q?", "answers": ["moon"], "ctxs": ctxs}] * 4)
