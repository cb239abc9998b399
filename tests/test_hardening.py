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


@pytest.mark.filterwarnings("ignore:GDAL reported:geoldp.errors.GeoLDPWarning")  # GDAL: mixed field types
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
