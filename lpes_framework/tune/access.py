"""The split-access log of a tune (``splits.jsonl``): which stage read which split of which seed, for which
methods and how many haystacks, written before the stage scores. It is the evidence that the test split was read
once, at the end: a second read of the test split for another candidate is refused."""

from __future__ import annotations

from pathlib import Path

from ..errors import LpesError
from ..io.store import JsonLog


class SplitLog:
    def __init__(self, folder: Path):
        self.log = JsonLog(Path(folder) / "splits.jsonl")

    def entries(self) -> list[dict]:
        return self.log.read() if self.log.exists() else []

    def record(self, stage: str, split: str, seed: int, haystacks: dict[str, int], methods: list[str]) -> None:
        """One read, once: a resumed stage reading the same again adds nothing (it goes on with that read)."""
        key = f"{stage}:{split}:{seed}:{'|'.join(methods)}"
        if split == "test":
            other = [e for e in self.entries() if e["split"] == "test" and e["key"] != key]
            if other:
                raise LpesError(f"{self.log.path}: the test split (seed {other[0]['seed']}) was read already, by "
                                f"{other[0]['stage']} for {', '.join(other[0]['methods'])}: a test is read once; a new "
                                "candidate needs a new tune (another tune.test_seed, in a new folder)")
        if key not in {e["key"] for e in self.entries()}:
            self.log.append({"key": key, "stage": stage, "split": split, "seed": seed, "haystacks": haystacks,
                             "methods": methods})

    def test_reads(self) -> int:
        return sum(e["split"] == "test" for e in self.entries())
