"""Curves: a genome (a few genes) -> one RoPE factor per decoder layer.

All curves read their genes as factor values and are evaluated at the normalised layer index
t_l = l / (L - 1). Every curve keeps its output inside [low, high] because each is a convex
combination or a shape-preserving interpolation of its genes, and gene values are clipped to
[low, high]; ``monotone`` sorts the genes, which makes every curve here monotone in the layer index.

- ``bezier``:   B(t) = sum_k C(n, k) (1 - t)^(n - k) t^k P_k  with n + 1 = control_points (cubic: 4)
- ``spline``:   PCHIP (monotone cubic Hermite) through the genes at equally spaced t
- ``linear``:   straight line from the first gene to the second
- ``step``:     ``steps`` genes, each held over an equal block of consecutive layers
- ``constant``: one gene for every layer (the uniform-scaling baseline)
- ``free``:     one gene per layer

``shape`` is written once, in torch operations on float64 tensors: ``factors`` (numpy in, numpy out,
what the GA and every file use) and ``factors_tensor`` (a traced genome in, traced factors out, what the
gradient optimizer differentiates) run the same code. Each curve is one module of this package
(``@CURVES.plugin`` on a ``Curve`` subclass); this module holds what they share.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ...errors import LpesError
from ..schemes import FACTOR_RANGE, straight_through
from ...registry import CURVES

_MONOTONE = (None, "increasing", "decreasing")


def layer_grid(n_layers: int) -> np.ndarray:
    return np.linspace(0.0, 1.0, n_layers) if n_layers > 1 else np.zeros(1)


def uniform_scaling(genome: Sequence[float]) -> bool:
    """A genome that draws one factor other than 1 in every layer (equal genes give that constant exactly):
    the uniform baselines a search evaluates next to its curves."""
    return len(set(genome)) == 1 and genome[0] != 1.0


MAX_GENES = 100_000


class Curve:
    """Base: genes in [low, high]; subclasses define ``gene_count(n_layers)`` and ``shape(genes, t)``
    (torch float64 tensors in and out)."""

    name = "curve"  # set by the registry

    def __init__(self, *, n_layers: int, low: float = 1.0, high: float = 2.0, monotone=None, bands: int = 1):
        if n_layers < 1:
            raise LpesError(f"curve needs at least one layer, got {n_layers}")
        if isinstance(bands, bool) or not isinstance(bands, int) or bands < 1:
            raise LpesError(f"curve bands must be a positive whole number, got {bands!r}")
        if not (np.isfinite(low) and np.isfinite(high)) or low <= 0 or high < low:
            raise LpesError(f"curve bounds must satisfy 0 < low <= high, got low={low}, high={high}")
        if not (FACTOR_RANGE[0] <= low and high <= FACTOR_RANGE[1]):
            # checked here, before the model loads, not by the first candidate's forward after the baseline
            raise LpesError(f"curve bounds must lie in [{FACTOR_RANGE[0]:g}, {FACTOR_RANGE[1]:g}] (the factors a scheme "
                            f"accepts), got low={low}, high={high}")
        if monotone not in _MONOTONE:
            raise LpesError(f"curve monotone must be null, 'increasing' or 'decreasing', got {monotone!r}")
        per_band = self.gene_count(n_layers)
        if per_band < 1:
            raise LpesError(f"{self.name}: needs at least one gene, got {per_band}")
        if per_band > MAX_GENES:  # a typo: 10^11 control points failed allocating the first genome, past the model load
            raise LpesError(f"{self.name}: {per_band} genes a band, more than {MAX_GENES} (a factor per layer needs "
                            f"{n_layers})")
        # a band-wise curve is one curve per wavelength band, its genes band after band
        self.n_layers, self.n_bands, self.n_genes = n_layers, bands, per_band * bands
        self.low, self.high, self.monotone = float(low), float(high), monotone

    def gene_count(self, n_layers: int) -> int:
        raise NotImplementedError

    def shape(self, genes: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _finite(self, genome: Sequence[float]) -> np.ndarray:
        genes = np.asarray(genome, dtype=float)
        if genes.shape != (self.n_genes,):
            raise LpesError(f"{self.name} curve takes {self.n_genes} genes, got {genes.size}")
        if not np.all(np.isfinite(genes)):
            raise LpesError(f"genome has non-finite genes: {genes.tolist()}")
        return genes

    def repair(self, genome: Sequence[float]) -> np.ndarray:
        """The nearest valid genome: right length, finite, clipped to bounds, sorted if monotone."""
        genes = np.clip(self._finite(genome), self.low, self.high).reshape(self.n_bands, -1)
        if self.monotone == "increasing":
            genes = np.sort(genes, axis=1)
        elif self.monotone == "decreasing":
            genes = np.sort(genes, axis=1)[:, ::-1]
        return genes.reshape(-1)

    def checked(self, genome: Sequence[float], what: str) -> np.ndarray:
        """A genome given by a user, as it is: out-of-bounds genes are an error here, not clipped (the
        clipping in ``repair`` is for optimizers' mutations)."""
        genes = self._finite(genome)
        outside = [g for g in genes.tolist() if not self.low <= g <= self.high]
        if outside:
            raise LpesError(f"{what}: genes {outside} lie outside the {self.name} curve's bounds "
                            f"[{self.low}, {self.high}] (set curve.low / curve.high)")
        return genes

    def factors(self, genome: Sequence[float]) -> np.ndarray:
        with torch.no_grad():
            return self.factors_tensor(torch.from_numpy(self.repair(genome).copy())).numpy()

    def factors_tensor(self, genes: torch.Tensor) -> torch.Tensor:
        """Factors of an in-bounds genome (float64 tensor; traced genes give traced factors): shape
        (n_layers,), or (n_layers, bands) for a band-wise curve."""
        columns = [self._band_factors(band) for band in genes.reshape(self.n_bands, -1).unbind()]
        return columns[0] if self.n_bands == 1 else torch.stack(columns, dim=1)

    def _band_factors(self, genes: torch.Tensor) -> torch.Tensor:
        if self.monotone is not None:
            genes = torch.sort(genes, descending=self.monotone == "decreasing").values
        shaped = torch.as_tensor(self.shape(genes, torch.from_numpy(layer_grid(self.n_layers))), dtype=torch.float64)
        # float round-off of the basis can step a hair outside the bounds; the clamp keeps the promise
        out = shaped.clamp(self.low, self.high)
        if bool(torch.all(genes == genes[0])):
            # every curve maps equal genes to that constant; computing it exactly keeps the identity
            # genome bit-identical to the unpatched model (basis sums carry float round-off), while the
            # gradient stays the curve's own (every control point moves the factors)
            out = straight_through(genes[0].detach().expand(self.n_layers).clone(), out)
        return out

    def fit(self, factors: Sequence[float]) -> np.ndarray:
        """The in-bounds genome whose factors are closest to ``factors`` in least squares (exact for the
        free curve): how a schedule found in one space is drawn in another (a Bezier fit of a free
        optimum), and where a gradient search over this curve starts from a factors file. A band-wise curve
        fits one factor per layer as the same factor in every band."""
        target = torch.tensor(np.asarray(factors, dtype=float))
        shape = (self.n_layers,) if self.n_bands == 1 else (self.n_layers, self.n_bands)
        if self.n_bands > 1 and tuple(target.shape) == (self.n_layers,):
            target = target[:, None].expand(shape)
        if tuple(target.shape) != shape:
            raise LpesError(f"{self.name}: cannot fit factors of shape {tuple(target.shape)} with a curve over "
                            f"{self.n_layers} layers and {self.n_bands} band(s)")
        mean = float(np.clip(target.mean(), self.low, self.high))
        x = torch.full((self.n_genes,), mean, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS([x], max_iter=500, tolerance_grad=1e-12, tolerance_change=1e-15,
                                line_search_fn="strong_wolfe")

        def loss():
            opt.zero_grad()
            value = ((self.factors_tensor(x.clamp(self.low, self.high)) - target) ** 2).sum()
            value.backward()
            return value

        opt.step(loss)
        return self.repair(x.detach().clamp(self.low, self.high).numpy())

    def differentiable(self) -> bool:
        """Whether ``shape`` carries a gradient (a plugin curve written in numpy does not)."""
        genes = torch.linspace(self.low, self.high, self.n_genes, dtype=torch.float64).requires_grad_(True)
        return self.factors_tensor(genes).requires_grad

    def uniform(self, value: float) -> np.ndarray:
        """The genome that gives ``value`` at every layer (identity when value == 1)."""
        if not self.low <= value <= self.high:
            raise LpesError(f"uniform factor {value} is outside the curve bounds [{self.low}, {self.high}]")
        return np.full(self.n_genes, float(value))

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return np.full(self.n_genes, self.low), np.full(self.n_genes, self.high)

    def settings(self) -> dict:
        banded = {"bands": self.n_bands} if self.n_bands > 1 else {}
        return {"name": self.name, "n_genes": self.n_genes, "low": self.low, "high": self.high,
                "monotone": self.monotone} | banded


def build_curve(cfg, n_layers: int, n_bands: int = 1) -> Curve:
    """The curve of ``cfg`` over ``n_layers``, one per wavelength band of the scheme (``scheme.n_bands``)."""
    # passed only when banded: a plugin curve written before bands existed still builds unbanded
    # ``bands`` is the curve's own option (recorded in factors files under that name)
    return CURVES.build(cfg, n_layers=n_layers, **({"bands": n_bands} if n_bands > 1 else {}))
