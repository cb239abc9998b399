"""Utility metrics comparing original and perturbed trajectories.

Every function takes ``(original, perturbed)`` in that order. Each argument is either a GeoDataFrame /
GeoSeries of LineStrings in any CRS (one row per trajectory; vertices are reprojected to WGS84 and a Point
counts as a length-1 trajectory), or a sequence of integer index arrays into a public point set passed as
``points=``. Rows are matched **by position**: both inputs must have the same number of rows and, for the
point-wise metrics, the same number of vertices in every row; otherwise a ``ValueError`` names the first
offending row.

Distances are great-circle (haversine) distances on a sphere of radius 6371 km (ALGORITHM §2.1) and are
reported in **km**.

| function | formula | better |
|---|---|---|
| :func:`normalized_error` | NE = (1/|T|) Σ_τ (1/|τ|) Σ_i d(x_i, x̂_i) | lower |
| :func:`preservation_range_query` | PRQ(δ) = (1/|T|) Σ_τ (1/|τ|) Σ_i 1[d(x_i, x̂_i) ≤ δ] | higher |
| :func:`range_query_error` | RE(R) = |ĉ(R) − c(R)| / max(c(R), b) | lower |
| :func:`hotspot_preservation` | ACD, Kendall τ, overlap of the top-k visited points | lower/higher/higher |
| :func:`length_error` | JSD of the trajectory-length histograms | lower |
| :func:`diameter_error` | JSD of the trajectory-diameter histograms | lower |

:func:`evaluate` returns all of them as one tidy table.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import pandas as pd

from geoldp._frames import TrajectoryArrays, as_pointset, as_regions, trajectory_arrays
from geoldp._validation import check_max_km
from geoldp.geo import haversine_m
from geoldp.pointset import PointSet
from geoldp.queries import check_how, distinct_visits, range_counts


def _haversine_m(lon1: Any, lat1: Any, lon2: Any, lat2: Any) -> np.ndarray:
    """Haversine distance in metres between (lon, lat) degree arrays, as a float64 array."""
    return np.asarray(haversine_m(lon1, lat1, lon2, lat2), dtype=np.float64)


__all__ = [
    "diameter_error",
    "evaluate",
    "hotspot_preservation",
    "length_error",
    "normalized_error",
    "preservation_range_query",
    "range_query_error",
]


# --------------------------------------------------------------------------------------------------
# pairing
# --------------------------------------------------------------------------------------------------


def _pair(
    original: Any, perturbed: Any, points: Any, *, caller: str, pointwise: bool = True
) -> tuple[TrajectoryArrays, TrajectoryArrays, PointSet | None]:
    pts = as_pointset(points, caller=caller) if points is not None else None
    to = trajectory_arrays(original, pts, name="original", caller=caller)
    tp = trajectory_arrays(perturbed, pts, name="perturbed", caller=caller)
    if to.n_traj != tp.n_traj:
        raise ValueError(
            f"{caller}: 'original' has {to.n_traj} trajectories and 'perturbed' has {tp.n_traj}; rows are "
            "matched by position, so both must have the same number of rows."
        )
    if to.n_traj == 0:
        raise ValueError(f"{caller}: 'original' and 'perturbed' must contain at least one trajectory.")
    if pointwise:
        diff = np.flatnonzero(to.lengths != tp.lengths)
        if diff.size:
            r = int(diff[0])
            raise ValueError(
                f"{caller}: row {r} has {int(to.lengths[r])} points in 'original' and "
                f"{int(tp.lengths[r])} in "
                "'perturbed'; rows are matched by position and must have the same number of points."
            )
    return to, tp, pts


def _point_distances_m(to: TrajectoryArrays, tp: TrajectoryArrays) -> np.ndarray:
    return _haversine_m(to.lon, to.lat, tp.lon, tp.lat)


def _per_trajectory_mean(values: np.ndarray, tr: TrajectoryArrays) -> np.ndarray:
    """Mean of a flat per-vertex array (N,) or (N, k) within each trajectory."""
    sums = np.add.reduceat(values, tr.offsets[:-1], axis=0)
    lengths = tr.lengths.astype(np.float64)
    return sums / (lengths if values.ndim == 1 else lengths[:, None])


# --------------------------------------------------------------------------------------------------
# NE and PRQ
# --------------------------------------------------------------------------------------------------


def normalized_error(original: Any, perturbed: Any, *, points: Any = None) -> float:
    """Normalised error (NE) in km: the mean over trajectories of the mean point displacement.

    .. math:: NE = \\frac{1}{|T|} \\sum_{\\tau \\in T} \\frac{1}{|\\tau|}
              \\sum_{i=1}^{|\\tau|} d(x_i, \\hat x_i)

    with d the haversine distance in km (ALGORITHM §13.2). Lower is better; 0 for identical inputs.

    Parameters
    ----------
    original, perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories matched by position (same number of rows and of points per row).
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index-array input.

    Returns
    -------
    float
        NE in km.

    Raises
    ------
    ValueError
        If the row counts or the number of points of a row differ.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.0, 1.0]])          # 1 degree of latitude apart: 111.19 km
    >>> round(normalized_error([[0, 0], [1]], [[0, 1], [1]], points=P), 3)   # (55.597 + 0) / 2
    27.799
    """
    to, tp, _ = _pair(original, perturbed, points, caller="normalized_error")
    d = _point_distances_m(to, tp) / 1000.0
    return float(np.mean(_per_trajectory_mean(d, to)))


normalised_error = normalized_error


def _check_deltas(delta_km: Any, caller: str) -> tuple[np.ndarray, bool]:
    arr = np.asarray(delta_km, dtype=np.float64)
    scalar = arr.ndim == 0
    arr = np.atleast_1d(arr)
    if arr.ndim != 1 or arr.size == 0 or not np.all((arr >= 0) & np.isfinite(arr)):
        raise ValueError(
            f"The 'delta_km' parameter of {caller} must be a float or a non-empty list of floats in "
            "[0, inf). "
            f"Got {delta_km!r} instead."
        )
    return arr, scalar


def preservation_range_query(
    original: Any, perturbed: Any, delta_km: Any, *, points: Any = None
) -> float | np.ndarray:
    """Preservation range query PRQ(δ): mean share of points displaced by at most δ km.

    .. math:: PRQ(\\delta) = \\frac{1}{|T|} \\sum_{\\tau \\in T} \\frac{1}{|\\tau|}
              \\sum_{i=1}^{|\\tau|} 1[d(x_i, \\hat x_i) \\le \\delta]

    (ALGORITHM §13.2). Higher is better; 1 for identical inputs.

    Parameters
    ----------
    original, perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories matched by position (same number of rows and of points per row).
    delta_km : float or sequence of float
        Threshold(s) δ in km.
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index-array input.

    Returns
    -------
    float or numpy.ndarray
        PRQ for a scalar δ; an array of the same length for a sequence of δ.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.0, 1.0]])          # 111.19 km apart
    >>> preservation_range_query([[0, 0], [1]], [[0, 1], [1]], [1.0, 200.0], points=P).tolist()
    [0.75, 1.0]
    """
    caller = "preservation_range_query"
    deltas, scalar = _check_deltas(delta_km, caller)
    to, tp, _ = _pair(original, perturbed, points, caller=caller)
    d = _point_distances_m(to, tp)
    hit = (d[:, None] <= deltas[None, :] * 1000.0).astype(np.float64)
    prq = _per_trajectory_mean(hit, to).mean(axis=0)
    return float(prq[0]) if scalar else prq


# --------------------------------------------------------------------------------------------------
# range queries
# --------------------------------------------------------------------------------------------------


def _sanity_bound(sanity_bound: Any, n_traj: int, caller: str) -> float:
    if isinstance(sanity_bound, str) and sanity_bound == "auto":
        return max(1.0, 0.01 * n_traj)
    if isinstance(sanity_bound, bool) or not isinstance(sanity_bound, numbers.Real):
        raise TypeError(
            f"The 'sanity_bound' parameter of {caller} must be 'auto' or a float. Got {sanity_bound!r}."
        )
    if not (0.0 < float(sanity_bound) < math.inf):
        raise ValueError(
            f"The 'sanity_bound' parameter of {caller} must be 'auto' or a float in the range (0, inf). "
            f"Got {sanity_bound!r} instead."
        )
    return float(sanity_bound)


def range_query_error(
    original: Any,
    perturbed: Any,
    regions: Any,
    *,
    points: Any = None,
    sanity_bound: Any = "auto",
    how: str = "points",
) -> pd.DataFrame:
    """Relative error of range-count queries (trajectories passing through each region).

    For every region R, with c(R) the number of original trajectories passing through R and ĉ(R) the number
    of perturbed ones (see :func:`geoldp.queries.range_count`),

    .. math:: RE(R) = \\frac{|\\hat c(R) - c(R)|}{\\max(c(R), b)}

    The **sanity bound** b keeps regions with tiny true counts from dominating (and avoids division by 0):
    by default b = max(1, 1 % of the number of trajectories), the convention of the trajectory-synthesis
    literature (e.g. AdaTrace, Gursoy et al., CCS 2018).

    Parameters
    ----------
    original, perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories (same number of rows).
    regions : Polygon, circle (lon, lat, radius_km), list of those, or GeoSeries of polygons
        Query regions. Bare shapely polygons are taken to be in the CRS of ``original`` (EPSG:4326 for index
        input); a GeoSeries is used in its own CRS.
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index-array input.
    sanity_bound : "auto" or float, default "auto"
        b above, as an absolute number of trajectories (> 0).
    how : {"points", "line"}, default "points"
        What "passing through" means (see :func:`geoldp.queries.range_count`).

    Returns
    -------
    pandas.DataFrame
        One row per region: ``region`` (position), ``true_count``, ``perturbed_count``, ``relative_error``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.0, 1.0]])
    >>> t = range_query_error([[0, 0], [0], [1]], [[0, 1], [1], [1]], [(0.0, 0.0, 1.0)],
    ...                       points=P, sanity_bound=1.0)
    >>> t[["true_count", "perturbed_count", "relative_error"]].values.tolist()
    [[2.0, 1.0, 0.5]]
    """
    caller = "range_query_error"
    how = check_how(how, caller)
    to, tp, _ = _pair(original, perturbed, points, caller=caller, pointwise=False)
    b = _sanity_bound(sanity_bound, to.n_traj, caller)
    regs, _ = as_regions(regions, caller=caller)
    if not regs:
        raise ValueError(f"The 'regions' parameter of {caller} must contain at least one region.")
    c = range_counts(to, regs, how)
    # Bare polygons are in the CRS of 'original'; evaluate them there for both inputs.
    from dataclasses import replace

    regs_p = [r if r.kind == "circle" or r.crs is not None else replace(r, crs=to.crs) for r in regs]
    chat = range_counts(tp, regs_p, how)
    err = np.abs(chat - c) / np.maximum(c, b)
    return pd.DataFrame(
        {"region": np.arange(len(regs)), "true_count": c, "perturbed_count": chat, "relative_error": err}
    )


# --------------------------------------------------------------------------------------------------
# hotspots
# --------------------------------------------------------------------------------------------------


def _top_k(counts: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest counts, ties broken by the lower index."""
    order = np.lexsort((np.arange(counts.shape[0]), -counts))
    return order[:k]


def _kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's τ-b (ties corrected), O(k²) for the small k of hotspot lists; NaN if x or y is constant.

    τ_b = (n_c − n_d) / sqrt((n_0 − n_x)(n_0 − n_y)), n_0 = k(k−1)/2, n_x / n_y = pairs tied in x / y.
    """
    i, j = np.triu_indices(x.shape[0], k=1)
    sx = np.sign(x[i] - x[j])
    sy = np.sign(y[i] - y[j])
    n0 = i.shape[0]
    denom = math.sqrt(float(n0 - np.sum(sx == 0)) * float(n0 - np.sum(sy == 0)))
    return float(np.sum(sx * sy) / denom) if denom > 0 else float("nan")


def hotspot_preservation(
    original: Any, perturbed: Any, *, k: int = 10, points: Any = None, max_km: float | None = 0.001
) -> dict[str, float]:
    """Compare the top-k public points ("hotspots") of original and perturbed data.

    The popularity of a public point p is the number of distinct trajectories visiting it, c(p) for the
    original and ĉ(p) for the perturbed data (:func:`geoldp.queries.visit_counts`). Let H be the k most
    popular points of the original (ties → lower index) and Ĥ those of the perturbed data.

    - ``acd`` (average count difference) = (1/k) Σ_{p∈H} abs(ĉ(p) − c(p))   (lower is better);
    - ``acd_relative`` = (1/k) Σ_{p∈H} abs(ĉ(p) − c(p)) / max(c(p), 1)   (lower is better);
    - ``kendall_tau`` = Kendall's τ-b between (c(p))_{p∈H} and (ĉ(p))_{p∈H}: does the perturbed data rank the
      true hotspots in the same order (1 best, NaN if either vector is constant);
    - ``overlap`` = #(H ∩ Ĥ) / k   (1 best).

    Parameters
    ----------
    original, perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories (same number of rows).
    k : int, default 10
        Number of hotspots, 1 ≤ k ≤ |P|.
    points : PointSet, GeoDataFrame of Points or (m, 2) array
        The public point set (required): the candidate hotspots.
    max_km : float or None, default 0.001
        Snapping tolerance for geometry input (see :func:`geoldp.queries.visit_counts`).

    Returns
    -------
    dict
        Keys ``acd``, ``acd_relative``, ``kendall_tau``, ``overlap``, ``k``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.01, 0.0], [0.02, 0.0]])
    >>> r = hotspot_preservation([[0, 1], [0, 2], [0]], [[0, 1], [1, 2], [2]], k=2, points=P)
    >>> r["acd"], r["overlap"]
    (1.5, 0.5)
    """
    caller = "hotspot_preservation"
    max_km = check_max_km(max_km, caller=caller)
    if points is None:
        raise ValueError(f"The 'points' parameter of {caller} is required (the public point set).")
    to, tp, pts = _pair(original, perturbed, points, caller=caller, pointwise=False)
    assert pts is not None  # points were required above
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not (1 <= k <= pts.size):
        raise ValueError(
            f"The 'k' parameter of {caller} must be an int in the range [1, {pts.size}]. Got {k!r}."
        )
    c = distinct_visits(to, pts, max_km).astype(np.float64)
    chat = distinct_visits(tp, pts, max_km).astype(np.float64)
    h = _top_k(c, int(k))
    hhat = _top_k(chat, int(k))
    diff = np.abs(chat[h] - c[h])
    tau = _kendall_tau_b(c[h], chat[h])
    return {
        "acd": float(diff.mean()),
        "acd_relative": float(np.mean(diff / np.maximum(c[h], 1.0))),
        "kendall_tau": tau,
        "overlap": float(np.intersect1d(h, hhat).size / k),
        "k": int(k),
    }


# --------------------------------------------------------------------------------------------------
# length and diameter distributions
# --------------------------------------------------------------------------------------------------


def _lengths_km(tr: TrajectoryArrays) -> np.ndarray:
    """Polyline length of every trajectory (sum of haversine segment lengths), km."""
    if tr.lon.shape[0] < 2:
        return np.zeros(tr.n_traj)
    seg = _haversine_m(tr.lon[:-1], tr.lat[:-1], tr.lon[1:], tr.lat[1:])
    seg = np.where(tr.segment_mask(), seg, 0.0)
    seg_traj = tr.codes[:-1]
    return np.bincount(seg_traj, weights=seg, minlength=tr.n_traj) / 1000.0


def _diameters_km(tr: TrajectoryArrays, *, budget: int = 4_000_000) -> np.ndarray:
    """Largest pairwise haversine distance within every trajectory, km (exact, O(n²) per trajectory)."""
    out = np.zeros(tr.n_traj)
    lengths = tr.lengths
    for n in np.unique(lengths):
        if n < 2:
            continue
        rows = np.flatnonzero(lengths == n)
        step = max(1, budget // int(n * n))
        if step >= 1 and n * n <= budget:
            for r0 in range(0, rows.size, step):
                rr = rows[r0 : r0 + step]
                v = tr.offsets[rr][:, None] + np.arange(n)[None, :]  # (t, n) flat vertex positions
                lon, lat = tr.lon[v], tr.lat[v]
                d = _haversine_m(lon[:, :, None], lat[:, :, None], lon[:, None, :], lat[:, None, :])
                out[rr] = d.reshape(rr.size, -1).max(axis=1)
        else:  # very long trajectories (raw GPS): blocks of rows of the pairwise matrix
            blk = max(1, budget // int(n))
            for r in rows:
                lon = tr.lon[tr.offsets[r] : tr.offsets[r + 1]]
                lat = tr.lat[tr.offsets[r] : tr.offsets[r + 1]]
                best = 0.0
                for i0 in range(0, int(n), blk):
                    d = _haversine_m(
                        lon[i0 : i0 + blk, None], lat[i0 : i0 + blk, None], lon[None, i0:], lat[None, i0:]
                    )
                    best = max(best, float(d.max()))
                out[r] = best
    return out / 1000.0


def _jsd(a: np.ndarray, b: np.ndarray, bins: int) -> float:
    """Jensen-Shannon divergence (base 2, in [0, 1]) of the histograms of a and b over common bins."""
    hi = float(max(a.max(initial=0.0), b.max(initial=0.0)))
    if hi <= 0.0:
        return 0.0
    edges = np.linspace(0.0, hi, bins + 1)
    p = np.histogram(a, edges)[0].astype(np.float64)
    q = np.histogram(b, edges)[0].astype(np.float64)
    p /= p.sum()
    q /= q.sum()
    mid = 0.5 * (p + q)

    def kl(x: np.ndarray) -> float:
        nz = x > 0
        return float(np.sum(x[nz] * np.log2(x[nz] / mid[nz])))

    return max(0.0, 0.5 * kl(p) + 0.5 * kl(q))


def _check_dist_args(bins: Any, method: str, caller: str) -> None:
    if isinstance(bins, bool) or not isinstance(bins, numbers.Integral) or bins < 1:
        raise ValueError(f"The 'bins' parameter of {caller} must be an int >= 1. Got {bins!r} instead.")
    if method not in ("jsd", "mae"):
        raise ValueError(f"Got method={method!r}; `method` of {caller} must be one of ('jsd', 'mae').")


def _distribution_error(a: np.ndarray, b: np.ndarray, bins: int, method: str) -> float:
    if method == "jsd":
        return _jsd(a, b, bins)
    return float(np.mean(np.abs(b - a)))


def length_error(
    original: Any, perturbed: Any, *, points: Any = None, bins: int = 20, method: str = "jsd"
) -> float:
    """Distance between the trajectory-length distributions of original and perturbed data.

    The length of a trajectory is L(τ) = Σ_{i<|τ|} d(x_i, x_{i+1}) in km (haversine; 0 for one point).

    - ``method="jsd"`` (default): Jensen-Shannon divergence, base 2 (so in [0, 1], 0 = same histogram),
      between the histograms of L over ``bins`` equal-width bins spanning [0, max L of both inputs]:
      JSD(p, q) = ½ KL(p ‖ m) + ½ KL(q ‖ m), m = (p + q)/2.
    - ``method="mae"``: mean absolute error per row, (1/|T|) Σ_τ abs(L(τ̂) − L(τ)) in km.

    Parameters
    ----------
    original, perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories (same number of rows).
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index-array input.
    bins : int, default 20
        Number of histogram bins (JSD only).
    method : {"jsd", "mae"}, default "jsd"
        See above.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    >>> round(length_error([[0, 1], [0, 2]], [[0, 2], [0, 1]], points=P, method="mae"), 3)
    111.195
    >>> length_error([[0, 1], [0, 2]], [[0, 2], [0, 1]], points=P)  # same distribution
    0.0
    """
    caller = "length_error"
    _check_dist_args(bins, method, caller)
    to, tp, _ = _pair(original, perturbed, points, caller=caller, pointwise=False)
    return _distribution_error(_lengths_km(to), _lengths_km(tp), int(bins), method)


def diameter_error(
    original: Any, perturbed: Any, *, points: Any = None, bins: int = 20, method: str = "jsd"
) -> float:
    """Distance between the trajectory-diameter (spatial extent) distributions.

    The diameter of a trajectory is D(τ) = max_{i,j} d(x_i, x_j) in km (haversine; exact, O(|τ|²) per
    trajectory in bounded memory). ``method`` and ``bins`` as in :func:`length_error`: JSD (base 2) of the
    histograms over ``bins`` equal-width bins on [0, max D], or the per-row mean absolute error in km.

    Parameters
    ----------
    original, perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories (same number of rows).
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index-array input.
    bins : int, default 20
        Number of histogram bins (JSD only).
    method : {"jsd", "mae"}, default "jsd"
        See :func:`length_error`.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    >>> round(diameter_error([[0, 1, 2]], [[0, 1, 0]], points=P, method="mae"), 3)
    111.195
    """
    caller = "diameter_error"
    _check_dist_args(bins, method, caller)
    to, tp, _ = _pair(original, perturbed, points, caller=caller, pointwise=False)
    return _distribution_error(_diameters_km(to), _diameters_km(tp), int(bins), method)


# --------------------------------------------------------------------------------------------------
# evaluate
# --------------------------------------------------------------------------------------------------


def _auto_regions(to: TrajectoryArrays, grid: int = 4) -> list[tuple[float, float, float]]:
    """A deterministic grid x grid set of circles over the bounding box of the original vertices."""
    lon0, lon1 = float(to.lon.min()), float(to.lon.max())
    lat0, lat1 = float(to.lat.min()), float(to.lat.max())
    diag_km = float(_haversine_m(lon0, lat0, lon1, lat1)) / 1000.0
    radius = max(diag_km / (2.0 * grid), 1e-3)
    cx = lon0 + (np.arange(grid) + 0.5) * (lon1 - lon0) / grid
    cy = lat0 + (np.arange(grid) + 0.5) * (lat1 - lat0) / grid
    return [(float(x), float(y), radius) for y in cy for x in cx]


def evaluate(
    original: Any,
    perturbed: Any,
    *,
    points: Any = None,
    delta_km: Any = (0.5, 1.0, 2.0, 3.0, 4.0),
    regions: Any = "auto",
    sanity_bound: Any = "auto",
    k: int = 10,
    bins: int = 20,
) -> pd.DataFrame:
    """All utility metrics of this module as one tidy table.

    Parameters
    ----------
    original, perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories matched by position (same number of rows and of points per row).
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index-array input. The hotspot rows are produced only when it is
        given; they count a vertex as a visit of a public point only within 1 m of it (see
        :func:`geoldp.queries.visit_counts`), so raw GPS originals should be snapped to P first (e.g.
        ``gdf.ldp.snap(points)``) or compared with :func:`hotspot_preservation` and ``max_km=None``.
    delta_km : float or sequence of float, default (0.5, 1, 2, 3, 4)
        PRQ thresholds in km.
    regions : "auto", None or regions, default "auto"
        Query regions for :func:`range_query_error`. ``"auto"``: a deterministic 4×4 grid of circles over
        the bounding box of the original vertices, each with radius 1/8 of the box diagonal. ``None`` skips
        the range-query rows.
    sanity_bound : "auto" or float, default "auto"
        See :func:`range_query_error`.
    k : int, default 10
        Number of hotspots (capped at |P|).
    bins : int, default 20
        Histogram bins for the length and diameter JSD.

    Returns
    -------
    pandas.DataFrame
        Columns ``metric`` (str), ``param`` (float: δ in km for PRQ, k for the hotspot metrics, NaN
        otherwise), ``value`` (float). Rows, in order: ``NE`` (km); ``PRQ`` per δ; ``range_query_error``
        (mean RE over the regions) and ``range_query_error_median``; ``hotspot_acd``,
        ``hotspot_acd_relative``, ``hotspot_kendall_tau``, ``hotspot_overlap``; ``length_jsd``;
        ``diameter_jsd``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.0, 0.01], [0.01, 0.0]])
    >>> t = evaluate([[0, 1], [2]], [[0, 1], [2]], points=P, k=2)
    >>> list(t.columns), float(t.loc[t.metric == "NE", "value"].iloc[0])
    (['metric', 'param', 'value'], 0.0)
    """
    caller = "evaluate"
    deltas, _ = _check_deltas(delta_km, caller)
    to, tp, pts = _pair(original, perturbed, points, caller=caller)
    rows: list[tuple[str, float, float]] = []
    d = _point_distances_m(to, tp)
    rows.append(("NE", math.nan, float(np.mean(_per_trajectory_mean(d / 1000.0, to)))))
    hit = (d[:, None] <= deltas[None, :] * 1000.0).astype(np.float64)
    prq = _per_trajectory_mean(hit, to).mean(axis=0)
    rows.extend(("PRQ", float(dl), float(v)) for dl, v in zip(deltas, prq, strict=True))
    if regions is not None:
        regs = _auto_regions(to) if isinstance(regions, str) and regions == "auto" else regions
        rq = range_query_error(to, tp, regs, sanity_bound=sanity_bound)
        rows.append(("range_query_error", math.nan, float(rq["relative_error"].mean())))
        rows.append(("range_query_error_median", math.nan, float(rq["relative_error"].median())))
    if pts is not None:
        hs = hotspot_preservation(to, tp, k=min(int(k), pts.size), points=pts)
        for key in ("acd", "acd_relative", "kendall_tau", "overlap"):
            rows.append((f"hotspot_{key}", float(hs["k"]), hs[key]))
    rows.append(("length_jsd", math.nan, _jsd(_lengths_km(to), _lengths_km(tp), int(bins))))
    rows.append(("diameter_jsd", math.nan, _jsd(_diameters_km(to), _diameters_km(tp), int(bins))))
    return pd.DataFrame(rows, columns=["metric", "param", "value"])
