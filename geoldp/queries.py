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
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import shapely
from pyproj import CRS, Transformer

from geoldp.geo import EARTH_RADIUS_M, haversine_m, to_radians

__all__ = ["debiased_visit_counts", "range_count", "visit_counts"]

_EARTH_RADIUS_M = EARTH_RADIUS_M
_WGS84 = CRS.from_epsg(4326)


# --------------------------------------------------------------------------------------------------
# geometry helpers (delegate to geoldp.geo, the one implementation, when it is available)
# --------------------------------------------------------------------------------------------------


def _haversine_m(lon1: Any, lat1: Any, lon2: Any, lat2: Any) -> np.ndarray:
    """Haversine distance in metres between (lon, lat) degree arrays (broadcasting; geoldp.geo kernel)."""
    return np.asarray(haversine_m(lon1, lat1, lon2, lat2), dtype=np.float64)


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
    d_arc = _EARTH_RADIUS_M * np.arcsin(np.minimum(np.abs(s), 1.0))
    return np.where(inside, np.minimum(d_arc, d_end), d_end)


# --------------------------------------------------------------------------------------------------
# input normalisation (shared with geoldp.metrics)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Points:
    """Public point set as WGS84 degree arrays (plus the original object when it is a PointSet)."""

    lon: np.ndarray
    lat: np.ndarray
    pointset: Any = None

    @property
    def size(self) -> int:
        return int(self.lon.shape[0])

    def diameter_m(self) -> float:
        """Exact largest pairwise haversine distance (PointSet's cached value when available)."""
        if self.pointset is not None and hasattr(self.pointset, "diameter_m"):
            return float(self.pointset.diameter_m)
        best = 0.0
        block = max(1, 2_000_000 // max(self.size, 1))
        for i0 in range(0, self.size, block):
            d = _haversine_m(
                self.lon[i0 : i0 + block, None], self.lat[i0 : i0 + block, None], self.lon, self.lat
            )
            best = max(best, float(d.max()))
        return best

    def nearest(self, lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Index of the nearest public point (haversine) and the distance in metres."""
        if lon.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        ps = self.pointset
        if ps is not None and hasattr(ps, "nearest"):
            idx, dist = ps.nearest(lon, lat)
            return np.asarray(idx, dtype=np.int64), np.asarray(dist, dtype=np.float64)
        from sklearn.neighbors import BallTree

        lam_p, phi_p = to_radians(self.lon, self.lat)
        lam_q, phi_q = to_radians(lon, lat)
        tree = BallTree(np.column_stack([phi_p, lam_p]), metric="haversine")  # BallTree wants [lat, lon] rad
        _, ind = tree.query(np.column_stack([phi_q, lam_q]), k=1)
        idx = ind[:, 0].astype(np.int64)
        return idx, _haversine_m(lon, lat, self.lon[idx], self.lat[idx])


def _as_points(points: Any, *, caller: str) -> _Points:
    """Normalise a public point set: PointSet, GeoDataFrame/GeoSeries of Points, (m, 2) lon/lat array."""
    import geopandas as gpd

    if isinstance(points, _Points):
        return points
    if points is None:
        raise ValueError(
            f"The 'points' parameter of {caller} is required here (a PointSet or a GeoDataFrame of Points)."
        )
    if isinstance(points, gpd.GeoDataFrame):
        points = points.geometry
    if isinstance(points, gpd.GeoSeries):
        if points.crs is None:
            raise ValueError(f"The 'points' of {caller} have no CRS. Use `set_crs()` to declare it.")
        if len(points) and not bool((points.geom_type == "Point").all()):
            raise TypeError(f"The 'points' of {caller} must be Point geometries.")
        g = points.to_crs(_WGS84) if not CRS.from_user_input(points.crs).equals(_WGS84) else points
        lon = np.asarray(g.x, dtype=np.float64)
        lat = np.asarray(g.y, dtype=np.float64)
        pointset = None
    elif (
        hasattr(points, "lon")
        and hasattr(points, "lat")
        and not isinstance(points, (np.ndarray, pd.DataFrame))
    ):
        lon = np.asarray(points.lon, dtype=np.float64)
        lat = np.asarray(points.lat, dtype=np.float64)
        pointset = points
    else:
        arr = np.asarray(points, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != 2:
            raise TypeError(
                f"The 'points' parameter of {caller} must be a PointSet, a GeoDataFrame/GeoSeries of Points "
                f"or an (m, 2) array of (lon, lat). Got {type(points).__name__} instead."
            )
        lon, lat = arr[:, 0].copy(), arr[:, 1].copy()
        pointset = None
    if lon.size < 1 or not (np.all(np.isfinite(lon)) and np.all(np.isfinite(lat))):
        raise ValueError(f"The 'points' of {caller} must be a non-empty set of finite coordinates.")
    return _Points(lon, lat, pointset)


@dataclass(frozen=True)
class _Trajectories:
    """Flat representation: vertices of all trajectories in WGS84 degrees, grouped by ``offsets``."""

    lon: np.ndarray
    lat: np.ndarray
    offsets: np.ndarray  # int64, len = n_traj + 1
    crs: CRS  # CRS of ``xy`` (the input's CRS; EPSG:4326 for index input)
    xy: np.ndarray  # (N, 2) coordinates in ``crs``
    index: np.ndarray | None = None  # flat indices into P (index input only)
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def n_traj(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def codes(self) -> np.ndarray:
        """Trajectory position of every vertex."""
        return np.repeat(np.arange(self.n_traj, dtype=np.int64), self.lengths)

    def xy_in(self, crs: CRS) -> np.ndarray:
        """Vertex coordinates in ``crs`` (exact input values when ``crs`` is the input's CRS)."""
        if crs.equals(self.crs):
            return self.xy
        key = crs.to_wkt()
        if key not in self._cache:
            tr = Transformer.from_crs(_WGS84, crs, always_xy=True)
            x, y = tr.transform(self.lon, self.lat)
            self._cache[key] = np.column_stack([x, y])
        return self._cache[key]

    def segment_mask(self) -> np.ndarray:
        """Boolean mask over flat vertices 0..N-2: True where vertex k and k+1 are in the same trajectory."""
        same = np.ones(max(self.lon.shape[0] - 1, 0), dtype=bool)
        ends = self.offsets[1:-1] - 1
        same[ends[(ends >= 0) & (ends < same.shape[0])]] = False
        return same


def _is_geo(obj: Any) -> bool:
    import geopandas as gpd

    return isinstance(obj, (gpd.GeoDataFrame, gpd.GeoSeries))


def _as_trajectories(obj: Any, points: _Points | None, *, name: str, caller: str) -> _Trajectories:
    """Normalise trajectories: GeoDataFrame/GeoSeries of LineStrings, or a sequence of index arrays."""
    import geopandas as gpd

    if isinstance(obj, _Trajectories):
        return obj
    if isinstance(obj, gpd.GeoDataFrame):
        obj = obj.geometry
    if isinstance(obj, gpd.GeoSeries):
        if obj.crs is None:
            raise ValueError(
                f"The '{name}' trajectories of {caller} have no CRS. Use `set_crs()` to declare it."
            )
        geoms = np.asarray(obj.values, dtype=object)
        missing = shapely.is_missing(geoms) | shapely.is_empty(geoms)
        if missing.any():
            raise ValueError(
                f"Row {int(np.flatnonzero(missing)[0])} of '{name}' is an empty or missing geometry."
            )
        types = shapely.get_type_id(geoms)
        bad = ~np.isin(types, (0, 1, 4))  # Point, LineString, MultiPoint
        if bad.any():
            raise TypeError(
                f"Row {int(np.flatnonzero(bad)[0])} of '{name}' is not a LineString; trajectories must be "
                "LineStrings (or Points for length-1 trajectories)."
            )
        xy, idx = shapely.get_coordinates(geoms, return_index=True)
        counts = np.bincount(idx, minlength=geoms.shape[0]).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        if not np.all(np.isfinite(xy)):
            k = int(np.flatnonzero(~np.all(np.isfinite(xy), axis=1))[0])
            raise ValueError(f"Row {int(idx[k])} of '{name}' has a non-finite coordinate.")
        crs = CRS.from_user_input(obj.crs)
        if crs.equals(_WGS84):
            lon, lat = xy[:, 0].copy(), xy[:, 1].copy()
        else:
            tr = Transformer.from_crs(crs, _WGS84, always_xy=True)
            lon, lat = (np.asarray(v, dtype=np.float64) for v in tr.transform(xy[:, 0], xy[:, 1]))
        return _Trajectories(lon, lat, offsets, crs, xy)
    if isinstance(obj, (str, bytes)) or not hasattr(obj, "__len__"):
        raise TypeError(
            f"The '{name}' parameter of {caller} must be a GeoDataFrame/GeoSeries of LineStrings or a "
            "sequence "
            f"of index arrays. Got {type(obj).__name__} instead."
        )
    if points is None:
        raise ValueError(
            f"The 'points' parameter of {caller} is required when '{name}' is a sequence of index arrays."
        )
    arrays = [np.asarray(t) for t in obj]
    for i, a in enumerate(arrays):
        if (
            a.ndim != 1
            or a.shape[0] == 0
            or not (a.dtype.kind in "iu" or (a.dtype.kind == "f" and np.all(a == np.round(a))))
        ):
            raise ValueError(
                f"Row {i} of '{name}' must be a non-empty 1-D array of integer indices into points."
            )
    lengths = np.fromiter((a.shape[0] for a in arrays), dtype=np.int64, count=len(arrays))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    flat = np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, dtype=np.int64)
    bad = (flat < 0) | (flat >= points.size)
    if bad.any():
        row = int(np.searchsorted(offsets, np.flatnonzero(bad)[0], side="right") - 1)
        raise ValueError(f"Row {row} of '{name}' has an index outside [0, {points.size}).")
    lon, lat = points.lon[flat], points.lat[flat]
    return _Trajectories(lon, lat, offsets, _WGS84, np.column_stack([lon, lat]), flat)


# --------------------------------------------------------------------------------------------------
# regions
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Region:
    kind: str  # "polygon" | "circle"
    geom: Any = None  # shapely geometry (polygon)
    crs: CRS | None = None  # CRS of geom; None = the trajectories' CRS
    lon: float = 0.0
    lat: float = 0.0
    radius_m: float = 0.0


def _is_circle(obj: Any) -> bool:
    return (
        isinstance(obj, (tuple, list, np.ndarray))
        and len(obj) == 3
        and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in obj)
    )


def _circle(obj: Any, caller: str) -> _Region:
    lon, lat, r = (float(v) for v in obj)
    if not (math.isfinite(lon) and math.isfinite(lat) and -90.0 <= lat <= 90.0 and -180.0 <= lon <= 180.0):
        raise ValueError(
            f"A circle region of {caller} must have a finite centre (lon, lat) in WGS84 degrees."
        )
    if not (0.0 <= r < math.inf):
        raise ValueError(f"A circle region of {caller} must have a radius_km in [0, inf). Got {r!r} instead.")
    return _Region("circle", lon=lon, lat=lat, radius_m=r * 1000.0)


def _polygon(geom: Any, crs: CRS | None, caller: str) -> _Region:
    if not isinstance(geom, shapely.Geometry) or shapely.get_type_id(geom) not in (3, 6):
        raise TypeError(
            f"A region of {caller} must be a Polygon, a MultiPolygon or a circle (lon, lat, radius_km). "
            f"Got {type(geom).__name__} instead."
        )
    if geom.is_empty:
        raise ValueError(f"A polygon region of {caller} is empty.")
    shapely.prepare(geom)
    return _Region("polygon", geom=geom, crs=crs)


def _as_regions(regions: Any, *, caller: str) -> tuple[list[_Region], bool]:
    """Return the list of regions and whether a single region was given."""
    import geopandas as gpd

    if isinstance(regions, gpd.GeoDataFrame):
        regions = regions.geometry
    if isinstance(regions, gpd.GeoSeries):
        if regions.crs is None:
            raise ValueError(f"The 'regions' of {caller} have no CRS. Use `set_crs()` to declare it.")
        crs = CRS.from_user_input(regions.crs)
        return [_polygon(g, crs, caller) for g in regions.values], False
    if isinstance(regions, shapely.Geometry):
        return [_polygon(regions, None, caller)], True
    if _is_circle(regions):
        return [_circle(regions, caller)], True
    if isinstance(regions, (list, tuple)):
        out = [_circle(r, caller) if _is_circle(r) else _polygon(r, None, caller) for r in regions]
        return out, False
    raise TypeError(
        f"The 'region' parameter of {caller} must be a Polygon, a circle (lon, lat, radius_km), a list of "
        f"those or a GeoSeries of Polygons. Got {type(regions).__name__} instead."
    )


def _passes_through(tr: _Trajectories, region: _Region, how: str) -> np.ndarray:
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
    return np.bincount(tr.codes, weights=near, minlength=tr.n_traj) > 0


def _check_how(how: str, caller: str) -> str:
    if how not in ("points", "line"):
        raise ValueError(f"Got how={how!r}; `how` of {caller} must be one of ('points', 'line').")
    return how


def _range_counts(tr: _Trajectories, regions: list[_Region], how: str) -> np.ndarray:
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
    how = _check_how(how, caller)
    pts = _as_points(points, caller=caller) if points is not None else None
    tr = _as_trajectories(gdf, pts, name="gdf", caller=caller)
    regs, single = _as_regions(region, caller=caller)
    counts = _range_counts(tr, regs, how)
    return int(counts[0]) if single else counts


def _visited(tr: _Trajectories, pts: _Points, max_km: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Per vertex: public point index and a validity mask (False when farther than ``max_km``)."""
    if tr.index is not None:
        return tr.index, np.ones(tr.index.shape[0], dtype=bool)
    idx, dist = pts.nearest(tr.lon, tr.lat)
    ok = np.ones(idx.shape[0], dtype=bool) if max_km is None else dist <= max_km * 1000.0
    return idx, ok


def _check_max_km(max_km: Any, caller: str) -> float | None:
    if max_km is None:
        return None
    if (
        isinstance(max_km, bool)
        or not isinstance(max_km, numbers.Real)
        or not (0.0 <= float(max_km) < math.inf)
    ):
        raise ValueError(
            f"The 'max_km' parameter of {caller} must be None or a float in [0, inf). Got {max_km!r}."
        )
    return float(max_km)


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

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.01, 0.0], [0.02, 0.0]])
    >>> visit_counts([[0, 1, 0], [1, 2]], P).tolist()
    [1, 2, 1]
    """
    caller = "visit_counts"
    max_km = _check_max_km(max_km, caller)
    pts = _as_points(points, caller=caller)
    tr = _as_trajectories(gdf, pts, name="gdf", caller=caller)
    return _distinct_visits(tr, pts, max_km)


def _distinct_visits(tr: _Trajectories, pts: _Points, max_km: float | None) -> np.ndarray:
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

    def __init__(
        self, pts: _Points, diameter_m: float, eps: float, dist: np.ndarray | None, block: int
    ) -> None:
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
    max_km = _check_max_km(max_km, caller)
    pts = _as_points(points, caller=caller)
    tr = _as_trajectories(perturbed, pts, name="perturbed", caller=caller)
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
        diameter = (
            float(pts.pointset.diameter_m)
            if pts.pointset is not None and hasattr(pts.pointset, "diameter_m")
            else float(dist.max())
        )
    else:
        diameter = pts.diameter_m()
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
