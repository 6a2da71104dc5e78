"""Optimizers: ask/tell search algorithms with checkpointable state, one module per optimizer (see ``base``)."""

from ..registry import OPTIMIZERS
from .base import Optimizer, genome_key


def build_optimizer(cfg, curve, seed: int) -> Optimizer:
    return OPTIMIZERS.build({"seed": seed} | dict(cfg), curve)


__all__ = ["OPTIMIZERS", "Optimizer", "build_optimizer", "genome_key"]
