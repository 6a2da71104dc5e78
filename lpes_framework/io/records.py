"""The schemas of the files lpes writes and reads back: a search's evaluation log and checkpoint, an
evaluate folder's rows log and results. Every record is checked field by field (types, ranges,
finiteness) when a command reads it, so a damaged or crafted file is one line naming the file, the record
and the field, never a traceback deep in a command or a silent wrong number (``status`` with a fitness
that is text, a resume with a NaN, an analysis of a row whose exact match is the text "yes"). Non-finite numbers are stored as null (``jsonio``): where a
statistic may legitimately be NaN (a log-prob of an empty span), null is accepted."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from ..errors import LpesError, one_form

Finite = Annotated[float, Field(allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]
Share = Annotated[float, Field(ge=0.0, le=1.0)]
Factor = Union[Finite, Annotated[list[Finite], Field(min_length=1)]]


def _one_form(factors: list) -> list:
    one_form(factors)  # an LpesError is a ValueError: pydantic reports it as the field's
    return factors


Schedule = Annotated[list[Factor], Field(min_length=1), AfterValidator(_one_form)]
# a config group's option as a received file names it (the commands compose ``task=<name>``): a plain name,
# never a path (``../config`` loads another file of the config tree) nor a list or interpolation
GROUP_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$"
GroupName = Annotated[str, Field(pattern=GROUP_NAME)]


class Record(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")  # later versions may add fields


class Stats(Record):
    count: Annotated[int, Field(ge=1)]
    accuracy: Share
    ci_low: Share
    ci_high: Share
    first_accuracy: Share
    logprob: Finite | None
    logprob_se: Annotated[float, Field(ge=0.0)] | None
    first_logprob: Finite | None
    perplexity: Annotated[float, Field(ge=0.0)] | None


def _position(label: str) -> str:
    if label != "all":
        try:
            if not math.isfinite(float(label)):
                raise ValueError
        except ValueError:
            raise ValueError(f"gold position {label!r} is not a number") from None
    return label


Scores = dict[str, dict[Annotated[str, Field(min_length=1)], Stats]]


class _Scored(Record):
    key: str
    generation: Count
    scores: Scores
    seconds: Annotated[float, Field(ge=0.0)]

    @field_validator("scores")
    @classmethod
    def _labels(cls, scores):
        for per in scores.values():
            for label in per:
                _position(label)
        return scores


class Spec(Record):
    key: Literal["spec"]
    kind: Literal["spec"]
    spec: dict


class Baseline(_Scored):
    kind: Literal["baseline"]
    genome: None = None
    factors: None = None


class Outcome(Record):
    fitness: Finite
    retrieval: Finite
    perplexity: Annotated[float, Field(ge=0.0)] | None


class Candidate(_Scored):
    kind: Literal["candidate"]
    genome: list[Finite] | None
    factors: Schedule
    outcome: Outcome
    same_as: str | None = None


class Step(Record):
    key: str
    kind: Literal["step"]
    generation: Count
    restart: Count
    genome: list[Finite]
    factors: Schedule
    draws: list[Count]
    objective: Finite
    gradient: list[Finite]
    task_gradients: dict[str, list[Finite]] | None = None  # each task's part (written since it existed)
    seconds: Annotated[float, Field(ge=0.0)]

    @model_validator(mode="after")
    def _one_per_gene(self):
        # a gradient is one number a gene, the mixture's and each task's part alike (an analysis reshapes them)
        lengths = {len(self.gradient), *(len(g) for g in (self.task_gradients or {}).values())}
        if lengths != {len(self.genome)}:
            raise ValueError(f"its gradients hold {sorted(lengths)} numbers for {len(self.genome)} genes")
        return self


LogRecord = Annotated[Union[Spec, Baseline, Candidate, Step], Field(discriminator="kind")]
_LOG = TypeAdapter(LogRecord)


class Row(Record):
    """One scored sample of an evaluate folder's ``rows.jsonl`` (``scoring.base.ScoreRow``). Its fields are
    ScoreRow's, written by this package alone: an unknown key is a damaged one (a field renamed by a flipped
    byte would otherwise leave the row its default draw, 0, silently)."""

    model_config = ConfigDict(strict=True, extra="forbid")
    position: Union[Count, Annotated[str, Field(min_length=1)]]
    logprob: Finite | None
    exact: bool
    first: bool
    first_logprob: Finite | None
    tokens: Count
    token_logprobs: list[Finite | None]
    draw: Count = 0
    context: Count | None = None  # rows written before the field was called draw
    length: Annotated[int, Field(ge=1)] | None = None
    match: Share | None = None


class Cost(Record):
    seconds: Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
    samples: Count


class Rows(Record):
    key: Annotated[str, Field(min_length=1)]
    method: Annotated[str, Field(min_length=1)]
    rows: dict[str, list[Row]]
    cost: Cost | None = None  # the scoring of the samples new in this record (written since it existed)

    @model_validator(mode="after")
    def _one_kind_of_position(self):
        """A task's gold positions are all numbers (an index, a depth) or all names ('all'): one of another
        kind is a damaged row, which readers that order rows by position could not even compare."""
        for task, rows in self.rows.items():
            if len({isinstance(row.position, str) for row in rows}) > 1:
                raise ValueError(f"task {task!r} mixes numbered and named gold positions")
        return self

    @model_validator(mode="after")
    def _each_sample_once(self):
        """A sample is a (draw, gold position): methods are paired on it, so a row repeated (in place of
        another) would be counted twice, or pair with nothing, in every interval without a word."""
        for task, rows in self.rows.items():
            seen = set()
            for row in rows:
                sample = (row.draw if row.context is None else row.context, row.position)
                if sample in seen:
                    raise ValueError(f"task {task!r} holds draw {sample[0]} at gold position {sample[1]!r} twice")
                seen.add(sample)
        return self


class Interval(Record):
    delta: Finite | None
    low: Finite | None
    high: Finite | None


# sizes a received model block gives are what frequencies and tables get computed from before any model loads
# (a head of 10^9 dimensions is 8 GB of them): bounded far above any real model
Size = Annotated[int, Field(ge=1, le=1 << 16)]


class RopeParameters(Record):
    """transformers' ``rope_parameters`` (keys vary by rope type); the ones read from a file are checked."""
    partial_rotary_factor: Annotated[float, Field(gt=0.0, le=1.0)] | None = None


class ModelBlock(Record):
    """The identity a factors file was searched on (``model.load.ModelInfo``); older files hold fewer fields."""
    name: str | None = None
    architecture: str | None = None
    n_layers: Size | None = None
    n_heads: Size | None = None
    n_kv_heads: Size | None = None
    head_dim: Size | None = None
    rope_theta: Annotated[float, Field(gt=0.0, allow_inf_nan=False)] | None = None
    rope_type: str | None = None
    trained_context: Annotated[int, Field(ge=1, le=1 << 40)] | None = None
    rope_parameters: RopeParameters | None = None
    source: str | None = None


class Validation(Record):
    chosen: str | None = None
    fitness: dict[str, Finite | None] = {}
    intervals: dict[str, Annotated[list[Finite | None], Field(min_length=2, max_length=2)]] = {}
    genomes: dict[str, list[Finite]] = {}


class Tested(Record):
    scores: Scores


class Metrics(Record):
    search: dict | None = None  # what the search reported (older files: NaN, or the chosen method's name)
    validation: Validation | None = None
    test: dict[str, Tested] = {}
    intervals: dict[str, dict[str, dict[str, Interval]]] = {}


class NamedBlock(Record):
    name: GroupName


class Method(Record):
    scores: Scores
    factors: Schedule | None = None
    scheme: NamedBlock | None = None

    @model_validator(mode="after")
    def _factors_name_their_scheme(self):
        """Factors mean nothing without the scheme that turns them into tables (``lpes factors`` ships the pair)."""
        if self.factors is not None and self.scheme is None:
            raise ValueError("a method holds factors but names no scheme")
        return self


class Results(Record):
    """An evaluate folder's ``results.json``."""
    model: ModelBlock  # the identity ``lpes factors`` writes into the factors file it ships
    tasks: Annotated[dict[str, dict], Field(min_length=1)]
    methods: Annotated[dict[str, Method], Field(min_length=1)]
    intervals: dict[str, dict[str, dict[str, Interval]]] = {}
    run: dict | None = None

    @model_validator(mode="after")
    def _scores_of_the_tasks(self):
        """Every method is scored on exactly the recorded tasks (a task name changed in one place would leave a
        reader looking up scores under a name they do not have)."""
        for name, method in self.methods.items():
            if set(method.scores) != set(self.tasks):
                raise ValueError(f"method {name!r} is scored on tasks {sorted(method.scores)}, the file records "
                                 f"{sorted(self.tasks)}")
        return self


class OptimizerState(Record):
    generation: Count  # every optimizer's state has its generation (status reads it)
    # the gradient optimizer's position and Adam moments: a NaN here would resume to a NaN answer
    restart: Count | None = None
    step: Count | None = None
    cursor: Count | None = None
    origin: list[Finite] | None = None
    x: list[Finite] | None = None
    m: list[Finite] | None = None
    v: list[Annotated[float, Field(ge=0.0, allow_inf_nan=False)]] | None = None
    scored: bool | None = None
    scored_fitness: float | None = None


class Checkpoint(Record):
    version: int
    log_records: Annotated[int, Field(ge=1)]
    log_digest: Annotated[str, Field(pattern="^[0-9a-f]{40}$")]
    log: list[dict]
    optimizer: OptimizerState


def one_line(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "the record"
    return f"{where}: {first['msg']}" + (f" (got {first['input']!r:.60})" if "input" in first else "")


def check_log_record(record: dict, path: Path, line: int) -> None:
    """One record of a search's ``evaluations.jsonl`` against the schema of its kind."""
    if record.get("kind") not in ("spec", "baseline", "candidate", "step"):
        raise LpesError(f"{path}: line {line} is not a search record (kind {record.get('kind')!r})")
    try:
        _LOG.validate_python(record)
    except ValidationError as exc:
        raise LpesError(f"{path}: line {line} ({record['kind']}) is damaged: {one_line(exc)}") from None


def check_rows_record(record: dict, path: Path, line: int) -> None:
    """One record of an evaluate folder's ``rows.jsonl``: its run record or one method's rows."""
    try:
        (Spec if record.get("kind") == "spec" else Rows).model_validate(record)
    except ValidationError as exc:
        raise LpesError(f"{path}: line {line} is damaged: {one_line(exc)}") from None


def check_results(data, path: Path) -> dict:
    try:
        Results.model_validate(data)
    except ValidationError as exc:
        raise LpesError(f"{path} is damaged: {one_line(exc)}") from None
    return data


def check_checkpoint(state, path: Path) -> dict:
    try:
        Checkpoint.model_validate(state)
    except ValidationError as exc:
        raise LpesError(f"{path} is damaged: {one_line(exc)}; delete it and resume=true replays the search from "
                        "evaluations.jsonl, which keeps every evaluation") from None
    return state
