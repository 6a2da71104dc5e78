"""The evaluate stage: methods compared side by side on a split (``run``), the methods and their pairs
(``methods``), an evaluate folder's rows (``rows``)."""

from .methods import file_method_names
from .rows import logged_rows
from .run import run_evaluate

__all__ = ["file_method_names", "logged_rows", "run_evaluate"]
