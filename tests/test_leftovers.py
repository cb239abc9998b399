"""Small user-facing fixes: advice in warnings names calls that exist, GeoSeries/Dask accessors."""

from __future__ import annotations

import re
import warnings

import geopandas as gpd
import pytest
import shapely

import geoldp
from geoldp import GeoLDPWarning


def _dup_points():
    lon = [116.30, 116.31, 116.32, 116.30, 116.33]  # the 4th repeats the 1st
    lat = [39.90, 39.91, 39.90, 39.90, 39.92]
    return gpd.GeoDataFrame(geometry=gpd.points_from_xy(lon, lat), crs="EPSG:4326")


def _trips():
    rows = [
        shapely.linestrings([[116.301, 39.901], [116.311, 39.909], [116.321, 39.902]]),
        shapely.linestrings([[116.329, 39.918], [116.305, 39.903]]),
    ]
    return gpd.GeoDataFrame({"v": [1, 2]}, geometry=rows, crs="EPSG:4326")


def test_duplicate_points_warning_names_a_call_that_exists_and_silences_it():
    pts = _dup_points()
    # reached through a call that takes no deduplication argument
    with pytest.warns(GeoLDPWarning, match="duplicate") as rec:
        _trips().ldp.perturb(pts, epsilon=4.0, mechanism="pointem", rng=1)
    text = " ".join(str(w.message) for w in rec if "duplicate" in str(w.message))
    assert "pass deduplicate=True" not in text
    call = re.search(r"geoldp\.PointSet\.from_geodataframe\(points, deduplicate=True\)", text)
    assert call, text
    # the named call works, keeps one point per location, and the release then runs without the warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ps = geoldp.PointSet.from_geodataframe(pts, deduplicate=True)
        assert len(ps) == 4
        out = _trips().ldp.perturb(ps, epsilon=4.0, mechanism="pointem", rng=1)
    assert len(out) == 2
    # the other spelling named in the message works too
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(geoldp.PointSet(pts.geometry.x, pts.geometry.y, deduplicate=True)) == 4
