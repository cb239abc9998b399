"""Public zones: validation, a square grid built from public inputs, and the zone of every vertex.

A vertex lies in the **first** zone (by position) that contains it or has it on its boundary. A vertex in
no zone is in the **outside** category, which is part of every report's domain: the domain size is a
public number (zones + 1), never a function of the data.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from geoldp._zones import check_polygons, first_zone, lonlat_to

#: Most zones :func:`zone_grid` builds (as ``geoldp.metrics.MAX_ZONES``); a finer grid is refused up front.
MAX_ZONES = 1_000_000

__all__ = ["MAX_ZONES", "Zones", "check_zones", "zone_grid", "zone_of_vertices"]


class Zones:
    """Validated public zones (internal): geometries, CRS, labels and a digest for the ledger."""

    __slots__ = ("crs", "geoms", "index", "series")

    def __init__(self, series: Any, geoms: np.ndarray, crs: CRS) -> None:
        self.series = series
        self.geoms = geoms
        self.crs = crs
        self.index = series.index

    @property
    def size(self) -> int:
        """Number of zones (the outside category not counted)."""
        return int(self.geoms.shape[0])

    def digest(self) -> str:
        """A digest of the zones' geometry and CRS (public), to check that an estimate uses the same zones."""
        h = hashlib.sha256(self.crs.to_wkt().encode())
        h.update(b"".join(shapely.to_wkb(self.geoms, hex=False)))
        return h.hexdigest()[:16]


def check_zones(zones: Any, *, caller: str) -> Zones:
    """Validate a GeoDataFrame/GeoSeries of Polygons/MultiPolygons with a CRS (at least one zone).

    Raises
    ------
    TypeError
        Not a GeoDataFrame/GeoSeries, or a row that is not a (Multi)Polygon (named by position).
    ValueError
        No CRS, or no zones.
    """
    series, geoms, crs = check_polygons(zones, name="zones", caller=caller)
    return Zones(series, geoms, crs)


def zone_of_vertices(zones: Zones, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Zone position of every WGS 84 vertex; ``zones.size`` (the outside category) for none."""
    x, y = lonlat_to(lon, lat, zones.crs)
    return first_zone(zones.geoms, x, y, outside=zones.size)


def zone_grid(area: Any, *, cells: int | tuple[int, int] = 10, crs: Any = None) -> Any:
    """A grid of ``cells`` square-ish zones over the bounds of a **public** area.

    Parameters
    ----------
    area : GeoDataFrame, GeoSeries, PointSet or (minx, miny, maxx, maxy)
        Public inputs only (for example the public point set P), never the trajectories being released:
        the zones are part of every report's domain.
    cells : int or (int, int), default 10
        Columns and rows of the grid (one int: the same for both).
    crs : CRS-like, optional
        CRS of a bounds tuple (default EPSG:4326); a frame's own CRS otherwise.

    Returns
    -------
    geopandas.GeoDataFrame
        One Polygon per cell (row-major from the south-west corner), index ``zone``, with columns
        ``col`` and ``row``.

    Examples
    --------
    >>> g = zone_grid((0.0, 0.0, 1.0, 2.0), cells=(2, 4))
    >>> len(g), g.total_bounds.tolist()
    (8, [0.0, 0.0, 1.0, 2.0])
    """
    import geopandas as gpd

    from geoldp.pointset import PointSet

    caller = "geoldp.reports.zone_grid"
    nx, ny = (cells, cells) if isinstance(cells, int | np.integer) else tuple(cells)
    for v in (nx, ny):
        if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer) or int(v) < 1:
            raise ValueError(f"The 'cells' parameter of {caller} must be an int >= 1 or a pair of them.")
    nx, ny = int(nx), int(ny)
    if nx * ny > MAX_ZONES:
        raise ValueError(
            f"The 'cells' parameter of {caller} asks for {nx} x {ny} = {nx * ny} zones, more than "
            f"geoldp.reports.zones.MAX_ZONES = {MAX_ZONES}. Use fewer cells (or raise MAX_ZONES if you have "
            "the memory)."
        )
    bounds: tuple[float, ...]
    if isinstance(area, PointSet):
        bounds = (float(area.lon.min()), float(area.lat.min()), float(area.lon.max()), float(area.lat.max()))
        crs = "EPSG:4326"
    elif isinstance(area, gpd.GeoDataFrame | gpd.GeoSeries):
        if area.crs is None:
            raise ValueError(f"The 'area' of {caller} has no CRS. Use set_crs() to declare it.")
        bounds, crs = tuple(float(b) for b in area.total_bounds), area.crs
    elif isinstance(area, tuple | list) and len(area) == 4:
        bounds, crs = tuple(float(b) for b in area), crs or "EPSG:4326"
    else:
        raise TypeError(
            f"The 'area' parameter of {caller} must be a GeoDataFrame, GeoSeries, PointSet or a bounds tuple "
            f"(minx, miny, maxx, maxy). Got {type(area).__name__} instead."
        )
    minx, miny, maxx, maxy = bounds
    if not all(math.isfinite(b) for b in bounds) or maxx < minx or maxy < miny:
        raise ValueError(f"The bounds of the 'area' of {caller} must be finite with min <= max.")
    # a degenerate side (all points on one line) gets a tiny width so that every cell is a polygon
    pad_x = 1e-9 * max(1.0, abs(minx)) if maxx == minx else 0.0
    pad_y = 1e-9 * max(1.0, abs(miny)) if maxy == miny else 0.0
    xs = np.linspace(minx - pad_x, maxx + pad_x, nx + 1)
    ys = np.linspace(miny - pad_y, maxy + pad_y, ny + 1)
    grid_col, grid_row = np.meshgrid(np.arange(nx), np.arange(ny))
    col, row = grid_col.reshape(-1), grid_row.reshape(-1)
    boxes = shapely.box(xs[col], ys[row], xs[col + 1], ys[row + 1])
    return gpd.GeoDataFrame(
        {"col": col, "row": row}, geometry=boxes, crs=crs, index=pd.RangeIndex(boxes.shape[0], name="zone")
    )
