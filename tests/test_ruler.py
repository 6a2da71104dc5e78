"""RULER's synthetic tasks: filled to their length in the tokenizer's tokens, each needle and answer where it
must be, deterministic per seed and split, RULER's scorer, lengths as a distribution, every architecture."""

import re
from collections import Counter

import pytest
import torch

from conftest import ARCHS, CharTokenizer, tiny_model
from lpes_framework.config import compose_config
from lpes_framework.config import task_configs
from lpes_framework.errors import LpesError
from lpes_framework.scoring.generate import score_generate
from lpes_framework.scoring.teacher_forced import score_teacher_forced
from lpes_framework.tasks import TASKS
from lpes_framework.tasks.metrics import string_match_all

RULER = ["niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
         "niah_multikey_3", "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe"]
TOK = CharTokenizer()  # one token per byte: lengths are counted exactly
LENGTH = {"cwe": 3000}  # the char tokenizer needs room for cwe's worked example and its 60 list entries


def ruler(config: str, **options):
    (spec,) = task_configs(compose_config("config", [f"task={config}"])).values()
    options = {"samples_per_position": 2, "context_tokens": LENGTH.get(config, 1500)} | options
    return TASKS.build(spec | options)


@pytest.mark.parametrize("config", RULER)
def test_each_sample_is_filled_to_its_length(config):
    task = ruler(config)
    target = task.context_tokens
    encoded = task.encode("search", TOK)
    assert encoded and all(e.sample.length == target for e in encoded)
    lengths = [len(e.ids) for e in encoded]
    # as long as the target allows: one more haystack unit (at most a line of noise or a needle) would pass it
    assert all(target - 160 < n <= target for n in lengths), lengths
    assert ruler(config).samples("search", TOK) == task.samples("search", TOK)  # deterministic
    assert task.samples("test", TOK) != task.samples("search", TOK)  # splits differ


@pytest.mark.parametrize("config", [c for c in RULER if c.startswith("niah")])
def test_the_moved_needle_sits_at_its_depth_and_every_reference_once(config):
    task = ruler(config, depths=[0, 50, 100], context_tokens=3000)
    samples = task.samples("search", TOK)
    assert [s.position for s in samples] == [0, 50, 100] * 2
    for draw in (samples[:3], samples[3:]):
        contexts = [s.prompt.split("afterwards.\n", 1)[1].rsplit("\nWhat", 1)[0] for s in draw]
        moved = None
        for s, context in zip(draw, contexts):
            assert s.answer == " " + ", ".join(s.references) and len(s.references) == task.values * task.queries
            found = [context.index(f"is: {r}.") for r in s.references]
            assert found == sorted(found)  # the answer lists the values in the order the context gives them
            for r in s.references:
                assert context.count(r) == 1  # each gold value once: the answer is not ambiguous
            keys = re.findall(r"for (\S+) is: ", context)
            assert set(Counter(keys).values()) == {task.values}  # a key once per value, haystack needles included
            asked = s.prompt.rsplit("magic ", 1)[1]
            assert all(k in asked for k in keys if any(f"{k} is: {r}." in context for r in s.references))
        # the moved needle: the one reference whose place follows the depth
        for r in draw[0].references:
            places = [c.index(f"is: {r}.") / len(c) for c in contexts]
            if places[0] < places[1] < places[2]:
                moved = places
        assert moved is not None and moved[0] < 0.1 and 0.4 < moved[1] < 0.6 and moved[2] > 0.9


def test_singular_and_plural_templates_follow_ruler():
    one, many = ruler("niah_single_1").samples("search", TOK)[0], ruler("niah_multivalue").samples("search", TOK)[0]
    assert one.prompt.startswith("A special magic number is hidden") and one.prefix.endswith("provided text is")
    assert many.prompt.startswith("Some special magic numbers are hidden") and many.prefix.endswith("text are")
    query = ruler("niah_multiquery").samples("search", TOK)[0].prompt.rsplit("for ", 1)[1]
    assert query.count(", ") == 3 and ", and " in query


def test_variable_tracking_chain_starts_at_its_depth_and_is_the_answer():
    task = ruler("vt", depths=[0, 50, 100], context_tokens=4000)
    for s in task.samples("search", TOK)[:3]:
        context = s.prompt.split("\n\n")[-1] if not task.fewshot else s.prompt.rsplit("text.\n\n", 1)[1]
        names = s.references
        value = re.search(r"assigned the value (\d+)", s.prefix).group(1)
        head = context.index(f"VAR {names[0]} = {value}")
        assert abs(head / len(context) - s.position / 100) < 0.1
        places = [head] + [context.index(f"VAR {b} = VAR {a} ") for a, b in zip(names, names[1:])]
        assert places == sorted(places)  # the chain in order after its head
        assert s.answer == " " + " ".join(names) and len(names) == task.hops + 1
        assert len(re.findall(rf"= {value}\b", context)) == 1  # no other chain starts from the value


def test_common_words_answer_the_ten_most_repeated():
    for length in (3000, 9000):  # RULER's two repetition regimes (below and from 4K)
        s = ruler("cwe", context_tokens=length).samples("search", TOK)[0]
        listing = s.prompt.rsplit("most often.\n", 1)[1].split("\nQuestion")[0]
        counts = Counter(re.findall(r"\d+\. (\S+)", listing))
        assert set(s.references) == {w for w, _ in counts.most_common(10)}
        top, rest = {counts[w] for w in s.references}, {c for w, c in counts.items() if w not in s.references}
        assert top == ({30} if length >= 4096 else {6}) and rest == ({3} if length >= 4096 else {1})
        first = [listing.index(f". {w} ") for w in s.references]
        assert first == sorted(first)  # scored in the order of their first appearance


def test_frequent_words_answer_the_three_most_frequent_coded_words():
    s = ruler("fwe").samples("search", TOK)[0]
    text = s.prompt.split("coded words. ", 1)[1].split("\nQuestion")[0]
    counts = Counter(text.split())
    ranked = [w for w, _ in counts.most_common() if w != "..."]
    assert counts.most_common(1)[0][0] == "..." and list(s.references) == ranked[:3]
    assert counts[ranked[0]] > counts[ranked[1]] > counts[ranked[2]] > counts[ranked[3]]


def test_string_match_all_scores_like_ruler():
    assert string_match_all("The numbers are 123 and 456.", ["123", "456"]) == 1.0
    assert string_match_all("only 123", ["123", "456"]) == 0.5
    assert string_match_all("ABC", ["abc"]) == 1.0 and string_match_all("", ["x"]) == 0.0
    task = ruler("niah_multivalue")
    s = task.samples("search", TOK)[0]
    assert task.text_score(" ".join(s.references[:2]), s) == 0.5
    assert task.matches(" ".join(s.references), s.references) and not task.matches(s.references[0], s.references)


def test_lengths_as_a_list_or_a_range():
    task = ruler("niah_single_1", context_tokens=[600, 1200], samples_per_position=4, depths=[50])
    encoded = task.encode("search", TOK)
    assert [e.sample.length for e in encoded] == [600, 1200, 600, 1200]  # each length equally often
    assert all(len(e.ids) <= e.sample.length for e in encoded)
    ranged = ruler("fwe", context_tokens={"low": 700, "high": 1400}, samples_per_position=6).encode("search", TOK)
    assert all(700 <= e.sample.length <= 1400 and len(e.ids) <= e.sample.length for e in ranged)
    assert len({e.sample.length for e in ranged}) > 1


@pytest.mark.parametrize("options, match", [
    ({"context_tokens": 32}, "whole number from 64"),
    ({"context_tokens": []}, "empty list"),
    ({"context_tokens": {"low": 900, "high": 800}}, "exceeds high"),
    ({"context_tokens": {"low": 900}}, "low: a, high: b"),
    ({"context_tokens": 100}, "shorter than the template"),
    ({"haystack": "essays"}, "haystack must be one of noise, essay, needle"),
    ({"queries": 2}, "exceeds keys"),
    ({"value_type": "colours"}, "value_type must be one of"),
])
def test_bad_ruler_options_are_one_line_errors(options, match):
    with pytest.raises(LpesError, match=match):
        ruler("niah_single_1", **options).samples("search", TOK)


@pytest.mark.parametrize("name, options, match", [
    # counts a typo makes huge hung drawing their material; they are refused before any draw is built
    ("vt", {"hops": 10**11}, r"chains x \(hops \+ 1\) assignments \(100000000001\) cannot fit in"),
    ("niah_multivalue", {"values": 10**9}, "keys x values needles"),
    ("niah_multikey_1", {"context_tokens": 10**11}, "context_tokens must be a whole number from 64"),
    ("passkey", {"context_tokens": 10**11}, "context_tokens must be a whole number from 64"),  # a MemoryError once
    ("fwe", {"word_length": 10**9}, "word_length letters"),
    ("cwe", {"common_repeats": 10**9, "context_tokens": 4096}, "common x its repeats listed words"),
    ("vt", {"chains": 0}, "chains must be a whole number >= 1, got 0"),
    ("fwe", {"alpha": 0.5}, "alpha must be > 1"),
    ("niah_multikey_1", {"depths": [12.5]}, r"must be whole numbers in \[0, 100\]"),
    ("niah_multikey_1", {"depths": [float("nan")]}, r"must be whole numbers in \[0, 100\]"),
    ("niah_multikey_1", {"depths": [50, 50]}, "repeat a depth"),
])
def test_impossible_ruler_options_are_refused_before_any_draw(name, options, match):
    with pytest.raises(LpesError, match=match):
        ruler(name, **options)


def test_the_common_word_repeats_are_checked_only_where_they_apply():
    ruler("cwe", common=50, context_tokens=1024)  # below 4K a common word is listed 6 times, not 30: it fits


def test_a_tokenizer_is_needed():
    with pytest.raises(LpesError, match="need its tokenizer"):
        ruler("fwe").samples("search")


@pytest.mark.parametrize("arch", ARCHS)
def test_scored_on_every_architecture(arch):
    """Teacher forcing and greedy generation score a RULER task on each architecture the core supports;
    the needle's moves share the haystack before it as a prefix, and the shared-prefix scores are the
    plain ones."""
    model = tiny_model(arch, max_positions=1024)
    task = ruler("niah_multivalue", context_tokens=700, samples_per_position=1, depths=[50, 100])
    items = task.encode("search", TOK)
    plain = score_teacher_forced(model, items, share_prefix=False)
    shared = score_teacher_forced(model, items, share_prefix=True)
    assert [r.length for r in plain] == [700, 700]
    for a, b in zip(plain, shared):
        assert a.logprob == pytest.approx(b.logprob, abs=1e-4) and a.tokens == b.tokens > 10
    generated = score_generate(model, items, tokenizer=TOK, max_new_tokens=4, match=task.matches,
                               text_score=task.text_score)
    assert all(r.match is not None and 0 <= r.match <= 1 for r in generated)
    torch.testing.assert_close(torch.tensor([r.logprob for r in generated]), torch.tensor([r.logprob for r in plain]))
