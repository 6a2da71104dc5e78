"""Finding the positional hidden-state channel: pure numpy on a (layers, tokens, channels) array.

The paper's criterion, in two passes over every channel:

1. Monotonic: in how many layers does a cubic fitted to the channel's (min-max normalised) values over
   the token index only rise, or only fall? A positional channel does so in many layers; the channels
   kept are those monotonic (in the majority direction) in more than a quarter of the layers.
2. Smooth: among those, the channel whose curve is smoothest in its smoothest monotonic layer (the sum of
   squared second differences of the normalised, lightly smoothed curve) is the most positional.

The first and last layers are left out of the count (the embedding and the output head shape them), and
so are the first ``skip`` tokens, where the attention sink makes every channel jump.
"""

from __future__ import annotations

import numpy as np

DEGREE = 3  # the fitted polynomial: a cubic bends enough to follow a saturating curve, not to wiggle
SMOOTHING_WINDOW = 9  # tokens of the Savitzky-Golay filter applied before the second differences


def _normalised(x: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1] along axis 0 (tokens); a constant curve becomes 0."""
    span = x.max(0) - x.min(0)
    return (x - x.min(0)) / np.where(span > 0, span, 1.0)


def monotonic_layers(hidden: np.ndarray, skip: int) -> np.ndarray:
    """(layers, channels) booleans: where the channel's fitted cubic moves one way only, in the direction
    (rising or falling) that holds in more of the counted layers."""
    layers, tokens, channels = hidden.shape
    x = np.arange(tokens - skip, dtype=np.float64)
    curves = _normalised(hidden[:, skip:, :].transpose(1, 0, 2).reshape(tokens - skip, -1).astype(np.float64))
    fitted = np.vander(x / x.max(), DEGREE + 1) @ np.polyfit(x / x.max(), curves, DEGREE)
    steps = np.diff(fitted, axis=0)
    rising = (steps >= 0).all(0).reshape(layers, channels)
    falling = (steps <= 0).all(0).reshape(layers, channels)
    counted = np.zeros(layers, dtype=bool)
    counted[2:layers - 1] = True  # as the paper: not the first two layers, not the last
    rising, falling = rising & counted[:, None], falling & counted[:, None]
    return np.where(rising.sum(0) > falling.sum(0), rising, falling)


def roughness(curve: np.ndarray) -> float:
    """Sum of squared second differences of the normalised, smoothed curve (0 for a straight line)."""
    from scipy.signal import savgol_filter

    smooth = savgol_filter(_normalised(curve), window_length=SMOOTHING_WINDOW, polyorder=3)
    return float(np.square(np.diff(smooth, n=2)).sum())


def positional_channels(hidden: np.ndarray, top_k: int = 1, skip: int = 64) -> list[int]:
    """The ``top_k`` most positional channels of ``hidden`` (layers, tokens, channels), best first: a
    channel must be monotonic in more than a quarter of the layers, then the smoothest wins. Raises
    ValueError when no channel qualifies (nothing in this model carries position that way)."""
    layers, tokens, _ = hidden.shape
    if tokens - skip < 4 * SMOOTHING_WINDOW:
        raise ValueError(f"{tokens} tokens with {skip} skipped are too few to fit the curves")
    mono = monotonic_layers(hidden, skip)
    candidates = np.flatnonzero(mono.sum(0) > layers // 4)
    if candidates.size == 0:
        raise ValueError("no channel is monotonic in the token index in more than a quarter of the layers")
    best = {int(c): min(roughness(hidden[layer, skip:, c]) for layer in np.flatnonzero(mono[:, c]))
            for c in candidates}
    return sorted(best, key=best.get)[:top_k]
