"""Tasks: deterministic sample generators labelled by gold position, one module per task (see ``base``)."""

from ..registry import TASKS
from ._haystack import FILLER
from .base import SPLITS, Encoded, Sample, Task

__all__ = ["FILLER", "SPLITS", "TASKS", "Encoded", "Sample", "Task"]
