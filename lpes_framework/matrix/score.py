"""A matrix scored, or read back: each column an evaluate folder under the matrix's folder, every method's rows
reused by key (a column grows across runs and sessions, and a killed scoring resumes where it stopped)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from ..evaluate.methods import file_method_names
from ..evaluate.run import run_evaluate, scored_rows
from .cells import column_cells
from .columns import Column, column_config

Rows = dict[str, dict[str, list]]  # method name -> task -> rows


def column_rows(base: DictConfig, column: Column, folder: Path, *, split: str, seed: int, files=(),
                haystacks: int | None = None, uniform=(), score: bool = True) -> Rows:
    """The unpatched model's, ``uniform`` factors' and ``files``' rows on ``column``'s ``split``: scored where
    missing (``score``), else only what ``folder`` holds for all of the column's haystacks."""
    cfg = column_config(base, column, split=split, seed=seed, haystacks=haystacks, files=files, uniform=uniform)
    return run_evaluate(cfg, folder)["rows"] if score else scored_rows(cfg, folder)


def labelled(files) -> dict[str, str]:
    """Row label (a factors file as given) -> the method name evaluate scores it under."""
    return {str(f): name for f, name in file_method_names([str(f) for f in files]).items()}


def file_cells(rows: Rows, files) -> dict:
    """Each factors file's cell (keyed as given) in one column's ``rows``."""
    return column_cells(rows, labelled(files))
