"""The search stage: the loop every optimizer runs in, its resume, the evaluation cache, the held-out
choice and test, and the outputs. ``python -m lpes_framework`` (``lpes search``) is its command-line face."""

from .stage import Search, run_search

__all__ = ["Search", "run_search"]
