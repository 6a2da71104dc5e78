"""The transfer matrix as a library: columns (tasks x lengths x haystacks) from config, each scored on a named
split and seed, rows reused by key; cells with paired intervals, a row's verdict, the table, Markdown and heat
map."""

from .cells import Cell, Verdict, column_cells, column_task, verdict
from .columns import Column, column_config, read_columns
from .score import column_rows, file_cells, labelled

__all__ = ["Cell", "Column", "Verdict", "column_cells", "column_task", "column_config", "column_rows", "file_cells", "labelled",
           "read_columns", "verdict"]
