"""Answer spans on a SentencePiece (Llama-2 / Mistral style) tokenizer, made offline in the test.

Such tokenizers put a word-start marker before a string tokenised on its own, and merge a quote or a
space with the characters after it, so the answer tokenised alone is not what the model would write
after the prompt. The span must come from one tokenisation of the whole text.
"""

import json
from types import SimpleNamespace

import pytest
import torch

from lpes_framework.scoring.teacher_forced import score_teacher_forced
from lpes_framework.tasks import TASKS
from lpes_framework.tasks.base import Sample, encode_sample


@pytest.fixture(scope="module")
def sp_tokenizer(tmp_path_factory):
    sentencepiece = pytest.importorskip("sentencepiece")
    from transformers import LlamaTokenizer

    folder = tmp_path_factory.mktemp("sp")
    lines = []
    for i in range(400):
        key, value = f"{i * 7919:08x}", f"{i * 104729 % 16**8:08x}"
        lines.append(f'Key: "{key}"\nCorresponding value: "{value}"')
        lines.append(f'{{"{key}": "{value}"}} The pass key is {i * 37}. Remember it. Answer: {i} the value')
    (folder / "corpus.txt").write_text("\n".join(lines))
    sentencepiece.SentencePieceTrainer.train(
        input=str(folder / "corpus.txt"), model_prefix=str(folder / "tokenizer"), vocab_size=400,
        model_type="bpe", byte_fallback=True, character_coverage=1.0, bos_id=1, eos_id=2, unk_id=0, pad_id=-1)
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "LlamaTokenizer"}))
    tok = LlamaTokenizer.from_pretrained(str(folder))
    tok.pad_token = tok.eos_token
    return tok


class CopyingModel(torch.nn.Module):
    """Greedy decoding of this model writes ``target`` (a token sequence) after any prefix of it."""

    def __init__(self, target: list[int], vocab: int):
        super().__init__()
        self.target, self.vocab = target, vocab
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, input_ids, attention_mask=None, logits_to_keep=0, **_):
        batch, width = input_ids.shape
        logits = torch.zeros(batch, width, self.vocab)
        for row in range(batch):
            pads = int((attention_mask[row] == 0).sum()) if attention_mask is not None else 0
            seq = input_ids[row, pads:].tolist()
            for t in range(len(seq)):
                if seq[: t + 1] == self.target[: t + 1] and t + 1 < len(self.target):
                    logits[row, pads + t, self.target[t + 1]] = 10.0
        return SimpleNamespace(logits=logits[:, -logits_to_keep:] if logits_to_keep else logits)


@pytest.mark.parametrize("prefix,answer", [('"', "7f3a9c01"), ("", " 7f3a9c01"), ("", " 42 apples"), ('"', "x")])
def test_scored_ids_are_the_whole_texts_tokens(sp_tokenizer, prefix, answer):
    tok = sp_tokenizer
    prompt = 'Key: "ab12cd34"\nCorresponding value:' + (" " if prefix else "")
    enc = encode_sample(Sample(prompt=prompt, answer=answer, position=0, prefix=prefix), tok, use_chat=False)
    whole = tok(prompt + prefix + answer)["input_ids"]
    assert enc.ids == whole
    # the prompt the model sees is a token prefix of both tokenisations
    assert enc.ids[: enc.answer_start] == tok(prompt + prefix)["input_ids"][: enc.answer_start]
    # what is scored decodes to the answer (plus, at most, prefix characters merged into its first token)
    scored = tok.decode(enc.ids[enc.answer_start:])
    assert scored.endswith(answer.strip()) and (prompt + prefix + answer).endswith(scored.lstrip())
    # and a model that copies the answer greedily reproduces exactly these ids
    (row,) = score_teacher_forced(CopyingModel(whole, len(tok)), [enc], pad_id=tok.pad_token_id)
    assert row.exact and row.first and row.tokens == len(whole) - enc.answer_start


@pytest.mark.parametrize("cfg", [
    {"name": "kv_retrieval", "pairs": 4, "gold_positions": [0, 3], "key_kind": "hex", "answer_prefix": '"'},
    {"name": "passkey", "context_tokens": 64, "depths": [0, 100]},
    {"name": "niah", "context_tokens": 64, "depths": [50], "distractors": 1},
])
def test_every_task_scores_what_greedy_decoding_writes(sp_tokenizer, cfg):
    tok = sp_tokenizer
    task = TASKS.build(cfg | {"samples_per_position": 2, "chat_template": False})
    for enc in task.encode("search", tok):
        assert enc.ids == tok(enc.sample.prompt + enc.sample.prefix + enc.sample.answer)["input_ids"]
        (row,) = score_teacher_forced(CopyingModel(enc.ids, len(tok)), [enc], pad_id=tok.pad_token_id)
        assert row.exact
