"""No-data baselines: uniform draws from P and the constant at P's 1-median, from public data only."""

from __future__ import annotations

from typing import Any

import numpy as np

from geoldp._core.frames import TrajectoryArrays, as_pointset
from geoldp._core.geo import haversine_array_m
from geoldp._core.pointset import PointSet
from geoldp.metrics._pairing import per_trajectory_mean


def one_median(points: Any, *, exact_max: int = 5000, n_candidates: int = 64) -> int:
    """The 1-median of the public points: the point of P minimising the sum of haversine distances to P.

    The one definition is :meth:`geoldp.PointSet.one_median` (exact up to ``exact_max`` points, a
    neighbourhood search beyond); this accepts any form of P.

    Parameters
    ----------
    points : PointSet, GeoDataFrame of Points or (m, 2) array of (lon, lat)
        The public point set P.
    exact_max, n_candidates : int
        As in :meth:`geoldp.PointSet.one_median`.

    Returns
    -------
    int
        Position of the 1-median in P.

    Examples
    --------
    >>> import numpy as np
    >>> one_median(np.array([[0.0, 0.0], [0.01, 0.0], [0.02, 0.0], [0.03, 0.0], [0.5, 0.0]]))
    2
    """
    return as_pointset(points, caller="one_median").one_median(exact_max=exact_max, n_candidates=n_candidates)


BASELINES = ("uniform", "constant")


def baseline_release(kind: str, points: Any, lengths: Any, *, rng: Any = None) -> list[np.ndarray]:
    """A no-data release: index arrays into P with the given lengths, computed from public data only.

    - ``"uniform"``: every point an independent uniform draw from P (the ε = 0 mechanism);
    - ``"constant"``: every point P's 1-median (:func:`one_median`), the best single public point for NE.

    Neither reads a private location: only P, the trajectory lengths (which TP and ATP release too) and
    ``rng``. A mechanism whose utility does not beat these rows has not learned anything about the person.

    Parameters
    ----------
    kind : {"uniform", "constant"}
        Which baseline.
    points : PointSet, GeoDataFrame of Points or (m, 2) array of (lon, lat)
        The public point set P.
    lengths : array_like of int
        Number of points of every trajectory (>= 1).
    rng : None, int, Generator, ...
        Randomness of the uniform draw (see :func:`geoldp.perturb`); unused for ``"constant"``.

    Returns
    -------
    list of numpy.ndarray of int64

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.01, 0.0], [0.02, 0.0]])
    >>> [t.tolist() for t in baseline_release("constant", P, [2, 1])]
    [[1, 1], [1]]
    """
    caller = "baseline_release"
    if kind not in BASELINES:
        raise ValueError(f"Got kind={kind!r}; `kind` of {caller} must be one of {BASELINES}.")
    pts = as_pointset(points, caller=caller)
    n = np.asarray(lengths)
    if n.ndim != 1 or n.dtype.kind not in "iu" or (n.size and n.min() < 1):
        raise ValueError(f"The 'lengths' parameter of {caller} must be a 1-D array of ints >= 1.")
    total = int(n.sum())
    if kind == "constant":
        flat = np.full(total, one_median(pts), dtype=np.int64)
    else:
        from geoldp._core.randomness import resolve_rng

        flat = np.asarray(resolve_rng(rng).integers(pts.size, size=total), dtype=np.int64).reshape(total)
    return np.split(flat, np.cumsum(n)[:-1]) if n.size else []


def uniform_ne_prq(to: TrajectoryArrays, pts: PointSet, deltas: np.ndarray) -> tuple[float, np.ndarray]:
    """Exact E[NE] and E[PRQ(δ)] when every point is a uniform draw from P (O(N · |P|), in blocks)."""
    # the expectation depends on the location only: compute it once per distinct original location
    xy, inv = np.unique(np.column_stack([to.lon, to.lat]), axis=0, return_inverse=True)
    inv = inv.ravel()
    n = xy.shape[0]
    ne_u = np.empty(n)
    prq_u = np.empty((n, deltas.size))
    block = max(1, 2_000_000 // pts.size)
    for i0 in range(0, n, block):
        d = haversine_array_m(xy[i0 : i0 + block, 0, None], xy[i0 : i0 + block, 1, None], pts.lon, pts.lat)
        ne_u[i0 : i0 + block] = d.mean(axis=1) / 1000.0
        d.sort(axis=1)
        prq_u[i0 : i0 + block] = np.stack(
            [np.sum(d <= dl * 1000.0, axis=1) / pts.size for dl in deltas], axis=1
        )
    ne_v, prq_v = ne_u[inv], prq_u[inv]
    return float(np.mean(per_trajectory_mean(ne_v, to))), per_trajectory_mean(prq_v, to).mean(axis=0)
