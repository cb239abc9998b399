"""The no-data answers: what a population without any data gives, from public inputs only.

A release is worth reading where it says more than these. They are the planner's baselines, the
shapes the shrinkage estimators shrink toward (:mod:`geoldp.shrinkage`) and the no-data rows of the
answers: P's zone shares (one visit per trajectory, spread like the public points), and the expected
visits when every point of a trajectory is a uniform draw from P, for public (or assumed) lengths.
Nothing here reads private data.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["no_data_shapes", "uniform_answer", "uniform_visits"]


def uniform_answer(zone_of_point: np.ndarray, n_zones: int, *, od: bool) -> np.ndarray:
    """The uniform no-data answer's shape: zone shares of P (their outer product for OD), summing to ≤ 1."""
    share = np.bincount(zone_of_point, minlength=n_zones + 1)[:n_zones].astype(np.float64)
    share /= max(zone_of_point.shape[0], 1)
    return np.outer(share, share).reshape(-1) if od else share


def uniform_visits(zone_of_point: np.ndarray, n_zones: int, lengths: Any) -> np.ndarray:
    """Expected number of trajectories visiting each zone when every point is a uniform draw from P.

    A trajectory of length L whose points are independent uniform draws from P visits a zone of share s
    with probability 1 − (1 − s)^L, so the no-data answer to "how many trajectories visit each zone" is
    Σ_i 1 − (1 − s)^{L_i} over the (public) lengths: about L·s·n for small shares, not the s·n of one
    point per trajectory.

    Parameters
    ----------
    zone_of_point : ndarray of int
        Zone position of every public point (``n_zones`` = outside).
    n_zones : int
    lengths : array_like of int
        The trajectories' lengths (public, or the assumed public distribution's draws), one per trajectory.

    Returns
    -------
    ndarray of float, shape (n_zones,)
    """
    share = uniform_answer(zone_of_point, n_zones, od=False)
    values, counts = np.unique(np.asarray(lengths, dtype=np.int64), return_counts=True)
    miss = (1.0 - share)[:, None] ** values[None, :]  # zone × distinct length
    return (counts[None, :] * (1.0 - miss)).sum(axis=1)


def no_data_shapes(zone_of_point: np.ndarray, n_zones: int, lengths: Any, *, od: bool) -> np.ndarray:
    """The no-data answers' shapes a report's estimate is shrunk toward (rows; public inputs only).

    For OD flows the outer product of P's zone shares; for zone questions P's zone shares (one visit per
    trajectory) and :func:`uniform_visits` over the public ``lengths`` (every point a uniform draw from P).

    Examples
    --------
    >>> no_data_shapes(np.array([0, 0, 1, 2]), 2, [1, 3], od=False).round(3).tolist()
    [[0.5, 0.25], [1.375, 0.828]]
    """
    share = uniform_answer(zone_of_point, n_zones, od=od)
    if od:
        return share[None, :]
    return np.vstack([share, uniform_visits(zone_of_point, n_zones, lengths)])


def length_pool(lengths: Any, caller: str) -> np.ndarray:
    """The checked public lengths (an int, or a non-empty list of ints ≥ 1) as an int64 array."""
    pool: np.ndarray
    if isinstance(lengths, int | np.integer) and not isinstance(lengths, bool):
        pool = np.array([int(lengths)], dtype=np.int64)
    else:
        try:
            pool = np.asarray(lengths)
        except Exception:  # pragma: no cover - numpy raises many kinds
            pool = np.zeros(0)
        if pool.ndim != 1 or pool.size == 0 or pool.dtype.kind not in "iu":
            raise TypeError(
                f"The 'lengths' parameter of {caller} must be an int or a non-empty list of ints (trajectory "
                "lengths to draw from)."
            )
    if pool.min() < 1:
        raise ValueError(f"The 'lengths' of {caller} must be >= 1.")
    return pool.astype(np.int64)
