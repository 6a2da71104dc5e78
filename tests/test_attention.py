"""The attention analysis: gold spans found in the prompt tokens, shared-prefix attention equal to a
full forward, and the command on a finished search run."""

import json

import numpy as np
import pytest
import torch

from conftest import TINY_SEARCH, run_cli, tiny_model
from lpes_framework.evaluate.attention import analyse, attention_mass, gold_span, mass_by_position
from lpes_framework.errors import LpesError
from lpes_framework.tasks import TASKS
from lpes_framework.tasks.base import Encoded, Sample

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 :\n"


class CharTokenizer:
    """One character per token id: decoding is exact, so spans are known by construction."""

    def decode(self, ids):
        return "".join(ALPHABET[i % len(ALPHABET)] for i in ids)


def encoded(context: list[int], question: list[int], answer: str, position: int) -> Encoded:
    answer_ids = [ALPHABET.index(c) for c in answer]
    return Encoded(ids=context + question + answer_ids, answer_start=len(context) + len(question),
                   sample=Sample(prompt="", answer=answer, position=position))


def test_gold_span_covers_the_answer_text_in_the_prompt(smollm2):
    _, tokenizer, _ = smollm2
    task = TASKS.build({"name": "kv_retrieval", "pairs": 6, "gold_positions": [0, 3, 5], "key_kind": "hex",
                        "samples_per_position": 2})
    for item in task.encode("test", tokenizer):
        start, end = gold_span(item, tokenizer)
        assert item.sample.answer in tokenizer.decode(item.ids[start:end])
        assert item.sample.answer not in tokenizer.decode(item.ids[start + 1:end])  # tight on both sides
        assert item.sample.answer not in tokenizer.decode(item.ids[start:end - 1])
        assert end <= item.answer_start
    assert gold_span(encoded([1, 2, 3], [4], "zz", 0), CharTokenizer()) is None  # answer not in the prompt


def test_shared_prefix_attention_equals_a_full_forward():
    model = tiny_model("llama", attn="eager")
    tok = CharTokenizer()
    gen = torch.Generator().manual_seed(0)
    context = torch.randint(0, 26, (60,), generator=gen).tolist()
    items = []
    for pos, at in enumerate([5, 25, 45]):
        answer = tok.decode(context[at:at + 3])
        items.append(encoded(context, [36, 37, 10 + pos], answer, pos))  # same context, one question each
    rows = attention_mass(model, items, tok)
    assert [p for p, _ in rows] == ["0", "1", "2"]
    for (_, mass), item in zip(rows, items):
        start, end = gold_span(item, tok)
        with torch.no_grad():
            full = model(torch.tensor([item.ids[: item.answer_start]]), output_attentions=True).attentions
        expected = [float(a[0, :, -1, start:end].sum(-1).mean()) for a in full]
        assert np.allclose(mass, expected, atol=1e-5) and mass.shape == (4,)
        assert ((mass >= 0) & (mass <= 1)).all()
    assert mass_by_position(rows + rows)["1"] == pytest.approx(rows[1][1].tolist())


def test_attention_command_writes_next_to_a_search_run(tmp_path_factory, capsys, monkeypatch):
    from lpes_framework.report import plots

    run = tmp_path_factory.mktemp("att") / "run"
    run_cli("lpes_framework", *TINY_SEARCH, f"hydra.run.dir={run}")
    figures = []
    finish = plots._finish
    monkeypatch.setattr(plots, "_finish", lambda fig, path, title="": figures.append(fig) or finish(fig, path, title))
    analyse(run, samples=2)
    data = json.loads((run / "attention.json").read_text())
    (task, methods), = data["mass"].items()
    assert set(methods) == {"unpatched", "patched"}
    assert all(len(layers) == 4 for per in methods.values() for layers in per.values())
    assert data["factors"] == json.loads((run / "best_factors.json").read_text())["factors"]
    # the plot draws what the file holds: layer x gold position maps of each method, and their difference
    unpatched, patched, diff = (ax.get_images()[0].get_array() for ax in figures[0].axes[:3])
    grid = {m: np.array([[per[p][layer] for p in per] for layer in range(4)]) for m, per in methods.items()}
    np.testing.assert_allclose(unpatched, grid["unpatched"])
    np.testing.assert_allclose(patched, grid["patched"])
    np.testing.assert_allclose(diff, grid["patched"] - grid["unpatched"])
    assert (run / "attention.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "attention on the gold span" in capsys.readouterr().out
    assert not (run / ".hydra").exists()  # the run record in evaluations.jsonl is what the command reads
    with pytest.raises(LpesError, match="not a run directory"):
        analyse(tmp_path_factory.mktemp("empty"))
