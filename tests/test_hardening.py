"""Bad inputs that used to be accepted, crash or hang: each is now a clear TypeError/ValueError naming the
parameter, row, partition or file (and the CLI prints one line)."""

from __future__ import annotations

import json
import os
import sqlite3

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

import geoldp
from geoldp import io as gio

# ------------------------------------------------------------------------------------ reading inputs


def _point_rows(times):
    return gpd.GeoDataFrame(
        {"tid": ["a"] * len(times), "t": pd.Series(times, dtype=object)},
        geometry=[shapely.Point(116.32 + 0.01 * i, 39.91) for i in range(len(times))],
        crs="EPSG:4326",
    )


@pytest.mark.parametrize(
    "times",
    [[3, "2020-01-01T00:00:00", 1], [1.5, "x", 2.5], [pd.Timestamp("2020-01-01"), 5, 6]],
    ids=["int and iso text", "float and text", "datetime and int"],
)
def test_time_column_mixing_kinds_is_refused(city_points, times):
    with pytest.raises(ValueError, match="time column 't' .* mixes kinds of value"):
        _point_rows(times).ldp.perturb(city_points, epsilon=4.0, rng=0, traj_id_col="tid", time_col="t")


def test_time_column_of_one_kind_is_accepted(city_points):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the near-uniform budget warning is not the point here
        out = _point_rows([3, 2.5, 1]).ldp.perturb(
            city_points, epsilon=4.0, rng=0, traj_id_col="tid", time_col="t"
        )
    assert len(out) == 3


@pytest.mark.filterwarnings("ignore:GDAL reported:geoldp.GeoLDPWarning")  # GDAL: mixed field types
@pytest.mark.parametrize("values", [[1, "2020-01-01T00:00:00Z", 3], [1, "later", 3]])
def test_time_column_mixing_kinds_in_a_file_is_refused(tmp_path, values):
    feats = [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [116.3 + 0.01 * i, 39.9]},
            "properties": {"tid": "a", "t": v},
        }
        for i, v in enumerate(values)
    ]
    path = tmp_path / "m.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
    with pytest.raises(ValueError, match="time column 't'"):
        gio.read_trajectories(path, traj_id_col="tid", time_col="t")
    # an object column of numbers and text built in memory is refused by the reader's parser too
    frame = _point_rows(values)
    with pytest.raises(ValueError, match="mixes kinds"):
        gio._parse_time(frame, "t", "read_trajectories")


def test_dask_partitions_with_mixed_geometry_types_are_refused(city_points):
    dask_geopandas = pytest.importorskip("dask_geopandas")
    import geoldp.dask

    lines = gpd.GeoDataFrame(
        geometry=[shapely.LineString([(116.32, 39.90), (116.35, 39.93)])] * 3, crs="EPSG:4326"
    )
    points = gpd.GeoDataFrame(geometry=[shapely.Point(116.33, 39.91)] * 3, crs="EPSG:4326")
    frame = pd.concat([lines, points], ignore_index=True)
    for npartitions, where in ((2, "partitions 0 and 1 hold"), (1, "partition 0 holds")):
        ddf = dask_geopandas.from_geopandas(frame, npartitions=npartitions)
        pair = "(LineString and Point|Point and LineString) rows"
        with pytest.raises(ValueError, match=f"Mixed geometry types .*{where} {pair}"):
            geoldp.dask.perturb(ddf, city_points, epsilon=4.0, rng=0)


def test_dask_partition_in_another_crs_is_refused(toy_lines, city_points):
    pytest.importorskip("dask_geopandas")
    import dask
    import dask.dataframe as dd
    import dask_geopandas

    import geoldp.dask

    a, b = toy_lines.iloc[:2], toy_lines.iloc[2:].to_crs(3857)
    parts = dd.from_delayed([dask.delayed(a), dask.delayed(b)], meta=a.iloc[:0], verify_meta=False)
    ddf = dask_geopandas.from_dask_dataframe(parts)
    with pytest.raises(ValueError, match="Partition 1 .* is in EPSG:3857, but the frame declares EPSG:4326"):
        geoldp.dask.perturb(ddf, city_points, epsilon=4.0, rng=0)


def _gpkg_with_blob(path, blob):
    frame = gpd.GeoDataFrame(
        {"tid": ["a", "b", "c"]},
        geometry=[shapely.LineString([(116.3, 39.9), (116.31 + 0.01 * i, 39.91)]) for i in range(3)],
        crs="EPSG:4326",
    )
    frame.to_file(path, driver="GPKG", layer="t")
    con = sqlite3.connect(path)
    for fn in ("ST_IsEmpty", "ST_MinX", "ST_MaxX", "ST_MinY", "ST_MaxY"):  # the R-tree triggers call them
        con.create_function(fn, 1, lambda b: 0)
    con.execute("UPDATE t SET geom = ? WHERE fid = 2", (blob,))
    con.commit()
    con.close()


@pytest.mark.parametrize(
    "blob",
    [
        bytes(np.random.default_rng(1).integers(0, 256, 40, dtype=np.uint8)),
        b"GP\x00\x01\xe6\x10\x00\x00zz",
        b"z",
    ],
    ids=["random bytes", "header then garbage", "one byte"],
)
@pytest.mark.parametrize("reader", ["read_trajectories", "read_points"])
def test_gpkg_with_garbage_geometry_blobs_is_refused(tmp_path, blob, reader):
    path = tmp_path / "bad.gpkg"
    _gpkg_with_blob(path, blob)
    with pytest.raises(
        ValueError, match="'bad.gpkg' holds geometry data that is not a valid .*row position 1"
    ):
        getattr(gio, reader)(path)


def test_gpkg_with_a_null_geometry_is_read_as_missing(tmp_path):
    path = tmp_path / "null.gpkg"
    _gpkg_with_blob(path, None)
    back = gio.read_trajectories(path)
    assert back.geometry.isna().tolist() == [False, True, False]  # a missing row, reported when used


_OSM_BAD = {
    "garbage.osm.pbf": b"\x00\xffgarbage" * 10,
    "unknown.xyz": b"hello",
    "entity.osm": (
        b'<?xml version="1.0"?>\n<!DOCTYPE osm [<!ENTITY s SYSTEM "file:///etc/hostname">]>\n'
        b'<osm version="0.6"><node id="1" lat="1" lon="1" version="1"><tag k="n" v="&s;"/></node></osm>'
    ),
    "truncated.osm": b'<osm version="0.6"><node id="1" lat="1" lon="1"',
}


@pytest.mark.parametrize("name", sorted(_OSM_BAD))
def test_road_nodes_wraps_osmium_errors(tmp_path, name):
    pytest.importorskip("osmium")
    from geoldp import points

    path = tmp_path / name
    path.write_bytes(_OSM_BAD[name])
    with pytest.raises(ValueError, match=f"cannot read the OpenStreetMap extract '{name}'") as info:
        points.road_nodes(path)
    assert "hostname" not in str(info.value)


def test_road_nodes_refuses_a_fifo(tmp_path):
    pytest.importorskip("osmium")
    from geoldp import points

    fifo = tmp_path / "f.osm"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        points.road_nodes(fifo)


# ------------------------------------------------------------------------- size guards, up front


@pytest.mark.parametrize(
    "area, spacing, match",
    [
        (
            (-180, -90, 180, 90),
            1000,
            "would build about 5.1e\\+08 points, more than geoldp.points.MAX_POINTS",
        ),
        (
            (116.2, 39.8, 116.5, 40.0),
            0.5,
            "spacing_m=0.5 over an area of 569.1 km² would build about 2.28e\\+09",
        ),
        ((-180, -90, 180, 90), 500_000, "too large for one metric grid"),  # a few points, folded up
        ((-180, -60, 180, 60), 1_000_000, "too large for one metric grid"),
    ],
)
def test_grid_refuses_huge_or_global_areas_up_front(area, spacing, match):
    import time

    from geoldp import points

    start = time.process_time()
    with pytest.raises(ValueError, match=match):
        points.grid(area, spacing)
    assert time.process_time() - start < 3.0


def test_grid_limit_can_be_raised_and_lowered(monkeypatch):
    from geoldp import points

    box = (116.30, 39.90, 116.40, 39.96)  # about 8.5 km x 6.7 km: about 570 points at 300 m
    n = len(points.grid(box, 300))
    monkeypatch.setattr(points, "MAX_POINTS", n // 2)
    with pytest.raises(ValueError, match=f"MAX_POINTS = {n // 2}"):
        points.grid(box, 300)
    monkeypatch.setattr(points, "MAX_POINTS", n)
    assert len(points.grid(box, 300)) == n


@pytest.mark.parametrize("resolution", [13, 14, 15])
def test_h3_cells_refuses_fine_resolutions_over_a_city_up_front(resolution):
    pytest.importorskip("h3")
    import time

    from geoldp import points

    start = time.process_time()
    with pytest.raises(
        ValueError, match=f"resolution={resolution} over an area of .* more than geoldp.points"
    ):
        points.h3_cells((116.2, 39.8, 116.5, 40.0), resolution)
    assert time.process_time() - start < 3.0


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


@pytest.mark.parametrize("spacing", [0.01, 1e-300, 5e-324])
def test_resample_refuses_tiny_spacing_up_front(toy_lines, spacing):
    import time
    import warnings

    from geoldp import prepare

    big = pd.concat([toy_lines] * 500, ignore_index=True)  # 2,000 rows of a few km each
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning on the way
        with pytest.raises(ValueError, match="'spacing_m' parameter of resample .*MAX_VERTICES"):
            prepare.resample(big, spacing_m=spacing)
    assert time.process_time() - start < 5.0


def test_resample_limit_counts_max_points_and_can_be_raised(toy_lines, monkeypatch):
    from geoldp import prepare

    monkeypatch.setattr(prepare, "MAX_VERTICES", 40)
    with pytest.raises(ValueError, match="MAX_VERTICES = 40"):
        prepare.resample(toy_lines, spacing_m=10.0)
    out = prepare.resample(toy_lines, spacing_m=10.0, max_points=5)  # at most 4 x 5 vertices
    assert shapely.get_num_coordinates(np.asarray(out.geometry.values)).max() <= 5
    monkeypatch.setattr(prepare, "MAX_VERTICES", 10**9)
    assert len(prepare.resample(toy_lines, spacing_m=10.0)) == len(toy_lines)


# ------------------------------------------------------------------------------ numeric options


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"k": 0}, ValueError, "'k' parameter of evaluate must be an int >= 1"),
        ({"k": -3}, ValueError, "'k' parameter"),
        ({"k": 2.5}, TypeError, "'k' parameter"),
        ({"k": True}, TypeError, "'k' parameter"),
        ({"bins": 0}, ValueError, "'bins' parameter of evaluate must be an int >= 1"),
        ({"bins": -1}, ValueError, "'bins' parameter"),
        ({"bins": 1.5}, ValueError, "'bins' parameter"),
    ],
)
def test_evaluate_numeric_options(city_points, kwargs, exc, match):
    from geoldp import metrics

    with pytest.raises(exc, match=match):
        metrics.evaluate([[0, 1], [2]], [[0, 1], [2]], points=city_points, **kwargs)
    table = metrics.evaluate([[0, 1], [2]], [[0, 1], [2]], points=city_points, k=1, bins=1)
    assert table.loc["perturbed", "hotspot_overlap"] == 1.0  # identical releases, one hotspot


@pytest.mark.parametrize(
    "limit, exc", [(0, ValueError), (-1, ValueError), (1.0, TypeError), (True, TypeError)]
)
def test_suggest_max_points_limit(limit, exc):
    from geoldp.prepare import suggest_max_points

    with pytest.raises(exc, match="'limit' parameter of suggest_max_points"):
        suggest_max_points("atp", epsilon=4.0, limit=limit)
    assert suggest_max_points("atp", epsilon=4.0, limit=1) == 1


@pytest.mark.parametrize("epsilon", [1e-300, 5e-324, 1e-6, 0.000999])
def test_tiny_epsilon_is_refused_before_any_draw(toy_lines, city_points, epsilon):
    from geoldp import BudgetAccountant
    from geoldp.prepare import MIN_EPSILON

    assert epsilon < MIN_EPSILON == 1e-3
    acc = BudgetAccountant(10.0)
    frame = toy_lines.assign(user=range(len(toy_lines)))
    with pytest.raises(
        ValueError, match="'epsilon' parameter of GeoDataFrame.ldp.perturb .* below the smallest"
    ):
        frame.ldp.perturb(city_points, epsilon=epsilon, rng=0, accountant=acc, user_col="user")
    assert acc.remaining(0) == 10.0  # nothing charged


def test_tiny_epsilon_is_refused_by_dask(toy_lines, city_points):
    dask_geopandas = pytest.importorskip("dask_geopandas")
    import geoldp.dask

    ddf = dask_geopandas.from_geopandas(toy_lines, npartitions=2)
    with pytest.raises(ValueError, match="below the smallest"):
        geoldp.dask.perturb(ddf, city_points, epsilon=1e-300, rng=0)


def test_smallest_accepted_epsilon_only_warns(toy_lines, city_points):
    from geoldp._core.errors import PrivacyWarning
    from geoldp.prepare import MIN_EPSILON

    with pytest.warns(PrivacyWarning, match="close to uniform noise"):
        out = toy_lines.ldp.perturb(city_points, epsilon=MIN_EPSILON, rng=0)
    assert len(out) == len(toy_lines)


@pytest.mark.parametrize("reader", ["read_trajectories", "read_points"])
def test_gpkg_table_without_geometry_is_a_clear_error(tmp_path, reader):
    import pyogrio

    path = tmp_path / "table.gpkg"
    pyogrio.write_dataframe(pd.DataFrame({"a": [1, 2]}), path, driver="GPKG", layer="t")
    with pytest.raises(ValueError, match="'table.gpkg' has no geometry column"):
        getattr(gio, reader)(path)
