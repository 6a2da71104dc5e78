"""Task registry: deterministic sample generators, labelled by gold position."""

from . import kv_retrieval, mdqa, needles, perplexity  # noqa: F401  (register the built-in tasks)
from .base import SPLITS, TASKS, Encoded, Sample, Task

__all__ = ["SPLITS", "TASKS", "Encoded", "Sample", "Task"]
