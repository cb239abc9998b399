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
from geoldp._validation import check_int_min, check_max_km
from geoldp._zones import check_polygons, lonlat_to
from geoldp.geo import KM_PER_DEGREE
from geoldp.geo import haversine_array_m as _haversine_m
from geoldp.pointset import PointSet
from geoldp.queries import check_how, distinct_visits, range_counts

__all__ = [
    "baseline_release",
    "diameter_error",
    "evaluate",
    "hotspot_preservation",
    "length_error",
    "normalized_error",
    "od_counts",
    "od_flow_error",
    "one_median",
    "preservation_range_query",
    "range_query_error",
    "zone_grid",
    "zone_visit_counts",
    "zone_visit_error",
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
    if pts is None:  # unreachable: checked when the arguments were validated
        raise ValueError("internal error: a required public input is missing; please report it")
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
# zones: visit density and origin-destination flows
# --------------------------------------------------------------------------------------------------

#: Most zones :func:`zone_grid` builds; a finer grid is refused up front (raise it to allow one).
MAX_ZONES = 1_000_000


def zone_grid(points: Any, cell_km: float = 1.5) -> Any:
    """A square grid of zones of about ``cell_km`` km over the bounding box of the public points.

    The grid is built from the public point set only, so it can be shared by metrics and collector-side
    estimators without touching private data. Cells are ``cell_km / 111.195`` degrees of latitude high and
    ``cell_km / (111.195 cos φ̄)`` degrees of longitude wide (φ̄ the middle latitude of the box), so they
    are squares of ``cell_km`` at φ̄ and within a few per cent of it over a city. The grid has
    ``floor(width / cell) + 1`` columns and as many rows (likewise), centred on the box, so every public
    point lies strictly inside it. Empty cells are kept: the index depends on P and ``cell_km`` only.

    Parameters
    ----------
    points : PointSet, GeoDataFrame of Points or (m, 2) array of (lon, lat)
        The public point set P.
    cell_km : float, default 1.5
        Side of a cell in km, > 0. A grid of more than :data:`MAX_ZONES` zones is refused before it is
        built (``ValueError`` with the size it would have); set ``geoldp.metrics.MAX_ZONES`` higher to
        allow it.

    Returns
    -------
    geopandas.GeoDataFrame
        One square Polygon per zone in EPSG:4326, row-major from the south-west corner; index ``zone``
        (0, 1, ..., ``row * n_cols + col``), columns ``row``, ``col`` and ``geometry``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.02, 0.0], [0.0, 0.02]])   # 2.2 km x 2.2 km
    >>> z = zone_grid(P, cell_km=1.5)
    >>> len(z), z.index.name, list(z.columns)
    (4, 'zone', ['row', 'col', 'geometry'])
    """
    import geopandas as gpd
    import shapely

    caller = "zone_grid"
    if (
        isinstance(cell_km, bool)
        or not isinstance(cell_km, numbers.Real)
        or not (0.0 < float(cell_km) < math.inf)
    ):
        raise ValueError(
            f"The 'cell_km' parameter of {caller} must be a float in the range (0, inf). Got {cell_km!r}."
        )
    pts = as_pointset(points, caller=caller)
    lon0, lon1 = float(pts.lon.min()), float(pts.lon.max())
    lat0, lat1 = float(pts.lat.min()), float(pts.lat.max())
    dlat = float(cell_km) / KM_PER_DEGREE
    dlon = dlat / max(math.cos(math.radians(0.5 * (lat0 + lat1))), 1e-6)
    # the size is checked before anything is allocated (a tiny cell_km would need terabytes)
    fx = (lon1 - lon0) / dlon if dlon > 0 else math.inf
    fy = (lat1 - lat0) / dlat if dlat > 0 else math.inf
    cells = (math.floor(fx) + 1) * (math.floor(fy) + 1) if math.isfinite(fx * fy) else math.inf
    if cells > MAX_ZONES:
        raise ValueError(
            f"The 'cell_km' parameter of {caller} ({float(cell_km):g} km) would build {cells:.3g} zones "
            f"over the public points, more than geoldp.metrics.MAX_ZONES = {MAX_ZONES}. Use a larger "
            "cell_km, or raise geoldp.metrics.MAX_ZONES if you have the memory (each zone is a polygon)."
        )
    nx = int(math.floor(fx)) + 1
    ny = int(math.floor(fy)) + 1
    x0 = 0.5 * (lon0 + lon1) - 0.5 * nx * dlon
    y0 = 0.5 * (lat0 + lat1) - 0.5 * ny * dlat
    row, col = (a.ravel() for a in np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij"))
    geoms = shapely.box(x0 + col * dlon, y0 + row * dlat, x0 + (col + 1) * dlon, y0 + (row + 1) * dlat)
    return gpd.GeoDataFrame(
        {"row": row.astype(np.int64), "col": col.astype(np.int64)},
        geometry=geoms,
        crs="EPSG:4326",
        index=pd.RangeIndex(nx * ny, name="zone"),
    )


class _Zones:
    """Validated zones: polygons, their CRS, index and a spatial index for point-in-zone look-ups."""

    def __init__(self, zones: Any, caller: str) -> None:
        import shapely

        zones, geoms, self.crs = check_polygons(zones, name="zones", caller=caller, accepts=" or 'auto'")
        self.series = zones  # the polygons, for a collector-side estimate over the same zones
        self.index = zones.index
        self.size = len(zones)
        self.tree = shapely.STRtree(geoms)
        self._points_zone: tuple[PointSet, np.ndarray] | None = None

    def assign_xy(self, xy: np.ndarray) -> np.ndarray:
        """Zone position of every (x, y) in the zones' CRS; -1 outside all zones, lowest position on ties."""
        import shapely

        out = np.full(xy.shape[0], self.size, dtype=np.int64)
        if xy.shape[0]:
            inp, hit = self.tree.query(shapely.points(xy), predicate="intersects")
            np.minimum.at(out, inp, hit.astype(np.int64))
        out[out == self.size] = -1
        return out

    def assign_trajectories(self, tr: TrajectoryArrays, pts: PointSet | None = None) -> np.ndarray:
        """Zone position of every vertex (cached on ``tr`` for the duration of one call)."""
        key = ("zones", id(self))
        if key not in tr.memo:
            if tr.index is not None and pts is not None:  # index input: assign P once, then look up
                tr.memo[key] = self.assign_points(pts)[tr.index]
            else:
                tr.memo[key] = self.assign_xy(tr.xy_in(self.crs))
        return tr.memo[key]

    def assign_points(self, pts: PointSet) -> np.ndarray:
        """Zone position of every public point."""
        if self._points_zone is None or self._points_zone[0] is not pts:
            self._points_zone = (pts, self.assign_xy(np.column_stack(lonlat_to(pts.lon, pts.lat, self.crs))))
        return self._points_zone[1]


def _zone_arg(zones: Any, pts: PointSet | None, caller: str) -> _Zones | None:
    if zones is None:
        return None
    if isinstance(zones, _Zones):
        return zones
    if isinstance(zones, str):
        if zones != "auto":
            raise ValueError(f"Got zones={zones!r}; `zones` of {caller} must be 'auto', None or polygons.")
        if pts is None:
            raise ValueError(
                f"zones='auto' in {caller} builds the zones from the public point set: pass `points=`, or "
                "pass `zones=` (a GeoDataFrame of polygons)."
            )
        return _Zones(zone_grid(pts), caller)
    return _Zones(zones, caller)


def _required_zones(zones: Any, pts: PointSet | None, caller: str) -> _Zones:
    zn = _zone_arg(zones, pts, caller)
    if zn is None:
        raise ValueError(f"{caller} needs zones: pass `zones=` (polygons) or zones='auto' with `points=`.")
    return zn


def _zone_counts_of(tr: TrajectoryArrays, zn: _Zones, pts: PointSet | None = None) -> np.ndarray:
    """Distinct trajectories visiting each zone (zone order)."""
    z = zn.assign_trajectories(tr, pts)
    ok = z >= 0
    key = np.unique(tr.codes[ok] * np.int64(zn.size) + z[ok])
    return np.bincount(key % zn.size, minlength=zn.size).astype(np.float64)


def _od_of(tr: TrajectoryArrays, zn: _Zones, pts: PointSet | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sparse OD counts: keys ``origin * n_zones + destination`` (zone positions) and counts."""
    z = zn.assign_trajectories(tr, pts)
    o, d = z[tr.offsets[:-1]], z[tr.offsets[1:] - 1]
    ok = (o >= 0) & (d >= 0)
    keys, counts = np.unique(o[ok] * np.int64(zn.size) + d[ok], return_counts=True)
    return keys, counts.astype(np.float64)


def _counts_vector(obj: Any, zn: _Zones, caller: str, name: str) -> np.ndarray:
    """Zone counts given as an array (zone order), a Series or a DataFrame with an 'estimate' column."""
    if isinstance(obj, pd.DataFrame):
        if "estimate" not in obj.columns:
            raise ValueError(
                f"The {name} DataFrame of {caller} needs an 'estimate' column (one row per zone)."
            )
        obj = obj["estimate"]
    if isinstance(obj, pd.Series):
        extra = obj.index.difference(zn.index)
        if len(extra):
            raise ValueError(
                f"The {name} of {caller} are indexed by labels that are not zones' index labels."
            )
        obj = obj.reindex(zn.index, fill_value=0.0)
    arr = np.asarray(obj, dtype=np.float64)
    if arr.shape != (zn.size,) or not np.all(np.isfinite(arr)):
        raise ValueError(
            f"The {name} of {caller} must be {zn.size} finite counts, one per zone (zones' order)."
        )
    return np.clip(arr, 0.0, None)


def _od_sparse(obj: Any, zn: _Zones, caller: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    """OD counts given as an (n_zones, n_zones) array or a long DataFrame (origin, destination, count)."""
    if isinstance(obj, pd.DataFrame):
        value = next((c for c in ("estimate", "count") if c in obj.columns), None)
        if value is None or not {"origin", "destination"} <= set(obj.columns):
            raise ValueError(
                f"The {name} DataFrame of {caller} needs columns 'origin', 'destination' (zones' index "
                "labels) and 'estimate' or 'count'."
            )
        o = zn.index.get_indexer(obj["origin"])
        d = zn.index.get_indexer(obj["destination"])
        if (o < 0).any() or (d < 0).any():
            raise ValueError(f"The {name} of {caller} name an origin or destination that is not a zone.")
        v = np.asarray(obj[value], dtype=np.float64)
        keys = o.astype(np.int64) * zn.size + d
    else:
        arr = np.asarray(obj, dtype=np.float64)
        if arr.shape != (zn.size, zn.size):
            raise ValueError(
                f"The {name} of {caller} must be an ({zn.size}, {zn.size}) array or a long DataFrame."
            )
        keys = np.flatnonzero(arr)
        v = arr.ravel()[keys]
    if not np.all(np.isfinite(v)):
        raise ValueError(f"The {name} of {caller} must be finite.")
    keys, inv = np.unique(keys, return_inverse=True)
    return keys, np.bincount(inv, weights=np.clip(v, 0.0, None))


def _normalise(v: np.ndarray) -> np.ndarray | None:
    total = float(v.sum())
    return v / total if total > 0 else None


def _pmf_distances(p: np.ndarray | None, q: np.ndarray | None) -> tuple[float, float]:
    """L1 distance (in [0, 2]) and Jensen-Shannon divergence (base 2, in [0, 1]) of two pmfs."""
    if p is None or q is None:
        return math.nan, math.nan
    mid = 0.5 * (p + q)

    def kl(x: np.ndarray) -> float:
        nz = x > 0
        return float(np.sum(x[nz] * np.log2(x[nz] / mid[nz])))

    return float(np.abs(p - q).sum()), max(0.0, 0.5 * kl(p) + 0.5 * kl(q))


def _sparse_distances(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[float, float]:
    """L1 and JSD of two sparse count vectors (keys, counts), normalised, over the union of their keys."""
    keys, inv = np.unique(np.concatenate([a[0], b[0]]), return_inverse=True)
    p = np.bincount(inv[: a[0].size], weights=a[1], minlength=keys.size)
    q = np.bincount(inv[a[0].size :], weights=b[1], minlength=keys.size)
    return _pmf_distances(_normalise(p), _normalise(q))


def zone_visit_counts(trajectories: Any, zones: Any = "auto", *, points: Any = None) -> pd.Series:
    """Number of distinct trajectories visiting each zone.

    A trajectory visits zone z when one of its vertices lies in z (closed polygon; a vertex on a shared
    edge counts for the zone that comes first). Vertices outside every zone are ignored.

    Parameters
    ----------
    trajectories : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories (any CRS), or index arrays into ``points``.
    zones : "auto" or GeoDataFrame/GeoSeries of polygons, default "auto"
        Zones in any CRS. ``"auto"``: :func:`zone_grid` of ``points`` (1.5 km cells).
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index input and for ``zones="auto"``.

    Returns
    -------
    pandas.Series of float
        Indexed by the zones' index, named ``visits``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.02, 0.0], [0.0, 0.02]])
    >>> zone_visit_counts([[0, 0, 1], [1], [2]], points=P).tolist()
    [1.0, 2.0, 1.0, 0.0]
    """
    caller = "zone_visit_counts"
    pts = as_pointset(points, caller=caller) if points is not None else None
    zn = _required_zones(zones, pts, caller)
    tr = trajectory_arrays(trajectories, pts, name="trajectories", caller=caller)
    return pd.Series(_zone_counts_of(tr, zn, pts), index=zn.index, name="visits")


def od_counts(trajectories: Any, zones: Any = "auto", *, points: Any = None) -> pd.DataFrame:
    """Origin-destination counts: trajectories by the zone of their first and of their last vertex.

    Parameters
    ----------
    trajectories, zones, points
        As in :func:`zone_visit_counts`. Trajectories whose first or last vertex is outside every zone are
        left out.

    Returns
    -------
    pandas.DataFrame
        Long format, one row per non-empty pair: ``origin``, ``destination`` (zones' index labels) and
        ``count``, sorted by origin then destination position.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.02, 0.0], [0.0, 0.02]])
    >>> od_counts([[0, 1], [0, 2, 1], [2]], points=P).to_dict("list")
    {'origin': [0, 2], 'destination': [1, 2], 'count': [2.0, 1.0]}
    """
    caller = "od_counts"
    pts = as_pointset(points, caller=caller) if points is not None else None
    zn = _required_zones(zones, pts, caller)
    tr = trajectory_arrays(trajectories, pts, name="trajectories", caller=caller)
    keys, counts = _od_of(tr, zn, pts)
    return pd.DataFrame(
        {
            "origin": zn.index[keys // zn.size],
            "destination": zn.index[keys % zn.size],
            "count": counts,
        }
    )


def zone_visit_error(
    original: Any, perturbed: Any, zones: Any = "auto", *, points: Any = None
) -> dict[str, float]:
    """Error of the visit density over zones: L1 and JSD of the normalised distinct-visit counts.

    With c(z) the number of distinct original trajectories visiting zone z (:func:`zone_visit_counts`) and
    ĉ(z) the same for the perturbed data (or an estimate of c), p = c / Σc and q = ĉ / Σĉ:

    - ``l1`` = Σ_z abs(p(z) − q(z)), in [0, 2] (0 best; 2 for disjoint supports);
    - ``jsd`` = ½ KL(p ‖ m) + ½ KL(q ‖ m), m = (p + q)/2, base 2, in [0, 1] (0 best).

    Both are NaN when either side has no visit in any zone. A constant release puts all its mass in one
    zone and scores close to 2 and 1.

    Parameters
    ----------
    original : GeoDataFrame, GeoSeries or sequence of array_like of int
        Original trajectories.
    perturbed : GeoDataFrame, GeoSeries, sequence of array_like of int, or counts
        Perturbed trajectories (any number of rows), or zone counts: an array in zone order, a Series indexed
        by the zones' index, or a DataFrame with an ``estimate`` column (e.g. a collector-side estimate).
        Negative counts are clipped to 0 before normalising.
    zones : "auto" or GeoDataFrame/GeoSeries of polygons, default "auto"
        See :func:`zone_visit_counts`.
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index input and for ``zones="auto"``.

    Returns
    -------
    dict
        Keys ``l1`` and ``jsd``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.02, 0.0], [0.0, 0.02]])
    >>> r = zone_visit_error([[0], [1]], [[0], [0]], points=P)   # p = (1/2, 1/2), q = (1, 0)
    >>> r["l1"], round(r["jsd"], 6)       # JSD = (1/2)(1/2 log2(2/3) + 1/2) + (1/2) log2(4/3)
    (1.0, 0.311278)
    """
    caller = "zone_visit_error"
    pts = as_pointset(points, caller=caller) if points is not None else None
    zn = _required_zones(zones, pts, caller)
    to = trajectory_arrays(original, pts, name="original", caller=caller)
    c = _zone_counts_of(to, zn, pts)
    chat = _zone_side(perturbed, pts, zn, caller)
    l1, jsd = _pmf_distances(_normalise(c), _normalise(chat))
    return {"l1": l1, "jsd": jsd}


def _is_counts(obj: Any) -> bool:
    if isinstance(obj, (pd.Series, pd.DataFrame)):
        return True
    if isinstance(obj, np.ndarray) and obj.dtype.kind == "f":
        return True
    return False


def _zone_side(obj: Any, pts: PointSet | None, zn: _Zones, caller: str) -> np.ndarray:
    if _is_counts(obj):
        return _counts_vector(obj, zn, caller, "zone counts")
    return _zone_counts_of(trajectory_arrays(obj, pts, name="perturbed", caller=caller), zn, pts)


def od_flow_error(
    original: Any, perturbed: Any, zones: Any = "auto", *, points: Any = None
) -> dict[str, float]:
    """Error of the origin-destination flows between zones: L1 and JSD of the normalised OD matrices.

    With f(a, b) the number of original trajectories whose first vertex lies in zone a and last vertex in
    zone b (:func:`od_counts`), f̂ the same for the perturbed data (or an estimate), p = f / Σf and
    q = f̂ / Σf̂ over all zone pairs:

    - ``l1`` = Σ_{a,b} abs(p(a, b) − q(a, b)), in [0, 2] (0 best);
    - ``jsd``: Jensen-Shannon divergence of p and q, base 2, in [0, 1] (0 best).

    NaN when either side has no trajectory starting and ending in a zone.

    Parameters
    ----------
    original : GeoDataFrame, GeoSeries or sequence of array_like of int
        Original trajectories.
    perturbed : GeoDataFrame, GeoSeries, sequence of array_like of int, or counts
        Perturbed trajectories, or OD counts: an (n_zones, n_zones) float array (zone order) or a long
        DataFrame with ``origin``, ``destination`` (zones' index labels) and ``estimate`` or ``count``.
        Negative counts are clipped to 0.
    zones, points
        As in :func:`zone_visit_error`.

    Returns
    -------
    dict
        Keys ``l1`` and ``jsd``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.02, 0.0], [0.0, 0.02]])
    >>> od_flow_error([[0, 1], [1, 0]], [[0, 1], [0, 1]], points=P)["l1"]   # (½, ½) vs (1, 0)
    1.0
    """
    caller = "od_flow_error"
    pts = as_pointset(points, caller=caller) if points is not None else None
    zn = _required_zones(zones, pts, caller)
    to = trajectory_arrays(original, pts, name="original", caller=caller)
    l1, jsd = _sparse_distances(_od_of(to, zn, pts), _od_side(perturbed, pts, zn, caller))
    return {"l1": l1, "jsd": jsd}


def _od_side(obj: Any, pts: PointSet | None, zn: _Zones, caller: str) -> tuple[np.ndarray, np.ndarray]:
    if _is_counts(obj):
        return _od_sparse(obj, zn, caller, "OD counts")
    return _od_of(trajectory_arrays(obj, pts, name="perturbed", caller=caller), zn, pts)


# --------------------------------------------------------------------------------------------------
# no-data baselines: uniform over P and the 1-median of P
# --------------------------------------------------------------------------------------------------


def _sum_distances_m(pts: PointSet, cand: np.ndarray) -> np.ndarray:
    """Σ_p d(P_c, p) for every candidate position c, in blocks (memory O(block · |P|))."""
    out = np.empty(cand.shape[0])
    block = max(1, 2_000_000 // pts.size)
    for i0 in range(0, cand.shape[0], block):
        c = cand[i0 : i0 + block]
        out[i0 : i0 + block] = _haversine_m(pts.lon[c, None], pts.lat[c, None], pts.lon, pts.lat).sum(axis=1)
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
        d = _haversine_m(lon, lat, pts.lon, pts.lat)
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


def _uniform_ne_prq(to: TrajectoryArrays, pts: PointSet, deltas: np.ndarray) -> tuple[float, np.ndarray]:
    """Exact E[NE] and E[PRQ(δ)] when every point is a uniform draw from P (O(N · |P|), in blocks)."""
    # the expectation depends on the location only: compute it once per distinct original location
    xy, inv = np.unique(np.column_stack([to.lon, to.lat]), axis=0, return_inverse=True)
    inv = inv.ravel()
    n = xy.shape[0]
    ne_u = np.empty(n)
    prq_u = np.empty((n, deltas.size))
    block = max(1, 2_000_000 // pts.size)
    for i0 in range(0, n, block):
        d = _haversine_m(xy[i0 : i0 + block, 0, None], xy[i0 : i0 + block, 1, None], pts.lon, pts.lat)
        ne_u[i0 : i0 + block] = d.mean(axis=1) / 1000.0
        d.sort(axis=1)
        prq_u[i0 : i0 + block] = np.stack(
            [np.sum(d <= dl * 1000.0, axis=1) / pts.size for dl in deltas], axis=1
        )
    ne_v, prq_v = ne_u[inv], prq_u[inv]
    return float(np.mean(_per_trajectory_mean(ne_v, to))), _per_trajectory_mean(prq_v, to).mean(axis=0)


# --------------------------------------------------------------------------------------------------
# evaluate
# --------------------------------------------------------------------------------------------------


def _auto_regions(lon: np.ndarray, lat: np.ndarray, grid: int = 4) -> list[tuple[float, float, float]]:
    """A deterministic grid x grid set of circles over the bounding box of ``lon``/``lat``.

    :func:`evaluate` passes P's coordinates (public) whenever it has P: the regions then say nothing
    about the originals, and the collector-side estimates it runs get the same public regions. Only
    without P (no estimates then) does it pass the original vertices.
    """
    lon0, lon1 = float(lon.min()), float(lon.max())
    lat0, lat1 = float(lat.min()), float(lat.max())
    diag_km = float(_haversine_m(lon0, lat0, lon1, lat1)) / 1000.0
    radius = max(diag_km / (2.0 * grid), 1e-3)
    cx = lon0 + (np.arange(grid) + 0.5) * (lon1 - lon0) / grid
    cy = lat0 + (np.arange(grid) + 0.5) * (lat1 - lat0) / grid
    return [(float(x), float(y), radius) for y in cy for x in cx]


#: Keys a count entry of :func:`evaluate` may hold (an estimate instead of released trajectories).
COUNT_KEYS = ("zone_counts", "od_counts", "range_counts", "visit_counts")


def _hotspot_scores(c: np.ndarray, chat: np.ndarray, k: int) -> dict[str, float]:
    h = _top_k(c, k)
    hhat = _top_k(chat, k)
    diff = np.abs(chat[h] - c[h])
    return {
        "hotspot_acd": float(diff.mean()),
        "hotspot_acd_relative": float(np.mean(diff / np.maximum(c[h], 1.0))),
        "hotspot_kendall_tau": _kendall_tau_b(c[h], chat[h]),
        "hotspot_overlap": float(np.intersect1d(h, hhat).size / k),
    }


def _release_entries(perturbed: Any, label: Any, caller: str) -> list[tuple[str, Any]]:
    from collections.abc import Mapping

    if isinstance(perturbed, Mapping):
        entries = [(str(key), val) for key, val in perturbed.items()]
        if not entries:
            raise ValueError(f"The 'perturbed' mapping of {caller} is empty.")
        return entries
    if label is None:
        ledger = getattr(perturbed, "attrs", {}).get("geoldp", {}) if hasattr(perturbed, "attrs") else {}
        mech = ledger.get("mechanism") if isinstance(ledger, dict) else None
        label = f"{str(mech).upper()} raw" if mech else "perturbed"
    return [(str(label), perturbed)]


def _ledger_mechanism(release: Any) -> str | None:
    attrs = getattr(release, "attrs", None)
    ledger = attrs.get("geoldp", {}) if isinstance(attrs, dict) else {}
    mech = ledger.get("mechanism") if isinstance(ledger, dict) else None
    return str(mech) if mech else None


def _mechanism_name(mechanism: Any) -> str:
    """Upper-case display name of a mechanism given as a name, a ledger dict or a mechanism object."""
    if isinstance(mechanism, str):
        return mechanism.upper()
    if isinstance(mechanism, dict) and mechanism.get("mechanism"):
        return str(mechanism["mechanism"]).upper()
    return type(mechanism).__name__.upper()


def _estimate_labels(entries: list[tuple[str, Any]], mechanism: Any) -> dict[str, tuple[str, str]]:
    """Release label -> (estimated label, denoised label), for every trajectory (not count) entry."""
    out = {}
    for lab, obj in entries:
        if isinstance(obj, dict):
            continue
        if lab.endswith(" raw"):
            base = lab[: -len(" raw")]
        elif len(entries) == 1 and (mechanism is not None or _ledger_mechanism(obj)):
            base = _mechanism_name(mechanism if mechanism is not None else _ledger_mechanism(obj))
        else:
            base = lab
        out[lab] = (f"{base} estimated", f"{base} denoised")
    return out


def _estimate_release(
    release: Any,
    pts: PointSet,
    zn: Any,
    regs: Any,
    mechanism: Any,
    epsilon: float | None,
    options: dict,
    source: Any,
) -> tuple[dict[str, Any], Any]:
    """Collector-side estimates from ``release`` alone (never the originals): counts and denoised rows.

    One population fit answers every query (:func:`geoldp.estimate.fit`); no interval is needed here.
    """
    from geoldp import estimate as est

    kw = {key: val for key, val in options.items() if key not in ("n_boot", "level")}
    pop = est.fit(
        release, pts, mechanism=mechanism, epsilon=epsilon, rng=int(source.integers(2**31)), n_boot=0, **kw
    )
    counts: dict[str, Any] = {"visit_counts": pop.visit_counts()["estimate"].to_numpy()}
    if zn is not None:
        counts["zone_counts"] = pop.visit_counts(zones=zn.series)
        counts["od_counts"] = pop.od_flows(zn.series)
    if regs is not None:
        counts["range_counts"] = pop.range_counts(regs)["estimate"].to_numpy()
    return counts, pop.denoise()


def evaluate(
    original: Any,
    perturbed: Any,
    *,
    points: Any = None,
    label: str | None = None,
    baselines: Any = "auto",
    delta_km: Any = (0.5, 1.0, 2.0, 3.0, 4.0),
    regions: Any = "auto",
    zones: Any = "auto",
    sanity_bound: Any = "auto",
    k: int = 10,
    bins: int = 20,
    rng: Any = 0,
    estimate: bool = False,
    mechanism: Any = None,
    epsilon: float | None = None,
    estimate_options: dict | None = None,
) -> pd.DataFrame:
    """Utility of one or several releases next to the no-data baselines, as one table.

    One row per release label, one column per metric. The baseline rows (``uniform``: every point a
    uniform draw from P; ``constant``: every point P's 1-median, see :func:`baseline_release`) are computed
    from the public point set and the trajectory lengths only; a release that does not beat them on a
    metric tells the collector nothing on that metric.

    Parameters
    ----------
    original : GeoDataFrame, GeoSeries or sequence of array_like of int
        The original trajectories.
    perturbed : release or mapping of str to release or to counts
        A release (GeoDataFrame/GeoSeries of LineStrings or index arrays, matched to ``original`` by
        position, same number of points per row), or a mapping label → release. A mapping value may also
        be a dict of estimated counts with keys among ``zone_counts`` (per zone, see
        :func:`zone_visit_error`), ``od_counts`` (see :func:`od_flow_error`), ``range_counts`` (one count
        per region, in ``regions`` order) and ``visit_counts`` (per public point, P's order): that row gets
        the metrics those counts define and NaN elsewhere (e.g. an ``"ATP estimated"`` row).
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index-array input, for the baselines, the automatic zones and the
        hotspot columns. Hotspots count a vertex as a visit of a public point only within 1 m of it (see
        :func:`geoldp.queries.visit_counts`), so snap raw GPS originals to P first (``gdf.ldp.snap``).
    label : str, optional
        Row label of a single release. Default: ``"<MECHANISM> raw"`` from the release's ledger
        (``attrs["geoldp"]``), else ``"perturbed"``.
    baselines : "auto" or sequence of {"uniform", "constant"}, default "auto"
        Baseline rows to add after the releases. They are computed from the public point set:
        ``"auto"`` adds both when ``points`` is given and none otherwise; an explicit list without
        ``points`` raises ``ValueError``; ``()`` for none.
    delta_km : float or sequence of float, default (0.5, 1, 2, 3, 4)
        PRQ thresholds in km.
    regions : "auto", None or regions, default "auto"
        Query regions for :func:`range_query_error`. ``"auto"``: a deterministic 4×4 grid of circles over
        the bounding box of ``points`` (public: the regions, and the estimates of ``estimate=True``, never
        depend on the originals), each with radius 1/8 of the box diagonal; without ``points``, over the
        bounding box of the original vertices (an evaluation-only choice). ``None`` skips the range-query
        columns. ``table.attrs["evaluate"]["regions"]`` says where they came from: ``"points"``,
        ``"originals"``, ``"given"`` or ``None``.
    zones : "auto", None or GeoDataFrame of polygons, default "auto"
        Zones of the visit-density and OD columns. ``"auto"``: :func:`zone_grid` of ``points`` (about
        1.5 km squares over P's bounding box; skipped without ``points``). ``None`` skips them.
    sanity_bound : "auto" or float, default "auto"
        See :func:`range_query_error`.
    k : int, default 10
        Number of hotspots, >= 1 (capped at |P|).
    bins : int, default 20
        Histogram bins for the length and diameter JSD, >= 1.
    rng : None, int, Generator, ..., default 0
        Randomness of the uniform baseline's draw and, with ``estimate=True``, of the estimators (their
        candidate library, simulations and bootstrap; each estimator gets a seed drawn from ``rng`` after
        the baselines, so the baseline rows do not depend on ``estimate``). It is public (no privacy
        role), so a fixed seed by default keeps the table reproducible.
    estimate : bool, default False
        Add, after each release ``"<MECH> raw"``, a row ``"<MECH> estimated"`` (zone, OD, range and visit
        counts estimated by :mod:`geoldp.estimate` from that release alone, evaluated as a count-only
        entry: NaN for NE, PRQ, length and diameter) and a row ``"<MECH> denoised"`` (the trajectories of
        :func:`geoldp.estimate.denoise`, evaluated as a release). Needs ``points``. The estimators read
        only the release, the public points and the public mechanism configuration, never ``original``.
    mechanism : str, mechanism object or dict, optional
        Public configuration of the mechanism behind the releases, for ``estimate=True``; default: each
        release's ledger (``attrs["geoldp"]``, the output of ``GeoDataFrame.ldp.perturb``).
    epsilon : float, optional
        The per-trajectory budget, with a mechanism name (see :func:`geoldp.estimate.visit_counts`).
    estimate_options : dict, optional
        Keyword arguments for every estimator (``n_candidates``, ``n_sims``, ``n_boot``, ``n_iter``,
        ``cell_km``, ``mechanism_options``); the defaults are those of :mod:`geoldp.estimate`. Smaller
        values are faster and noisier.

    Returns
    -------
    pandas.DataFrame
        Index ``release`` (the labels, then the baselines), columns in this order:

        - ``NE_km`` (lower is better, :func:`normalized_error`) and ``PRQ_<δ>km`` per δ (higher is
          better, :func:`preservation_range_query`);
        - ``range_query_error`` (mean RE over the regions) and ``range_query_error_median``
          (:func:`range_query_error`, lower is better);
        - ``zone_l1``, ``zone_jsd`` (:func:`zone_visit_error`) and ``od_l1``, ``od_jsd``
          (:func:`od_flow_error`), lower is better;
        - ``hotspot_acd``, ``hotspot_acd_relative`` (lower is better), ``hotspot_kendall_tau``,
          ``hotspot_overlap`` (higher is better) over the top-k points (:func:`hotspot_preservation`);
        - ``length_jsd``, ``diameter_jsd`` (:func:`length_error`, :func:`diameter_error`, lower is better).

        ``table.attrs["evaluate"]`` records k, the δs, the number of regions and where they came from, the
        number of zones and the 1-median.
        The ``uniform`` row holds the *exact* expectation of NE and PRQ (mean over P of the distance to each
        original point) when the number of original points times |P| is at most 5·10⁸, and otherwise, like
        every other column, the value on one draw with ``rng``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.0, 0.01], [0.01, 0.0]])
    >>> t = evaluate([[0, 1], [2]], [[0, 1], [2]], points=P, k=2)
    >>> list(t.index), float(t.loc["perturbed", "NE_km"])
    (['perturbed', 'uniform', 'constant'], 0.0)
    """
    caller = "evaluate"
    k = check_int_min(k, "k", minimum=1, caller=caller)  # hotspots; k=0 would divide by zero
    _check_dist_args(bins, "jsd", caller)
    deltas, _ = _check_deltas(delta_km, caller)
    pts = as_pointset(points, caller=caller) if points is not None else None
    to = trajectory_arrays(original, pts, name="original", caller=caller)
    if to.n_traj == 0:
        raise ValueError(f"{caller}: 'original' must contain at least one trajectory.")
    if not isinstance(estimate, bool):
        raise TypeError(f"The 'estimate' parameter of {caller} must be True or False.")
    if estimate and pts is None:
        raise ValueError(
            f"estimate=True in {caller} runs the collector-side estimators, which need the public point "
            "set: pass `points=`."
        )
    if estimate_options is not None and not isinstance(estimate_options, dict):
        raise TypeError(f"The 'estimate_options' parameter of {caller} must be a dict or None.")
    if label is None and mechanism is not None and not _ledger_mechanism(perturbed):
        label = f"{_mechanism_name(mechanism)} raw"
    entries = _release_entries(perturbed, label, caller)
    derived = _estimate_labels(entries, mechanism) if estimate else {}
    if isinstance(baselines, str) and baselines == "auto":
        baselines = BASELINES if pts is not None else ()
    elif isinstance(baselines, str):
        baselines = (baselines,)
    baselines = tuple(baselines or ())
    bad = [b for b in baselines if b not in BASELINES]
    if bad:
        raise ValueError(f"Got baselines={bad!r}; `baselines` of {caller} must be a subset of {BASELINES}.")
    if baselines and pts is None:
        raise ValueError(
            f"The baseline rows of {caller} are computed from the public point set: pass `points=`, or "
            "baselines=() to leave them out."
        )
    labels = [lab for lab, _ in entries] + [x for pair in derived.values() for x in pair] + list(baselines)
    if len(set(labels)) != len(labels):
        raise ValueError(f"The release labels of {caller} must be unique; got {labels}.")
    zn = (
        None
        if (isinstance(zones, str) and zones == "auto" and pts is None)
        else _zone_arg(zones, pts, caller)
    )
    regs = None
    regions_from = None
    if regions is not None:
        if isinstance(regions, str) and regions == "auto":
            # public regions from P when there is one (never the originals' box: see _auto_regions)
            regions_from = "points" if pts is not None else "originals"
            regs = _auto_regions(pts.lon, pts.lat) if pts is not None else _auto_regions(to.lon, to.lat)
        else:
            regions_from, regs = "given", regions
        n_regions = len(as_regions(regs, caller=caller)[0])
    kk = min(int(k), pts.size) if pts is not None else None

    # statistics of the originals, computed once
    truth: dict[str, Any] = {}
    if regs is not None:
        truth["b"] = _sanity_bound(sanity_bound, to.n_traj, caller)
    if zn is not None:
        truth["zone"] = _zone_counts_of(to, zn, pts)
        truth["od"] = _od_of(to, zn, pts)
    if pts is not None:
        truth["visits"] = distinct_visits(to, pts, 0.001).astype(np.float64)
    truth["length"] = _lengths_km(to)
    truth["diameter"] = _diameters_km(to)

    columns = ["NE_km", *(f"PRQ_{dl:g}km" for dl in deltas)]
    if regs is not None:
        columns += ["range_query_error", "range_query_error_median"]
    if zn is not None:
        columns += ["zone_l1", "zone_jsd", "od_l1", "od_jsd"]
    if pts is not None:
        columns += ["hotspot_acd", "hotspot_acd_relative", "hotspot_kendall_tau", "hotspot_overlap"]
    columns += ["length_jsd", "diameter_jsd"]

    def release_row(tp: TrajectoryArrays) -> dict[str, float]:
        to_, tp_, _ = _pair(to, tp, pts, caller=caller)
        d = _point_distances_m(to_, tp_)
        row = {"NE_km": float(np.mean(_per_trajectory_mean(d / 1000.0, to)))}
        hit = (d[:, None] <= deltas[None, :] * 1000.0).astype(np.float64)
        prq = _per_trajectory_mean(hit, to).mean(axis=0)
        row.update({f"PRQ_{dl:g}km": float(v) for dl, v in zip(deltas, prq, strict=True)})
        if regs is not None:
            rq = range_query_error(to, tp, regs, sanity_bound=truth["b"])["relative_error"]
            row["range_query_error"], row["range_query_error_median"] = float(rq.mean()), float(rq.median())
        if zn is not None:
            row["zone_l1"], row["zone_jsd"] = _pmf_distances(
                _normalise(truth["zone"]), _normalise(_zone_counts_of(tp, zn, pts))
            )
            row["od_l1"], row["od_jsd"] = _sparse_distances(truth["od"], _od_of(tp, zn, pts))
        if pts is not None:
            if kk is None:  # unreachable: checked when the arguments were validated
                raise ValueError("internal error: a required public input is missing; please report it")
            row.update(_hotspot_scores(truth["visits"], distinct_visits(tp, pts, 0.001).astype(float), kk))
        row["length_jsd"] = _jsd(truth["length"], _lengths_km(tp), int(bins))
        row["diameter_jsd"] = _jsd(truth["diameter"], _diameters_km(tp), int(bins))
        return row

    def count_row(est: dict, lab: str) -> dict[str, float]:
        unknown = sorted(set(est) - set(COUNT_KEYS))
        if unknown:
            raise ValueError(
                f"The counts of release {lab!r} in {caller} have unknown keys {unknown}; use {COUNT_KEYS}."
            )
        row: dict[str, float] = {}
        if "zone_counts" in est and zn is not None:
            chat = _counts_vector(est["zone_counts"], zn, caller, f"zone_counts of {lab!r}")
            row["zone_l1"], row["zone_jsd"] = _pmf_distances(_normalise(truth["zone"]), _normalise(chat))
        if "od_counts" in est and zn is not None:
            od = _od_sparse(est["od_counts"], zn, caller, f"od_counts of {lab!r}")
            row["od_l1"], row["od_jsd"] = _sparse_distances(truth["od"], od)
        if "range_counts" in est and regs is not None:
            c = range_counts(to, as_regions(regs, caller=caller)[0], check_how("points", caller))
            chat = np.asarray(est["range_counts"], dtype=np.float64)
            if chat.shape != c.shape:
                raise ValueError(f"The range_counts of {lab!r} in {caller} must hold {c.size} counts.")
            rq = np.abs(chat - c) / np.maximum(c, truth["b"])
            row["range_query_error"], row["range_query_error_median"] = float(rq.mean()), float(np.median(rq))
        if "visit_counts" in est and pts is not None:
            chat = np.asarray(est["visit_counts"], dtype=np.float64)
            if chat.shape != (pts.size,):
                raise ValueError(f"The visit_counts of {lab!r} in {caller} must hold {pts.size} counts.")
            if kk is None:  # unreachable: checked when the arguments were validated
                raise ValueError("internal error: a required public input is missing; please report it")
            row.update(_hotspot_scores(truth["visits"], chat, kk))
        return row

    rows: dict[str, dict[str, float]] = {}
    for lab, obj in entries:
        if isinstance(obj, dict):
            rows[lab] = count_row(obj, lab)
        else:
            rows[lab] = release_row(trajectory_arrays(obj, pts, name="perturbed", caller=caller))
    median = None
    from geoldp._random import resolve_rng

    source = resolve_rng(rng) if (baselines or derived) else None  # normalised once
    base_rows: dict[str, dict[str, float]] = {}
    if baselines:
        if pts is None or source is None:  # unreachable: checked when the arguments were validated
            raise ValueError("internal error: a required public input is missing; please report it")
        for b in baselines:
            rel = baseline_release(b, pts, to.lengths, rng=source)
            base_rows[b] = release_row(trajectory_arrays(rel, pts, name=b, caller=caller))
            if b == "constant":
                median = int(rel[0][0])
            if b == "uniform" and to.lon.shape[0] * pts.size <= 500_000_000:
                ne, prq = _uniform_ne_prq(to, pts, deltas)
                base_rows[b]["NE_km"] = ne
                base_rows[b].update({f"PRQ_{dl:g}km": float(v) for dl, v in zip(deltas, prq, strict=True)})
    if derived:
        if pts is None or source is None:  # unreachable: checked when the arguments were validated
            raise ValueError("internal error: a required public input is missing; please report it")
        ordered: dict[str, dict[str, float]] = {}
        for lab, obj in entries:
            ordered[lab] = rows[lab]
            if lab not in derived:
                continue
            est_lab, den_lab = derived[lab]
            counts, denoised = _estimate_release(
                obj, pts, zn, regs, mechanism, epsilon, dict(estimate_options or {}), source
            )
            ordered[est_lab] = count_row(counts, est_lab)
            ordered[den_lab] = release_row(trajectory_arrays(denoised, pts, name="denoised", caller=caller))
        rows = ordered
    rows.update(base_rows)
    table = pd.DataFrame.from_dict(rows, orient="index").reindex(columns=columns).astype(np.float64)
    table.index.name = "release"
    table.attrs["evaluate"] = {
        "k": kk,
        "delta_km": [float(v) for v in deltas],
        "n_regions": n_regions if regs is not None else 0,
        "regions": regions_from,
        "n_zones": zn.size if zn is not None else 0,
        "one_median": median,
    }
    return table
