"""Multi-document QA in the "Lost in the Middle" file format (.jsonl, .jsonl.gz or .jsonl.xz).

Each line: ``{"question": str, "answers": [str, ...], "ctxs": [{"title", "text", "isgold"?}, ...]}``.
The gold document (``isgold`` true, else the first) is moved to each gold index. With
``scoring=generate`` an answer counts by the benchmark's normalised best-subspan exact match. Even lines are the
``search`` split; odd lines alternate between ``test`` and ``validation``.
"""

from __future__ import annotations

from ..errors import LpesError
from .metrics import best_subspan_em
from ..registry import TASKS
from .base import Sample, Task, check_positions, file_stamp, read_jsonl, split_records

PROMPT = ("Write a high-quality answer for the given question using only the provided search results "
          "(some of which might be irrelevant).\n\n{documents}\n\nQuestion: {question}\nAnswer:")


def read_records(path: str) -> list[dict]:
    records = read_jsonl(path, "mdqa")
    for i, rec in enumerate(records):
        where = f"mdqa: record {i} of {path}"
        if not {"question", "answers", "ctxs"} <= rec.keys() or not rec["answers"] or not rec["ctxs"]:
            raise LpesError(f"{where} lacks question/answers/ctxs")
        if not isinstance(rec["question"], str):
            raise LpesError(f"{where}: question must be text")
        if not isinstance(rec["answers"], list) or not all(isinstance(a, str) and a.strip() for a in rec["answers"]):
            raise LpesError(f"{where}: answers must be a list of non-empty strings, got {rec['answers']!r:.60}")
        if not isinstance(rec["ctxs"], list) or not all(isinstance(c, dict) and isinstance(c.get("text"), str)
                                                        and isinstance(c.get("title", ""), str) for c in rec["ctxs"]):
            raise LpesError(f"{where}: ctxs must be a list of documents, each with a text (and a title) as strings")
    return records


@TASKS.plugin
class MultiDocQA(Task):
    def __init__(self, *, path: str | None = None, documents: int = 10, gold_positions=(0, 4, 9), **common):
        super().__init__(**common)
        if not path or path == "???":
            raise LpesError("mdqa: set task.path to a lost-in-the-middle style .jsonl(.gz) file")
        self.path = str(path)
        self._records = read_records(self.path)  # read now: a bad file is refused before any model loads
        self.documents = documents
        self.gold_positions = check_positions(self.name, gold_positions, documents)

    def matches(self, text: str, answers) -> bool:
        return best_subspan_em(text, answers)

    def settings(self) -> dict:
        return super().settings() | {"file_stamp": file_stamp(self.path)}

    def samples(self, split: str, tokenizer=None) -> list[Sample]:
        out = []
        for j, rec in self.drawn(split_records(self._records, split), split):
            ctxs = rec["ctxs"]
            gold_idx = next((i for i, c in enumerate(ctxs) if c.get("isgold")), 0)
            gold, others = ctxs[gold_idx], (ctxs[:gold_idx] + ctxs[gold_idx + 1:])[: self.documents - 1]
            if len(others) < self.documents - 1:
                raise LpesError(f"mdqa: a record has {len(others) + 1} documents, fewer than {self.documents}")
            for pos in self.gold_positions:
                docs = others[:pos] + [gold] + others[pos:]
                text = "\n".join(f"Document [{i + 1}](Title: {d.get('title', '')}) {d['text']}" for i, d in enumerate(docs))
                answers = [str(a) for a in rec["answers"]]
                out.append(Sample(prompt=PROMPT.format(documents=text, question=rec["question"]),
                                  answer=" " + answers[0], position=pos, alternatives=tuple(answers[1:]), draw=j))
        return out
