"""Step curve: ``steps`` genes, each held over an equal block of consecutive layers."""

from __future__ import annotations

import numpy as np

from ..registries import CURVES
from .base import Curve


def blocks(control: np.ndarray, t: np.ndarray) -> np.ndarray:
    block = np.minimum((t * len(control)).astype(int), len(control) - 1)
    return control[block]


@CURVES.plugin
class StepCurve(Curve):
    def __init__(self, *, n_layers: int, steps: int = 4, low: float = 1.0, high: float = 2.0, monotone=None):
        self.steps = steps
        super().__init__(n_layers=n_layers, low=low, high=high, monotone=monotone)

    def gene_count(self, n_layers: int) -> int:
        return self.steps

    def shape(self, genes, t):
        return blocks(genes, t)
