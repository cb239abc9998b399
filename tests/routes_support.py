"""Three short routes with a repeated index label, and five public points near them (shared test data)."""

from __future__ import annotations

import geopandas as gpd
import shapely

import geoldp


def route_series() -> gpd.GeoSeries:
    """A named GeoSeries of three LineStrings with a repeated index label, in EPSG:4326."""
    rows = [
        shapely.linestrings([[116.301, 39.901], [116.311, 39.909], [116.321, 39.902]]),
        shapely.linestrings([[116.329, 39.918], [116.305, 39.903]]),
        shapely.linestrings([[116.312, 39.911], [116.318, 39.913], [116.325, 39.91], [116.302, 39.9]]),
    ]
    return gpd.GeoSeries(rows, index=["b", "a", "b"], crs="EPSG:4326", name="route")


def route_points() -> geoldp.PointSet:
    """Five public points around the routes."""
    lon = [116.30, 116.31, 116.32, 116.33, 116.305]
    lat = [39.90, 39.91, 39.90, 39.92, 39.915]
    return geoldp.PointSet(lon, lat)
