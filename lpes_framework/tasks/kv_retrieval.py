"""Key-value retrieval in the "Lost in the Middle" format (Liu et al., nelson-liu/lost-in-the-middle)."""

from __future__ import annotations

import json
import uuid

from ..errors import LpesError
from .base import TASKS, Sample, Task, check_layout, check_positions, rng_for

PROMPT = ("Extract the value corresponding to the specified key in the JSON object below.\n\n"
          "JSON data:\n{records}\n\nKey: \"{key}\"\nCorresponding value:")


def random_key(rng, kind: str, hex_len: int) -> str:
    if kind == "uuid":
        return str(uuid.UUID(bytes=rng.bytes(16), version=4))
    if kind == "hex":
        return rng.bytes((hex_len + 1) // 2).hex()[:hex_len]
    raise LpesError(f"kv_retrieval: key_kind must be 'uuid' or 'hex', got '{kind}'")


@TASKS.register("kv_retrieval")
class KVRetrieval(Task):
    name = "kv_retrieval"

    def __init__(self, *, pairs: int = 10, gold_positions=(0, 4, 9), key_kind: str = "uuid", hex_len: int = 8,
                 answer_prefix: str = "", layout: str = "queries", **common):
        super().__init__(**common)
        if pairs < 2:
            raise LpesError(f"kv_retrieval: pairs must be >= 2, got {pairs}")
        self.pairs = pairs
        self.gold_positions = check_positions(self.name, gold_positions, pairs)
        self.key_kind = key_kind
        self.hex_len = hex_len
        self.answer_prefix = answer_prefix
        self.layout = check_layout(self.name, layout)
        random_key(rng_for(0, "search", 0), key_kind, hex_len)  # validates key_kind now

    @property
    def positions(self) -> list:
        return list(self.gold_positions)

    def samples(self, split: str, tokenizer=None) -> list[Sample]:
        out = []
        for j in range(self.samples_per_position):
            rng = rng_for(self.seed, split, j)
            items = [(random_key(rng, self.key_kind, self.hex_len), random_key(rng, self.key_kind, self.hex_len))
                     for _ in range(self.pairs)]
            for pos in self.gold_positions:
                if self.layout == "queries":  # one haystack, asked for the key that sits at pos
                    ordered, (key, value) = items, items[pos]
                else:  # the first pair moved to pos
                    ordered, (key, value) = items[1:pos + 1] + items[:1] + items[pos + 1:], items[0]
                records = json.dumps(dict(ordered), indent=1)
                out.append(Sample(prompt=PROMPT.format(records=records, key=key), answer=value,
                                  position=pos, prefix=self.answer_prefix, context=j))
        return out
