"""Property tests for the GeoPandas layer (TESTING.md §7, tier F): vertex counts, outputs ⊆ public points,
CRS and index kept, invalid coordinates always raise. Hand-written lon/lat strategies include ±180, ±90 and
179.9999999."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("hypothesis")

import geopandas as gpd  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import shapely  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from pyproj import Transformer  # noqa: E402

from geoldp import GeoLDPWarning, PointSet  # noqa: E402

# a global public set (no two points within 1 mm; diameter ~ half the Earth, so no "far" warnings)
P_LON = np.array([-179.5, -120.0, -60.0, 0.0, 45.0, 116.4, 179.9999999, 10.0])
P_LAT = np.array([-89.0, 35.0, -20.0, 0.0, 60.0, 39.9, -45.0, 89.9])
PTS = PointSet(P_LON, P_LAT)

EDGE_LON = [-180.0, 180.0, 179.9999999, -179.9999999, 0.0, -0.0]
EDGE_LAT = [-90.0, 90.0, 89.9999999, -89.9999999, 0.0]

lons = st.one_of(st.sampled_from(EDGE_LON), st.floats(-180.0, 180.0, allow_nan=False, allow_infinity=False))
lats = st.one_of(st.sampled_from(EDGE_LAT), st.floats(-90.0, 90.0, allow_nan=False, allow_infinity=False))
vertices = st.tuples(lons, lats)
lines = st.lists(vertices, min_size=2, max_size=6).map(shapely.LineString)
index_labels = st.lists(st.sampled_from(["a", "b", 3, 7]), min_size=1, max_size=6)


def _frame(geoms, labels=None, crs="EPSG:4326"):
    idx = None if labels is None else pd.Index(labels[: len(geoms)] + [0] * (len(geoms) - len(labels)))
    return gpd.GeoDataFrame(geometry=list(geoms), index=idx, crs=crs)


def _perturb(gdf, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GeoLDPWarning)  # far-from-P counts on random global input
        return gdf.ldp.perturb(PTS, epsilon=4.0, rng=0, **kw)


def _public_bytes(x, y):
    return {(float(a).hex(), float(b).hex()) for a, b in zip(x, y, strict=True)}


PUBLIC = _public_bytes(P_LON, P_LAT)


@settings(max_examples=300)
@given(st.lists(lines, min_size=1, max_size=5), index_labels, st.sampled_from(["tp", "atp"]))
def test_vertex_counts_public_points_index_crs(geoms, labels, mechanism):
    gdf = _frame(geoms, labels)
    out = _perturb(gdf, mechanism=mechanism)
    np.testing.assert_array_equal(
        shapely.get_num_coordinates(out.geometry.values), shapely.get_num_coordinates(gdf.geometry.values)
    )
    got = shapely.get_coordinates(out.geometry.values)
    assert _public_bytes(got[:, 0], got[:, 1]) <= PUBLIC
    assert out.index.equals(gdf.index) and out.crs == gdf.crs
    assert list(out.geom_type) == ["LineString"] * len(gdf)


_TO_3857 = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
P3857 = _public_bytes(*_TO_3857.transform(P_LON, P_LAT))
web_lines = st.lists(st.tuples(st.floats(-180, 180), st.floats(-85, 85)), min_size=2, max_size=5)


@settings(max_examples=100)
@given(st.lists(web_lines, min_size=1, max_size=4))
def test_projected_crs_output_is_transformed_public_points(coords):
    x, y = _TO_3857.transform(*np.asarray([c for line in coords for c in line]).T)
    geoms, k = [], 0
    for line in coords:
        geoms.append(shapely.LineString(np.column_stack([x[k : k + len(line)], y[k : k + len(line)]])))
        k += len(line)
    gdf = _frame(geoms, crs="EPSG:3857")
    out = _perturb(gdf)
    assert out.crs == gdf.crs
    got = shapely.get_coordinates(out.geometry.values)
    assert _public_bytes(got[:, 0], got[:, 1]) <= P3857


@settings(max_examples=100)
@given(
    st.lists(vertices, min_size=1, max_size=8),
    st.lists(st.sampled_from(["u", "v", "w"]), min_size=8, max_size=8),
)
def test_point_rows_mirror_input(points, ids):
    gdf = gpd.GeoDataFrame(
        {"tid": ids[: len(points)]}, geometry=[shapely.Point(p) for p in points], crs="EPSG:4326"
    )
    out = _perturb(gdf, traj_id_col="tid")
    assert out.index.equals(gdf.index) and list(out["tid"]) == list(gdf["tid"])
    got = shapely.get_coordinates(out.geometry.values)
    assert len(got) == len(gdf) and _public_bytes(got[:, 0], got[:, 1]) <= PUBLIC


bad_values = st.one_of(
    st.sampled_from([np.nan, np.inf, -np.inf]),
    st.floats(180.0, 1e6, exclude_min=True),
    st.floats(-1e6, -180.0, exclude_max=True),
)


@settings(max_examples=300)
@given(st.lists(lines, min_size=1, max_size=4), st.data())
def test_invalid_coordinates_always_raise(geoms, data):
    row = data.draw(st.integers(0, len(geoms)))
    coords = list(shapely.get_coordinates(geoms[row % len(geoms)]))
    j = data.draw(st.integers(0, len(coords) - 1))
    axis = data.draw(st.sampled_from([0, 1]))
    bad = data.draw(bad_values)
    if axis == 1 and np.isfinite(bad):
        bad = bad / 2 if abs(bad / 2) > 90 else np.sign(bad) * 90.5
    c = np.array(coords, dtype=float)
    c[j, axis] = bad
    with np.errstate(invalid="ignore"):
        broken = shapely.linestrings(c)
    geoms = list(geoms)
    geoms.insert(row, broken)
    gdf = _frame(geoms)
    with pytest.raises(ValueError, match=rf"^Row position {row} "):
        _perturb(gdf)
