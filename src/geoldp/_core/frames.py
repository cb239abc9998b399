"""Conversion between GeoPandas objects and index/coordinate arrays (private).

This module is the only place where GeoPandas objects meet the array code. For releases
(:mod:`geoldp._release`):

1. :func:`check_frame` validates the container (a GeoDataFrame with an active geometry column and rows);
2. :func:`extract` turns its rows into validated WGS 84 ``(lon, lat)`` coordinate arrays, one trajectory
   per LineString row, or Point rows grouped by ``traj_id_col`` and ordered by ``time_col``;
3. :func:`snap` maps every vertex to its nearest public point (``PointSet.nearest``, a haversine BallTree),
   giving the index sequences the engine perturbs;
4. :func:`build_geometry` maps perturbed index sequences back to geometries made of public points in the
   input CRS. The public points are transformed once, so every output vertex is bit-identical to a
   transformed public point.

For analyses of (original or released) trajectories (:mod:`geoldp.queries`, :mod:`geoldp.metrics`,
:mod:`geoldp.plotting`):

5. :func:`as_pointset` normalises a public point set (PointSet, GeoDataFrame/GeoSeries of Points or an
   ``(m, 2)`` lon/lat array) to a :class:`~geoldp.PointSet`, whose ``nearest`` is the one snapper;
6. :func:`trajectory_arrays` turns LineStrings (any CRS) or index arrays into :class:`TrajectoryArrays`;
7. :func:`as_regions` turns polygons and ``(lon, lat, radius_km)`` circles into :class:`Region` objects.

Error messages name the **row position** (0-based, as in ``gdf.iloc``) and the reason, never coordinates,
identifiers or timestamps (nothing private leaks through a message). All validation happens before
any random draw.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import shapely
from pyproj import CRS, Transformer

from geoldp._core.errors import GeoLDPWarning, PrivacyWarning
from geoldp._core.validation import available_columns, check_no_missing, check_time_kinds

__all__ = [
    "TYPE_NAMES",
    "WGS84",
    "Region",
    "TrajectoryArrays",
    "accessor_target",
    "as_pointset",
    "as_regions",
    "build_geometry",
    "check_columns",
    "check_frame",
    "extract",
    "is_circle",
    "is_wgs84",
    "public_xy",
    "require_crs",
    "resolve_points",
    "snap",
    "trajectory_arrays",
    "transform_xy",
    "warn_if_fixes",
]

WGS84 = CRS.from_epsg(4326)

_POINT = 0
_LINESTRING = 1
#: shapely's geometry type ids, by name.
TYPE_NAMES = {
    0: "Point",
    1: "LineString",
    2: "LinearRing",
    3: "Polygon",
    4: "MultiPoint",
    5: "MultiLineString",
    6: "MultiPolygon",
    7: "GeometryCollection",
}
_ON_INVALID = ("raise", "null")


# --------------------------------------------------------------------------------------------------
# containers and columns
# --------------------------------------------------------------------------------------------------


#: How to get the object each ``.ldp`` accessor needs, by (package, class).
_ACCESSOR_FIXES = {
    ("geopandas", "GeoDataFrame"): "Use geopandas.GeoDataFrame(df, geometry=..., crs=...) first.",
    (
        "geopandas",
        "GeoSeries",
    ): "Use geopandas.GeoSeries(values, crs=...) first.",
    ("dask_geopandas", "GeoDataFrame"): "Use dask_geopandas.from_dask_dataframe(ddf, geometry=...) first.",
}


def accessor_target(obj: Any, kind: type) -> Any:
    """``obj`` when it is a ``kind``: the check of every ``.ldp`` accessor, with one message.

    Otherwise an ``AttributeError`` (so pandas reports the accessor as missing for that object) naming the
    class needed and how to get one.
    """
    if not isinstance(obj, kind):
        package = kind.__module__.split(".")[0]
        needed = f"{package}.{kind.__name__}"
        fix = _ACCESSOR_FIXES.get((package, kind.__name__), "")
        got = type(obj).__name__
        raise AttributeError(f"The .ldp accessor requires a {needed}, got {got}. {fix}".rstrip())
    return obj


def check_frame(obj: Any, *, caller: str, name: str = "trajectories") -> Any:
    """Check that ``obj`` is a GeoDataFrame with rows and an active geometry column of geometries."""
    import geopandas as gpd

    if not isinstance(obj, gpd.GeoDataFrame):
        kind = type(obj).__name__
        hint = (
            " Use geopandas.GeoDataFrame(df, geometry=..., crs=...) first."
            if isinstance(obj, pd.DataFrame | pd.Series | list | tuple | np.ndarray)
            else ""
        )
        raise TypeError(
            f"The {name!r} parameter of {caller} must be a geopandas.GeoDataFrame. Got {kind}.{hint}"
        )
    geom_col = obj._geometry_column_name
    if geom_col is None or geom_col not in obj.columns:
        raise ValueError(
            f"The {name} GeoDataFrame passed to {caller} has no active geometry column. "
            "Use set_geometry() to choose one."
        )
    if not isinstance(obj[geom_col].dtype, gpd.array.GeometryDtype):
        raise TypeError(
            f"The geometry column {geom_col!r} of the {name} passed to {caller} does not hold geometries. "
            "Use set_geometry() with a column of shapely geometries."
        )
    if len(obj) == 0:
        raise ValueError(f"The {name} GeoDataFrame passed to {caller} has no rows.")
    return obj


def check_columns(gdf: Any, columns: Any, *, parameter: str, caller: str) -> list[str]:
    """Check that every column in ``columns`` exists (the error lists column names only); return a list."""
    if columns is None:
        return []
    if isinstance(columns, str) or not hasattr(columns, "__iter__"):
        columns = [columns]
    columns = list(columns)
    missing = [c for c in columns if c not in gdf.columns]
    if missing:
        raise ValueError(
            f"The {parameter!r} parameter of {caller} names columns that are not in the frame: "
            f"{[str(c) for c in missing]}. {available_columns(gdf.columns)}"
        )
    return columns


def is_wgs84(crs: Any) -> bool:
    """Whether ``crs`` is EPSG:4326 (in either axis order), so no transformation is needed."""
    crs = CRS.from_user_input(crs)
    return bool(crs.equals(WGS84, ignore_axis_order=True))


def transform_xy(x: Any, y: Any, source: Any, target: Any) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates ``(x, y)`` in ``source`` as float64 arrays in ``target`` (always_xy: lon before lat)."""
    tx, ty = Transformer.from_crs(source, target, always_xy=True).transform(x, y)
    return np.asarray(tx, dtype=np.float64), np.asarray(ty, dtype=np.float64)


def require_crs(crs: Any, *, what: str, caller: str) -> CRS:
    """``crs`` as a pyproj CRS; a ValueError naming ``what`` (plural) and ``caller`` when it is missing."""
    if crs is None:
        raise ValueError(
            f"The {what} passed to {caller} have no CRS. Use set_crs() to declare it "
            "(geoldp never assumes EPSG:4326)."
        )
    return CRS.from_user_input(crs)


# --------------------------------------------------------------------------------------------------
# rows -> trajectories
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrajectoryArrays:
    """Trajectories as flat WGS 84 vertex arrays (internal): what every reader of trajectories returns.

    :func:`extract` reads the rows of a release (grouping Point rows, ``on_invalid``);
    :func:`trajectory_arrays` reads the inputs of an analysis (geometries or index arrays into P). Both
    fill every attribute and word their errors alike (``Row position {pos} of the ... passed to
    {caller} ...``).

    Attributes
    ----------
    lon, lat : ndarray of float64, shape (N,)
        WGS 84 coordinates of all vertices, trajectory after trajectory.
    offsets : ndarray of int64, shape (T + 1,)
        Trajectory ``t`` is ``lon[offsets[t]:offsets[t + 1]]``.
    crs : pyproj.CRS
        The input's CRS (EPSG:4326 for index input).
    kind : {"LineString", "Point"}
        Geometry type of the input rows (and of a release's output rows); "Point" only when every row is
        a Point.
    vertex_rows : ndarray of int64, shape (N,)
        Row position each vertex came from (for LineStrings, all vertices of a trajectory share it).
    traj_rows : ndarray of int64, shape (T,)
        The row position of each trajectory; for grouped Point rows, that of its first (earliest) vertex.
    valid : ndarray of bool, shape (n_rows,)
        Rows that take part (``False`` only for rows nulled by ``on_invalid="null"``).
    n_zm_rows : int
        Number of rows whose Z or M values were dropped.
    xy : ndarray of float64, shape (N, 2), optional
        The vertices in ``crs``, exactly as given (analysis input only).
    index : ndarray of int64, shape (N,), optional
        Flat indices into the public points (index input only).
    """

    lon: np.ndarray
    lat: np.ndarray
    offsets: np.ndarray
    crs: CRS
    kind: str
    vertex_rows: np.ndarray
    traj_rows: np.ndarray
    valid: np.ndarray
    n_zm_rows: int = 0
    xy: np.ndarray | None = None
    index: np.ndarray | None = None
    # per-object memo of reprojected vertices (lives and dies with this object, never module-level)
    _reprojected: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    #: per-object memo for analyses of one call (e.g. zone assignments); dies with this object
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def n_trajectories(self) -> int:
        """Number of trajectories."""
        return int(self.offsets.shape[0] - 1)

    @property
    def lengths(self) -> np.ndarray:
        """Number of vertices of each trajectory."""
        return np.diff(self.offsets)

    @property
    def codes(self) -> np.ndarray:
        """Trajectory position of every vertex."""
        return np.repeat(np.arange(self.n_trajectories, dtype=np.int64), self.lengths)

    def xy_in(self, crs: CRS) -> np.ndarray:
        """Vertex coordinates in ``crs`` (exact input values when ``crs`` is the input's CRS)."""
        if self.xy is not None and crs.equals(self.crs):
            return self.xy
        key = crs.to_wkt()
        if key not in self._reprojected:
            self._reprojected[key] = np.column_stack(transform_xy(self.lon, self.lat, WGS84, crs))
        return self._reprojected[key]

    def segment_mask(self) -> np.ndarray:
        """Boolean mask over flat vertices 0..N-2: True where vertex k and k+1 are in the same trajectory."""
        same = np.ones(max(self.lon.shape[0] - 1, 0), dtype=bool)
        ends = self.offsets[1:-1] - 1
        same[ends[(ends >= 0) & (ends < same.shape[0])]] = False
        return same


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _raise_type_problems(
    type_ids: np.ndarray, missing: np.ndarray, *, caller: str, one_point_rows: bool = False
) -> str:
    """Check geometry types; return the kind ("Point" or "LineString") or raise TypeError.

    With ``one_point_rows`` Point rows may stand among LineString rows (the kind is then "LineString").
    """
    present = ~missing
    for pos in np.flatnonzero(present & (type_ids == 5))[:1]:
        raise TypeError(
            f"Row position {pos} of the trajectories passed to {caller} is a MultiLineString. "
            "geoldp perturbs one trajectory per row: use gdf.explode(index_parts=False) to split it into "
            "LineString rows first. Each part then becomes a separate release that costs its own epsilon."
        )
    bad = present & ~np.isin(type_ids, (_POINT, _LINESTRING))
    pos = _first(bad)
    if pos is not None:
        name = TYPE_NAMES.get(int(type_ids[pos]), "unknown geometry")
        extra = (
            " A LinearRing is not a trajectory: convert it with shapely.LineString(ring.coords)."
            if type_ids[pos] == 2
            else ""
        )
        raise TypeError(
            f"Row position {pos} of the trajectories passed to {caller} is a {name}; geoldp accepts "
            f"LineString rows (one trajectory per row) or Point rows (grouped by traj_id_col).{extra}"
        )
    first = _first(present)
    if first is None:  # every geometry is missing
        return "LineString"
    kind_id = int(type_ids[first])
    if one_point_rows and (present & (type_ids == _LINESTRING)).any():
        return "LineString"
    pos = _first(present & (type_ids != kind_id))
    if pos is not None:
        raise TypeError(
            f"Mixed geometry types in the trajectories passed to {caller}: row position {first} is a "
            f"{TYPE_NAMES[kind_id]} but row position {pos} is a {TYPE_NAMES[int(type_ids[pos])]}. "
            "Use one type for all rows (LineStrings, or Points grouped by traj_id_col)."
        )
    return TYPE_NAMES[kind_id]


#: The row problems both readers refuse, worded once: ``{head}`` is "Row position {pos} of the ... passed
#: to {caller}", ``{fix}`` what the reader lets the user do about it.
_ROW_PROBLEMS = {
    "missing": "{head} has a missing (None) geometry. {fix}",
    "empty": "{head} has an empty geometry. {fix}",
    "nan": "{head} has a NaN coordinate. {fix}",
    "inf": "{head} has an infinite coordinate. {fix}",
    "transform": "{head} cannot be transformed to EPSG:4326 (outside the area of its CRS). {fix}",
    "range": (
        "{head} has a coordinate outside lon [-180, 180] / lat [-90, 90] in EPSG:4326 (is the CRS right? x "
        "must be the longitude). {fix}"
    ),
}


def _row_problem(
    what: str, pos: int, *, trajectories: str, caller: str, fix: str = "Drop or repair it."
) -> str:
    """The message for row problem ``what`` of row position ``pos`` (see :data:`_ROW_PROBLEMS`)."""
    head = f"Row position {pos} of the {trajectories} passed to {caller}"
    return _ROW_PROBLEMS[what].format(head=head, fix=fix)


def _time_key(values: pd.Series, rows: np.ndarray, *, caller: str, time_col: str) -> np.ndarray:
    """Ordinal sort key for a time column (ties share a key); raises for NaT/NaN.

    ``rows`` holds the original row positions of ``values``, so the error names the user's row.
    """
    check_time_kinds(values, time_col, caller=caller)  # numbers and text: no common time order
    check_no_missing(values, what="time", column=time_col, caller=caller, rows=rows)
    try:
        codes, _ = pd.factorize(values, sort=True)
    except TypeError:
        raise TypeError(
            f"The time column {time_col!r} passed to {caller} holds values that cannot be ordered. "
            "Use datetimes or numbers."
        ) from None
    return np.asarray(codes, dtype=np.int64)


def extract(
    gdf: Any,
    *,
    traj_id_col: Any = None,
    time_col: Any = None,
    on_invalid: str = "raise",
    caller: str,
    warn_zm: bool = True,
    one_point_rows: bool = False,
) -> TrajectoryArrays:
    """Validate the rows of ``gdf`` and extract WGS 84 trajectories.

    Parameters
    ----------
    gdf : GeoDataFrame
        Already checked by :func:`check_frame`.
    traj_id_col, time_col : column label, optional
        For Point rows: group by ``traj_id_col`` (trajectories in order of first appearance), order each
        group by ``time_col`` with a stable sort (ties keep the input order). Without ``traj_id_col``
        every Point row is a trajectory of length 1. Ignored for LineString rows except for validation.
    on_invalid : {"raise", "null"}
        What to do with a row whose geometry is missing, empty, or has NaN/inf/out-of-range coordinates.
        ``"null"`` leaves it out (its output is None), which reveals which rows were invalid.
    warn_zm : bool
        Emit one :class:`GeoLDPWarning` when Z/M values are dropped.
    one_point_rows : bool
        Accept Point rows among LineString rows, each a trajectory of length 1 (without ``traj_id_col``
        only). A release's input refuses the mix (a Point row there may be a fix of another row's
        trajectory); a release collected in the field holds it when a device's trajectory had one point.
    """
    if on_invalid not in _ON_INVALID:
        raise ValueError(f"Got on_invalid={on_invalid!r}; `on_invalid` must be one of {_ON_INVALID}.")
    crs = require_crs(gdf.crs, what="trajectories", caller=caller)
    missing_cols = [str(c) for c in (traj_id_col, time_col) if c is not None and c not in gdf.columns]
    if missing_cols:
        raise ValueError(
            f"{caller}: column(s) {missing_cols} not found (traj_id_col/time_col). "
            f"{available_columns(gdf.columns)}"
        )
    n_rows = len(gdf)
    geoms = np.asarray(gdf.geometry.values, dtype=object)
    missing = shapely.is_missing(geoms)
    type_ids = shapely.get_type_id(geoms)
    kind = _raise_type_problems(
        type_ids, missing, caller=caller, one_point_rows=one_point_rows and traj_id_col is None
    )

    problem = np.full(n_rows, "", dtype=object)

    def mark(mask: np.ndarray, what: str) -> None:
        sel = mask & (problem == "")
        problem[sel] = what

    mark(missing, "missing")
    empty = np.zeros(n_rows, dtype=bool)
    empty[~missing] = shapely.is_empty(geoms[~missing])
    mark(empty, "empty")

    ok = ~missing & ~empty
    zm = np.zeros(n_rows, dtype=bool)
    has_m = getattr(shapely, "has_m", None)  # shapely >= 2.1
    zm[ok] = shapely.has_z(geoms[ok]) | (has_m(geoms[ok]) if has_m is not None else False)
    coords, vrow = shapely.get_coordinates(geoms[ok], include_z=False, return_index=True)
    rows_ok = np.flatnonzero(ok)
    vrow = rows_ok[vrow]  # vertex -> row position
    x = np.ascontiguousarray(coords[:, 0], dtype=np.float64)
    y = np.ascontiguousarray(coords[:, 1], dtype=np.float64)

    def rows_with(bad_vertex: np.ndarray) -> np.ndarray:
        m = np.zeros(n_rows, dtype=bool)
        m[vrow[bad_vertex]] = True
        return m

    mark(rows_with(np.isnan(x) | np.isnan(y)), "nan")
    mark(rows_with(np.isinf(x) | np.isinf(y)), "inf")
    finite = np.isfinite(x) & np.isfinite(y)

    if is_wgs84(crs):
        lon, lat = x, y
    else:
        lon = np.full_like(x, np.nan)
        lat = np.full_like(y, np.nan)
        if finite.any():
            tr = Transformer.from_crs(crs, WGS84, always_xy=True)
            lon[finite], lat[finite] = tr.transform(x[finite], y[finite], errcheck=False)
        mark(rows_with(finite & ~(np.isfinite(lon) & np.isfinite(lat))), "transform")
    with np.errstate(invalid="ignore"):
        in_range = (lon >= -180.0) & (lon <= 180.0) & (lat >= -90.0) & (lat <= 90.0)
    mark(rows_with(~in_range), "range")

    # grouping columns, validated on rows that take part
    bad_rows = problem != ""
    if on_invalid == "raise":
        pos = _first(bad_rows)
        if pos is not None:
            fix = "Drop or repair it (or pass on_invalid='null' to output None for such rows)."
            raise ValueError(
                _row_problem(problem[pos], pos, trajectories="trajectories", caller=caller, fix=fix)
            )
    valid = ~bad_rows
    n_zm_rows = int((zm & valid).sum())
    if warn_zm and n_zm_rows:
        warnings.warn(
            f"Z/M values of {n_zm_rows} row(s) were dropped: geoldp perturbs 2-D locations only, and the "
            "output is 2-D.",
            GeoLDPWarning,
            stacklevel=4,
        )

    keep_v = valid[vrow]
    lon, lat, vrow = lon[keep_v], lat[keep_v], vrow[keep_v]  # new contiguous float64 arrays

    if kind == "LineString":
        # vertices are already grouped by row, rows in input order
        traj_rows = np.flatnonzero(valid)
        counts = np.bincount(vrow, minlength=n_rows)[traj_rows]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return TrajectoryArrays(
            lon, lat, offsets, crs, kind, vrow.astype(np.int64), traj_rows.astype(np.int64), valid, n_zm_rows
        )

    # Point rows: one vertex per valid row (vrow == valid row positions, in order)
    rows = vrow.astype(np.int64)
    if traj_id_col is None:
        offsets = np.arange(len(rows) + 1, dtype=np.int64)
        return TrajectoryArrays(lon, lat, offsets, crs, kind, rows, rows.copy(), valid, n_zm_rows)

    ids = gdf[traj_id_col].iloc[rows]
    check_no_missing(ids, what="trajectory id", column=traj_id_col, caller=caller, rows=rows)
    try:
        codes, _ = pd.factorize(ids, sort=False)  # trajectories in order of first appearance
    except TypeError:
        raise TypeError(
            f"The trajectory id column {traj_id_col!r} passed to {caller} holds unhashable values."
        ) from None
    codes = np.asarray(codes, dtype=np.int64)
    if time_col is not None:
        tkey = _time_key(gdf[time_col].iloc[rows], rows, caller=caller, time_col=time_col)
        order = np.lexsort((np.arange(len(rows)), tkey, codes))
    else:
        order = np.lexsort((np.arange(len(rows)), codes))
    counts = np.bincount(codes, minlength=int(codes.max()) + 1 if codes.size else 0)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    rows_sorted = rows[order]
    traj_rows = rows_sorted[offsets[:-1]]
    return TrajectoryArrays(
        lon[order], lat[order], offsets, crs, kind, rows_sorted, traj_rows, valid, n_zm_rows
    )


# --------------------------------------------------------------------------------------------------
# public points
# --------------------------------------------------------------------------------------------------


def resolve_points(points: Any, *, caller: str) -> tuple[Any, Any]:
    """``(PointSet, source)`` of the public points of a release: :func:`as_pointset` with ``release=True``.

    ``source`` is the original GeoDataFrame/GeoSeries (or None for a PointSet); when its CRS equals the
    trajectories' CRS its own coordinates are used for the output vertices (:func:`public_xy`).
    """
    ps = as_pointset(points, caller=caller, release=True)
    return ps, None if ps is points else points


def public_xy(ps: Any, crs: CRS, source: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates of the public points in ``crs``, computed once (output vertices are taken from here).

    In EPSG:4326 these are the PointSet's stored coordinates. If the public points were given as a
    GeoDataFrame/GeoSeries already in ``crs`` (and the PointSet kept all of them in order), their own
    coordinates are used, so the output vertices are bit-identical to the user's public points.
    """
    if is_wgs84(crs):
        return np.asarray(ps.lon, dtype=np.float64), np.asarray(ps.lat, dtype=np.float64)
    if source is not None and source.crs is not None and CRS.from_user_input(source.crs).equals(crs):
        geoms = np.asarray(
            source.geometry.values if hasattr(source, "geometry") else source.values, dtype=object
        )
        if len(geoms) == len(ps):
            sx = shapely.get_x(geoms)
            sy = shapely.get_y(geoms)
            lon_chk, lat_chk = Transformer.from_crs(crs, WGS84, always_xy=True).transform(sx, sy)
            if np.array_equal(lon_chk, np.asarray(ps.lon)) and np.array_equal(lat_chk, np.asarray(ps.lat)):
                return np.asarray(sx, dtype=np.float64), np.asarray(sy, dtype=np.float64)
    return transform_xy(np.asarray(ps.lon), np.asarray(ps.lat), WGS84, crs)


# --------------------------------------------------------------------------------------------------
# snapping
# --------------------------------------------------------------------------------------------------


def snap(
    ft: TrajectoryArrays,
    ps: Any,
    *,
    snap_max_km: float | None,
    caller: str,
    warn: bool = True,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Snap every vertex to its nearest public point.

    Returns
    -------
    sequences : list of int64 arrays
        One index sequence per trajectory.
    dist_m : ndarray of float64
        Snap distance of every vertex, in metres (local information: never put it in an output).

    Raises
    ------
    ValueError
        If ``snap_max_km`` is set and a vertex is farther than that from every public point (the message
        names the first row position and the counts).

    Warns
    -----
    GeoLDPWarning
        When vertices lie farther from P than its diameter Δ (counts only). The mechanism stays private for
        such inputs (ALGORITHM.md §9.3), but their outputs cannot reflect where they were.
    """
    if len(ft.lon):
        idx, dist = ps.nearest(ft.lon, ft.lat)
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        dist = np.asarray(dist, dtype=np.float64).reshape(-1)
    else:
        idx = np.zeros(0, dtype=np.int64)
        dist = np.zeros(0, dtype=np.float64)
    if snap_max_km is not None:
        far = dist > snap_max_km * 1000.0
        if far.any():
            rows = np.unique(ft.vertex_rows[far])
            raise ValueError(
                f"{int(far.sum())} vertex(es) in {rows.size} row(s) of the trajectories passed to {caller} "
                f"are farther than snap_max_km={snap_max_km:g} km from the nearest public point (first: row "
                f"position {int(rows[0])}). Drop those rows, use a denser public point set, or raise "
                "snap_max_km."
            )
    elif warn and dist.size:
        diameter_m = float(ps.diameter_m)
        far = dist > diameter_m
        if far.any():
            n_rows = np.unique(ft.vertex_rows[far]).size
            warnings.warn(
                f"{int(far.sum())} vertex(es) in {n_rows} row(s) are farther from the nearest public point "
                f"than the diameter of the public point set ({diameter_m / 1000.0:.3g} km). They are snapped "
                "anyway (the guarantee holds for any input), but the output cannot reflect where they were. "
                "Pass snap_max_km=... to turn this into an error.",
                GeoLDPWarning,
                stacklevel=4,
            )
    bounds = np.asarray(ft.offsets).tolist()  # Python ints slice faster than numpy scalars
    sequences = [idx[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return sequences, dist


# --------------------------------------------------------------------------------------------------
# indices -> geometries
# --------------------------------------------------------------------------------------------------


def build_geometry(
    ft: TrajectoryArrays,
    outputs: list[np.ndarray],
    xy: tuple[np.ndarray, np.ndarray],
    n_rows: int,
) -> np.ndarray:
    """Turn perturbed index sequences into a geometry array aligned with the input rows.

    Rows left out by ``on_invalid="null"`` get ``None``.
    """
    if ft.n_trajectories == 0:
        return np.full(n_rows, None, dtype=object)
    px, py = xy
    try:
        flat = np.concatenate(outputs)
    except ValueError:  # e.g. 0-d entries
        flat = None
    if flat is None or flat.ndim != 1 or flat.dtype != np.int64:  # not 1-d int64 arrays: the careful way
        flat = np.concatenate([np.asarray(o, dtype=np.int64).reshape(-1) for o in outputs])
    if flat.size != len(ft.lon):
        raise RuntimeError("engine returned sequences of the wrong length")  # pragma: no cover
    return geometry_from_coords(ft, np.column_stack([px[flat], py[flat]]), n_rows)


def geometry_from_coords(ft: TrajectoryArrays, coords: np.ndarray, n_rows: int) -> np.ndarray:
    """A geometry array aligned with the input rows, from output vertices ``coords`` (N, 2).

    ``coords`` are in ``ft``'s vertex order; rows left out by ``on_invalid="null"`` get ``None``.
    """
    result = np.full(n_rows, None, dtype=object)
    if ft.n_trajectories == 0:
        return result
    if ft.kind == "LineString":
        lengths = np.asarray(ft.lengths)
        one = lengths == 1  # a one-point trajectory (a Point row among LineStrings) stays a Point
        traj_of_vertex = np.repeat(np.arange(ft.n_trajectories), lengths)
        if one.any():
            single = one[traj_of_vertex]
            result[ft.traj_rows[one]] = shapely.points(coords[single])
            result[ft.traj_rows[~one]] = shapely.linestrings(
                coords[~single], indices=np.repeat(np.arange(int((~one).sum())), lengths[~one])
            )
        else:
            result[ft.traj_rows] = shapely.linestrings(coords, indices=traj_of_vertex)
    else:
        result[ft.vertex_rows] = shapely.points(coords)
    return result


# --------------------------------------------------------------------------------------------------
# analysis inputs: public points, trajectories as arrays, regions
# --------------------------------------------------------------------------------------------------


def as_pointset(points: Any, *, caller: str, release: bool = False) -> Any:
    """The one reader of a public point set: a :class:`~geoldp.PointSet` (in the input's order).

    Accepts a PointSet (returned as it is) or a GeoDataFrame/GeoSeries of Points with a CRS; for an
    analysis (``release=False``) also an ``(m, 2)`` array of (lon, lat) degrees. For an analysis duplicate
    locations are kept silently (it counts per position of P); for a release the PointSet's duplicate
    warning is given, since duplicates weigh on the mechanism.

    Raises
    ------
    ValueError
        ``points`` is None, has no CRS, has a missing or empty row, or is not a set of at least two finite
        locations.
    TypeError
        A row that is not a Point, or another container.
    """
    import geopandas as gpd

    from geoldp._core.pointset import PointSet

    if isinstance(points, PointSet):
        return points
    if points is None:
        raise ValueError(
            f"The 'points' parameter of {caller} is required here (a PointSet or a GeoDataFrame of Points)."
        )
    if isinstance(points, gpd.GeoDataFrame):
        points = points.geometry
    if isinstance(points, gpd.GeoSeries):
        require_crs(points.crs, what="public points", caller=caller)
        geoms = np.asarray(points.values, dtype=object)
        pos = _first(shapely.is_missing(geoms) | shapely.is_empty(geoms))
        if pos is not None:
            raise ValueError(
                f"Row position {pos} of the public points passed to {caller} is missing or empty."
            )
        types = shapely.get_type_id(geoms)
        pos = _first(types != _POINT)
        if pos is not None:
            raise TypeError(
                f"Row position {pos} of the public points passed to {caller} is a "
                f"{TYPE_NAMES.get(int(types[pos]), 'geometry')}; public points must be Points."
            )
        g = points if is_wgs84(points.crs) else points.to_crs(WGS84)
        lon = np.asarray(g.x, dtype=np.float64)
        lat = np.asarray(g.y, dtype=np.float64)
    else:
        arr = np.asarray(points) if not isinstance(points, pd.DataFrame) else points.to_numpy()
        shape_ok = arr.dtype != object and arr.dtype.kind in "iuf" and arr.ndim == 2 and arr.shape[1] == 2
        if release or not shape_ok:
            arrays = "" if release else ", or an (m, 2) array of (lon, lat)"
            raise TypeError(
                f"The 'points' parameter of {caller} must be a geoldp.PointSet or a GeoDataFrame/GeoSeries "
                f"of Points{arrays}. Got {type(points).__name__}."
            )
        arr = np.asarray(arr, dtype=np.float64)
        lon, lat = arr[:, 0].copy(), arr[:, 1].copy()
    if lon.size < 2 or not (np.all(np.isfinite(lon)) and np.all(np.isfinite(lat))):
        raise ValueError(
            f"The public points passed to {caller} must be a set of at least 2 finite locations (lon, lat); "
            f"got {lon.size}."
        )
    if release:
        return PointSet(lon, lat)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GeoLDPWarning)  # duplicate locations: see above
        return PointSet(lon, lat)


def _to_wgs84(x: np.ndarray, y: np.ndarray, crs: CRS) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates in ``crs`` as WGS 84 (lon, lat) float64 arrays (copies when no transform is needed)."""
    if is_wgs84(crs):
        return np.array(x, dtype=np.float64), np.array(y, dtype=np.float64)
    return transform_xy(x, y, crs, WGS84)


def trajectory_arrays(obj: Any, points: Any = None, *, name: str, caller: str) -> TrajectoryArrays:
    """Normalise trajectories for an analysis: GeoDataFrame/GeoSeries of LineStrings, or index arrays.

    Parameters
    ----------
    obj : GeoDataFrame, GeoSeries, sequence of array_like of int, or TrajectoryArrays
        LineStrings in any CRS (a Point or MultiPoint row is a trajectory of its points), or one index
        array into ``points`` per trajectory.
    points : PointSet, optional
        The public points (from :func:`as_pointset`); required for index input.

    Raises
    ------
    ValueError
        No CRS, a missing/empty geometry, a non-finite coordinate, or an index outside P (naming the row
        position, in the words of :func:`extract`).
    TypeError
        Another geometry type or container.
    """
    import geopandas as gpd

    if isinstance(obj, TrajectoryArrays):
        return obj
    trajectories = f"'{name}' trajectories"
    if isinstance(obj, gpd.GeoDataFrame):
        obj = obj.geometry
    if isinstance(obj, gpd.GeoSeries):
        crs = require_crs(obj.crs, what=trajectories, caller=caller)
        geoms = np.asarray(obj.values, dtype=object)
        missing = shapely.is_missing(geoms)
        for what, rows in (("missing", missing), ("empty", ~missing & shapely.is_empty(geoms))):
            pos = _first(rows)
            if pos is not None:
                raise ValueError(_row_problem(what, pos, trajectories=trajectories, caller=caller))
        types = shapely.get_type_id(geoms)
        pos = _first(~np.isin(types, (_POINT, _LINESTRING, 4)))  # MultiPoint: a trajectory of its points
        if pos is not None:
            raise TypeError(
                f"Row position {pos} of the {trajectories} passed to {caller} is a "
                f"{TYPE_NAMES.get(int(types[pos]), 'geometry')}; trajectories are LineStrings (or Points "
                "for length-1 trajectories)."
            )
        xy, idx = shapely.get_coordinates(geoms, return_index=True)
        counts = np.bincount(idx, minlength=geoms.shape[0]).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        for what, bad in (("nan", np.isnan(xy)), ("inf", np.isinf(xy))):
            k = _first(bad.any(axis=1))
            if k is not None:
                raise ValueError(_row_problem(what, int(idx[k]), trajectories=trajectories, caller=caller))
        lon, lat = _to_wgs84(xy[:, 0], xy[:, 1], crs)
        kind = "Point" if types.size and bool(np.all(types == _POINT)) else "LineString"
        rows = np.arange(geoms.shape[0], dtype=np.int64)
        valid = np.ones(geoms.shape[0], dtype=bool)
        return TrajectoryArrays(lon, lat, offsets, crs, kind, idx.astype(np.int64), rows, valid, xy=xy)
    if isinstance(obj, str | bytes) or not hasattr(obj, "__len__"):
        raise TypeError(
            f"The '{name}' parameter of {caller} must be a GeoDataFrame/GeoSeries of LineStrings or a "
            f"sequence of index arrays. Got {type(obj).__name__} instead."
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
                f"Row position {i} of the {trajectories} passed to {caller} must be a non-empty 1-D array "
                "of integer indices into points."
            )
    lengths = np.fromiter((a.shape[0] for a in arrays), dtype=np.int64, count=len(arrays))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    flat = np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, dtype=np.int64)
    bad_index = (flat < 0) | (flat >= points.size)
    if bad_index.any():
        row = int(np.searchsorted(offsets, np.flatnonzero(bad_index)[0], side="right") - 1)
        raise ValueError(
            f"Row position {row} of the {trajectories} passed to {caller} has an index outside "
            f"[0, {points.size})."
        )
    lon = np.asarray(points.lon, dtype=np.float64)[flat]
    lat = np.asarray(points.lat, dtype=np.float64)[flat]
    rows = np.arange(len(arrays), dtype=np.int64)
    vertex_rows = np.repeat(rows, lengths)
    valid = np.ones(len(arrays), dtype=bool)
    xy = np.column_stack([lon, lat])
    return TrajectoryArrays(
        lon, lat, offsets, WGS84, "LineString", vertex_rows, rows, valid, xy=xy, index=flat
    )


@dataclass(frozen=True)
class Region:
    """A query region (internal): a prepared polygon with its CRS, or a haversine circle.

    Attributes
    ----------
    kind : {"polygon", "circle"}
    geom : shapely geometry, optional
        The (prepared) polygon.
    crs : pyproj.CRS, optional
        CRS of ``geom``; None means the trajectories' CRS.
    lon, lat, radius_m : float
        Centre (WGS 84 degrees) and radius (metres) of a circle.
    """

    kind: str
    geom: Any = None
    crs: CRS | None = None
    lon: float = 0.0
    lat: float = 0.0
    radius_m: float = 0.0


def is_circle(obj: Any) -> bool:
    """Whether ``obj`` is a circle region ``(lon, lat, radius_km)``: three real numbers (no bools)."""
    return (
        isinstance(obj, tuple | list | np.ndarray)
        and len(obj) == 3
        and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in obj)
    )


def _circle(obj: Any, caller: str) -> Region:
    lon, lat, r = (float(v) for v in obj)
    if not (math.isfinite(lon) and math.isfinite(lat) and -90.0 <= lat <= 90.0 and -180.0 <= lon <= 180.0):
        raise ValueError(
            f"A circle region of {caller} must have a finite centre (lon, lat) in WGS84 degrees."
        )
    if not (0.0 <= r < math.inf):
        raise ValueError(f"A circle region of {caller} must have a radius_km in [0, inf). Got {r!r} instead.")
    return Region("circle", lon=lon, lat=lat, radius_m=r * 1000.0)


def _polygon(geom: Any, crs: CRS | None, caller: str) -> Region:
    if not isinstance(geom, shapely.Geometry) or shapely.get_type_id(geom) not in (3, 6):
        raise TypeError(
            f"A region of {caller} must be a Polygon, a MultiPolygon or a circle (lon, lat, radius_km). "
            f"Got {type(geom).__name__} instead."
        )
    if geom.is_empty:
        raise ValueError(f"A polygon region of {caller} is empty.")
    shapely.prepare(geom)
    return Region("polygon", geom=geom, crs=crs)


def as_regions(regions: Any, *, caller: str) -> tuple[list[Region], bool]:
    """Return the list of regions and whether a single region was given.

    Accepts a Polygon/MultiPolygon (in the trajectories' CRS), a circle ``(lon, lat, radius_km)``, a list
    of those, or a GeoSeries/GeoDataFrame of polygons with a CRS.
    """
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
    if is_circle(regions):
        return [_circle(regions, caller)], True
    if isinstance(regions, list | tuple):
        out = [_circle(r, caller) if is_circle(r) else _polygon(r, None, caller) for r in regions]
        return out, False
    raise TypeError(
        f"The 'region' parameter of {caller} must be a Polygon, a circle (lon, lat, radius_km), a list of "
        f"those or a GeoSeries of Polygons. Got {type(regions).__name__} instead."
    )


# --------------------------------------------------------------------------------------------------
# Point rows that look like GPS fixes
# --------------------------------------------------------------------------------------------------

#: Column names (lower case) that say "the time of a fix".
_TIME_NAMES = frozenset({"time", "timestamp", "datetime", "date_time", "ts", "t", "when"})
#: Words (lower case) of a column name that say "the trip or the person a fix belongs to".
_ID_WORDS = frozenset(
    {
        "id",
        "uid",
        "traj",
        "trajectory",
        "trip",
        "track",
        "tracker",
        "user",
        "vehicle",
        "taxi",
        "device",
        "person",
    }
)


def _fix_column(frame: pd.DataFrame, ignore: tuple) -> tuple[Any, str] | None:
    """A column that suggests the rows are fixes of longer trips: ``(label, what it looks like)``."""
    import re

    skip = {frame.geometry.name, *ignore}
    for col in frame.columns:
        if col in skip:
            continue
        name = str(col).lower()
        if pd.api.types.is_datetime64_any_dtype(frame[col]) or name in _TIME_NAMES or "time" in name:
            return col, "a time"
    for col in frame.columns:
        if col in skip:
            continue
        words = {w for w in re.split(r"[^a-z]+", str(col).lower()) if w}
        id_like = bool(words & _ID_WORDS) or str(col).lower().endswith("id")
        if id_like and not frame[col].is_unique:  # the same id on several rows: one trip's fixes
            return col, "a trajectory id"
    return None


def warn_if_fixes(
    frame: Any,
    *,
    traj_id_col: Any,
    caller: str,
    option: str | None,
    ignore: tuple = (),
    stacklevel: int = 3,
    point_rows: bool | None = None,
) -> None:
    """Warn when Point rows without a trajectory id look like fixes of longer trips.

    Each such row is released as a one-point trajectory at the full ε: 3,000 fixes of a few trips become
    3,000 releases about the same people. The warning (a :class:`~geoldp.PrivacyWarning`) is given
    when a column looks like a time or like an id repeated over rows; ``option`` names the fix the caller
    offers (e.g. ``"traj_id_col= (command line: --traj-id-col)"``), ``None`` when it has none; ``ignore``
    the columns the caller already knows the meaning of (``user_col``). Local only: nothing of it reaches a
    release. ``point_rows`` tells a driver's answer for a frame it holds only the schema of (the empty
    ``_meta`` of a Dask frame): then only a time-like column (by dtype or name) is looked for.
    """
    if traj_id_col is not None or not isinstance(frame, pd.DataFrame):
        return
    if point_rows is None:
        geoms = np.asarray(frame.geometry.values, dtype=object)
        present = geoms[~shapely.is_missing(geoms)]
        point_rows = present.size >= 2 and bool(np.all(shapely.get_type_id(present) == 0))  # 0: Point
    if not point_rows:
        return
    found = _fix_column(frame, tuple(c for c in ignore if c is not None))
    if found is None:
        return
    col, what = found
    grouped = "" if option is None else f"name the column of trip ids with {option}, or "
    rows = f"{len(frame)} Point rows" if len(frame) else "Point rows"
    warnings.warn(
        f"The {rows} passed to {caller} have no trajectory id, so each is released as a "
        f"one-point trajectory at the full epsilon, yet column {str(col)!r} looks like {what}. If the rows "
        f"are GPS fixes of longer trips, {grouped}build one LineString per trip first with "
        "geoldp.prepare.trajectories_from_points (command line: geoldp prepare --traj-id-col), so that each "
        "trip shares one epsilon.",
        PrivacyWarning,
        stacklevel=stacklevel,
    )
