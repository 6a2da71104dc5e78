"""Tasks are deterministic, splits are disjoint, and the one-pass scorer agrees with generation."""

import gzip
import json
import os

import pytest
import torch

from conftest import CharTokenizer, tiny_model
from lpes_framework.errors import LpesError
from lpes_framework.scoring.base import ScoreRow
from lpes_framework.judging.results import by_position, wilson
from lpes_framework.scoring.generate import score_generate
from lpes_framework.scoring.teacher_forced import score_teacher_forced
from lpes_framework.tasks import TASKS
from lpes_framework.tasks.base import Encoded, Sample


def kv(**kw):
    return TASKS.build({"name": "kv_retrieval", "pairs": 6, "gold_positions": [0, 2, 5], "samples_per_position": 3} | kw)


def test_kv_samples_are_deterministic_and_move_one_gold_pair():
    a, b = kv(layout="move").samples("search"), kv(layout="move").samples("search")
    assert a == b and len(a) == 9
    first = [s for s in a if s.prompt == a[0].prompt or s.answer == a[0].answer]
    assert [s.position for s in first] == [0, 2, 5]  # same context, gold moved through positions
    record_lines = [line for line in a[1].prompt.splitlines() if ":" in line and '"' in line]
    assert a[1].answer in record_lines[2]


def test_kv_queries_ask_every_position_of_one_haystack():
    samples = kv().samples("search")
    assert len(samples) == 9 and [s.position for s in samples[:3]] == [0, 2, 5]
    first = samples[:3]
    records = first[0].prompt.split("Key:")[0]
    assert all(s.prompt.split("Key:")[0] == records for s in first)  # the same haystack
    assert samples[3].prompt.split("Key:")[0] != records  # the next draw is another one
    lines = [line for line in records.splitlines() if '": "' in line]
    for s in first:
        assert s.answer in lines[s.position] and f'Key: "{lines[s.position].split(chr(34))[1]}"' in s.prompt


@pytest.mark.parametrize("name", ["passkey", "niah"])
def test_needle_queries_put_a_needle_at_every_depth(name):
    task = TASKS.build({"name": name, "context_tokens": 200, "depths": [0, 50, 100], "samples_per_position": 2,
                        "layout": "queries"})
    samples = task.samples("test")
    assert [s.position for s in samples] == [0, 50, 100] * 2
    one_draw = samples[:3]
    context = one_draw[0].prompt.rsplit("\n", 1)[0]
    assert all(s.prompt.startswith(context) for s in one_draw) and len({s.answer for s in one_draw}) == 3
    positions = [context.index(s.answer.strip()) for s in one_draw]
    assert positions == sorted(positions)  # each asked key sits at its own depth


def test_queries_share_the_context_as_a_token_prefix():
    from lpes_framework.scoring import prefix_groups

    tok = CharTokenizer()
    for task in (kv(chat_template=False), TASKS.build({"name": "niah", "context_tokens": 200, "layout": "queries",
                                                       "depths": [0, 50, 100], "samples_per_position": 2})):
        groups = prefix_groups(task.encode("search", tok))
        assert [len(m) for _, m in groups] == [3] * task.samples_per_position  # one group per haystack


def test_search_and_test_splits_are_disjoint():
    for name, extra in [("kv_retrieval", {}), ("passkey", {"context_tokens": 64}), ("niah", {"context_tokens": 64})]:
        task = TASKS.build({"name": name, "samples_per_position": 20} | extra)
        search = {s.answer for s in task.samples("search")}
        test = {s.answer for s in task.samples("test")}
        assert search and test and not search & test, name


@pytest.mark.parametrize("kind", ["uuid", "hex"])
def test_key_kinds(kind):
    answer = kv(key_kind=kind, hex_len=6).samples("test")[0].answer
    assert len(answer) == (36 if kind == "uuid" else 6)


def test_needles_at_depths():
    task = TASKS.build({"name": "passkey", "context_tokens": 240, "depths": [0, 100], "samples_per_position": 1})
    first, last = task.samples("search")
    key = first.answer.strip()
    context = first.prompt.split("\n\n")[1]
    assert context.startswith("The pass key is " + key) and last.prompt.split("\n\n")[1].rstrip().endswith("pass key.")
    niah = TASKS.build({"name": "niah", "context_tokens": 240, "distractors": 3, "samples_per_position": 1})
    assert niah.samples("search")[0].prompt.count("One of the special magic numbers for") == 4  # gold + 3 distractors


def test_mdqa_reads_lost_in_the_middle_files(tmp_path):
    path = tmp_path / "qa.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        for q in range(4):
            ctxs = [{"title": f"t{i}", "text": f"doc {q}-{i}", "isgold": i == 3} for i in range(5)]
            fh.write(json.dumps({"question": f"q{q}?", "answers": [f"a{q}", f"alt{q}"], "ctxs": ctxs}) + "\n")
    task = TASKS.build({"name": "mdqa", "path": str(path), "documents": 5, "gold_positions": [0, 4],
                        "samples_per_position": 2})
    assert [s.answer for s in task.samples("search")] == [" a0", " a0", " a2", " a2"]  # records 0 and 2
    with pytest.raises(LpesError, match=r"mdqa: the test split of .* holds 1 records, fewer than samples_per_position=2"):
        task.samples("test")  # one record in four goes to test: asking for two is refused, not under-sampled
    task = TASKS.build({"name": "mdqa", "path": str(path), "documents": 5, "gold_positions": [0, 4],
                        "samples_per_position": 1})
    search, test = task.samples("search"), task.samples("test")
    assert [s.answer for s in search] == [" a0", " a0"] and test[0].answer == " a1"
    assert "Document [1](Title: t3) doc 0-3" in search[0].prompt
    assert "Document [5](Title: t3) doc 0-3" in search[1].prompt
    path.write_bytes(b"\x1f\x8b garbage")
    with pytest.raises(LpesError, match="mdqa: cannot read"):  # read when the task is built, before any model
        TASKS.build({"name": "mdqa", "path": str(path), "documents": 5, "gold_positions": [0, 4]})


def test_perplexity_windows_from_builtin_text():
    task = TASKS.build({"name": "perplexity", "window_tokens": 64, "windows": 3})
    search, test = task.encode("search", CharTokenizer()), task.encode("test", CharTokenizer())
    assert len(search) == 3 and all(len(e.ids) == 64 for e in search)
    assert search[0].ids != test[0].ids


def test_perplexity_windows_from_the_standard_librarys_source():
    task = TASKS.build({"name": "perplexity", "source": "stdlib", "window_tokens": 4096, "windows": 40})
    pydoc = TASKS.build({"name": "perplexity", "window_tokens": 4096, "windows": 3})
    from lpes_framework.tasks.perplexity import stdlib_text

    windows = task.encode("test", CharTokenizer())
    assert len(windows) == 40 and all(len(e.ids) == 4096 for e in windows)
    text = CharTokenizer()(stdlib_text())["input_ids"]
    assert len(text) > 2_000_000  # 16K-token windows for extrapolation: many per split
    assert task.encode("search", CharTokenizer())[0].ids == text[:4096]  # the first window is the first text
    assert task.settings()["source"] == "stdlib" and "source" not in pydoc.settings()  # default keys unchanged


def test_perplexity_beyond_a_position_scores_the_rest_as_context():
    """score_from: the same windows, only the tokens from that position on scored (the cache key says so; a
    guard's max_ratio does not change the samples, so it is not in the key)."""
    whole = TASKS.build({"name": "perplexity", "window_tokens": 64, "windows": 2})
    beyond = TASKS.build({"name": "perplexity", "window_tokens": 64, "windows": 2, "score_from": 48})
    guard = TASKS.build({"name": "perplexity", "window_tokens": 64, "windows": 2, "max_ratio": 1.02})
    a, b = whole.encode("test", CharTokenizer()), beyond.encode("test", CharTokenizer())
    assert [e.ids for e in a] == [e.ids for e in b]
    assert {e.answer_start for e in a} == {1} and {e.answer_start for e in b} == {48}
    assert beyond.settings()["score_from"] == 48 and "score_from" not in whole.settings()
    assert guard.settings() == whole.settings() and guard.max_ratio == 1.02 and whole.max_ratio is None


@pytest.mark.parametrize("cfg,match", [
    ({"name": "perplexity", "window_tokens": 64, "score_from": 64}, r"score_from must be in \[1, window_tokens\)"),
    ({"name": "perplexity", "max_ratio": 0.9}, "max_ratio must be a number >= 1"),
    ({"name": "kv_retrieval", "pairs": 5, "gold_positions": [0, 5]}, r"must be whole numbers in \[0, 4\]"),
    ({"name": "kv_retrieval", "key_kind": "guid"}, "key_kind"),
    ({"name": "passkey", "depths": [0, 120]}, r"needle depths \(percent\) \[0, 120\] must be whole numbers in \[0, 100\]"),
    ({"name": "kv_retrieval", "samples_per_position": 0}, "samples_per_position"),
    ({"name": "mdqa"}, "set task.path"),
    ({"name": "perplexity", "files": ["/nonexistent.txt"]}, "file not found"),
    ({"name": "perplexity", "source": "wiki"}, "source must be one of pydoc, stdlib"),
    ({"name": "kv_retreival"}, "did you mean 'kv_retrieval'"),
])
def test_bad_task_configs(cfg, match):
    with pytest.raises(LpesError, match=match):
        TASKS.build(cfg)


def test_teacher_forced_exact_match_agrees_with_greedy_generation():
    torch.manual_seed(0)
    model = tiny_model("llama")
    items = []
    for n in range(12):
        prompt = torch.randint(3, 97, (10 + n,)).tolist()
        with torch.no_grad():
            greedy = model.generate(torch.tensor([prompt]), max_new_tokens=3, do_sample=False)[0, len(prompt):].tolist()
        # half the answers are the model's own greedy continuation, half are not
        answer = greedy if n % 2 == 0 else [greedy[0], (greedy[1] % 90) + 3 + 1, greedy[2]]
        sample = Sample(prompt="", answer="x", position=n % 3)
        items.append(Encoded(ids=prompt + answer, answer_start=len(prompt), sample=sample))
    forced = score_teacher_forced(model, items, batch_size=5)
    assert [r.exact for r in forced] == [n % 2 == 0 for n in range(12)]
    assert all(r.first for r in forced)
    assert all(r.logprob < 0 and r.tokens == 3 for r in forced)


def test_generate_scorer_checks_the_answer_text():
    model = tiny_model("llama")
    tok = CharTokenizer()
    prompt = [5, 6, 7, 8]
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=4, do_sample=False)[0, 4:].tolist()
    text = tok.decode(out)
    item = Encoded(ids=prompt + out, answer_start=4, sample=Sample(prompt="", answer=text, position=0))
    (row,) = score_generate(model, [item], tokenizer=tok, max_new_tokens=4)
    assert row.exact and row.first


def test_results_by_position_and_wilson_interval():
    rows = [ScoreRow(position=p, logprob=-1.0 * p, exact=e, first=e, first_logprob=-0.5, tokens=2)
            for p, e in [(0, True), (0, True), (0, False), (5, False)]]
    stats = by_position(rows)
    assert list(stats) == ["0", "5"]
    assert stats["0"].accuracy == pytest.approx(2 / 3) and stats["0"].count == 3
    assert stats["0"].ci_low < 2 / 3 < stats["0"].ci_high
    low, high = wilson(0, 10)
    assert low == 0.0 and 0.2 < high < 0.35


def test_editing_a_data_file_changes_the_cache_identity(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text("one two three " * 50)
    task = TASKS.build({"name": "perplexity", "files": [str(path)], "window_tokens": 16, "windows": 1})
    before = task.settings()
    path.write_text("four five six seven " * 50)
    assert task.settings() != before
    # the same bytes keep their identity whatever the file's mtime (a fresh clone or worktree of a run)
    edited = task.settings()
    os.utime(path, ns=(1, 1))
    assert task.settings() == edited
    path.write_text("four five six eight " * 50)  # edited in place, same size: read again
    assert task.settings() != edited


@pytest.mark.parametrize("options, match", [
    ({"gold_positions": [0, 2.5]}, r"gold positions \[0, 2.5\] must be whole numbers"),  # position 2, silently, once
    ({"gold_positions": [float("nan")]}, "must be whole numbers"),  # a traceback once
    ({"gold_positions": [0, 4, 4]}, "repeat a position"),  # weighed twice in every mean over positions
    ({"hex_len": 10**11}, "hex_len must be a whole number from 1 to 64"),  # a 10^11-digit key ran out of memory
    ({"pairs": 10**11, "key_kind": "uuid"}, "pairs must be a whole number from 2 to"),  # hung drawing uuids
])
def test_kv_options_a_typo_makes_impossible_are_refused_at_once(options, match):
    with pytest.raises(LpesError, match=match):
        TASKS.build({"name": "kv_retrieval", "pairs": 10} | options)
