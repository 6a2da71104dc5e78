"""The schema of a search's evaluation log and checkpoint: every record is checked field by field (types,
ranges, finiteness) when a command reads it, so a damaged or crafted file is one line naming the file,
the record and the field, never a traceback deep in a command or a silent wrong number (``status`` with a
fitness that is text, a resume with a NaN). Non-finite numbers are stored as null (``jsonio``): where a
statistic may legitimately be NaN (a log-prob of an empty span), null is accepted."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from ..errors import LpesError

Finite = Annotated[float, Field(allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]
Share = Annotated[float, Field(ge=0.0, le=1.0)]
Factor = Union[Finite, Annotated[list[Finite], Field(min_length=1)]]


class _Record(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")  # later versions may add fields


class Stats(_Record):
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


class _Scored(_Record):
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


class Spec(_Record):
    key: Literal["spec"]
    kind: Literal["spec"]
    spec: dict


class Baseline(_Scored):
    kind: Literal["baseline"]
    genome: None = None
    factors: None = None


class Outcome(_Record):
    fitness: Finite
    retrieval: Finite
    perplexity: Annotated[float, Field(ge=0.0)] | None


class Candidate(_Scored):
    kind: Literal["candidate"]
    genome: list[Finite] | None
    factors: Annotated[list[Factor], Field(min_length=1)]
    outcome: Outcome
    same_as: str | None = None


class Step(_Record):
    key: str
    kind: Literal["step"]
    generation: Count
    restart: Count
    genome: list[Finite]
    factors: Annotated[list[Factor], Field(min_length=1)]
    draws: list[Count]
    objective: Finite
    gradient: list[Finite]
    seconds: Annotated[float, Field(ge=0.0)]


LogRecord = Annotated[Union[Spec, Baseline, Candidate, Step], Field(discriminator="kind")]
_LOG = TypeAdapter(LogRecord)


class Checkpoint(_Record):
    version: int
    log_records: Annotated[int, Field(ge=1)]
    log_digest: Annotated[str, Field(pattern="^[0-9a-f]{40}$")]
    log: list[dict]
    optimizer: dict


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


def check_checkpoint(state, path: Path) -> dict:
    try:
        Checkpoint.model_validate(state)
    except ValidationError as exc:
        raise LpesError(f"{path} is damaged: {one_line(exc)}; delete it and resume=true replays the search from "
                        "evaluations.jsonl, which keeps every evaluation") from None
    return state
