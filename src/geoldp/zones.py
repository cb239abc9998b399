"""Public zones: the one validator, the one grid builder and the one point-in-zone rule.

Zones are polygons built from public inputs only (a grid over the public points P, or the user's own
polygons). Every part of geoldp reads them the same way:

- :func:`check_zones` validates them (polygons with a CRS, at least one) and returns :class:`Zones`;
  :func:`check_polygons` is the same check for regions, with the same messages;
- a point lies in the **first** zone (by position) that contains it or has it on its boundary
  (:func:`first_zone`, :meth:`Zones.of_xy`); a point in no zone is *outside*;
- :func:`zone_grid` builds a grid over a public area, either a given number of cells (the zones of an
  aggregate report, whose noise grows with their number) or cells of a given size in km (the zones of
  utility metrics and collector-side maps).

>>> g = zone_grid((0.0, 0.0, 1.0, 2.0), cells=(2, 4))
>>> len(g), list(g.columns), g.total_bounds.tolist()
(8, ['row', 'col', 'geometry'], [0.0, 0.0, 1.0, 2.0])
>>> z = check_zones(g, caller="example")
>>> z.of_lonlat([0.25, 5.0], [0.25, 5.0], outside=z.size).tolist()  # the second point is outside
[0, 8]
"""

from __future__ import annotations

import hashlib
import math
import numbers
from typing import Any

import numpy as np
import pandas as pd
import shapely
from pyproj import CRS, Transformer

from geoldp._core import frames as _frames
from geoldp._core.area import record_area
from geoldp._core.geo import KM_PER_DEGREE
from geoldp._core.pointset import PointSet

#: Most zones :func:`zone_grid` builds; a finer grid is refused before anything is allocated. Read at every
#: call, so it can be raised (``geoldp.zones.MAX_ZONES = ...``) where the memory allows.
MAX_ZONES = 1_000_000

#: The cell side (km) of the zones built when a function is given ``zones="auto"``.
AUTO_CELL_KM = 1.5


def check_polygons(
    obj: Any, *, name: str, caller: str, accepts: str = "", allow_empty: bool = False
) -> tuple[Any, np.ndarray, CRS]:
    """``(series, geoms, crs)`` of a GeoDataFrame/GeoSeries of Polygons/MultiPolygons with a CRS.

    ``series`` is the user's object (not copied; a GeoDataFrame's active geometry), ``geoms`` its shapely
    geometries. ``name`` is the parameter in messages (``"zones"``, ``"regions"``) and ``accepts`` what
    else it accepts, appended to the type error (e.g. ``" or 'auto'"``). A row of another type is named
    by position; a frame without rows is refused unless ``allow_empty``.
    """
    import geopandas as gpd

    series = obj.geometry if isinstance(obj, gpd.GeoDataFrame) else obj
    if not isinstance(series, gpd.GeoSeries):
        raise TypeError(
            f"The '{name}' parameter of {caller} must be a GeoDataFrame or GeoSeries of polygons{accepts}. "
            f"Got {type(obj).__name__} instead."
        )
    if series.crs is None:
        raise ValueError(f"The '{name}' of {caller} have no CRS. Use set_crs() to declare it.")
    if len(series) == 0 and not allow_empty:
        raise ValueError(f"The '{name}' of {caller} have no rows; pass at least one polygon.")
    geoms = np.asarray(series.values, dtype=object)
    bad = shapely.is_missing(geoms) | ~np.isin(shapely.get_type_id(geoms), (3, 6))
    if bad.any():
        raise TypeError(
            f"Row position {int(np.flatnonzero(bad)[0])} of the '{name}' of {caller} is not a Polygon or "
            "MultiPolygon."
        )
    return series, geoms, CRS.from_user_input(series.crs)


def lonlat_to(lon: Any, lat: Any, crs: CRS) -> tuple[np.ndarray, np.ndarray]:
    """WGS 84 (lon, lat) degrees as float64 (x, y) in ``crs`` (unchanged when ``crs`` is WGS 84)."""
    if _frames.is_wgs84(crs):
        return np.asarray(lon, dtype=np.float64), np.asarray(lat, dtype=np.float64)
    x, y = Transformer.from_crs(_frames.WGS84, crs, always_xy=True).transform(
        np.asarray(lon), np.asarray(lat)
    )
    return np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)


def first_zone(
    geoms: np.ndarray, x: np.ndarray, y: np.ndarray, *, outside: int, tree: Any = None
) -> np.ndarray:
    """Position (int64) of the first polygon containing or touching each (x, y); ``outside`` for none.

    The points are in the polygons' CRS; ``tree`` is a spatial index of ``geoms`` (built here if not given).
    """
    out = np.full(np.asarray(x).shape[0], outside, dtype=np.int64)
    if out.size == 0:
        return out
    pt, zn = (tree or shapely.STRtree(geoms)).query(shapely.points(x, y), predicate="intersects")
    order = np.lexsort((zn, pt))  # by point, then by zone position: the first zone wins
    pt, zn = pt[order], zn[order]
    first = np.ones(pt.shape[0], dtype=bool)
    first[1:] = pt[1:] != pt[:-1]
    out[pt[first]] = zn[first]
    return out


class Zones:
    """Validated public zones: polygons, their CRS and labels, a spatial index and a digest.

    Build with :func:`check_zones`. Zone *positions* (0 .. ``size`` − 1) are the polygons' order; the
    labels are their index.
    """

    __slots__ = ("_points_zone", "_tree", "crs", "geoms", "index", "series")

    def __init__(self, series: Any, geoms: np.ndarray, crs: CRS) -> None:
        self.series = series
        self.geoms = geoms
        self.crs = crs
        self.index = series.index
        self._tree: Any = None
        self._points_zone: tuple[PointSet, np.ndarray] | None = None

    @property
    def size(self) -> int:
        """Number of zones (the outside category not counted)."""
        return int(self.geoms.shape[0])

    @property
    def tree(self) -> Any:
        """The zones' spatial index (``shapely.STRtree``), built once."""
        if self._tree is None:
            self._tree = shapely.STRtree(self.geoms)
        return self._tree

    def digest(self) -> str:
        """A digest of the zones' geometry and CRS (public), to check that an answer uses the same zones."""
        h = hashlib.sha256(self.crs.to_wkt().encode())
        h.update(b"".join(shapely.to_wkb(self.geoms, hex=False)))
        return h.hexdigest()[:16]

    def of_xy(self, x: np.ndarray, y: np.ndarray, *, outside: int = -1) -> np.ndarray:
        """Zone position of every (x, y) in the zones' CRS (:func:`first_zone`); ``outside`` for none."""
        return first_zone(self.geoms, x, y, outside=outside, tree=self.tree)

    def of_lonlat(self, lon: Any, lat: Any, *, outside: int = -1) -> np.ndarray:
        """Zone position of every WGS 84 (lon, lat); ``outside`` for none."""
        x, y = lonlat_to(lon, lat, self.crs)
        return self.of_xy(x, y, outside=outside)

    def of_points(self, pts: PointSet) -> np.ndarray:
        """Zone position of every public point (-1 outside), kept for the last point set asked about."""
        if self._points_zone is None or self._points_zone[0] is not pts:
            self._points_zone = (pts, self.of_lonlat(pts.lon, pts.lat))
        return self._points_zone[1]

    def of_trajectories(self, tr: Any, pts: PointSet | None = None) -> np.ndarray:
        """Zone position of every vertex of :class:`~geoldp._core.frames.TrajectoryArrays` (-1 outside).

        Cached on ``tr`` for the duration of one call; index input looks P's zones up.
        """
        key = ("zones", id(self))
        if key not in tr.memo:
            if tr.index is not None and pts is not None:
                tr.memo[key] = self.of_points(pts)[tr.index]
            else:
                xy = tr.xy_in(self.crs)
                tr.memo[key] = self.of_xy(xy[:, 0], xy[:, 1])
        return np.asarray(tr.memo[key])


def check_zones(zones: Any, *, caller: str, accepts: str = "") -> Zones:
    """The :class:`Zones` of a GeoDataFrame/GeoSeries of Polygons/MultiPolygons with a CRS and a row.

    :class:`Zones` are returned as they are; otherwise the errors of :func:`check_polygons`.
    """
    if isinstance(zones, Zones):
        return zones
    series, geoms, crs = check_polygons(zones, name="zones", caller=caller, accepts=accepts)
    return Zones(series, geoms, crs)


def zone_of_vertices(zones: Zones, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Zone position (int64) of every WGS 84 vertex; ``zones.size`` (a report's outside category) for none."""
    return zones.of_lonlat(lon, lat, outside=zones.size)


def _check_cells(cells: Any, caller: str) -> tuple[int, int]:
    try:
        nx, ny = (cells, cells) if isinstance(cells, int | np.integer) else tuple(cells)
    except (TypeError, ValueError):  # not a pair: a string, a float, a triple ...
        raise ValueError(
            f"The 'cells' parameter of {caller} must be an int >= 1 or a pair of them. Got {cells!r}."
        ) from None
    for v in (nx, ny):
        if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer) or int(v) < 1:
            raise ValueError(f"The 'cells' parameter of {caller} must be an int >= 1 or a pair of them.")
    if int(nx) * int(ny) > MAX_ZONES:
        raise ValueError(
            f"The 'cells' parameter of {caller} asks for {nx} x {ny} = {int(nx) * int(ny)} zones, more than "
            f"geoldp.zones.MAX_ZONES = {MAX_ZONES}. Use fewer cells (or raise geoldp.zones.MAX_ZONES if you "
            "have the memory)."
        )
    return int(nx), int(ny)


def _area_bounds(area: Any, crs: Any, caller: str) -> tuple[tuple[float, float, float, float], Any]:
    """The bounds of a public area and their CRS."""
    import geopandas as gpd

    if isinstance(area, PointSet):
        return (float(area.lon.min()), float(area.lat.min()), float(area.lon.max()), float(area.lat.max())), (
            "EPSG:4326"
        )
    if isinstance(area, gpd.GeoDataFrame | gpd.GeoSeries):
        if area.crs is None:
            raise ValueError(f"The 'area' of {caller} has no CRS. Use set_crs() to declare it.")
        if len(area) == 0:
            raise ValueError(f"The 'area' of {caller} has no rows.")
        b = tuple(float(v) for v in area.total_bounds)
        return (b[0], b[1], b[2], b[3]), area.crs
    if isinstance(area, tuple | list) and len(area) == 4:
        b = tuple(float(v) for v in area)
        return (b[0], b[1], b[2], b[3]), crs or "EPSG:4326"
    if isinstance(area, np.ndarray) and area.ndim == 2 and area.shape[1] == 2 and area.shape[0]:
        pts = _frames.as_pointset(area, caller=caller)
        return _area_bounds(pts, None, caller)
    raise TypeError(
        f"The 'area' parameter of {caller} must be a GeoDataFrame, GeoSeries, PointSet, an (m, 2) array of "
        f"(lon, lat) or a bounds tuple (minx, miny, maxx, maxy). Got {type(area).__name__} instead."
    )


def _grid(xs: np.ndarray, ys: np.ndarray, crs: Any) -> Any:
    import geopandas as gpd

    nx, ny = xs.shape[0] - 1, ys.shape[0] - 1
    row, col = (a.ravel() for a in np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij"))
    boxes = shapely.box(xs[col], ys[row], xs[col + 1], ys[row + 1])
    return gpd.GeoDataFrame(
        {"row": row.astype(np.int64), "col": col.astype(np.int64)},
        geometry=boxes,
        crs=crs,
        index=pd.RangeIndex(nx * ny, name="zone"),
    )


def zone_grid(area: Any, cells: Any = None, *, cell_km: float | None = None, crs: Any = None) -> Any:
    """A grid of square-ish zones over a **public** area: a given number of cells, or cells of a size in km.

    Parameters
    ----------
    area : GeoDataFrame, GeoSeries, PointSet, (m, 2) array of (lon, lat) or (minx, miny, maxx, maxy)
        Public inputs only (for example the public point set P), never the trajectories being released: a
        grid laid over lines (trajectories) records their area, and a release over it (a report, the
        pilot) raises a :class:`~geoldp.PrivacyWarning` when that area has the released trips' bounds.
    cells : int or (int, int), optional
        Columns and rows of a grid laid exactly over the area's bounds, in the area's CRS (one int: the
        same for both). The number of zones is what sets the domain, and the noise, of an aggregate
        report. Default (with no ``cell_km``): 10.
    cell_km : float, optional
        Instead of ``cells``: square cells of about ``cell_km`` km, in EPSG:4326, centred on the area's
        bounds with ``floor(width / cell) + 1`` columns (likewise rows), so every point of the area lies
        strictly inside; cells are ``cell_km`` km squares at the middle latitude and within a few per cent
        of it over a city. The zones of :func:`geoldp.evaluate` and of collector-side maps.
    crs : CRS-like, optional
        CRS of a bounds tuple (default EPSG:4326).

    Returns
    -------
    geopandas.GeoDataFrame
        One Polygon per cell, row-major from the south-west corner; index ``zone`` (0, 1, ...,
        ``row * n_cols + col``), columns ``row``, ``col`` and ``geometry``.

    Raises
    ------
    TypeError, ValueError
        A bad area, both or a bad ``cells``/``cell_km``, or a grid of more than :data:`MAX_ZONES` zones
        (refused before anything is allocated).

    Examples
    --------
    >>> g = zone_grid((0.0, 0.0, 1.0, 2.0), cells=(2, 4))
    >>> len(g), g.total_bounds.tolist()
    (8, [0.0, 0.0, 1.0, 2.0])
    >>> P = np.array([[0.0, 0.0], [0.02, 0.0], [0.0, 0.02]])  # 2.2 km x 2.2 km
    >>> len(zone_grid(P, cell_km=1.5))
    4
    """
    caller = "geoldp.zone_grid"
    if cells is not None and cell_km is not None:
        raise ValueError(f"{caller} takes 'cells' or 'cell_km', not both.")
    if cell_km is None:
        nx, ny = _check_cells(10 if cells is None else cells, caller)
        (minx, miny, maxx, maxy), box_crs = _area_bounds(area, crs, caller)
        if not all(math.isfinite(b) for b in (minx, miny, maxx, maxy)) or maxx < minx or maxy < miny:
            raise ValueError(f"The bounds of the 'area' of {caller} must be finite with min <= max.")
        # a degenerate side (all points on one line) gets a tiny width so that every cell is a polygon
        pad_x = 1e-9 * max(1.0, abs(minx)) if maxx == minx else 0.0
        pad_y = 1e-9 * max(1.0, abs(miny)) if maxy == miny else 0.0
        xs = np.linspace(minx - pad_x, maxx + pad_x, nx + 1)
        out = _grid(xs, np.linspace(miny - pad_y, maxy + pad_y, ny + 1), box_crs)
    else:
        out = _km_grid(area, cell_km, crs, caller)
    if _holds_lines(area):  # trajectories: a release over these zones warns (_core.area)
        record_area(out, *_area_bounds(area, crs, caller))
    return out


def _holds_lines(area: Any) -> bool:
    """Whether ``area`` holds lines, as trajectories are: its area is recorded for the release's guard.

    A box or polygons are not: zones laid over P's bounds are common and public, and trips that reach P's
    outermost points have exactly those bounds.
    """
    types = getattr(getattr(area, "geometry", None), "geom_type", None)
    return types is not None and bool(types.isin(["LineString", "MultiLineString"]).any())


def _km_grid(area: Any, cell_km: Any, crs: Any, caller: str) -> Any:
    import geopandas as gpd

    if (
        isinstance(cell_km, bool)
        or not isinstance(cell_km, numbers.Real)
        or not 0 < float(cell_km) < math.inf
    ):
        raise ValueError(
            f"The 'cell_km' parameter of {caller} must be a float in the range (0, inf). Got {cell_km!r}."
        )
    if isinstance(area, gpd.GeoDataFrame | gpd.GeoSeries) and area.crs is not None and len(area):
        area = area.to_crs(_frames.WGS84)  # the bounds of the area itself in degrees, not of its box
    (lon0, lat0, lon1, lat1), area_crs = _area_bounds(area, crs, caller)
    if not _frames.is_wgs84(CRS.from_user_input(area_crs)):  # a bounds tuple in another CRS: its corners
        xs, ys = Transformer.from_crs(area_crs, _frames.WGS84, always_xy=True).transform(
            [lon0, lon1, lon0, lon1], [lat0, lat0, lat1, lat1]
        )
        lon0, lon1, lat0, lat1 = min(xs), max(xs), min(ys), max(ys)
    if not all(math.isfinite(b) for b in (lon0, lat0, lon1, lat1)):
        raise ValueError(f"The bounds of the 'area' of {caller} must be finite.")
    dlat = float(cell_km) / KM_PER_DEGREE
    dlon = dlat / max(math.cos(math.radians(0.5 * (lat0 + lat1))), 1e-6)
    # the size is checked before anything is allocated (a tiny cell_km would need terabytes)
    fx = (lon1 - lon0) / dlon if dlon > 0 else math.inf
    fy = (lat1 - lat0) / dlat if dlat > 0 else math.inf
    cells = (math.floor(fx) + 1) * (math.floor(fy) + 1) if math.isfinite(fx * fy) else math.inf
    if cells > MAX_ZONES:
        raise ValueError(
            f"The 'cell_km' parameter of {caller} ({float(cell_km):g} km) would build {cells:.3g} zones "
            f"over the area, more than geoldp.zones.MAX_ZONES = {MAX_ZONES}. Use a larger cell_km, or raise "
            "geoldp.zones.MAX_ZONES if you have the memory (each zone is a polygon)."
        )
    nx, ny = int(math.floor(fx)) + 1, int(math.floor(fy)) + 1
    x0 = 0.5 * (lon0 + lon1) - 0.5 * nx * dlon
    y0 = 0.5 * (lat0 + lat1) - 0.5 * ny * dlat
    return _grid(x0 + np.arange(nx + 1) * dlon, y0 + np.arange(ny + 1) * dlat, "EPSG:4326")
