"""The columns of a transfer matrix (a ``matrix`` config: tasks x lengths x haystack counts) and the evaluate
config that scores one column's methods on a named split and seed.

A column is ``{task: <task config group>, haystacks: <draws>, set: {<task settings>}, extra: {<name>: {task,
set}}}``: ``task`` picks the task's YAML (``conf/task``), ``set`` overrides its keys (lengths, gold positions,
layout), ``haystacks`` is its ``samples_per_position`` unless a caller sizes it otherwise (from a pilot's
spread); ``extra`` tasks are scored beside it on the same methods (a perplexity guard), at their own sizes. Columns are checked
whole (each task built from its settings) before anything loads or scores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from omegaconf import DictConfig, OmegaConf, open_dict

from ..config import compose_config, plain
from ..errors import LpesError, whole
from ..registry import CONF_DIR, TASKS
from ..tasks.base import MAX_SAMPLES


@dataclass(frozen=True)
class Column:
    name: str
    task: str  # the task's config group option
    settings: dict = field(default_factory=dict)
    haystacks: int = 40
    extra: dict = field(default_factory=dict)  # name -> (task config group, settings)

    def task_config(self) -> dict:
        """The column's task config: its YAML with ``settings`` over it."""
        return task_config(self.task, self.settings)

    def extra_configs(self) -> dict[str, dict]:
        return {name: task_config(task, settings) for name, (task, settings) in self.extra.items()}


def task_config(task: str, settings: dict) -> dict:
    return plain(OmegaConf.merge(OmegaConf.load(CONF_DIR / "task" / f"{task}.yaml"), settings))


def _task(spec, where: str) -> tuple[str, dict]:
    """(task config group, settings) of a column's or extra task's ``{task, set}``, checked."""
    task, settings = spec.get("task"), spec.get("set") or {}
    # a plain option name: "../matrix/tiny" would read another group's file as a task
    if not isinstance(task, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", task) or \
            not (CONF_DIR / "task" / f"{task}.yaml").is_file():
        raise LpesError(f"{where}: task {task!r} is no task config (conf/task/<name>.yaml)")
    if not isinstance(settings, dict):
        raise LpesError(f"{where}: set must map task settings to values, got {settings!r:.80}")
    try:
        TASKS.build(task_config(task, settings))  # a bad length, layout or position is refused now
    except LpesError as exc:
        raise LpesError(f"{where}: {exc}") from None
    return task, settings


def read_columns(matrix, names=None) -> dict[str, Column]:
    """The ``matrix`` config's columns (those in ``names`` where given, in the matrix's order), checked."""
    matrix = plain(matrix)
    columns = matrix.get("columns") if isinstance(matrix, dict) else None
    if not isinstance(columns, dict) or not columns:
        raise LpesError("matrix.columns must map column names to {task, haystacks, set}")
    out = {}
    for name, spec in columns.items():
        where = f"matrix column {name!r}"
        if not isinstance(spec, dict) or not set(spec) <= {"task", "haystacks", "set", "extra"}:
            raise LpesError(f"{where}: give task (a task config), haystacks, set (its task settings) and extra, "
                            f"got {spec!r:.80}")
        extra = spec.get("extra") or {}
        if not isinstance(extra, dict) or not all(isinstance(e, dict) and set(e) <= {"task", "set"} for e in extra.values()):
            raise LpesError(f"{where}: extra must map names to {{task, set}}, got {extra!r:.80}")
        out[str(name)] = Column(str(name), *_task(spec, where),
                                extra={str(k): _task(e, f"{where}, extra {k!r}") for k, e in extra.items()},
                                haystacks=whole(spec.get("haystacks", 40), f"{where}: haystacks", 2, MAX_SAMPLES))
    if names is None:
        return out
    unknown = [n for n in names if n not in out]
    if unknown:
        raise LpesError(f"unknown matrix columns {unknown}; the matrix has {', '.join(out)}")
    return {n: out[n] for n in names}


def column_config(base: DictConfig, column: Column, *, split: str, seed: int, haystacks: int | None = None,
                  files=(), baseline: bool = True, uniform=()) -> DictConfig:
    """The evaluate config scoring ``column`` on ``split`` (its draws from ``seed``) under ``base``'s model,
    scheme and scoring settings: the unpatched model (``baseline``), uniform factors and factors files, reusing
    the rows already in its folder (``resume``)."""
    cfg = compose_config("evaluate", [f"task={column.task}"])
    with open_dict(cfg):
        for key in ("model", "pos", "scoring", "batch_size", "share_prefix", "threads", "allow_beyond_trained"):
            cfg[key] = base[key]
        cfg.task = column.task_config() | {"samples_per_position": haystacks or column.haystacks}
        cfg.extra_tasks = column.extra_configs() or None
        cfg.split, cfg.seed, cfg.resume, cfg.progress, cfg.plots = split, seed, True, False, False
        cfg.record_every = -(-cfg.task.samples_per_position // 4)  # a kill loses a quarter of a method at most
        cfg.methods.baseline, cfg.methods.uniform = baseline, list(uniform)
        cfg.methods.factors_files = [str(f) for f in files]
    return cfg
