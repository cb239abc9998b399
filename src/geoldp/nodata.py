"""The no-data answers and populations: what a population without any data gives, from public inputs only.

A release is worth reading where it says more than these. They are the planner's baselines, the
shapes the shrinkage estimators shrink toward (:mod:`geoldp.shrinkage`) and the no-data rows of the
answers: P's zone shares (one visit per trajectory, spread like the public points), and the expected
visits when every point of a trajectory is a uniform draw from P, for public (or assumed) lengths.
The planner's no-data populations are random walks over P whose steps follow a published law of
human displacements (:func:`random_walks`). Nothing here reads private data.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geoldp._core.geo import haversine_array_m

__all__ = ["no_data_answer", "no_data_shapes"]

#: The no-data answers, by name (:func:`no_data_answer`): the planner's baselines, which
#: :class:`geoldp.designs.BaselineDesign` runs.
NO_DATA_ANSWERS = ("uniform", "constant", "shares")


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


def no_data_answer(
    kind: str,
    zone_of_point: np.ndarray,
    n_zones: int,
    n: int,
    *,
    od: bool,
    lengths: Any = None,
    median: int = -1,
) -> np.ndarray:
    """The no-data answer ``kind`` for ``n`` trajectories, from public inputs only.

    ``"uniform"``: every point of a trajectory a uniform draw from P (zone visits over the public
    ``lengths``, each equally likely; OD flows: the outer product of P's zone shares); ``"constant"``:
    every trajectory at P's 1-median, the point ``median``; ``"shares"`` (zone questions only): one visit
    per trajectory, spread over the zones like P's points.

    Parameters
    ----------
    kind : {"uniform", "constant", "shares"}
    zone_of_point : ndarray of int
        Zone position of every public point (``n_zones`` = outside).
    n_zones : int
    n : int
        The number of trajectories the answer is for.
    od : bool
        OD flows (``n_zones²`` ordered pairs, origin-major) instead of zone visits.
    lengths : array_like of int, optional
        Trajectory lengths to average over (``"uniform"`` zone visits only).
    median : int, optional
        P's 1-median, a position in P (``"constant"`` only).

    Returns
    -------
    ndarray of float

    Examples
    --------
    >>> no_data_answer("uniform", np.array([0, 0, 1, 2]), 2, 100, od=False, lengths=[1, 3]).round(1).tolist()
    [68.8, 41.4]
    >>> no_data_answer("constant", np.array([0, 0, 1, 2]), 2, 100, od=True, median=2).tolist()
    [0.0, 0.0, 0.0, 100.0]
    """
    k = n_zones
    if kind == "uniform":
        if od:
            return uniform_answer(zone_of_point, k, od=True) * n
        pool = np.asarray(lengths, dtype=np.int64).reshape(-1)
        return uniform_visits(zone_of_point, k, pool) * (n / max(pool.size, 1))
    if kind == "constant":
        out = np.zeros(k * k if od else k)
        zm = int(zone_of_point[median])
        if zm < k:
            out[zm * k + zm if od else zm] = n
        return out
    if kind == "shares" and not od:
        return uniform_answer(zone_of_point, k, od=False) * n
    raise ValueError(f"No no-data answer {kind!r} for {'OD flows' if od else 'zone visits'}.")


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


def _neighbours(ps: Any, k: int) -> np.ndarray:
    """The k nearest public points of every public point (P's own k-d tree; O(|P| log |P|))."""
    k = min(k, ps.size)
    _, idx = ps.tree.query(ps.xyz, k=k)
    return np.asarray(idx, dtype=np.int64).reshape(ps.size, k)


#: Step law of the simulated walks, taken from a published study of human displacements and never fitted
#: to any data set of this project: the chance of stepping to a public point at distance d is proportional to
#: (d + 1.5 km)^-1.75 (Gonzalez, Hidalgo and Barabási, "Understanding individual human mobility patterns",
#: Nature 453, 2008: Δr0 = 1.5 km, β = 1.75).
STEP_R0_KM = 1.5
STEP_BETA = 1.75
#: Near candidates (nearest public points) and far candidates (uniform over P) of each step; the far ones
#: stand for the rest of P (importance weights), so a step costs O(1) whatever |P|.
NEAR = 8
FAR = 56


def random_walks(
    ps: Any,
    lengths: np.ndarray,
    rng: np.random.Generator,
    *,
    population: str = "spread",
    hubs: int = 10,
    starts: np.ndarray | None = None,
    step_scale: float = 1.0,
) -> list[np.ndarray]:
    """Random walks over P whose steps follow the published displacement law (:data:`STEP_BETA`).

    Each step goes to one of the current point's 8 nearest points or to one of 56 uniform draws from P
    (which stand for the rest of P), with probability proportional to ``(d / s + 1.5 km)^-1.75``, ``s`` the
    ``step_scale`` (1: the published law; below 1, shorter steps: trips that stay near their start).

    ``"hubs"``: every walk starts at one of a few random public points (Zipf weights), a concentrated
    population; ``"spread"``: at a uniformly random public point, a population spread like P;
    ``"mixed"``: half of each. ``starts`` (one public point per walk, e.g. drawn from a pilot's visited
    cells) replaces the uniform starts: ``"spread"`` starts there, ``"hubs"`` at a few of them.
    """
    size = ps.size
    nb = _neighbours(ps, NEAR + 1)[:, 1:] if size > 1 else np.zeros((size, 0), dtype=np.int64)
    given = starts
    # with a pilot, the walks start where its visited cells say (hubs among those starts), else anywhere in P
    hub = rng.choice(size, size=min(hubs, size), replace=False) if given is None else given[:hubs]
    w = 1.0 / np.arange(1, hub.shape[0] + 1)
    starts = hub[rng.choice(hub.shape[0], size=lengths.shape[0], p=w / w.sum())]
    spread = rng.integers(0, size, size=lengths.shape[0]) if given is None else given
    if population == "spread":
        starts = spread
    elif population == "mixed":
        starts = np.where(np.arange(lengths.shape[0]) % 2 == 0, starts, spread)
    lon, lat = np.asarray(ps.lon), np.asarray(ps.lat)
    width = int(lengths.max())
    walk = np.empty((lengths.shape[0], width), dtype=np.int64)
    walk[:, 0] = starts
    far_weight = max(size - nb.shape[1] - 1, 0) / FAR
    for j in range(1, width):
        cur = walk[:, j - 1]
        cand = np.concatenate([nb[cur], rng.integers(0, size, size=(cur.shape[0], FAR))], axis=1)
        d = haversine_array_m(lon[cur][:, None], lat[cur][:, None], lon[cand], lat[cand]) / 1000.0
        wts = np.power(np.asarray(d) / step_scale + STEP_R0_KM, -STEP_BETA)
        wts[:, nb.shape[1] :] *= far_weight
        cdf = np.cumsum(wts, axis=1)
        pick = (cdf < rng.random((cur.shape[0], 1)) * cdf[:, -1:]).sum(axis=1)
        walk[:, j] = cand[np.arange(cur.shape[0]), np.minimum(pick, cand.shape[1] - 1)]
    return [walk[i, : int(m)].copy() for i, m in enumerate(lengths)]
