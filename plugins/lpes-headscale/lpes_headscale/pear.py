"""PEAR (Tan et al., arXiv 2409.19745) as an lpes_framework scheme: ``pos=pear pos.heads=[[layer, head], ...]``.

PEAR finds the "suppression" heads with a copying proxy task (``suppression``: which heads to list) and learns
one scalar on each of their outputs, every other head and all weights left as they are. Here a PEAR schedule is
a head-scale schedule (one scale per head and layer, the layout ``pos=headscale`` reads and folds) in which only
the listed heads' scales act: every other head is held at 1 in the hooks and in the fold, so its gene takes no
gradient and changes nothing. Searched with ``optimizer=gradient`` like the head scales, on any task mixture.
"""

from __future__ import annotations

import torch

from lpes_framework.errors import LpesError

from .scheme import HeadScale


def listed_heads(heads) -> tuple[tuple[int, int], ...]:
    """``heads`` as sorted (layer, head) pairs, refused in one line unless a non-empty list of distinct pairs of
    non-negative whole numbers."""
    def whole(x) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and x >= 0

    if not isinstance(heads, (list, tuple)) or not heads or \
            not all(isinstance(p, (list, tuple)) and len(p) == 2 and all(map(whole, p)) for p in heads):
        raise LpesError(f"pear: heads must be a non-empty list of [layer, head] pairs of whole numbers from 0 (the "
                        f"suppression finder's list: python -m lpes_headscale.suppression), got {heads!r}")
    pairs = sorted({(int(layer), int(head)) for layer, head in heads})
    if len(pairs) != len(heads):
        raise LpesError(f"pear: heads lists a head twice: {heads!r}")
    return tuple(pairs)


class Pear(HeadScale):
    def __init__(self, *, heads, base: dict | None = None):
        super().__init__(per="head", base=base)
        self.heads = listed_heads(heads)
        self._masks: dict[tuple[int, int], torch.Tensor] = {}

    def check_model(self, info) -> None:
        super().check_model(info)
        self._check_fits(info.n_layers, info.n_heads)

    def _check_fits(self, layers: int, n_heads: int) -> None:
        outside = [list(p) for p in self.heads if p[0] >= layers or p[1] >= n_heads]
        if outside:
            raise LpesError(f"pear: heads {outside} are not in this model ({layers} layers of {n_heads} heads); "
                            "the list was found on another model")

    def _listed(self, shape: tuple[int, int]) -> torch.Tensor:
        """Which (layer, head) is listed, built once per table shape: the hooks ask at every forward."""
        if shape not in self._masks:
            self._check_fits(*shape)
            listed = torch.zeros(shape, dtype=torch.bool)
            for layer, head in self.heads:
                listed[layer, head] = True
            self._masks[shape] = listed
        return self._masks[shape]

    def head_scales(self, table: torch.Tensor) -> torch.Tensor:
        """The listed heads' scales; every other head's is 1 whatever its gene holds."""
        scales = super().head_scales(table)
        return torch.where(self._listed(tuple(scales.shape)), scales, torch.ones_like(scales))
