"""The queries layout of the tasks whose prompts are a context of their own (RULER's needles and vt, MDQA): one
context a draw, a question per depth about what sits there, the questions sharing the context as a token
prefix (scored once), and the move layout's samples and cache keys as they were before the option."""

import json

import pytest

from conftest import CharTokenizer, tiny_model
from lpes_framework.config import compose_config, task_configs
from lpes_framework.errors import LpesError
from lpes_framework.scoring import prefix_groups
from lpes_framework.scoring.teacher_forced import score_teacher_forced
from lpes_framework.tasks import TASKS

TOK = CharTokenizer()
DEPTHS = [0, 50, 100]


def task(config: str, **options):
    (spec,) = task_configs(compose_config("config", [f"task={config}"])).values()
    defaults = {"samples_per_position": 2, "depths": DEPTHS, "context_tokens": 3000}
    if config.startswith("mdqa"):
        defaults = {"samples_per_position": 2, "documents": 9, "gold_positions": [0, 4, 8]}
    return TASKS.build(spec | defaults | options)


def context_of(sample) -> str:
    """The prompt up to its question: the part the queries layout shares."""
    marker = "\nQuestion:" if "\nQuestion:" in sample.prompt else "\nWhat "
    return sample.prompt.rsplit(marker, 1)[0]


QUERIES = ["niah_multikey_1", "niah_multivalue", "niah_multiquery", "niah_multikey_2", "vt", "mdqa_capitals"]


@pytest.mark.parametrize("config", QUERIES)
def test_one_context_a_draw_and_a_question_per_depth_about_what_sits_there(config):
    t = task(config, layout="queries")
    samples = t.samples("search", TOK)
    per_draw = len(samples) // t.samples_per_position
    first, second = samples[:per_draw], samples[per_draw:]
    assert {context_of(s) for s in first} == {context_of(first[0])}  # the same context for every question
    assert context_of(second[0]) != context_of(first[0])  # the next draw is another one
    assert len({s.answer for s in first}) == per_draw  # a different answer at every depth
    context = context_of(first[0]).rsplit("in the following text.\n\n", 1)[-1]  # after vt's worked example
    # an item of each answer sits at its question's depth (its share of the text); the other items where they fall
    for s in first:
        if config.startswith("mdqa"):  # the asked document is the one at the gold index
            document = context.split("\nDocument [")[s.position + 1]
            assert f"is{s.answer}." in document and document.split("(Title: ")[1].split(")")[0] in s.prompt.split("\n")[-2]
            continue
        assert min(abs(context.index(i) / len(context) - s.position / 100) for i in s.references) < 0.12, s.position


@pytest.mark.parametrize("config", QUERIES)
def test_the_questions_share_the_context_as_one_token_prefix(config):
    t = task(config, layout="queries")
    groups = prefix_groups(t.encode("search", TOK))
    assert [len(m) for _, m in groups] == [len(DEPTHS)] * t.samples_per_position


def test_scored_once_a_draw_the_same_as_each_prompt_alone():
    model = tiny_model("llama", layers=2, max_positions=4096)
    items = task("niah_multikey_1", layout="queries", context_tokens=900, samples_per_position=1).encode("search", TOK)
    shared = score_teacher_forced(model, items, share_prefix=True)
    alone = score_teacher_forced(model, items, share_prefix=False)
    assert [r.logprob for r in shared] == pytest.approx([r.logprob for r in alone], abs=1e-4)


@pytest.fixture
def qa_file(tmp_path):
    record = {"question": "q?", "answers": ["a"], "ctxs": [{"title": str(i), "text": f"doc {i}"} for i in range(3)]}
    path = tmp_path / "qa.jsonl"
    path.write_text("\n".join(json.dumps(record) for _ in range(8)))
    return str(path)


@pytest.mark.parametrize("config", ["niah_multikey_1", "vt", "mdqa"])
def test_the_move_layout_keeps_its_cache_key(config, qa_file):
    extra = {"path": qa_file, "documents": 3, "gold_positions": [0, 2], "samples_per_position": 1} if config == "mdqa" else {}
    assert "layout" not in task(config, **extra).settings()
    if config != "mdqa":
        assert task(config, layout="queries").settings()["layout"] == "queries"


def test_a_file_has_one_question_a_record_so_no_queries_layout(qa_file):
    with pytest.raises(LpesError, match="one question a record"):
        TASKS.build({"name": "mdqa", "path": qa_file, "layout": "queries"})


@pytest.mark.parametrize("spec,match", [
    ({"name": "mdqa", "source": "capitals", "path": "x.jsonl"}, "drop task.path"),
    ({"name": "mdqa", "source": "web"}, "source must be one of file, capitals"),
    # more documents than distinct made-up capitals would draw names for ever
    ({"name": "mdqa", "source": "capitals", "documents": 600, "gold_positions": [0]}, "from 1 to 288"),
    ({"name": "ruler_niah", "layout": "spread"}, "layout must be one of"),
    ({"name": "variable_tracking", "layout": "queries", "hops": 400, "context_tokens": 1024}, "cannot fit"),
])
def test_bad_layouts_and_sources_are_refused_at_once(spec, match):
    with pytest.raises(LpesError, match=match):
        TASKS.build(spec)
