"""Preparing raw GPS data for trajectory LDP.

The helpers here turn raw fixes into short trajectories *before* perturbation, since one ε is shared by
all points of a trajectory (:doc:`/user_guide`, "Preparing raw GPS" and "Choosing ε"):

- :func:`trajectories_from_points`: Point rows → one LineString per trajectory, split at time gaps;
- :func:`clip_to_area`: keep the part of each trajectory inside a public lon/lat box (split where it
  leaves and re-enters), or drop the trajectories that leave it;
- :func:`drop_consecutive_duplicates`: remove vertices that repeat the previous one (optionally after
  snapping to the public points, so stops do not eat the budget);
- :func:`resample`: at most ``max_points`` vertices and/or one vertex every ``spacing_m`` metres;
- :func:`simplify`: Douglas–Peucker with a tolerance in metres, keeping original vertices;
- :func:`point_budget` / :func:`suggest_max_points`: the budget one position gets, and the longest
  trajectory that still gets at least :data:`NEAR_UNIFORM_EPSILON` per point (they live with the release
  pipeline, which emits the near-uniform warning, and are re-exported here).

These helpers only look at each trajectory's own data and public parameters; they are pre-processing that
the data holder runs before the mechanism (their output is private data, like their input).

Near-uniform warning
--------------------
ε is the budget of a whole trajectory; a trajectory of n points gets ε/n per point on average
(:func:`point_budget`, read off the mechanism's ledger). The stages that release one location (the
point and pivot exponential mechanisms) get only a part of that: for TP and ATP with the default split,
less than ε/(2n) per copy. An exponential mechanism with budget ε′ makes its most likely output at most
e^{ε′/2} times as likely as its least likely one, so with ε/n < :data:`NEAR_UNIFORM_EPSILON` (0.1) every
point is released with ε′ < 0.05 and the nearest public point is at most e^{0.025} ≈ 1.025 times as likely
as the farthest one: the output is close to uniform noise over the public points.
:meth:`GeoDataFrame.ldp.perturb` then emits a :class:`~geoldp.PrivacyWarning` with the number of affected
trajectories and the length to shrink them to (:func:`suggest_max_points`, the largest n with
ε/n ≥ 0.1). An ε below :data:`MIN_EPSILON` (0.001) is refused.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import shapely

from geoldp._core import frames as _frames
from geoldp._core.errors import GeoLDPWarning
from geoldp._core.validation import check_float_range, check_int_min, missing_column
from geoldp._release import MIN_EPSILON as MIN_EPSILON
from geoldp._release import NEAR_UNIFORM_EPSILON as NEAR_UNIFORM_EPSILON
from geoldp._release import point_budget, suggest_max_points

__all__ = [
    "clip_to_area",
    "drop_consecutive_duplicates",
    "drop_short_trips",
    "point_budget",
    "resample",
    "simplify",
    "suggest_max_points",
    "trajectories_from_points",
]

#: Most vertices :func:`resample` makes (all rows together); a finer ``spacing_m`` is refused up front
#: with the number it would make. Set ``geoldp.prepare.MAX_VERTICES`` higher to allow more.
MAX_VERTICES = 20_000_000

# --------------------------------------------------------------------------------------------------
# points -> LineStrings
# --------------------------------------------------------------------------------------------------


def _bare_number(value: Any) -> bool:
    """True for a number, or a text that is only a number (no unit): ``10``, ``"10"``, ``" 2.5 "``."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float | np.integer | np.floating):
        return True
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return False
        return True
    return False


def _gap_value(max_gap: Any, times: pd.Series) -> Any:
    if max_gap is None:
        return None
    if pd.api.types.is_datetime64_any_dtype(times) or pd.api.types.is_timedelta64_dtype(times):
        if _bare_number(max_gap):  # pandas would read 10 as 10 nanoseconds
            number = str(max_gap).strip()
            if not math.isfinite(float(number)):
                number = "10"
            raise ValueError(
                f"The 'max_gap' parameter of trajectories_from_points (command line: --max-gap) needs a unit "
                f"for a date-time column, e.g. '{number}min' or '{number}s'. "
                f"Got {max_gap!r}, a bare number."
            )
        try:
            gap = pd.Timedelta(max_gap)
        except (TypeError, ValueError, OverflowError):
            if isinstance(max_gap, str):  # text pandas cannot read as a duration, or one beyond its range
                raise ValueError(
                    "The 'max_gap' parameter of trajectories_from_points (command line: --max-gap) must be a "
                    f"duration such as '30min', '2h' or '1d' (at most about 292 years). Got {max_gap[:40]!r}."
                ) from None
            raise TypeError(
                "The 'max_gap' parameter of trajectories_from_points must be a pandas.Timedelta or a string "
                f"like '30min' for a datetime time column. Got {type(max_gap).__name__} instead."
            ) from None
        if pd.isna(gap) or gap <= pd.Timedelta(0):
            raise ValueError("The 'max_gap' parameter of trajectories_from_points must be positive.")
        return gap
    if isinstance(max_gap, str) and _bare_number(max_gap):  # a number typed on the command line
        max_gap = float(max_gap)
    if isinstance(max_gap, bool) or not isinstance(max_gap, int | float | np.integer | np.floating):
        raise TypeError(
            "The 'max_gap' parameter of trajectories_from_points must be a number for a numeric time "
            f"column. Got {type(max_gap).__name__} instead."
        )
    if not (0 < float(max_gap) < np.inf):
        raise ValueError("The 'max_gap' parameter of trajectories_from_points must be in the range (0, inf).")
    return max_gap


def trajectories_from_points(
    df: Any,
    traj_id_col: Any,
    time_col: Any = None,
    *,
    max_gap: Any = None,
    min_points: int = 2,
    keep: Any = None,
) -> Any:
    """Build one LineString per trajectory from Point rows, splitting at time gaps.

    Parameters
    ----------
    df : geopandas.GeoDataFrame
        Point rows (one GPS fix or check-in per row), with a CRS.
    traj_id_col : column label
        Rows with the same id belong to the same trajectory (trajectories keep the order of first
        appearance).
    time_col : column label, optional
        Orders the points of each trajectory (stable sort: equal times keep the input order). Without it,
        the input order is used.
    max_gap : Timedelta, str or number, optional
        Start a new trajectory where consecutive points are more than ``max_gap`` apart in time
        (``"30min"``, ``pd.Timedelta(...)``, or a number for a numeric time column). Needs ``time_col``.
        For a date-time column it needs a unit: a bare number (``10``, ``"10"``) is refused.
    min_points : int, default 2
        Segments with fewer points are dropped (a LineString needs two vertices), with one
        :class:`~geoldp.GeoLDPWarning` giving the count.
    keep : list of column labels, optional
        Columns that are constant within each trajectory (a user id, a vehicle type) copied to the output,
        one value per segment, e.g. to feed ``user_col`` of ``GeoDataFrame.ldp.perturb``. A column whose
        value changes within a segment raises ``ValueError`` (aggregate it first).

    Returns
    -------
    geopandas.GeoDataFrame
        Columns ``traj_id_col``, ``"segment"`` (0, 1, ... within each id), ``"n_points"``, for a time
        column ``"<time_col>_start"`` / ``"<time_col>_end"``, then the ``keep`` columns; geometry
        LineStrings in the input CRS; a fresh RangeIndex. The time, count and ``keep`` columns are **not
        protected** if you keep them when perturbing (they are dropped by default).

    Raises
    ------
    TypeError
        Non-Point geometry (names the row position).
    ValueError
        Missing columns; NaN id or NaT time (names the row position); invalid geometry rows; a ``keep``
        column that is missing, clashes with an output column or varies within a segment.

    Examples
    --------
    >>> from geoldp.prepare import trajectories_from_points
    >>> lines = trajectories_from_points(fixes, "user", "time", max_gap="20min")  # doctest: +SKIP
    """
    import geopandas as gpd

    caller = "trajectories_from_points"
    df = _frames.check_frame(df, caller=caller, name="df")
    if traj_id_col is None:
        raise ValueError("trajectories_from_points needs traj_id_col (the column that groups rows).")
    if max_gap is not None and time_col is None:
        raise ValueError("The 'max_gap' parameter of trajectories_from_points needs time_col.")
    min_points = check_int_min(min_points, "min_points", minimum=1, caller=caller)
    keep_cols = _keep_columns(df, keep, traj_id_col, time_col)
    ft = _frames.extract(df, traj_id_col=traj_id_col, time_col=time_col, caller=caller)
    if ft.kind != "Point":
        raise TypeError(
            "trajectories_from_points needs Point rows (one fix per row); row position 0 is a LineString."
        )
    rows = ft.vertex_rows  # sorted: by trajectory, then time
    traj_of_vertex = np.repeat(np.arange(ft.n_trajectories), ft.lengths)
    # new segment where the trajectory changes or the time gap is too large
    brk = np.r_[True, traj_of_vertex[1:] != traj_of_vertex[:-1]]  # rows.size >= 1 (check_frame)
    times: Any = df[time_col].iloc[rows].reset_index(drop=True) if time_col is not None else None
    gap = _gap_value(max_gap, df[time_col]) if time_col is not None else None
    if gap is not None and rows.size > 1:
        diffs = times.diff().to_numpy()[1:]
        with np.errstate(invalid="ignore"):
            brk[1:] |= np.asarray(diffs > gap, dtype=bool)
    seg_id = np.cumsum(brk) - 1
    n_seg = int(seg_id[-1]) + 1 if seg_id.size else 0
    counts = np.bincount(seg_id, minlength=n_seg)
    keep_seg = counts >= min_points
    _warn_dropped(int((~keep_seg).sum()), "segment", min_points)
    geoms = np.asarray(df.geometry.values, dtype=object)[rows]
    xy = shapely.get_coordinates(geoms)  # 2-D: Z/M dropped
    keep_v = keep_seg[seg_id]
    new_seg = np.unique(seg_id[keep_v], return_inverse=True)[1] if keep_v.any() else np.zeros(0, np.int64)
    lines = _lines_from(xy[keep_v], new_seg, int(keep_seg.sum()))
    starts = np.flatnonzero(brk)
    seg_in_traj = _segment_number(traj_of_vertex[starts])[keep_seg]  # numbered before dropping
    first_v = starts[keep_seg]
    last_v = np.concatenate([starts[1:] - 1, [rows.size - 1]])[keep_seg]
    data: dict[Any, Any] = {
        traj_id_col: df[traj_id_col].iloc[rows[first_v]].to_numpy(),
        "segment": seg_in_traj,
        "n_points": counts[keep_seg].astype(np.int64),
    }
    if time_col is not None:
        data[f"{time_col}_start"] = times.iloc[first_v].to_numpy()
        data[f"{time_col}_end"] = times.iloc[last_v].to_numpy()
    for col in keep_cols:
        values = df[col].iloc[rows].reset_index(drop=True)
        varies = values.groupby(seg_id).nunique(dropna=False).to_numpy() > 1
        if varies[keep_seg].any():
            raise ValueError(
                f"The 'keep' column {col!r} of {caller} changes within a trajectory segment; keep only "
                "columns that are constant per trajectory (aggregate the others first)."
            )
        data[col] = values.iloc[first_v].to_numpy()
    out = gpd.GeoDataFrame(data, geometry=gpd.GeoSeries(lines, crs=df.crs), crs=df.crs)
    return out


def _keep_columns(df: Any, keep: Any, traj_id_col: Any, time_col: Any) -> list:
    """Validated ``keep`` labels of :func:`trajectories_from_points` (a list, possibly empty)."""
    if keep is None:
        return []
    if isinstance(keep, (str, bytes)) or not hasattr(keep, "__iter__"):
        keep = [keep]
    keep = list(keep)
    reserved = {traj_id_col, "segment", "n_points", df.geometry.name}
    if time_col is not None:
        reserved |= {time_col, f"{time_col}_start", f"{time_col}_end"}
    for col in keep:
        if col not in df.columns:
            raise missing_column("keep", "trajectories_from_points", col, df.columns)
        if col in reserved:
            raise ValueError(
                f"The 'keep' column {col!r} of trajectories_from_points clashes with an output column; "
                "rename it first."
            )
    if len(set(keep)) != len(keep):
        raise ValueError("The 'keep' columns of trajectories_from_points must be distinct.")
    return keep


def _segment_number(traj: np.ndarray) -> np.ndarray:
    """0, 1, 2 ... within each run of equal trajectory numbers."""
    if traj.size == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.r_[True, traj[1:] != traj[:-1]]
    idx = np.arange(traj.size)
    first = np.maximum.accumulate(np.where(start, idx, 0))
    return (idx - first).astype(np.int64)


def _lines_from(xy: np.ndarray, seg: np.ndarray, n: int) -> np.ndarray:
    """LineStrings from flat coordinates; a one-vertex segment repeats its vertex."""
    if n == 0:
        return np.zeros(0, dtype=object)
    counts = np.bincount(seg, minlength=n)
    single = counts == 1
    if single.any():
        dup = single[seg]
        xy = np.concatenate([xy, xy[dup]])
        seg = np.concatenate([seg, seg[dup]])
        order = np.argsort(seg, kind="stable")
        xy, seg = xy[order], seg[order]
    return shapely.linestrings(xy, indices=seg)


# --------------------------------------------------------------------------------------------------
# per-LineString helpers
# --------------------------------------------------------------------------------------------------


def _linestring_frame(gdf: Any, caller: str) -> tuple[Any, Any]:
    gdf = _frames.check_frame(gdf, caller=caller, name="gdf")
    ft = _frames.extract(gdf, caller=caller, warn_zm=False)
    if ft.kind != "LineString":
        raise TypeError(
            f"{caller} works on LineString rows. Build them from Point rows with "
            "geoldp.prepare.trajectories_from_points() first."
        )
    return gdf, ft


def _replace_geometry(gdf: Any, new_geoms: np.ndarray) -> Any:
    out = gdf.copy(deep=True)
    out[gdf._geometry_column_name] = gdf.geometry.__class__(new_geoms, index=gdf.index, crs=gdf.crs).values
    return out


def drop_short_trips(gdf: Any, min_points: int = 2) -> Any:
    """Drop LineString rows with fewer than ``min_points`` vertices, after checking every coordinate.

    The counterpart for LineString input of ``min_points`` of :func:`trajectories_from_points`, with the
    checks a release makes: a missing or empty geometry, a NaN or infinite coordinate, or one outside lon
    [-180, 180] / lat [-90, 90] in EPSG:4326 (e.g. UTM metres in a file labelled lon/lat) is an error
    naming the row position.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        LineString rows, with a CRS.
    min_points : int, default 2
        Rows with fewer vertices are dropped, with one :class:`~geoldp.GeoLDPWarning` giving the count.

    Returns
    -------
    geopandas.GeoDataFrame
        The rows kept (a copy, with their index, columns and CRS).

    Raises
    ------
    TypeError
        Non-LineString rows; ``min_points`` not an int.
    ValueError
        A row with an invalid or impossible coordinate (names the row position); ``min_points`` < 1.

    Examples
    --------
    >>> from geoldp.prepare import drop_short_trips
    >>> trips = drop_short_trips(trips, min_points=5)  # doctest: +SKIP
    """
    caller = "drop_short_trips"
    min_points = check_int_min(min_points, "min_points", minimum=1, caller=caller)
    gdf, _ = _linestring_frame(gdf, caller)  # refuses NaN, inf and out-of-range coordinates, naming the row
    keep = shapely.get_num_coordinates(np.asarray(gdf.geometry.values, dtype=object)) >= min_points
    _warn_dropped(int((~keep).sum()), "trip", min_points)
    return gdf[keep].copy()


def _warn_dropped(n_drop: int, what: str, min_points: int) -> None:
    if n_drop:
        warnings.warn(
            f"{n_drop} {what}(s) with fewer than {min_points} point(s) were dropped.",
            GeoLDPWarning,
            stacklevel=3,  # the public function's caller
        )


def drop_consecutive_duplicates(gdf: Any, points: Any = None) -> Any:
    """Remove vertices that repeat the previous vertex of the same LineString.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        LineString rows.
    points : PointSet, GeoDataFrame or GeoSeries of Points, optional
        If given, two consecutive vertices count as duplicates when they **snap to the same public point**
        (so a stop of 50 GPS fixes at one venue becomes one vertex and does not eat the budget); the first
        vertex of each run is kept, with its original coordinates. Without ``points``, only exactly equal
        consecutive coordinates are duplicates.

    Returns
    -------
    geopandas.GeoDataFrame
        A copy with the same index, columns and CRS. A row that collapses to a single location keeps two
        identical vertices (a LineString needs two): a legitimate stationary trajectory.

    Examples
    --------
    >>> from geoldp.prepare import drop_consecutive_duplicates
    >>> shorter = drop_consecutive_duplicates(trips, pois)  # doctest: +SKIP
    """
    caller = "drop_consecutive_duplicates"
    gdf, ft = _linestring_frame(gdf, caller)
    geoms = np.asarray(gdf.geometry.values, dtype=object)
    xy = shapely.get_coordinates(geoms)
    if points is not None:
        ps, _ = _frames.resolve_points(points, caller=caller)
        key, _ = ps.nearest(ft.lon, ft.lat)
        key = np.asarray(key, dtype=np.int64)
        same = np.r_[False, key[1:] == key[:-1]]
    else:
        same = np.r_[False, (xy[1:, 0] == xy[:-1, 0]) & (xy[1:, 1] == xy[:-1, 1])]
    traj = np.repeat(np.arange(ft.n_trajectories), ft.lengths)
    same[ft.offsets[:-1]] = False  # first vertex of each row is always kept
    keep = ~same
    lines = _lines_from(xy[keep], traj[keep], ft.n_trajectories)
    return _replace_geometry(gdf, lines)


def _cumulative_m(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    from geoldp._core.geo import haversine_m

    if lon.size < 2:
        return np.zeros(lon.size)
    seg = np.asarray(haversine_m(lon[:-1], lat[:-1], lon[1:], lat[1:]), dtype=np.float64)
    return np.concatenate([[0.0], np.cumsum(seg)])


def resample(gdf: Any, *, max_points: int | None = None, spacing_m: float | None = None) -> Any:
    """Resample each LineString to one vertex every ``spacing_m`` metres and/or at most ``max_points``.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        LineString rows, any CRS.
    max_points : int, optional
        Rows with more vertices are resampled to exactly ``max_points`` vertices, evenly spaced along the
        track (haversine length; first and last vertex kept). Rows with fewer are left unchanged.
    spacing_m : float, optional
        Resample to one vertex every ``spacing_m`` metres along the track (plus the last vertex); applied
        before ``max_points``. A spacing that would make more than :data:`MAX_VERTICES` vertices in all
        is refused up front (``ValueError`` with the number); raise ``geoldp.prepare.MAX_VERTICES`` to
        allow it.

    Returns
    -------
    geopandas.GeoDataFrame
        A copy with the same index, columns and CRS. Rows that do not change keep their exact geometry.
        Interpolation is linear in lon/lat between consecutive vertices (fine for GPS-scale segments; do not
        use across the antimeridian).

    Examples
    --------
    >>> from geoldp.prepare import resample
    >>> short = resample(trips, max_points=10)  # doctest: +SKIP
    """
    caller = "resample"
    if max_points is None and spacing_m is None:
        raise ValueError("resample needs max_points or spacing_m (or both).")
    if max_points is not None:
        max_points = check_int_min(max_points, "max_points", minimum=2, caller="resample")
    if spacing_m is not None:
        spacing_m = check_float_range(spacing_m, "spacing_m", caller=caller)
    gdf, ft = _linestring_frame(gdf, caller)
    bounds = zip(ft.offsets[:-1], ft.offsets[1:], strict=True)
    cums = [_cumulative_m(ft.lon[a:b], ft.lat[a:b]) for a, b in bounds]
    if spacing_m is not None:
        # the size of the result, checked before anything is allocated (a tiny spacing needs terabytes)
        sizes = [float(c[-1]) / spacing_m + 2.0 for c in cums]  # Python floats: inf, never a warning
        if max_points is not None:
            sizes = [min(n, float(max_points)) for n in sizes]
        total_size = float(np.sum(sizes)) if sizes else 0.0
        if not total_size <= MAX_VERTICES:
            raise ValueError(
                f"The 'spacing_m' parameter of {caller} ({spacing_m:g} m) would make about "
                f"{total_size:.3g} vertices in all (the longest row about {max(sizes):.3g}), more than "
                f"geoldp.prepare.MAX_VERTICES = {MAX_VERTICES}. Use a larger spacing_m or pass max_points=, "
                "or raise geoldp.prepare.MAX_VERTICES if you have the memory."
            )
    new = np.asarray(gdf.geometry.values, dtype=object).copy()
    for t in range(ft.n_trajectories):
        a, b = ft.offsets[t], ft.offsets[t + 1]
        lon, lat = ft.lon[a:b], ft.lat[a:b]
        cum = cums[t]
        total = cum[-1]
        at = None
        if spacing_m is not None and total > 0:
            at = np.arange(0.0, total, float(spacing_m))
            at = np.append(at, total) if at[-1] < total else at
            if at.size < 2:
                at = np.array([0.0, total])
        n_now = at.size if at is not None else lon.size
        if max_points is not None and n_now > max_points:
            at = np.linspace(0.0, total, int(max_points))
        if at is None:
            continue
        if total > 0:  # linear in lon/lat between consecutive vertices (short); exact at the vertices
            nl, nt = np.interp(at, cum, lon), np.interp(at, cum, lat)
        else:  # stationary: keep the first vertices
            nl, nt = lon[: at.size], lat[: at.size]
        x, y = (nl, nt) if _frames.is_wgs84(ft.crs) else _frames.transform_xy(nl, nt, _frames.WGS84, ft.crs)
        new[ft.traj_rows[t]] = shapely.linestrings(np.column_stack([x, y]))
    return _replace_geometry(gdf, new)


def simplify(gdf: Any, tolerance_m: float, *, max_points: int | None = None) -> Any:
    """Douglas–Peucker simplification with a tolerance in metres, keeping original vertices.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        LineString rows, any CRS.
    tolerance_m : float
        Maximum distance (metres) between the simplified and the original line, measured in a local UTM
        projection of the frame (``gdf.estimate_utm_crs()``).
    max_points : int, optional
        Afterwards, cap rows at ``max_points`` vertices with :func:`resample`.

    Returns
    -------
    geopandas.GeoDataFrame
        A copy with the same index, columns and CRS; every remaining vertex is an original vertex (bit for
        bit), first and last vertex always kept.

    Examples
    --------
    >>> from geoldp.prepare import simplify
    >>> lean = simplify(trips, 25.0)  # doctest: +SKIP
    """
    caller = "simplify"
    tolerance_m = check_float_range(tolerance_m, "tolerance_m", caller="simplify", closed=True)
    gdf, ft = _linestring_frame(gdf, caller)
    import geopandas as gpd

    utm = gpd.GeoSeries(shapely.points(ft.lon, ft.lat), crs=_frames.WGS84).estimate_utm_crs()
    px, py = _frames.transform_xy(ft.lon, ft.lat, _frames.WGS84, utm)
    orig = shapely.get_coordinates(np.asarray(gdf.geometry.values, dtype=object))
    new = np.asarray(gdf.geometry.values, dtype=object).copy()
    for t in range(ft.n_trajectories):
        a, b = ft.offsets[t], ft.offsets[t + 1]
        if b - a <= 2:
            continue
        line = shapely.linestrings(np.column_stack([px[a:b], py[a:b]]))
        simp = shapely.get_coordinates(shapely.simplify(line, float(tolerance_m), preserve_topology=False))
        keep = _match_subsequence(px[a:b], py[a:b], simp)
        if keep.size == b - a:
            continue
        new[ft.traj_rows[t]] = shapely.linestrings(orig[a:b][keep])
    out = _replace_geometry(gdf, new)
    if max_points is not None:
        out = resample(out, max_points=max_points)
    return out


def _match_subsequence(x: np.ndarray, y: np.ndarray, sub: np.ndarray) -> np.ndarray:
    """Indices of the vertices of ``sub`` (a subsequence of (x, y)); endpoints always included."""
    keep = [0]
    j = 1
    n = x.size
    for sx, sy in sub[1:-1]:
        while j < n - 1 and not (x[j] == sx and y[j] == sy):
            j += 1
        if j < n - 1:
            keep.append(j)
            j += 1
    keep.append(n - 1)
    return np.asarray(keep, dtype=np.int64)


def clip_to_area(gdf: Any, area: Any, *, outside: str = "clip", min_points: int = 2) -> Any:
    """Keep the trajectories, or their parts, inside a public lon/lat box.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        LineString trajectories, with a CRS.
    area : (min_lon, min_lat, max_lon, max_lat)
        The box, in degrees (EPSG:4326). It must be public: chosen without looking at the trajectories.
    outside : {"clip", "drop"}, default "clip"
        ``"clip"``: drop the vertices outside the box; a trajectory that leaves the box and comes back
        becomes one row per run of consecutive vertices inside (each with the original row's columns),
        and runs shorter than ``min_points`` are dropped. ``"drop"``: drop every trajectory with a vertex
        outside the box (those that leave it), keep the others whole.
    min_points : int, default 2
        With ``"clip"``: the fewest vertices a kept run has.

    Returns
    -------
    geopandas.GeoDataFrame
        The kept rows, in input order, geometry in the input CRS, a fresh RangeIndex; the input is not
        changed. ``attrs["dropped"]`` is the number of input trajectories with nothing kept.

    Raises
    ------
    TypeError
        Not a GeoDataFrame of LineStrings.
    ValueError
        A malformed box, an unknown ``outside``, ``min_points`` below 2.

    Examples
    --------
    >>> from geoldp.prepare import clip_to_area
    >>> inside = clip_to_area(trips, (-122.52, 37.70, -122.35, 37.83))  # doctest: +SKIP
    """
    import geopandas as gpd

    caller = "clip_to_area"
    try:
        box = tuple(float(v) for v in area)
    except (TypeError, ValueError):
        box = ()
    if len(box) != 4 or not (box[0] < box[2] and box[1] < box[3]) or not np.all(np.isfinite(box)):
        raise ValueError(
            f"The 'area' parameter of {caller} must be (min_lon, min_lat, max_lon, max_lat) with min < max, "
            f"e.g. (-122.52, 37.70, -122.35, 37.83). Got {area!r}."
        )
    if outside not in ("clip", "drop"):
        raise ValueError(f"The 'outside' parameter of {caller} must be 'clip' or 'drop'. Got {outside!r}.")
    min_points = check_int_min(min_points, "min_points", minimum=2, caller=caller)
    _linestring_frame(gdf, caller)
    wgs = gdf.to_crs(4326) if not gdf.crs.equals("EPSG:4326") else gdf
    geoms = np.asarray(gdf.geometry.values)
    xy = shapely.get_coordinates(np.asarray(wgs.geometry.values))
    counts = shapely.get_num_coordinates(geoms)
    owner = np.repeat(np.arange(len(gdf)), counts)
    inside = (xy[:, 0] >= box[0]) & (xy[:, 0] <= box[2]) & (xy[:, 1] >= box[1]) & (xy[:, 1] <= box[3])
    if outside == "drop":
        leaves = np.zeros(len(gdf), dtype=bool)
        np.logical_or.at(leaves, owner, ~inside)
        out = gdf[~leaves].reset_index(drop=True)
        out.attrs = dict(gdf.attrs, dropped=int(leaves.sum()))
        return out
    start = np.r_[True, (owner[1:] != owner[:-1]) | (inside[1:] != inside[:-1])]  # len(xy) >= 2
    run = np.cumsum(start) - 1
    run_len = np.bincount(run[inside], minlength=int(run.max()) + 1 if run.size else 0)
    keep = inside & (run_len[run] >= min_points)
    runs, first = np.unique(run[keep], return_index=True)
    rows = owner[keep][first]
    xy_in = shapely.get_coordinates(geoms)  # the input CRS's coordinates of the kept vertices
    lines = shapely.linestrings(xy_in[keep], indices=np.searchsorted(runs, run[keep]))
    data = gdf.drop(columns=gdf.geometry.name).iloc[rows].reset_index(drop=True)
    out = gpd.GeoDataFrame(data, geometry=np.asarray(lines), crs=gdf.crs)
    if gdf.geometry.name != "geometry":
        out = out.rename_geometry(gdf.geometry.name)
    out.attrs = dict(gdf.attrs, dropped=int(len(gdf) - np.unique(rows).size))
    return out
