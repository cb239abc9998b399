"""A bad zone is worded the same way whichever function sees it (metrics, estimates, reports)."""

from __future__ import annotations

import re

import geopandas as gpd
import numpy as np
import pytest
import shapely

import geoldp
from geoldp import PointSet, estimate, metrics, reports

P = PointSet(np.linspace(0.0, 0.1, 12), np.zeros(12))
RELEASE = [np.array([0, 1]), np.array([3, 4]), np.array([7])]
TRIPS = gpd.GeoDataFrame(geometry=[shapely.LineString([(0.0, 0.0), (0.05, 0.0)])], crs="EPSG:4326")
BOX = shapely.box(-0.01, -0.01, 0.11, 0.01)


def _metrics(zones):
    metrics.zone_visit_counts(TRIPS, zones)


def _estimate(zones):
    estimate.visit_counts(RELEASE, P, zones=zones, mechanism="pointem", epsilon=2.0, rng=0, n_boot=0)


def _reports(zones):
    reports.true_counts(TRIPS, zones)


# (bad zones, exception, the message with the function's name as {caller})
BAD = [
    (
        [BOX],
        TypeError,
        "The 'zones' parameter of {caller} must be a GeoDataFrame or GeoSeries of polygons( or 'auto')?. "
        "Got list instead.",
    ),
    (gpd.GeoSeries([BOX]), ValueError, "The 'zones' of {caller} have no CRS. Use set_crs() to declare it."),
    (
        gpd.GeoSeries([], crs="EPSG:4326"),
        ValueError,
        "The 'zones' of {caller} have no rows; pass at least one polygon.",
    ),
    (
        gpd.GeoSeries([BOX, shapely.Point(0.0, 0.0)], crs="EPSG:4326"),
        TypeError,
        "Row position 1 of the 'zones' of {caller} is not a Polygon or MultiPolygon.",
    ),
    (
        gpd.GeoSeries([BOX, None], crs="EPSG:4326"),
        TypeError,
        "Row position 1 of the 'zones' of {caller} is not a Polygon or MultiPolygon.",
    ),
]


@pytest.mark.parametrize("zones, exc, template", BAD)
@pytest.mark.parametrize("call", [_metrics, _estimate, _reports], ids=["metrics", "estimate", "reports"])
def test_a_bad_zone_gets_one_message(call, zones, exc, template):
    pattern = re.escape(template).replace(re.escape("{caller}"), r"[\w.]+")
    pattern = pattern.replace(re.escape("( or 'auto')?"), "( or 'auto')?")
    with pytest.raises(exc) as info:
        call(zones)
    assert re.fullmatch(pattern, str(info.value)), str(info.value)


def test_estimate_type_errors_are_type_errors():
    with pytest.raises(TypeError, match="'n_sims' parameter"):
        estimate.visit_counts(RELEASE, P, mechanism="tp", epsilon=1.0, n_sims=2.5)
    with pytest.raises(TypeError, match="'level' parameter"):
        estimate.visit_counts(RELEASE, P, mechanism="tp", epsilon=1.0, level="high")
    with pytest.raises(TypeError, match="'cell_km' parameter"):
        estimate.visit_counts(RELEASE, P, mechanism="tp", epsilon=1.0, cell_km="1")
    with pytest.raises(ValueError, match="'n_sims' parameter"):  # a value error stays one
        estimate.visit_counts(RELEASE, P, mechanism="tp", epsilon=1.0, n_sims=0)


# --------------------------------------------------------------------- zone_grid's size guard, up front


@pytest.mark.parametrize("cell_km", [1e-3, 1e-300, 5e-324])
def test_zone_grid_refuses_tiny_cells_up_front(city_points, cell_km):

    with pytest.raises(
        ValueError, match="'cell_km' parameter of geoldp.zone_grid .* more than geoldp.zones.MAX_ZONES"
    ):
        geoldp.zone_grid(city_points, cell_km=cell_km)


def test_zone_grid_limit_can_be_raised(city_points, monkeypatch):
    n = len(geoldp.zone_grid(city_points, cell_km=0.5))
    monkeypatch.setattr(geoldp.zones, "MAX_ZONES", n - 1)
    with pytest.raises(ValueError, match="MAX_ZONES"):
        geoldp.zone_grid(city_points, cell_km=0.5)
    monkeypatch.setattr(geoldp.zones, "MAX_ZONES", n)
    assert len(geoldp.zone_grid(city_points, cell_km=0.5)) == n
