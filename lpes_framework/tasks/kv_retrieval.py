"""Key-value retrieval in the "Lost in the Middle" format (Liu et al., nelson-liu/lost-in-the-middle).

Pairs are generated from the seed, or read from the benchmark's own files (``path``: the
``kv-retrieval-*_keys.jsonl[.gz|.xz]`` files, one record per line with ``ordered_kv_records`` as
``[key, value]`` pairs and the gold ``key`` and ``value``). In the ``move`` layout the gold pair is taken
out and put back at each gold position, as the original experiments do; file records are shared
between the splits as for mdqa (``base.split_records``) and the pair count comes from the file.
"""

from __future__ import annotations

import json
import uuid

from ..errors import LpesError, whole
from ..registry import TASKS
from .base import (MAX_CONTEXT_TOKENS, Sample, Task, check_layout, check_positions, file_stamp, read_jsonl, rng_for,
                   split_records)

PROMPT = ("Extract the value corresponding to the specified key in the JSON object below.\n\n"
          "JSON data:\n{records}\n\nKey: \"{key}\"\nCorresponding value:")


def read_kv_records(path: str) -> list[tuple[list[tuple[str, str]], int]]:
    """(pairs, index of the gold pair) per record of a Lost-in-the-Middle key-value file; any record that
    lacks a field, has malformed pairs, a gold key not among its pairs or another pair count than the
    first record is refused in one line naming it."""
    out = []
    for i, rec in enumerate(read_jsonl(path, "kv_retrieval")):
        where = f"kv_retrieval: record {i} of {path}"
        missing = [k for k in ("ordered_kv_records", "key", "value") if k not in rec]
        if missing:
            raise LpesError(f"{where} lacks {', '.join(missing)}")
        pairs = rec["ordered_kv_records"]
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise LpesError(f"{where}: ordered_kv_records must be a list of [key, value] pairs")
        pairs = [(str(k), str(v)) for k, v in pairs]
        if len({k for k, _ in pairs}) != len(pairs):  # the prompt's JSON object would keep one value of a key
            raise LpesError(f"{where}: a key appears twice among its ordered_kv_records, so its gold value is ambiguous")
        if (str(rec["key"]), str(rec["value"])) not in pairs:
            raise LpesError(f"{where}: its key/value pair is not among its ordered_kv_records")
        if out and len(pairs) != len(out[0][0]):
            raise LpesError(f"{where} has {len(pairs)} pairs, record 0 has {len(out[0][0])}: mixed pair counts")
        out.append((pairs, pairs.index((str(rec["key"]), str(rec["value"])))))
    if not out:
        raise LpesError(f"kv_retrieval: {path} holds no records")
    return out


def random_key(rng, kind: str, hex_len: int) -> str:
    if kind == "uuid":
        return str(uuid.UUID(bytes=rng.bytes(16), version=4))
    if kind == "hex":
        return rng.bytes((hex_len + 1) // 2).hex()[:hex_len]
    raise LpesError(f"kv_retrieval: key_kind must be 'uuid' or 'hex', got '{kind}'")


@TASKS.plugin
class KVRetrieval(Task):
    def __init__(self, *, pairs: int = 10, gold_positions=(0, 4, 9), key_kind: str = "uuid", hex_len: int = 8,
                 answer_prefix: str = "", layout: str = "queries", path: str | None = None, **common):
        super().__init__(**common)
        self.path = str(path) if path else None
        self._records = read_kv_records(self.path) if self.path else None  # read now: refused before any model
        if self._records:
            pairs = len(self._records[0][0])  # the file decides
        # bounded above so that a typo is refused here, not drawn: 10^11 pairs or a 10^11-digit key hung or ran
        # out of memory (a pair costs a token at the least, and 64 hex digits are 256 bits)
        pairs = whole(pairs, "kv_retrieval: pairs", 2, MAX_CONTEXT_TOKENS)
        hex_len = whole(hex_len, "kv_retrieval: hex_len", 1, 64)
        self.pairs = pairs
        self.gold_positions = check_positions(self.name, gold_positions, pairs)
        self.key_kind = key_kind
        self.hex_len = hex_len
        self.answer_prefix = answer_prefix
        self.layout = check_layout(self.name, layout)
        random_key(rng_for(0, "search", 0), key_kind, hex_len)  # validates key_kind now
        if key_kind == "hex" and 16 ** hex_len < 4 * pairs:
            raise LpesError(f"kv_retrieval: hex_len={hex_len!r} leaves too few distinct keys for {pairs} pairs "
                            f"(16^hex_len must be at least 4 x pairs)")

    def settings(self) -> dict:
        return super().settings() | ({"file_stamp": file_stamp(self.path)} if self.path else {})

    def _draws(self, split: str):
        """(draw index, pairs, index of the gold pair): from the file's records, or generated."""
        if self._records is not None:
            yield from ((j, pairs, gold) for j, (pairs, gold) in self.drawn(split_records(self._records, split), split))
            return
        for j in self.draws():
            rng = rng_for(self.seed, split, j)
            pairs: dict[str, str] = {}
            while len(pairs) < self.pairs:  # a repeated key is drawn again (the JSON object would keep one)
                key, value = random_key(rng, self.key_kind, self.hex_len), random_key(rng, self.key_kind, self.hex_len)
                pairs.setdefault(key, value)
            yield j, list(pairs.items()), 0

    def samples(self, split: str, tokenizer=None) -> list[Sample]:
        out = []
        for j, items, gold in self._draws(split):
            others = items[:gold] + items[gold + 1:]
            for pos in self.gold_positions:
                if self.layout == "queries":  # one haystack, asked for the key that sits at pos
                    ordered, (key, value) = items, items[pos]
                else:  # the gold pair moved to pos
                    ordered, (key, value) = others[:pos] + [items[gold]] + others[pos:], items[gold]
                records = json.dumps(dict(ordered), indent=1)
                out.append(Sample(prompt=PROMPT.format(records=records, key=key), answer=value,
                                  position=pos, prefix=self.answer_prefix, draw=j))
        return out
