"""No-data baselines: uniform draws from P and the constant at P's 1-median, from public data only."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from geoldp._frames import TrajectoryArrays, as_pointset
from geoldp.geo import haversine_array_m
from geoldp.metrics._pairing import per_trajectory_mean
from geoldp.pointset import PointSet


def _sum_distances_m(pts: PointSet, cand: np.ndarray) -> np.ndarray:
    """Σ_p d(P_c, p) for every candidate position c, in blocks (memory O(block · |P|))."""
    out = np.empty(cand.shape[0])
    block = max(1, 2_000_000 // pts.size)
    for i0 in range(0, cand.shape[0], block):
        c = cand[i0 : i0 + block]
        out[i0 : i0 + block] = haversine_array_m(pts.lon[c, None], pts.lat[c, None], pts.lon, pts.lat).sum(
            axis=1
        )
    return out


def _spherical_weiszfeld(pts: PointSet, n_iter: int = 200) -> tuple[float, float]:
    """Geometric median on the sphere (Weiszfeld steps in the tangent plane), as (lon, lat) degrees."""
    lam, phi = np.radians(pts.lon), np.radians(pts.lat)
    u = np.column_stack([np.cos(phi) * np.cos(lam), np.cos(phi) * np.sin(lam), np.sin(phi)])
    y = u.mean(axis=0)
    y /= np.linalg.norm(y)
    for _ in range(n_iter):
        cos_t = np.clip(u @ y, -1.0, 1.0)
        theta = np.arccos(cos_t)
        far = theta > 1e-12  # a point at y adds no direction (the usual Weiszfeld guard)
        tang = u[far] - cos_t[far, None] * y  # directions towards each point, length sin θ
        step = (tang / np.sin(theta[far])[:, None]).sum(axis=0) / np.sum(1.0 / theta[far])
        s = float(np.linalg.norm(step))
        if s < 1e-15:
            break
        y = math.cos(s) * y + math.sin(s) * step / s
        y /= np.linalg.norm(y)
    return math.degrees(math.atan2(y[1], y[0])), math.degrees(math.asin(max(-1.0, min(1.0, y[2]))))


def one_median(points: Any, *, exact_max: int = 5000, n_candidates: int = 64) -> int:
    """The 1-median of the public points: the point of P minimising the sum of haversine distances to P.

    .. math:: \\operatorname{argmin}_{q \\in P} \\sum_{p \\in P} d(q, p)

    Ties go to the lowest position. It is the best constant release for NE when the originals are spread
    like P, and it uses no private data.

    - ``|P| <= exact_max``: exact, by summing the distances in blocks (time O(|P|²), memory O(|P|)).
    - larger P: the geometric median on the sphere is found by Weiszfeld's algorithm in the tangent
      plane; the ``n_candidates`` public points nearest to it are evaluated exactly, then a local search
      moves to the best of the ``n_candidates`` points nearest to the current best until none improves
      (time O(n_candidates · |P|) per step). The result is exact whenever the discrete 1-median is among
      those neighbours, which is the case for points spread over a city (the sum of distances is convex
      and the discrete optimum lies next to the continuous one); it is a local optimum otherwise.

    Parameters
    ----------
    points : PointSet, GeoDataFrame of Points or (m, 2) array of (lon, lat)
        The public point set P.
    exact_max : int, default 5000
        Largest |P| solved exactly.
    n_candidates : int, default 64
        Size of the neighbourhoods of the large-P search.

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
    caller = "one_median"
    for nm, val, lo in (("exact_max", exact_max, 0), ("n_candidates", n_candidates, 1)):
        if isinstance(val, bool) or not isinstance(val, numbers.Integral) or val < lo:
            raise ValueError(f"The '{nm}' parameter of {caller} must be an int >= {lo}. Got {val!r}.")
    pts = as_pointset(points, caller=caller)
    m = pts.size
    if m <= exact_max:
        return int(np.argmin(_sum_distances_m(pts, np.arange(m))))
    k = min(int(n_candidates), m)

    def neighbours(lon: float, lat: float) -> np.ndarray:
        d = haversine_array_m(lon, lat, pts.lon, pts.lat)
        return np.sort(np.argpartition(d, k - 1)[:k])

    lon, lat = _spherical_weiszfeld(pts)
    cand = neighbours(lon, lat)
    sums = _sum_distances_m(pts, cand)
    best, best_sum = int(cand[np.argmin(sums)]), float(sums.min())
    while True:
        cand = neighbours(float(pts.lon[best]), float(pts.lat[best]))
        sums = _sum_distances_m(pts, cand)
        j = int(np.argmin(sums))
        better = sums[j] < best_sum or (sums[j] == best_sum and cand[j] < best)
        if not better:
            return best
        best, best_sum = int(cand[j]), float(sums[j])


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
        from geoldp._random import resolve_rng

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
