"""Optimizers: ask/tell search algorithms with checkpointable state, one module per optimizer (see ``base``)."""

from ..errors import LpesError
from ..registry import OPTIMIZERS
from .base import Optimizer, genome_key


# a budget past this is a typo (10^11 generations, a population of 10^11): refused before the model loads,
# not a run that never ends or fails allocating its first generation once the weights are in
MAX_PLANNED = 1_000_000


def build_optimizer(cfg, curve, seed: int) -> Optimizer:
    optimizer = OPTIMIZERS.build({"seed": seed} | dict(cfg), curve)
    draws = optimizer.minibatch_draws() if hasattr(optimizer, "minibatch_draws") else 0
    for what, count in (("candidate scorings", optimizer.planned() or 0), ("minibatch draws", draws)):
        if count > MAX_PLANNED:
            raise LpesError(f"optimizer '{optimizer.name}': a full run asks for {count} {what}, more than "
                            f"{MAX_PLANNED}; lower its population, generations, steps or contexts_per_step")
    return optimizer


__all__ = ["OPTIMIZERS", "Optimizer", "build_optimizer", "genome_key"]
