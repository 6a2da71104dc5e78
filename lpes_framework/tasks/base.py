"""What every task is: a deterministic generator of scored samples, labelled by gold position.

A sample is a prompt and the gold answer that should follow it. Samples are produced from a seed and a
split; the ``search``, ``validation`` and ``test`` splits are disjoint by construction: draw ``j`` of
``search``/``test`` comes from the random stream ``[seed, 2 * j + split]`` and of ``validation`` from
``[seed, j, 2]`` (a different entropy shape, so never one of the others); file records go to ``search``
(even lines), ``test`` (lines 1, 5, 9, ...) and ``validation`` (lines 3, 7, 11, ...). Positions are
compared on the same material: each draw builds one context and asks about every gold position
(``queries`` layout) or moves one gold item through them (``move``, see ``check_layout``).
"""

from __future__ import annotations

import copy
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from ..errors import LpesError, distinct_whole, is_number, whole
from .metrics import answer_found

SPLITS = ("search", "test", "validation")
WHOLE_TEXT = "all"  # the one "position" of a task scored over whole texts (perplexity), not by gold position
MAX_SAMPLES = 1_000_000  # draws per gold position: weeks of scoring on any machine
MAX_NEW_TOKENS = 1 << 20
MAX_CONTEXT_TOKENS = 1 << 24  # past any model's window: a typo fails at once, not filling 10^11 tokens of haystack


def whole_text(per_position: Mapping) -> bool:
    """True for a task's scores that hold one whole-text entry instead of one entry per gold position."""
    return list(per_position) == [WHOLE_TEXT]


@dataclass(frozen=True)
class Sample:
    prompt: str  # user-visible prompt, before any chat template
    answer: str  # gold continuation that is scored
    position: int | str  # gold position label (an index, a depth in percent, or 'all')
    prefix: str = ""  # text the answer turn starts with (not scored), e.g. an opening quote
    alternatives: tuple[str, ...] = ()  # other accepted answers (generation scoring)
    draw: int = 0  # which draw (haystack, record) it comes from: the unit a paired bootstrap resamples
    references: tuple[str, ...] = ()  # every item the answer must name (RULER's outputs; empty: the answer)
    length: int | None = None  # the context length in tokens its draw was filled to (tasks that fill one)


@dataclass(frozen=True)
class Encoded:
    """Token ids of prompt + answer; the answer is ids[answer_start:]."""

    ids: list[int]
    answer_start: int
    sample: Sample = field(compare=False)


def file_stamp(path: str) -> str:
    """A data file's content digest: part of the cache key, so an edited file is scored afresh and the same
    bytes give the same key in any checkout (a size and mtime stamp changed with every clone and worktree,
    and a resume there scored the whole log again)."""
    from pathlib import Path

    stat = Path(path).stat()
    return _digest(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=256)
def _digest(path: str, size: int, mtime_ns: int) -> str:  # size and mtime: a file edited in place is read again
    from ..io.atomic import file_digest

    return "blake2b:" + file_digest(path)


def split_index(split: str) -> int:
    if split not in SPLITS:
        raise LpesError(f"unknown split '{split}'; valid: {', '.join(SPLITS)}")
    return SPLITS.index(split)


def rng_for(seed: int, split: str, j: int) -> np.random.Generator:
    index = split_index(split)
    return np.random.default_rng([seed, j, 2] if split == "validation" else [seed, 2 * j + index])


def split_records(records: Sequence, split: str) -> list:
    """The records of a file that belong to ``split`` (see the module docstring)."""
    if split == "search":
        return list(records[0::2])
    return list(records[1::4] if split_index(split) == 1 else records[3::4])


class Task:
    """Base class: subclasses implement ``samples`` (their ``name`` is the registry's)."""

    name = "task"
    # retrieval tasks report accuracy; perplexity reports exp(-mean log-prob)
    metric = "accuracy"
    # a search guard instead of a reward: a perplexity ratio to unpatched above which a candidate is
    # penalised (perplexity tasks set it; judging.fitness and the gradient objective read it)
    max_ratio: float | None = None
    # options added after runs were recorded, at the value that behaves as before the option existed: left out of
    # the cache key, so that those runs keep their keys (``settings``)
    unkeyed_defaults: tuple[tuple[str, object], ...] = (("step_contexts", 1),)

    def __init__(self, *, seed: int = 0, samples_per_position: int = 10, chat_template: str | bool = "auto",
                 max_new_tokens: int = 48, weight: float = 1.0, step_contexts: int = 1):
        # upper bounds far past any run, so that a typo fails here and not as a silent hang drawing 10^20 samples
        samples_per_position = whole(samples_per_position, f"{self.name}: samples_per_position", 1, MAX_SAMPLES)
        max_new_tokens = whole(max_new_tokens, f"{self.name}: max_new_tokens", 1, MAX_NEW_TOKENS)
        # a gradient minibatch's contexts of this task for each of its contexts (optimizer.contexts_per_step):
        # a task whose per-sample change is noisy gets enough of every step for its effect to show
        self.step_contexts = whole(step_contexts, f"{self.name}: step_contexts", 1, MAX_SAMPLES)
        if not is_number(weight):
            raise LpesError(f"{self.name}: weight must be a finite number, got {weight!r}")
        if chat_template not in ("auto", True, False):
            raise LpesError(f"{self.name}: chat_template must be auto, true or false, got {chat_template!r}")
        self.seed = seed
        self.samples_per_position = samples_per_position
        self.chat_template = chat_template
        self.max_new_tokens = max_new_tokens
        self.weight = weight

    def samples(self, split: str, tokenizer) -> list[Sample]:
        raise NotImplementedError

    def draws(self) -> Sequence[int]:
        """The draws (contexts) the samples come from: the first ``samples_per_position`` of a split, or
        the ones a copy was made for (``with_draws``: the gradient optimizer's fresh minibatches)."""
        return getattr(self, "_chosen_draws", None) or range(self.samples_per_position)

    def step_draws(self, draws: Sequence[int], first: int) -> list[int]:
        """This task's draws in a gradient minibatch of ``draws`` (numbered from ``first``, the first draw past
        the fixed search split): ``step_contexts`` consecutive fresh draws for each."""
        k = self.step_contexts
        return [first + (d - first) * k + j for d in draws for j in range(k)]

    def with_draws(self, draws: Sequence[int]) -> "Task":
        """The same task over other draws of each split (the evaluation cache key does not change:
        minibatch scores are never cached)."""
        out = copy.copy(self)
        out._chosen_draws = list(draws)
        return out

    def drawn(self, records: Sequence, split: str) -> list[tuple[int, object]]:
        """(draw, record) of a split's records: the first ``samples_per_position`` of them, or the chosen
        draws of a copy (``with_draws``), which must all exist (fewer would under-sample the split without
        a word, and an empty one fails only at validation, after the whole search)."""
        chosen = getattr(self, "_chosen_draws", None)
        if chosen is None:
            if len(records) < self.samples_per_position:
                raise LpesError(f"{self.name}: the {split} split of {getattr(self, 'path', None)} holds {len(records)} records, fewer "
                                f"than samples_per_position={self.samples_per_position} (a file's records go 1/2 "
                                "to search, 1/4 each to validation and test): lower it or use a larger file")
            return list(enumerate(records[: self.samples_per_position]))
        if chosen and max(chosen) >= len(records):
            raise LpesError(f"{self.name}: the {split} split holds {len(records)} records, too few for draw "
                            f"{max(chosen)}; the gradient optimizer draws fresh minibatches beyond the "
                            f"{self.samples_per_position} scored each evaluation: use a generated task or a larger file")
        return [(j, records[j]) for j in chosen]

    def matches(self, text: str, answers: Sequence[str]) -> bool:
        """Generation metric (``scoring=generate``): does the generated text answer the question."""
        return answer_found(text, answers)

    def text_score(self, text: str, sample: Sample) -> float | None:
        """A graded generation score in [0, 1] (RULER's string match), or None for tasks scored only by
        ``matches``."""
        return None

    def settings(self) -> dict:
        """Everything that changes the samples: part of the evaluation cache key (``unkeyed_defaults`` left
        out)."""
        return {k: v for k, v in vars(self).items()
                if not k.startswith("_") and (k, v) not in self.unkeyed_defaults} | {"name": self.name}

    def uses_chat(self, tokenizer) -> bool:
        return self.chat_template is True or (
            self.chat_template == "auto" and getattr(tokenizer, "chat_template", None) is not None)

    def encode(self, split: str, tokenizer) -> list[Encoded]:
        use_chat = self.uses_chat(tokenizer)
        return [encode_sample(s, tokenizer, use_chat) for s in self.samples(split, tokenizer)]


def encode_sample(sample: Sample, tokenizer, use_chat: bool) -> Encoded:
    """Token ids of the whole text (prompt, answer prefix, answer) from ONE tokenisation, and where the
    scored span starts.

    Tokenising the answer on its own is wrong for SentencePiece tokenizers (Llama-2, Mistral): they
    prepend a word-start marker the model would never write there, and a quote or space before the
    answer merges with its first characters. The span therefore starts after the longest token prefix
    the prompt alone shares with the whole text: every token from there on is what greedy decoding
    must produce. A token straddling the boundary (prefix characters merged with the answer's first
    ones) is scored as part of the answer, because the model has to generate it.
    """
    if use_chat:
        text = tokenizer.apply_chat_template([{"role": "user", "content": sample.prompt}], tokenize=False,
                                             add_generation_prompt=True)
    else:
        text = sample.prompt
    text += sample.prefix
    specials = not use_chat  # a chat template writes its own special tokens
    ids = list(tokenizer(text + sample.answer, add_special_tokens=specials)["input_ids"])
    prompt_ids = tokenizer(text, add_special_tokens=specials)["input_ids"]
    start = 0
    for a, b in zip(prompt_ids, ids):
        if a != b:
            break
        start += 1
    if start == len(ids) or not sample.answer:
        raise LpesError(f"empty gold answer for sample at position {sample.position}")
    return Encoded(ids=ids, answer_start=start, sample=sample)


MAX_DATA_BYTES = 2 ** 30  # a data file's text once decompressed; the largest real one (LITM's NQ) is ~60 MB


def read_jsonl(path: str, task: str) -> list[dict]:
    """The JSON objects of a .jsonl, .jsonl.gz or .jsonl.xz file, or a one-line error naming the task. At
    most ``MAX_DATA_BYTES`` of text are read: a received 300 KB .gz expanded into a 740 MB process, so a
    few MB of one would fill the machine's memory before any check."""
    import gzip
    import json
    import lzma
    from pathlib import Path

    from ..io import jsonio

    p = Path(path)
    if not p.is_file():
        raise LpesError(f"{task}: file not found: {path}")
    opener = {".gz": gzip.open, ".xz": lzma.open}.get(p.suffix, open)
    try:
        with opener(p, "rb") as fh:
            text = fh.read(MAX_DATA_BYTES + 1)
        if len(text) > MAX_DATA_BYTES:
            raise LpesError(f"{task}: {path} holds more than {MAX_DATA_BYTES:,} bytes of text once decompressed; "
                            "split it, or keep the records a run uses")
        # "\n" alone ends a record: splitlines() would also cut at U+2028 and the like inside a JSON string
        records = [jsonio.loads(line) for line in text.decode("utf-8").split("\n") if line.strip()]
    except (OSError, EOFError, lzma.LZMAError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LpesError(f"{task}: cannot read {path}: {type(exc).__name__}: {exc}") from exc
    if not all(isinstance(r, dict) for r in records):
        raise LpesError(f"{task}: {path} must hold one JSON object per line")
    return records


LAYOUTS = ("queries", "move")


def check_layout(name: str, layout: str) -> str:
    """``queries``: one context per sample draw, one question per gold position about the item that sits
    there (the samples share the context as a token prefix, so scoring runs it once: one forward a draw
    instead of one a position); ``move``: one gold item moved through the positions, one context per
    position (the original experiments)."""
    if layout not in LAYOUTS:
        raise LpesError(f"{name}: layout must be one of {', '.join(LAYOUTS)}, got '{layout}'")
    return layout


def check_positions(name: str, positions: Sequence[int], upper: int) -> list[int]:
    return distinct_whole(positions, f"{name}: gold positions", 0, upper - 1, "position")


def check_context_tokens(name: str, value) -> int:
    return whole(value, f"{name}: context_tokens", 64, MAX_CONTEXT_TOKENS)
