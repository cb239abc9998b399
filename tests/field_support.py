"""Shared inputs of the campaign, client and ingest tests: a public point set, zones and trajectories."""

from __future__ import annotations

import functools

import geopandas as gpd
import numpy as np
from shapely.geometry import LineString, Point

from geoldp import zone_grid
from geoldp.field.campaign import Campaign

BOX = (116.30, 39.90, 116.40, 40.00)


@functools.cache
def points(m: int = 200) -> gpd.GeoDataFrame:
    rng = np.random.default_rng(20261205)
    lon = BOX[0] + rng.random(m) * (BOX[2] - BOX[0])
    lat = BOX[1] + rng.random(m) * (BOX[3] - BOX[1])
    return gpd.GeoDataFrame(geometry=gpd.points_from_xy(lon, lat), crs="EPSG:4326")


@functools.cache
def zones(cells: int = 3) -> gpd.GeoDataFrame:
    return zone_grid(BOX, cells=cells)


@functools.cache
def campaign(name: str, epsilon: float = 2.0, total: float | None = None, max_points: int = 16) -> Campaign:
    return Campaign.create(
        name, epsilon=epsilon, points=points(), zones=zones(), user_total_epsilon=total, max_points=max_points
    )


def trajectory(rng: np.random.Generator, n: int) -> np.ndarray:
    """n vertices in (a little beyond) the box, lon first."""
    lon = BOX[0] - 0.01 + rng.random(n) * (BOX[2] - BOX[0] + 0.02)
    lat = BOX[1] - 0.01 + rng.random(n) * (BOX[3] - BOX[1] + 0.02)
    return np.column_stack([lon, lat])


def frame(xy: np.ndarray) -> gpd.GeoDataFrame:
    geom = LineString(xy) if len(xy) > 1 else Point(xy[0])
    return gpd.GeoDataFrame(geometry=[geom], crs="EPSG:4326")
