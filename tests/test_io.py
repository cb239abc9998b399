"""geoldp.io: RFC 7946 GeoJSON with the ledger, GPKG/GeoParquet round trips, readers for the CLI."""

from __future__ import annotations

import hashlib
import json

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

from geoldp import io as gio

EPS = 4.0


@pytest.fixture
def perturbed(toy_lines, city_points):
    return toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=0)


def assert_same_geometry(a, b, exact=True):
    ca = shapely.get_coordinates(a.geometry.values)
    cb = shapely.get_coordinates(b.geometry.values)
    if exact:
        np.testing.assert_array_equal(ca, cb)
    else:
        np.testing.assert_allclose(ca, cb, rtol=0, atol=1e-9)
    assert list(a.geom_type) == list(b.geom_type)


# ---------------------------------------------------------------------------------------------- GeoJSON


def test_geojson_rfc7946_with_ledger_member(tmp_path, perturbed):
    path = gio.to_geojson(perturbed, tmp_path / "out.geojson")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["type"] == "FeatureCollection"
    assert "crs" not in doc  # RFC 7946: WGS 84 implied
    assert doc["geoldp"] == json.loads(json.dumps(perturbed.attrs["geoldp"]))
    lon, lat = doc["features"][0]["geometry"]["coordinates"][0]
    assert 116 < lon < 117 and 39 < lat < 41  # lon/lat order
    back = gpd.read_file(path)  # what QGIS uses (GDAL's GeoJSON driver)
    assert back.crs.to_epsg() == 4326
    assert_same_geometry(back, perturbed)


def test_geojson_reprojects_to_wgs84(tmp_path, perturbed):
    utm = perturbed.to_crs("EPSG:32650")
    utm.attrs = perturbed.attrs
    path = gio.to_geojson(utm, tmp_path / "utm.geojson")
    doc = json.loads(path.read_text())
    assert "crs" not in doc and "geoldp" in doc
    back = gpd.read_file(path)
    assert_same_geometry(back, perturbed, exact=False)


def test_geojson_sidecar_and_no_ledger(tmp_path, perturbed):
    path = gio.to_geojson(perturbed, tmp_path / "a.geojson", ledger="sidecar")
    assert "geoldp" not in json.loads(path.read_text())
    side = gio.ledger_path(path)
    assert side.name == "a.geojson.ledger.json"
    assert json.loads(side.read_text())["mechanism"] == "atp"
    path = gio.to_geojson(perturbed, tmp_path / "b.geojson", ledger=False)
    assert "geoldp" not in json.loads(path.read_text())
    assert not gio.ledger_path(path).exists()
    with pytest.raises(ValueError, match=r"ledger='yes'.*one of \(True, False, 'sidecar'\)"):
        gio.to_geojson(perturbed, tmp_path / "c.geojson", ledger="yes")


def test_geojson_columns_index_and_times(tmp_path, toy_lines):
    g = toy_lines.copy()
    path = gio.to_geojson(g, tmp_path / "t.geojson")
    doc = json.loads(path.read_text())
    assert [f["id"] for f in doc["features"]] == ["10", "3", "7", "5"]  # non-default index kept as id
    assert doc["features"][0]["properties"]["start"].startswith("2001-02-03T04:05:06")
    back = gpd.read_file(path)
    assert list(back["user"]) == list(g["user"])


def test_geojson_errors(tmp_path, toy_lines):
    with pytest.raises(TypeError, match="must be a geopandas.GeoDataFrame"):
        gio.to_geojson(pd.DataFrame({"a": [1]}), tmp_path / "x.geojson")
    with pytest.raises(ValueError, match=r"no CRS\. Use set_crs\(\)"):
        gio.to_geojson(toy_lines.set_crs(None, allow_override=True), tmp_path / "x.geojson")


def test_geojson_point_output(tmp_path, toy_point_frame, city_points):
    out = toy_point_frame.ldp.perturb(city_points, epsilon=EPS, rng=0, traj_id_col="traj_id", time_col="time")
    path = out.ldp.to_geojson(tmp_path / "p.geojson")
    back = gpd.read_file(path)
    assert list(back["traj_id"]) == list(out["traj_id"])
    assert_same_geometry(back, out)


# ------------------------------------------------------------------------------------------ GPKG / Parquet


def test_gpkg_round_trip(tmp_path, perturbed):
    path = tmp_path / "out.gpkg"
    perturbed.to_file(path, driver="GPKG")
    side = gio.write_ledger(perturbed, path)
    back = gpd.read_file(path)
    assert back.crs == perturbed.crs
    assert_same_geometry(back, perturbed)
    doc = json.loads(side.read_text())
    assert doc.pop("data_file")["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert doc == json.loads(json.dumps(perturbed.attrs["geoldp"]))
    assert gio.read_ledger(path).record() == doc


def test_gpkg_round_trip_projected(tmp_path, toy_lines, city_points):
    out = toy_lines.to_crs("EPSG:32650").ldp.perturb(city_points, epsilon=EPS, rng=0)
    path = tmp_path / "utm.gpkg"
    out.to_file(path, driver="GPKG")
    back = gio.read_trajectories(path)
    assert back.crs.equals(out.crs)
    assert_same_geometry(back, out)


@pytest.mark.parametrize("how", ["file", "added layer", "layer set"])
def test_gpkg_date_times_with_an_offset_are_written_in_utc(tmp_path, toy_lines, how):
    # GDAL keeps an offset other than UTC as written, against the GeoPackage standard, and warns on reading
    g = toy_lines.copy()
    g["start"] = g["start"].dt.tz_localize("Asia/Shanghai")
    g["local"] = g["start"].dt.tz_convert("America/New_York")
    g["plain"] = g["start"].dt.tz_localize(None)  # no time zone: written as it is
    before = g.copy()
    path = tmp_path / "t.gpkg"
    if how == "file":
        gio.write_file(g, path)
    elif how == "added layer":
        gio.write_file(toy_lines, path)
        gio.write_file(g, path, layer="times", add_layer=True)
    else:
        gio.write_layer_set({"times": g}, path)
    back = gio.read_trajectories(path, **({} if how == "file" else {"layer": "times"}))  # no warning
    pd.testing.assert_frame_equal(g, before)  # the caller's frame is unchanged
    for column in ("start", "local"):
        assert str(back[column].dt.tz) == "UTC"
        assert list(back[column]) == list(g[column])  # the same instants
    assert list(back["plain"]) == list(g["plain"])


def test_a_gpkg_written_elsewhere_with_offsets_is_read_without_a_warning(tmp_path, toy_lines):
    g = toy_lines.copy()
    g["start"] = g["start"].dt.tz_localize("+08:00")
    path = tmp_path / "elsewhere.gpkg"
    g.to_file(path, driver="GPKG", engine="pyogrio")  # GDAL keeps the offset
    back = gio.read_trajectories(path)
    assert list(back["start"]) == list(g["start"])


@pytest.mark.filterwarnings("ignore:.*told from no data:geoldp.GeoLDPWarning")  # a toy report
@pytest.mark.parametrize("name", ["report:visited_zone", "report:od", "report:visited_zone:padded"])
def test_a_report_table_round_trips_through_write_file(tmp_path, toy_lines, city_points, name):
    # every release kind has its safe file in Python: a report table is CSV with its ledger, read back as
    # the table the design answers from
    from geoldp import designs, ledger_of, zone_grid

    zones = zone_grid(city_points, cells=3)
    question = "od_flows" if ":od" in name else "zone_visits"
    design = designs.design(name)
    table = design.release(toy_lines, epsilon=EPS, zones=zones, rng=3)
    written = gio.write_file(table, tmp_path / "r.csv")
    assert written == [tmp_path / "r.csv", tmp_path / "r.csv.ledger.json"]
    back = gio.read_report_table(tmp_path / "r.csv")
    assert ledger_of(back) == ledger_of(table)
    for col in table.columns:
        assert list(back[col]) == list(table[col])
    expected = design.answer(table, question, zones=zones)
    pd.testing.assert_frame_equal(design.answer(back, question, zones=zones), expected)
    with pytest.raises(ValueError, match="already exists"):
        gio.write_file(table, tmp_path / "r.csv")
    for path, kwargs in ((tmp_path / "r.gpkg", {}), (tmp_path / "s.csv", {"sidecar": False})):
        with pytest.raises(ValueError, match="one .csv file with its ledger"):
            gio.write_file(table, path, **kwargs)
    with pytest.raises(TypeError, match="must be a geopandas.GeoDataFrame"):  # a table that is no release
        gio.write_file(pd.DataFrame({"a": [1]}), tmp_path / "t.csv")


def test_parquet_round_trip(tmp_path, perturbed, toy_lines, city_points):
    path = tmp_path / "out.parquet"
    perturbed.to_parquet(path)
    back = gpd.read_parquet(path)
    assert back.crs == perturbed.crs
    assert back.index.equals(perturbed.index)
    assert_same_geometry(back, perturbed)
    with pytest.warns(Warning, match="unprotected"):
        kept = toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=0, keep_columns=["user", "start"])
    kept.to_parquet(tmp_path / "k.parquet")
    back = gio.read_trajectories(tmp_path / "k.parquet")
    pd.testing.assert_frame_equal(
        pd.DataFrame(back.drop(columns="geometry")), pd.DataFrame(kept.drop(columns="geometry"))
    )


def test_write_ledger_without_ledger(tmp_path, toy_lines):
    assert gio.write_ledger(toy_lines, tmp_path / "x.gpkg") is None


# ---------------------------------------------------------------------------------------------- readers


def test_read_csv_wkt(tmp_path, toy_lines):
    path = tmp_path / "t.csv"
    pd.DataFrame({"trip": [1, 2], "geometry": toy_lines.geometry.iloc[:2].to_wkt()}).to_csv(path, index=False)
    back = gio.read_trajectories(path)
    assert back.crs.to_epsg() == 4326 and list(back["trip"]) == [1, 2]
    assert back.geometry.iloc[0].equals(toy_lines.geometry.iloc[0])


def test_read_csv_lonlat_points_with_time(tmp_path, toy_point_frame, city_points):
    df = pd.DataFrame(
        {
            "traj": toy_point_frame["traj_id"],
            "ts": toy_point_frame["time"].dt.strftime("%Y-%m-%dT%H:%M:%S"),
            "Longitude": toy_point_frame.geometry.x,
            "Latitude": toy_point_frame.geometry.y,
        }
    )
    path = tmp_path / "pts.csv"
    df.to_csv(path, index=False)
    back = gio.read_trajectories(path, traj_id_col="traj", time_col="ts")
    assert pd.api.types.is_datetime64_any_dtype(back["ts"])
    assert "Longitude" not in back.columns and (back.geom_type == "Point").all()
    a = back.ldp.perturb(city_points, epsilon=EPS, rng=1, traj_id_col="traj", time_col="ts")
    b = toy_point_frame.ldp.perturb(city_points, epsilon=EPS, rng=1, traj_id_col="traj_id", time_col="time")
    assert a.geometry.equals(b.geometry)


def test_read_csv_explicit_columns_and_crs(tmp_path):
    df = pd.DataFrame({"e": [447000.0, 448000.0], "n": [4417000.0, 4418000.0]})
    path = tmp_path / "utm.csv"
    df.to_csv(path, index=False)
    back = gio.read_points(path, lon_col="e", lat_col="n", crs="EPSG:32650")
    assert back.crs.to_epsg() == 32650 and len(back) == 2


def test_read_csv_errors(tmp_path):
    path = tmp_path / "bad.csv"
    pd.DataFrame({"a": [1], "b": [2]}).to_csv(path, index=False)
    with pytest.raises(
        ValueError,
        match=r"found neither a WKT column .*The file has 2 column\(s\), whose names are not quoted",
    ):
        gio.read_trajectories(path)
    path2 = tmp_path / "wkt.csv"
    pd.DataFrame({"geometry": ["not wkt"]}).to_csv(path2, index=False)
    with pytest.raises(ValueError, match="not valid WKT"):
        gio.read_trajectories(path2)
    with pytest.raises(FileNotFoundError, match="no such file"):
        gio.read_trajectories(tmp_path / "missing.csv")


def test_read_trajectories_checks_columns(tmp_path, perturbed):
    path = gio.to_geojson(perturbed, tmp_path / "o.geojson")
    with pytest.raises(ValueError, match=r"\['traj'\].*column\(s\), whose names are not quoted"):
        gio.read_trajectories(path, traj_id_col="traj")


def test_read_plain_parquet_lonlat(tmp_path):
    path = tmp_path / "plain.parquet"
    pd.DataFrame({"lon": [116.3, 116.4], "lat": [39.9, 39.95], "id": [1, 1]}).to_parquet(path)
    back = gio.read_trajectories(path, traj_id_col="id")
    assert back.crs.to_epsg() == 4326 and (back.geom_type == "Point").all()


def test_read_with_crs_override(tmp_path, perturbed):
    path = gio.to_geojson(perturbed, tmp_path / "o.geojson")
    back = gio.read_trajectories(path, crs="EPSG:3857")
    assert back.crs.to_epsg() == 3857


def test_read_points(tmp_path, city_points_gdf, toy_lines):
    p = tmp_path / "pts.gpkg"
    city_points_gdf.to_file(p, driver="GPKG")
    back = gio.read_points(p)
    assert_same_geometry(back, city_points_gdf)
    lines = tmp_path / "lines.geojson"
    toy_lines.to_file(lines, driver="GeoJSON")
    with pytest.raises(TypeError, match="row position 0 of .lines.geojson. is not a Point"):
        gio.read_points(lines)
    csv = tmp_path / "p.csv"
    pd.DataFrame({"x": [116.3, np.nan], "y": [39.9, 39.9]}).to_csv(csv, index=False)
    with pytest.raises(ValueError, match="row position 1 of .p.csv. has a missing geometry"):
        gio.read_points(csv)


def test_ledger_round_trips_through_files(tmp_path, perturbed):
    want = json.loads(json.dumps(perturbed.attrs["geoldp"]))
    gj = gio.to_geojson(perturbed, tmp_path / "o.geojson")
    assert gio.read_ledger(gj).record() == want
    assert gio.read_trajectories(gj).attrs["geoldp"] == want
    gpkg = tmp_path / "o.gpkg"
    perturbed.to_file(gpkg, driver="GPKG")
    assert gio.read_ledger(gpkg) is None
    gio.write_ledger(perturbed, gpkg)
    assert gio.read_trajectories(gpkg).attrs == {}  # a sidecar is read only when asked for
    assert gio.read_trajectories(gpkg, ledger=True).attrs["geoldp"] == want
    plain = tmp_path / "plain.geojson"
    perturbed.to_file(plain, driver="GeoJSON")
    assert gio.read_ledger(plain) is None and gio.read_trajectories(plain).attrs == {}


def test_read_back_ledgers_are_release_ledgers(tmp_path, toy_lines, city_points):
    # combining two different releases read back from files warns and drops the ledger, as in memory
    import warnings

    import geoldp

    a = toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=1)
    b = toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=2)
    ra = gio.read_trajectories(gio.to_geojson(a, tmp_path / "a.geojson"))
    b.to_file(tmp_path / "b.gpkg", driver="GPKG")
    gio.write_ledger(b, tmp_path / "b.gpkg")
    rb = gio.read_trajectories(tmp_path / "b.gpkg", ledger=True)
    assert isinstance(ra.attrs["geoldp"], geoldp._core.ledger.ReleaseRecord)
    assert isinstance(rb.attrs["geoldp"], geoldp._core.ledger.ReleaseRecord)
    assert ra.attrs["geoldp"]["release_id"] != rb.attrs["geoldp"]["release_id"]
    with pytest.warns(geoldp.GeoLDPWarning, match="drops the ledger"):
        both = pd.concat([ra, rb])
    assert "geoldp" not in both.attrs and len(both) == len(ra) + len(rb)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # parts of one read-back release keep its ledger, without a warning
        again = pd.concat([ra.iloc[:2], ra.iloc[2:]])
    assert again.attrs["geoldp"] == ra.attrs["geoldp"]


def test_read_ledger_large_geojson_tail(tmp_path, perturbed, monkeypatch):
    monkeypatch.setattr(gio, "_TAIL_BYTES", 4096)
    big = perturbed.iloc[[0] * 200].copy()
    big.attrs = perturbed.attrs
    path = gio.to_geojson(big, tmp_path / "big.geojson")
    assert path.stat().st_size > 4096
    assert gio.read_ledger(path).mechanism == "atp"


def test_csv_floats_round_trip_exactly(tmp_path):
    lon = np.array([116.12345678901234, 116.3 + 1e-13])
    pd.DataFrame({"lon": lon, "lat": [39.9, 39.95]}).to_csv(tmp_path / "p.csv", index=False)
    back = gio.read_points(tmp_path / "p.csv")
    np.testing.assert_array_equal(back.geometry.x.to_numpy(), lon)


# -- every reader error a ValueError/TypeError naming the file, quoting none of its contents ---------------


def _csv_bytes(toy_lines) -> bytes:
    import io

    buf = io.StringIO()
    pd.DataFrame({"id": range(len(toy_lines)), "geometry": toy_lines.geometry.to_wkt()}).to_csv(
        buf, index=False
    )
    return buf.getvalue().encode()


@pytest.mark.parametrize(
    "name, make",
    [
        ("bad.csv.xz", lambda raw: b"\xfd7zXZ\x00" + b"garbage" * 10),
        ("trunc.csv.xz", lambda raw: __import__("lzma").compress(raw)[:40]),
        ("bad.csv.zip", lambda raw: b"PK\x03\x04" + b"garbage" * 10),
        ("trunc.csv.zip", lambda raw: b"PK\x03\x04\x14\x00"),
        ("trunc.csv.gz", lambda raw: __import__("gzip").compress(raw)[:40]),
        ("trunc.csv.bz2", lambda raw: __import__("bz2").compress(raw)[:40]),
    ],
)
def test_malformed_compressed_files_are_value_errors_naming_the_file(tmp_path, toy_lines, name, make):
    path = tmp_path / name
    path.write_bytes(make(_csv_bytes(toy_lines)))
    for reader in (gio.read_trajectories, gio.read_points):
        with pytest.raises(ValueError, match=rf"'{tmp_path}/{name}'|'{name}'"):
            reader(path)


@pytest.mark.parametrize(
    "exc",
    [
        shapely.errors.GEOSException("POINT (116.3 SECRET"),
        __import__("zipfile").BadZipFile("SECRET"),
        __import__("lzma").LZMAError("SECRET"),
        NotImplementedError("SECRET"),
        RuntimeError("SECRET"),
        AttributeError("SECRET"),
        __import__("pyproj").exceptions.CRSError("http://SECRET.example/crs"),
        KeyError("SECRET"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_every_library_exception_while_reading_is_a_value_error_naming_the_file(tmp_path, monkeypatch, exc):
    path = tmp_path / "trips.csv"
    path.write_text('id,geometry\n1,"LINESTRING (116.3 39.9, 116.4 39.95)"\n')

    def broken(*args, **kwargs):
        raise exc

    monkeypatch.setattr(gio, "_read_frame", broken)
    for reader in (gio.read_trajectories, gio.read_points):
        with pytest.raises(ValueError, match=rf"cannot read '{path}': the file is malformed") as info:
            reader(path)
        assert "SECRET" not in str(info.value) and type(exc).__name__ in str(info.value)


def test_a_headerless_csv_is_not_quoted_in_the_message(tmp_path):
    path = tmp_path / "fixes.csv"
    path.write_text("SECRET_NAME_42,39.91,116.33\nSECRET_NAME_43,39.92,116.34\n")
    for reader in (gio.read_trajectories, gio.read_points):
        with pytest.raises(ValueError, match="has 3 column") as info:
            reader(path)
        assert "SECRET" not in str(info.value) and "fixes.csv" in str(info.value)
    with pytest.raises(ValueError, match="WKT column 'wkt' not found") as info:
        gio.read_trajectories(path, wkt_col="wkt")
    assert "SECRET" not in str(info.value)
    with pytest.raises(ValueError, match="traj_id_col/time_col.*'trip'") as info:
        gio.read_trajectories(path, lon_col="116.33", lat_col="39.91", traj_id_col="trip")
    assert "SECRET" not in str(info.value)


@pytest.mark.parametrize(
    "value",
    ["hello", {"mechanism": "atp", "epsilon": 1.0, "release_id": "x"}, {"not": "a ledger"}],
    ids=["text", "ledger-like dict", "dict"],
)
@pytest.mark.parametrize("where", ["first feature", "last feature"])
def test_a_geoldp_feature_property_is_not_the_files_ledger(tmp_path, value, where):
    feature = {
        "type": "Feature",
        "geometry": {"type": "LineString", "coordinates": [[116.3, 39.9], [116.4, 39.95]]},
    }
    feats = [dict(feature, properties={"name": "a"}), dict(feature, properties={"name": "b"})]
    k = 0 if where == "first feature" else 1
    feats[k] = {"type": "Feature", "geometry": feature["geometry"], "properties": {"geoldp": value}}
    path = tmp_path / "third_party.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
    assert gio.read_ledger(path) is None
    assert gio.read_trajectories(path).attrs == {}


def test_the_top_level_member_written_by_geoldp_is_still_the_ledger(tmp_path, perturbed):
    path = tmp_path / "rel.geojson"
    gio.to_geojson(perturbed, path)
    assert gio.read_ledger(path).mechanism == perturbed.attrs["geoldp"]["mechanism"]
    assert gio.read_trajectories(path).attrs["geoldp"]["mechanism"] == perturbed.attrs["geoldp"]["mechanism"]
