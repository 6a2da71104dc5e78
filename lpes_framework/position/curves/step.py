"""Step curve: ``steps`` genes, each held over an equal block of consecutive layers."""

from __future__ import annotations

import torch

from ...registry import CURVES
from .base import Curve


def blocks(control: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    block = torch.clamp((t * len(control)).long(), max=len(control) - 1)
    return control[block]


@CURVES.plugin
class StepCurve(Curve):
    def __init__(self, *, n_layers: int, steps: int = 4, low: float = 1.0, high: float = 2.0, monotone=None,
                 bands: int = 1):
        self.steps = steps
        super().__init__(n_layers=n_layers, low=low, high=high, monotone=monotone, bands=bands)

    def gene_count(self, n_layers: int) -> int:
        return self.steps

    def shape(self, genes, t):
        return blocks(genes, t)
