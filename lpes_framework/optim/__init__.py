"""Optimizer registry: ask/tell search algorithms with checkpointable state."""

from . import ga, nsga2, random_search  # noqa: F401  (register the built-in optimizers)
from .base import OPTIMIZERS, Optimizer, Outcome, genome_key


def build_optimizer(cfg, curve, seed: int) -> Optimizer:
    return OPTIMIZERS.build({"seed": seed} | dict(cfg), curve)


__all__ = ["OPTIMIZERS", "Optimizer", "Outcome", "build_optimizer", "genome_key"]
