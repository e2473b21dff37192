"""Discounted sums of rewards, the one recursion every return in the product uses."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def discounted_sums(values: Sequence[float] | np.ndarray, gamma: float) -> np.ndarray:
    """``G_t = sum_{k>=t} gamma^(k-t) x_k`` along axis 0 of ``values`` (``[T, ...]``), float64:
    the recursion ``G_t = x_t + gamma G_{t+1}`` of one whole episode, run backwards."""
    array = np.asarray(values, dtype=np.float64)
    if not len(array):
        return array
    # Imported here: scipy.signal takes about a second to load, which every program that
    # merely imports the formulations (simulate.py) would pay.
    import scipy.signal

    return scipy.signal.lfilter([1.0], [1.0, -gamma], array[::-1], axis=0)[::-1]
