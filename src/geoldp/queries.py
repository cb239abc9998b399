"""Range and visit queries on (original or perturbed) trajectories.

The functions here answer the analyses a collector runs on perturbed data:

- :func:`range_count`: how many trajectories pass through a region (a polygon, or a circle given as
  ``(lon, lat, radius_km)``);
- :func:`visit_counts`: for every public point, how many distinct trajectories visit it;
- :func:`debiased_visit_counts`: a **post-processing estimator**, clearly separate from the raw counts,
  that inverts the public perturbation channel of :class:`geoldp.PointEM` to estimate the true visit counts.

Inputs are either a GeoDataFrame/GeoSeries of LineStrings (any CRS; one row per trajectory; Points are
accepted as length-1 trajectories) or a sequence of integer index arrays into a public point set, given with
``points=``. Distances are haversine distances on a sphere of radius 6371 km (ALGORITHM §2.1).
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np
import shapely

from geoldp._core.frames import Region, TrajectoryArrays, as_pointset, as_regions, trajectory_arrays
from geoldp._core.geo import EARTH_RADIUS_M, to_radians
from geoldp._core.geo import haversine_array_m as _haversine_m
from geoldp._core.validation import check_max_km

__all__ = ["range_count"]


# --------------------------------------------------------------------------------------------------
# geometry helpers (geoldp._core.geo holds the one haversine implementation)
# --------------------------------------------------------------------------------------------------


def _unit_vectors(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """(k, 3) unit vectors of (lon, lat) degree arrays."""
    lam, phi = to_radians(lon, lat)
    cphi = np.cos(phi)
    return np.stack([cphi * np.cos(lam), cphi * np.sin(lam), np.sin(phi)], axis=-1)


def _arc_distance_m(
    a_lon: np.ndarray, a_lat: np.ndarray, b_lon: np.ndarray, b_lat: np.ndarray, c_lon: float, c_lat: float
) -> np.ndarray:
    """Smallest great-circle distance (m) from the point c to each minor arc a→b."""
    d_end = np.minimum(_haversine_m(a_lon, a_lat, c_lon, c_lat), _haversine_m(b_lon, b_lat, c_lon, c_lat))
    a = _unit_vectors(a_lon, a_lat)
    b = _unit_vectors(b_lon, b_lat)
    c = _unit_vectors(np.asarray([c_lon]), np.asarray([c_lat]))[0]
    normal = np.cross(a, b)
    norm = np.linalg.norm(normal, axis=1)
    ok = norm > 1e-15
    n = np.zeros_like(normal)
    n[ok] = normal[ok] / norm[ok, None]
    s = n @ c
    foot = c[None, :] - s[:, None] * n
    fnorm = np.linalg.norm(foot, axis=1)
    ok &= fnorm > 1e-15
    p = np.zeros_like(foot)
    p[ok] = foot[ok] / fnorm[ok, None]
    inside = (
        ok & (np.einsum("ij,ij->i", np.cross(a, p), n) >= 0) & (np.einsum("ij,ij->i", np.cross(p, b), n) >= 0)
    )
    d_arc = EARTH_RADIUS_M * np.arcsin(np.minimum(np.abs(s), 1.0))
    return np.where(inside, np.minimum(d_arc, d_end), d_end)


# --------------------------------------------------------------------------------------------------
# counting (shared with geoldp.metrics: these names are internal API, not in __all__)
# --------------------------------------------------------------------------------------------------


def _passes_through(tr: TrajectoryArrays, region: Region, how: str) -> np.ndarray:
    """Boolean per trajectory: does it pass through ``region``."""
    if region.kind == "circle":
        near = _haversine_m(tr.lon, tr.lat, region.lon, region.lat) <= region.radius_m
        if how == "line" and tr.lon.shape[0] > 1:
            seg = tr.segment_mask()
            k = np.flatnonzero(seg)
            d = _arc_distance_m(tr.lon[k], tr.lat[k], tr.lon[k + 1], tr.lat[k + 1], region.lon, region.lat)
            hit = k[d <= region.radius_m]
            near = near.copy()
            near[hit] = True
    else:
        xy = tr.xy_in(region.crs if region.crs is not None else tr.crs)
        near = shapely.intersects_xy(region.geom, xy[:, 0], xy[:, 1])
        if how == "line" and xy.shape[0] > 1:
            k = np.flatnonzero(tr.segment_mask())
            segs = shapely.linestrings(np.stack([xy[k], xy[k + 1]], axis=1))
            hit = k[shapely.intersects(segs, region.geom)]
            near = near.copy()
            near[hit] = True
    return np.bincount(tr.codes, weights=near, minlength=tr.n_trajectories) > 0


def check_how(how: Any, caller: str) -> str:
    """Validate the ``how`` option of range queries."""
    if how not in ("points", "line"):
        raise ValueError(f"Got how={how!r}; `how` of {caller} must be one of ('points', 'line').")
    return how


def range_counts(tr: TrajectoryArrays, regions: list[Region], how: str) -> np.ndarray:
    """Number of trajectories of ``tr`` passing through each region."""
    return np.array([int(_passes_through(tr, r, how).sum()) for r in regions], dtype=np.int64)


def range_count(gdf: Any, region: Any, *, points: Any = None, how: str = "points") -> int | np.ndarray:
    """Count the trajectories that pass through a region.

    Parameters
    ----------
    gdf : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories, one per row: LineStrings in any CRS (a Point is a length-1 trajectory), or index arrays
        into ``points``.
    region : Polygon, MultiPolygon, tuple, list or GeoSeries
        A polygon; a circle ``(lon, lat, radius_km)`` (WGS84 centre, haversine radius in km); a list of those;
        or a GeoSeries/GeoDataFrame of polygons (with a CRS). A bare shapely polygon is taken to be in the
        CRS of ``gdf`` (EPSG:4326 for index input).
    points : PointSet or GeoDataFrame, optional
        Public point set; required when ``gdf`` is a sequence of index arrays.
    how : {"points", "line"}, default "points"
        ``"points"``: a trajectory passes through the region when at least one of its vertices lies in it
        (boundary included). ``"line"``: also when a segment between consecutive vertices crosses it
        (straight segments in the polygon's CRS; great-circle arcs for circles).

    Returns
    -------
    int or numpy.ndarray of int64
        The count for a single region; one count per region for a list or GeoSeries of regions.

    Raises
    ------
    TypeError
        A region that is not a polygon or a circle; trajectories that are not LineStrings or Points.
    ValueError
        Missing CRS, an empty/missing geometry, an invalid circle or ``how``.

    Notes
    -----
    For a circle with centre c and radius r, a vertex v is inside when ``haversine(v, c) <= r``. Vertices
    are tested in the polygon's CRS (reprojected exactly, vertex by vertex). Runtime O(N) per region for N
    vertices.

    Examples
    --------
    >>> import geopandas as gpd, shapely
    >>> trips = gpd.GeoSeries([shapely.LineString([(0, 0), (1, 1)]),
    ...                        shapely.LineString([(5, 5), (6, 6)])], crs="EPSG:4326")
    >>> range_count(trips, shapely.box(-0.5, -0.5, 0.5, 0.5))
    1
    >>> int(range_count(trips, (5.0, 5.0, 10.0)))
    1
    """
    caller = "range_count"
    how = check_how(how, caller)
    pts = as_pointset(points, caller=caller) if points is not None else None
    tr = trajectory_arrays(gdf, pts, name="gdf", caller=caller)
    regs, single = as_regions(region, caller=caller)
    counts = range_counts(tr, regs, how)
    return int(counts[0]) if single else counts


def _visited(tr: TrajectoryArrays, pts: Any, max_km: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Per vertex: public point index and a validity mask (False when farther than ``max_km``)."""
    if tr.index is not None:
        return tr.index, np.ones(tr.index.shape[0], dtype=bool)
    idx, dist = pts.nearest(tr.lon, tr.lat)
    ok = np.ones(idx.shape[0], dtype=bool) if max_km is None else dist <= max_km * 1000.0
    return idx, ok


def visit_counts(gdf: Any, points: Any, *, max_km: float | None = 0.001) -> np.ndarray:
    """Number of distinct trajectories visiting each public point.

    Parameters
    ----------
    gdf : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories (LineStrings in any CRS, or index arrays into ``points``).
    points : PointSet, GeoDataFrame/GeoSeries of Points or (m, 2) array of (lon, lat)
        The public point set P (in its order).
    max_km : float or None, default 0.001
        For geometry input, every vertex is assigned to its nearest public point (haversine) when it lies
        within ``max_km`` of it (1 m by default: perturbed output sits exactly on P, up to CRS round trips),
        and ignored otherwise. ``None`` snaps every vertex. Unused for index input.

    Returns
    -------
    numpy.ndarray of int64, shape (m,)
        ``counts[p] = |{τ : some vertex of τ is P_p}|``; a trajectory visiting p twice counts once.

    Raises
    ------
    TypeError
        ``points`` of another type; trajectories that are not LineStrings or Points.
    ValueError
        Missing CRS, an empty/missing geometry, an invalid ``max_km``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.01, 0.0], [0.02, 0.0]])
    >>> visit_counts([[0, 1, 0], [1, 2]], P).tolist()
    [1, 2, 1]
    """
    caller = "visit_counts"
    max_km = check_max_km(max_km, caller=caller)
    pts = as_pointset(points, caller=caller)
    tr = trajectory_arrays(gdf, pts, name="gdf", caller=caller)
    return distinct_visits(tr, pts, max_km)


def distinct_visits(tr: TrajectoryArrays, pts: Any, max_km: float | None) -> np.ndarray:
    """Number of distinct trajectories of ``tr`` visiting each public point of ``pts`` (a PointSet)."""
    idx, ok = _visited(tr, pts, max_km)
    key = np.unique(tr.codes[ok] * np.int64(pts.size) + idx[ok])
    return np.bincount(key % pts.size, minlength=pts.size).astype(np.int64)


# --------------------------------------------------------------------------------------------------
# debiasing (post-processing of released data; costs no privacy)
# --------------------------------------------------------------------------------------------------


def _per_point_epsilon(epsilon: Any, mechanism: Any, n: int) -> float:
    """The EM budget PointEM gives each point of a length-n trajectory."""
    if mechanism is not None and hasattr(mechanism, "ledger"):
        ledger = mechanism.ledger(n)
        eps = [float(e.epsilon) for e in ledger if getattr(e, "kind", "point_em") == "point_em"]
        if eps:
            return min(eps)
    from geoldp.budget import exact_share

    return float(exact_share(float(epsilon), Fraction(1, n)))


class _Channel:
    """The EM channel over P with budget eps, applied without materialising it for large m.

    ``K[x, r] = exp(-eps * d(P_x, P_r) / (2Δ))``; the pmf is ``M[x, r] = K[x, r] / Z[x]``. K is symmetric.
    """

    def __init__(self, pts: Any, diameter_m: float, eps: float, dist: np.ndarray | None, block: int) -> None:
        self.pts = pts
        self.c = eps / (2.0 * diameter_m)
        self.block = block
        self.K = None if dist is None else np.exp(-self.c * dist)
        self.Z = self.matvec(np.ones(pts.size))

    def matvec(self, v: np.ndarray) -> np.ndarray:
        if self.K is not None:
            return self.K @ v
        out = np.empty(self.pts.size)
        lon, lat = self.pts.lon, self.pts.lat
        for i0 in range(0, self.pts.size, self.block):
            d = _haversine_m(lon[i0 : i0 + self.block, None], lat[i0 : i0 + self.block, None], lon, lat)
            out[i0 : i0 + self.block] = np.exp(-self.c * d) @ v
        return out


def _ibu(channel: _Channel, y: np.ndarray, n_iter: int, tol: float) -> np.ndarray:
    """Iterative Bayesian update (EM for deconvolution): MLE of the input counts given output counts y."""
    total = float(y.sum())
    if total == 0.0:
        return np.zeros_like(y, dtype=np.float64)
    theta = np.full(y.shape[0], total / y.shape[0])
    for _ in range(n_iter):
        a = theta / channel.Z
        q = channel.matvec(a)  # expected output counts
        ratio = np.divide(y, q, out=np.zeros_like(q), where=q > 0)
        new = a * channel.matvec(ratio)
        new *= total / new.sum()
        done = np.abs(new - theta).sum() <= tol * total
        theta = new
        if done:
            break
    return theta


def debiased_visit_counts(
    perturbed: Any,
    points: Any,
    *,
    epsilon: Any = None,
    mechanism: Any = "pointem",
    max_km: float | None = 0.001,
    n_iter: int = 200,
    tol: float = 1e-6,
    max_dense: int = 3000,
) -> np.ndarray:
    """Estimate true visit counts from PointEM output by inverting its public channel (post-processing).

    This is **not** a raw count: it is an estimator of the number of visits of the *original* trajectories
    to each public point, computed only from released data and public parameters, so it costs no privacy.

    Parameters
    ----------
    perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
        Output of PointEM (LineStrings whose vertices are public points, or index arrays into ``points``).
    points : PointSet, GeoDataFrame/GeoSeries of Points or (m, 2) array of (lon, lat)
        The public point set P used by the mechanism (same order).
    epsilon : float, optional
        The total per-trajectory budget ε. Required unless ``mechanism`` is a PointEM object.
    mechanism : "pointem" or PointEM, default "pointem"
        The mechanism whose channel is inverted. Only PointEM's channel is available in closed form (the
        marginal channel of TP/ATP per point is not), so other values raise ``ValueError``.
    max_km : float or None, default 0.001
        Snapping tolerance for geometry input (see :func:`visit_counts`).
    n_iter : int, default 200
        Maximum number of iterations of the iterative Bayesian update. Each iteration applies the channel
        twice; more iterations sharpen the estimate but also fit more of the sampling noise.
    tol : float, default 1e-6
        Stop when the L1 change of the estimate is at most ``tol`` times the number of visits.
    max_dense : int, default 3000
        Up to this |P| the m×m distance matrix is materialised once (8·m² bytes, 72 MB at m = 3000) and the
        channel of each length group as well; above it the channel is applied block by block, recomputing
        distances in every iteration (memory O(m·block), time O(m²) per iteration).

    Returns
    -------
    numpy.ndarray of float64, shape (m,)
        Estimated number of visits of the original data to each public point. Its sum equals the number of
        perturbed vertices that were assigned to a public point.

    Notes
    -----
    PointEM perturbs each point of a length-n trajectory independently with the exponential mechanism over
    P with budget ε_n = ε/n (rounded down, ALGORITHM §6.3), so for a true point x the output r has
    probability ``M_n[x, r] = exp(-ε_n d(x, P_r)/(2Δ)) / Z_n(x)`` with Δ the diameter of P. Trajectory
    lengths are public, so the output is split by length n, and for each group the expected output counts
    are ``E[y_n] = M_nᵀ v_n`` where v_n are the group's true visit counts. Each v_n is estimated by the
    iterative Bayesian update (Agrawal & Aggarwal 2001; the EM algorithm for this linear inverse problem),

        v ← v ⊙ M_n (y_n ⊘ M_nᵀ v),   started from the uniform vector,

    which keeps v ≥ 0 and Σ v = Σ y_n, and converges to a maximum-likelihood estimate. The estimates are
    summed over n. The target is the number of *visits* (with multiplicity), which equals the number of
    distinct visiting trajectories when no trajectory visits a point twice.

    Relation to :mod:`geoldp.estimate`: :func:`geoldp.estimate.visit_counts` with ``mechanism="pointem"``
    uses the same exponential-mechanism channel (same ε_n, Δ and haversine distance), but as the exact
    *per-trajectory* likelihood of a mixture over candidate trajectories, so it estimates *distinct*
    visiting trajectories per point or zone, with intervals, and never forms an m×m matrix. This function
    is kept as the per-point deconvolution of visit counts with multiplicity (a marginal channel, no
    intervals); the two agree in expectation when no trajectory visits a point twice.

    Runtime: O(m²) per iteration and length group (about 2 × 4·10⁶ multiply-adds per iteration at
    m = 2000, so seconds to a minute for a few length groups). Memory: O(m²) up to ``max_dense`` points,
    O(m · block) above.

    References
    ----------
    Agrawal, Aggarwal. On the design and quantification of privacy preserving data mining algorithms.
    PODS 2001.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.1, 0.0], [0.2, 0.0]])
    >>> est = debiased_visit_counts([[0], [2], [2, 1]], P, epsilon=10.0)
    >>> est.shape, round(float(est.sum()), 6)
    ((3,), 4.0)
    """
    caller = "debiased_visit_counts"
    mech_obj = None
    if isinstance(mechanism, str):
        if mechanism.lower() != "pointem":
            raise ValueError(
                f"Got mechanism={mechanism!r}; `mechanism` of {caller} must be 'pointem' (only its channel "
                "is "
                "known in closed form)."
            )
    else:
        if getattr(mechanism, "name", None) != "pointem":
            raise ValueError(f"The 'mechanism' of {caller} must be 'pointem' or a PointEM object.")
        mech_obj = mechanism
        if epsilon is None:
            epsilon = mechanism.epsilon
    if epsilon is None:
        raise ValueError(f"The 'epsilon' parameter of {caller} is required.")
    if (
        isinstance(epsilon, bool)
        or not isinstance(epsilon, numbers.Real)
        or not (0.0 < float(epsilon) < math.inf)
    ):
        raise ValueError(
            f"The 'epsilon' parameter of {caller} must be a float in the range (0, inf). Got {epsilon!r}."
        )
    for nm, val, lo in (("n_iter", n_iter, 1), ("max_dense", max_dense, 0)):
        if isinstance(val, bool) or not isinstance(val, numbers.Integral) or val < lo:
            raise ValueError(f"The '{nm}' parameter of {caller} must be an int >= {lo}. Got {val!r}.")
    max_km = check_max_km(max_km, caller=caller)
    pts = as_pointset(points, caller=caller)
    tr = trajectory_arrays(perturbed, pts, name="perturbed", caller=caller)
    idx, ok = _visited(tr, pts, max_km)
    lengths_per_vertex = np.repeat(tr.lengths, tr.lengths)
    m = pts.size
    dist = None
    if m <= max_dense:
        dist = np.empty((m, m))
        step = max(1, 1_000_000 // m)
        for i0 in range(0, m, step):
            dist[i0 : i0 + step] = _haversine_m(
                pts.lon[i0 : i0 + step, None], pts.lat[i0 : i0 + step, None], pts.lon, pts.lat
            )
    diameter = float(pts.diameter_m)
    if diameter <= 0.0:
        raise ValueError(f"The 'points' of {caller} must contain at least two distinct locations.")
    block = max(1, 2_000_000 // m)
    estimate = np.zeros(m)
    for n in np.unique(tr.lengths):
        sel = ok & (lengths_per_vertex == n)
        y = np.bincount(idx[sel], minlength=m).astype(np.float64)
        if y.sum() == 0:
            continue
        channel = _Channel(pts, diameter, _per_point_epsilon(epsilon, mech_obj, int(n)), dist, block)
        estimate += _ibu(channel, y, int(n_iter), float(tol))
    return estimate
