"""Polygon zones and regions given by the user: the one validator (so that every function words the same
bad input the same way: metrics, collector-side estimates and reports alike), and the point-in-zone rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import shapely
from pyproj import CRS, Transformer

from geoldp import _frames

__all__ = ["check_polygons", "first_zone", "lonlat_to"]


def check_polygons(
    obj: Any, *, name: str, caller: str, accepts: str = "", allow_empty: bool = False
) -> tuple[Any, np.ndarray, CRS]:
    """Validate a GeoDataFrame/GeoSeries of Polygons/MultiPolygons with a CRS.

    Parameters
    ----------
    obj : GeoDataFrame or GeoSeries
        The user's zones (or polygon regions); a GeoDataFrame stands for its active geometry.
    name : str
        The parameter's name in messages ("zones", "regions").
    caller : str
        The public function named in messages.
    accepts : str, optional
        What else the parameter accepts, appended to the type error (for example ``" or 'auto'"``).
    allow_empty : bool, default False
        Whether no rows is valid.

    Returns
    -------
    series : GeoSeries
        The polygons (the user's object, not copied).
    geoms : numpy.ndarray of object
        Their shapely geometries.
    crs : pyproj.CRS

    Raises
    ------
    TypeError
        Not a GeoDataFrame/GeoSeries, or a row that is not a (Multi)Polygon (named by position).
    ValueError
        No CRS, or no rows (unless ``allow_empty``).
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


def first_zone(geoms: np.ndarray, x: np.ndarray, y: np.ndarray, *, outside: int) -> np.ndarray:
    """Position of the first polygon containing or touching each (x, y); ``outside`` for none."""
    out = np.full(np.asarray(x).shape[0], outside, dtype=np.int64)
    if out.size == 0:
        return out
    pt, zn = shapely.STRtree(geoms).query(shapely.points(x, y), predicate="intersects")
    order = np.lexsort((zn, pt))  # by point, then by zone position: the first zone wins
    pt, zn = pt[order], zn[order]
    first = np.ones(pt.shape[0], dtype=bool)
    first[1:] = pt[1:] != pt[:-1]
    out[pt[first]] = zn[first]
    return out
