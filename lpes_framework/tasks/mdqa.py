"""Multi-document QA in the "Lost in the Middle" file format (.jsonl, .jsonl.gz or .jsonl.xz), or generated.

Each line: ``{"question": str, "answers": [str, ...], "ctxs": [{"title", "text", "isgold"?}, ...]}``.
The gold document (``isgold`` true, else the first) is moved to each gold index. With
``scoring=generate`` an answer counts by the benchmark's normalised best-subspan exact match. Even lines are the
``search`` split; odd lines alternate between ``test`` and ``validation``.

``source: capitals`` generates the records instead, from the seed and split like every generated task: made-up
countries, each document giving one country's capital among filler sentences, so a question is answered
only by matching its country's name (20 documents are ~900 tokens on Qwen2.5, 45 ~2K). Every document there
answers a question of its own, which allows ``layout: queries``: one set of documents a draw, asked about the
document at each gold position (the questions share the documents as a prefix, scored once), where ``move``
(the benchmark's own) asks one question and moves its document.
"""

from __future__ import annotations

from ..errors import LpesError, whole
from .metrics import best_subspan_em
from ..registry import TASKS
from .base import (MAX_CONTEXT_TOKENS, Sample, Task, check_layout, check_positions, file_stamp, read_jsonl, rng_for,
                   split_records)

PROMPT = ("Write a high-quality answer for the given question using only the provided search results "
          "(some of which might be irrelevant).\n\n{documents}\n\nQuestion: {question}\nAnswer:")
SOURCES = ("file", "capitals")
SYLLABLES = ("ka", "lo", "mir", "ven", "dra", "su", "tel", "or", "bai", "nes", "qua", "rim", "zo", "pel", "an",
             "ul", "sha", "tor", "vi", "mek", "dun", "ry", "los", "fen")
FILLER = ("Its rivers freeze for part of the year.", "Travellers arrive mostly by rail.",
          "The region is known for its woven textiles.", "Winters are long and summers are short.",
          "Its main exports are timber and salt.", "The old town keeps a stone bridge from an earlier age.",
          "Local markets open at dawn.", "The coast is lined with small fishing harbours.")


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


def made_up_name(rng, syllables: int) -> str:
    return "".join(SYLLABLES[i] for i in rng.integers(len(SYLLABLES), size=syllables)).capitalize()


# half the two-syllable capitals: a draw keeps finding unused names quickly, and more would never end
MAX_CAPITALS = len(SYLLABLES) ** 2 // 2


def capitals(rng, documents: int) -> list[tuple[dict, str, str]]:
    """(document, question, answer) for ``documents`` made-up countries with distinct names and capitals."""
    pairs: dict[str, str] = {}
    while len(pairs) < documents:  # 24^3 country names: a repeat is drawn again
        country, capital = made_up_name(rng, 3), made_up_name(rng, 2)
        if capital not in pairs.values():
            pairs.setdefault(country, capital)
    out = []
    for country, capital in pairs.items():
        sentences = [FILLER[i] for i in rng.choice(len(FILLER), size=3, replace=False)]
        sentences.insert(int(rng.integers(4)), f"The capital of {country} is {capital}.")
        out.append(({"title": country, "text": " ".join(sentences)}, f"What is the capital of {country}?", capital))
    return out


def documents_text(docs) -> str:
    return "\n".join(f"Document [{i + 1}](Title: {d.get('title', '')}) {d['text']}" for i, d in enumerate(docs))


@TASKS.plugin
class MultiDocQA(Task):
    def __init__(self, *, path: str | None = None, documents: int = 10, gold_positions=(0, 4, 9), source: str = "file",
                 layout: str = "move", **common):
        super().__init__(**common)
        if source not in SOURCES:
            raise LpesError(f"mdqa: source must be one of {', '.join(SOURCES)}, got {source!r}")
        self.layout = check_layout(self.name, layout)
        self.source = source
        if source == "file":
            if not path or path == "???":
                raise LpesError("mdqa: set task.path to a lost-in-the-middle style .jsonl(.gz) file, or "
                                "task.source=capitals to generate the documents")
            if layout == "queries":
                raise LpesError("mdqa: layout=queries asks a question about every document, and a Lost-in-the-Middle "
                                "file has one question a record: use task.source=capitals, or layout=move")
            self.path = str(path)
            self._records = read_records(self.path)  # read now: a bad file is refused before any model loads
        else:
            if path and path != "???":
                raise LpesError(f"mdqa: source=capitals generates its documents; drop task.path ({path})")
            self._records = None
        self.documents = whole(documents, "mdqa: documents", 1, MAX_CONTEXT_TOKENS if self._records is not None
                               else MAX_CAPITALS)
        self.gold_positions = check_positions(self.name, gold_positions, documents)

    # the runs on files were recorded before the options
    unkeyed_defaults = Task.unkeyed_defaults + (("layout", "move"), ("source", "file"))

    def matches(self, text: str, answers) -> bool:
        return best_subspan_em(text, answers)

    def settings(self) -> dict:
        return super().settings() | ({"file_stamp": file_stamp(self.path)} if self._records is not None else {})

    def _draws(self, split: str):
        """(draw, documents as (document, question, answers), index of the asked one) of the split."""
        if self._records is None:
            for j in self.draws():
                yield j, [(d, q, [a]) for d, q, a in capitals(rng_for(self.seed, split, j), self.documents)], 0
            return
        for j, rec in self.drawn(split_records(self._records, split), split):
            ctxs = rec["ctxs"]
            if len(ctxs) < self.documents:
                raise LpesError(f"mdqa: a record has {len(ctxs)} documents, fewer than {self.documents}")
            gold = next((i for i, c in enumerate(ctxs) if c.get("isgold")), 0)
            others = (ctxs[:gold] + ctxs[gold + 1:])[: self.documents - 1]
            yield j, [(ctxs[gold], rec["question"], [str(a) for a in rec["answers"]])] + [(d, None, None) for d in others], 0

    def samples(self, split: str, tokenizer=None) -> list[Sample]:
        out = []
        for j, docs, gold in self._draws(split):
            for pos in self.gold_positions:
                if self.layout == "queries":  # one set of documents, asked about the one at pos
                    ordered, (_, question, answers) = docs, docs[pos]
                else:  # the asked document moved to pos
                    others = docs[:gold] + docs[gold + 1:]
                    ordered, (_, question, answers) = others[:pos] + [docs[gold]] + others[pos:], docs[gold]
                prompt = PROMPT.format(documents=documents_text([d for d, _, _ in ordered]), question=question)
                out.append(Sample(prompt=prompt, answer=" " + answers[0], position=pos, alternatives=tuple(answers[1:]),
                                  draw=j))
        return out
