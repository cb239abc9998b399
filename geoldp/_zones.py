"""Polygon zones and regions given by the user: the one validator, so that every function words the same
bad input the same way (metrics, collector-side estimates and reports alike).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import shapely
from pyproj import CRS

__all__ = ["check_polygons"]


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
