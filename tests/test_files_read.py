"""Issue 8, reading: only the named file, allow-listed formats checked from content, no network, ledgers
read only when asked for, formats users have (compressed CSV, text ids, GPX), clear errors without data."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import socket
import sqlite3
import threading
import zipfile

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

from geoldp import PointSet
from geoldp import io as gio
from geoldp.cli import main

SECRET = "s3cr3t-attribute-value"
SECRET_LON = 116.123456789


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection; bounded in time (daemon thread)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


@pytest.fixture
def listener():
    lst = Listener()
    yield lst
    lst.close()


def test_listener_sees_a_connection(listener):
    """Control: the listener does record a connection, so 'received nothing' below means something."""
    with socket.create_connection(("127.0.0.1", listener.port), timeout=2):
        pass
    for _ in range(50):
        if listener.connections:
            break
        threading.Event().wait(0.05)
    assert listener.connections == 1


def _lines(n=3):
    return gpd.GeoDataFrame(
        {"user": [SECRET] * n},
        geometry=[shapely.LineString([(SECRET_LON, 39.9 + i / 100), (116.3, 39.95)]) for i in range(n)],
        crs="EPSG:4326",
    )


def _vrt(source: str) -> str:
    return (
        f'<OGRVRTDataSource><OGRVRTLayer name="x"><SrcDataSource>{source}</SrcDataSource>'
        '<GeometryType>wkbPoint</GeometryType><GeometryField encoding="PointFromColumns" x="lon" y="lat"/>'
        "</OGRVRTLayer></OGRVRTDataSource>"
    )


# ----------------------------------------------------------------------------------------- indirection


@pytest.mark.parametrize("name", ["trips.geojson", "trips.gpkg", "trips.vrt", "trips.csv", "trips.fgb"])
def test_vrt_pointing_at_another_file_is_refused(tmp_path, name):
    secret = tmp_path / "secret.csv"
    pd.DataFrame({"lon": [116.3], "lat": [39.9], "note": [SECRET]}).to_csv(secret, index=False)
    path = tmp_path / name
    path.write_text(_vrt(str(secret)))
    with pytest.raises(ValueError) as info:
        gio.read_trajectories(path)
    msg = str(info.value)
    assert name in msg and SECRET not in msg
    assert "VRT" in msg or "format" in msg


def test_vrt_with_vsicurl_fetches_nothing(tmp_path, listener):
    path = tmp_path / "trips.geojson"
    path.write_text(_vrt(f"/vsicurl/http://127.0.0.1:{listener.port}/x.csv"))
    with pytest.raises(ValueError, match="VRT"):
        gio.read_trajectories(path)
    with pytest.raises(ValueError, match="VRT"):
        gio.read_points(path)
    assert listener.connections == 0


def _crs_link_geojson(port: int) -> dict:
    return {
        "type": "FeatureCollection",
        "crs": {"type": "link", "properties": {"href": f"http://127.0.0.1:{port}/crs.wkt", "type": "ogcwkt"}},
        "features": [
            {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [1.0, 2.0]}}
        ],
    }


@pytest.mark.parametrize("spelling", ["crs", "CRS", "\\u0063rs"])
def test_geojson_crs_link_is_refused_and_fetches_nothing(tmp_path, listener, spelling):
    doc = json.dumps(_crs_link_geojson(listener.port)).replace('"crs"', f'"{spelling}"')
    path = tmp_path / "p.geojson"
    path.write_text(doc)
    with pytest.raises(ValueError, match="legacy GeoJSON 'crs' member.*never fetches"):
        gio.read_points(path)
    assert listener.connections == 0


def test_geojson_crs_name_that_is_a_url_or_file_is_refused(tmp_path, listener):
    for name in (f"http://127.0.0.1:{listener.port}/x", "/etc/hostname"):
        doc = _crs_link_geojson(listener.port)
        doc["crs"] = {"type": "name", "properties": {"name": name}}
        path = tmp_path / "p.geojson"
        path.write_text(json.dumps(doc))
        with pytest.raises(ValueError, match="not a local CRS name"):
            gio.read_points(path)
    assert listener.connections == 0


def test_geojson_feature_level_crs_link_is_refused(tmp_path, listener):
    doc = _crs_link_geojson(listener.port)
    doc["features"][0]["geometry"]["crs"] = doc.pop("crs")
    path = tmp_path / "p.geojson"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="in geometry"):
        gio.read_points(path)
    assert listener.connections == 0


def test_geojson_named_crs_is_read(tmp_path):
    doc = _crs_link_geojson(1)
    doc["crs"] = {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::3857"}}
    doc["features"].append(json.loads(json.dumps(doc["features"][0])))
    path = tmp_path / "p.geojson"
    path.write_text(json.dumps(doc))
    assert gio.read_points(path).crs.to_epsg() == 3857


@pytest.mark.parametrize(
    "text",
    [
        "/vsizip/archive.zip/trips.geojson",
        "/vsicurl/http://127.0.0.1:1/x.geojson",
        "http://127.0.0.1:1/trips.geojson",
        "https://example.org/trips.geojson",
        "zip://archive.zip!trips.geojson",
        "s3://bucket/trips.parquet",
        "GPKG:trips.gpkg:layer",
        "CSV:trips.csv",
    ],
)
def test_virtual_paths_urls_and_prefixes_are_refused(text, listener):
    with pytest.raises(ValueError, match="network|virtual path"):
        gio.read_trajectories(text)
    assert listener.connections == 0


def test_network_paths_refused_even_with_allow_vsi(listener):
    for text in (
        f"/vsicurl/http://127.0.0.1:{listener.port}/x.geojson",
        f"http://127.0.0.1:{listener.port}/x",
    ):
        with pytest.raises(ValueError, match="never reads over the network"):
            gio.read_trajectories(text, allow_vsi=True)
    assert listener.connections == 0


def test_allow_vsi_reads_a_local_archive_member(tmp_path):
    inner = tmp_path / "t.geojson"
    _lines().to_file(inner, driver="GeoJSON")
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(inner, "t.geojson")
    with pytest.raises(ValueError, match="archive"):
        gio.read_trajectories(archive)
    with pytest.raises(ValueError, match="allow_vsi=True"):
        gio.read_trajectories(f"/vsizip/{archive}/t.geojson")
    back = gio.read_trajectories(f"/vsizip/{archive}/t.geojson", allow_vsi=True)
    assert len(back) == 3


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("t.gpkg", b'{"type": "FeatureCollection", "features": []}'),
        ("t.geojson", b"SQLite format 3\x00" + b"\x00" * 100),
        ("t.parquet", b"lon,lat\n1,2\n"),
        ("t.fgb", b"PAR1xxxxPAR1"),
        ("t.csv", b"\x1f\x8b\x08\x00gzipped"),
        ("t.csv.gz", b"lon,lat\n1,2\n"),
        ("t.gpx", b'{"type": "FeatureCollection"}'),
        ("t.geojson", b"<?xml version='1.0'?><kml></kml>"),
    ],
)
def test_name_and_content_must_agree(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match="named like .* but its content is"):
        gio.read_trajectories(path)


@pytest.mark.parametrize("name", ["t.kml", "t.vrt", "t.gml", "t.xlsx", "t.gz", "t.tar", "t.zip", "t"])
def test_formats_outside_the_allow_list_are_refused(tmp_path, name):
    path = tmp_path / name
    path.write_text("lon,lat\n1,2\n")
    with pytest.raises(ValueError, match="reads|compressed CSV only"):
        gio.read_trajectories(path)


def test_directory_and_fifo_are_not_read(tmp_path):
    d = tmp_path / "dir.geojson"
    d.mkdir()
    with pytest.raises(ValueError, match="not a regular file"):
        gio.read_trajectories(d)
    fifo = tmp_path / "f.geojson"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        gio.read_trajectories(fifo)


# ------------------------------------------------------------------------------------------ ledgers


@pytest.fixture
def release(toy_lines, city_points):
    return toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=0)


def test_sidecar_is_read_only_when_asked_for(tmp_path, release):
    path = tmp_path / "t.gpkg"
    gio.write_file(release, path)
    assert gio.read_trajectories(path).attrs == {}
    assert gio.read_trajectories(path, ledger=True).attrs["geoldp"]["mechanism"] == "atp"
    other = tmp_path / "elsewhere.json"
    other.write_bytes(gio.ledger_path(path).read_bytes())
    assert gio.read_trajectories(path, ledger=other).attrs["geoldp"]["epsilon"] == 4.0


def test_forged_sidecar_next_to_plain_file_is_ignored(tmp_path, toy_lines):
    path = tmp_path / "trips.geojson"
    toy_lines.to_file(path, driver="GeoJSON")
    gio.ledger_path(path).write_text(json.dumps({"mechanism": "atp", "epsilon": 0.1}))
    assert gio.read_trajectories(path).attrs == {}


def test_fifo_sidecar_does_not_hang(tmp_path, release):
    path = tmp_path / "t.gpkg"
    gio.write_file(release, path, sidecar=False)
    os.mkfifo(gio.ledger_path(path))
    assert gio.read_trajectories(path).attrs == {}  # not asked for: never opened
    with pytest.raises(ValueError, match=r"t\.gpkg\.ledger\.json.*not a regular file"):
        gio.read_trajectories(path, ledger=True)
    with pytest.raises(ValueError, match="not a regular file"):
        gio.read_ledger(path)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"\xff\xfe garbage", "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"epsilon": 1.0}', "no 'mechanism'"),
        (b'{"mechanism": "atp", "epsilon": -1}', "'epsilon' is not a positive"),
        (b'{"mechanism": "atp", "epsilon": true}', "'epsilon' is not a positive"),
        (b'{"mechanism": "atp", "epsilon": 1, "ledger": 3}', "'ledger' member"),
    ],
)
def test_malformed_sidecar_is_a_clear_error(tmp_path, release, content, match):
    path = tmp_path / "t.gpkg"
    gio.write_file(release, path, sidecar=False)
    gio.ledger_path(path).write_bytes(content)
    with pytest.raises(ValueError, match=rf"t\.gpkg\.ledger\.json.*{match}"):
        gio.read_trajectories(path, ledger=True)


def test_oversized_sidecar_is_refused(tmp_path, release, monkeypatch):
    monkeypatch.setattr(gio, "_MAX_LEDGER_BYTES", 100)
    path = tmp_path / "t.gpkg"
    gio.write_file(release, path)
    with pytest.raises(ValueError, match="larger than 100 bytes"):
        gio.read_trajectories(path, ledger=True)


def test_sidecar_of_another_release_is_out_of_step(tmp_path, release, toy_lines, city_points):
    path = tmp_path / "t.gpkg"
    gio.write_file(release, path)
    stale = gio.ledger_path(path).read_bytes()
    other = toy_lines.ldp.perturb(city_points, epsilon=2.0, rng=1)
    gio.write_file(other, path, overwrite=True)
    gio.ledger_path(path).write_bytes(stale)
    with pytest.raises(ValueError, match="out of step"):
        gio.read_trajectories(path, ledger=True)


def test_malformed_geojson_member_is_a_clear_error(tmp_path, toy_lines):
    doc = json.loads(toy_lines[["geometry"]].to_json())
    doc["geoldp"] = {"mechanism": "atp", "epsilon": "lots"}
    path = tmp_path / "t.geojson"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"'geoldp' member of 't\.geojson'.*epsilon"):
        gio.read_trajectories(path)


# ------------------------------------------------------------------------------------------ formats


def _trip_table():
    return pd.DataFrame(
        {
            "trip_id": ["000", "000", "007", "007"],
            "t": ["2020-01-01T00:00:00", "2020-01-01T00:01:00", "2020-01-01T00:00:00", "2020-01-01T00:02:00"],
            "lon": [116.30, 116.31, 116.35, 116.36],
            "lat": [39.90, 39.91, 39.95, 39.96],
        }
    )


def _compress(raw: bytes, kind: str, path) -> None:
    if kind == "gz":
        path.write_bytes(gzip.compress(raw))
    elif kind == "bz2":
        path.write_bytes(bz2.compress(raw))
    elif kind == "xz":
        path.write_bytes(lzma.compress(raw))
    else:
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("trips.csv", raw)


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz", "zip"])
def test_compressed_csv_python_api(tmp_path, kind):
    path = tmp_path / f"trips.csv.{kind}"
    _compress(_trip_table().to_csv(index=False).encode(), kind, path)
    back = gio.read_trajectories(path, traj_id_col="trip_id", time_col="t")
    assert list(back["trip_id"]) == ["000", "000", "007", "007"]
    np.testing.assert_array_equal(back.geometry.x.to_numpy(), _trip_table()["lon"].to_numpy())


@pytest.mark.parametrize("kind", ["gz", "zip"])
def test_compressed_csv_through_the_cli(tmp_path, kind, city_points_gdf, capsys):
    path = tmp_path / f"trips.csv.{kind}"
    _compress(_trip_table().to_csv(index=False).encode(), kind, path)
    points = tmp_path / "points.geojson"
    city_points_gdf.to_file(points, driver="GeoJSON")
    out = tmp_path / "out.csv"
    argv = ["perturb", str(path), "--points", str(points), "--epsilon", "2", "--seed", "1", "-o", str(out)]
    code = main([*argv, "--traj-id-col", "trip_id", "--time-col", "t"])
    assert code == 0, capsys.readouterr().err
    assert list(pd.read_csv(out, dtype={"trip_id": str})["trip_id"]) == ["000", "000", "007", "007"]


def test_zip_with_two_members_is_refused(tmp_path):
    path = tmp_path / "trips.csv.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a.csv", "lon,lat\n1,2\n")
        zf.writestr("b.csv", "lon,lat\n1,2\n")
    with pytest.raises(ValueError, match="exactly one"):
        gio.read_trajectories(path)


def test_csv_ids_keep_their_text_and_dtype_overrides(tmp_path):
    path = tmp_path / "t.csv"
    table = _trip_table().rename(columns={"trip_id": "trip"})
    table.to_csv(path, index=False)
    back = gio.read_trajectories(path, traj_id_col="trip")
    assert list(back["trip"]) == ["000", "000", "007", "007"]  # traj_id_col is text
    table.rename(columns={"trip": "ID"}).to_csv(path, index=False)
    assert list(gio.read_trajectories(path)["ID"]) == ["000", "000", "007", "007"]  # id-named column
    back = gio.read_trajectories(path, dtype={"ID": "int64"})
    assert list(back["ID"]) == [0, 0, 7, 7]


GPX = """<?xml version="1.0" encoding="UTF-8"?>
<gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1">
  <wpt lat="39.0" lon="116.0"><name>wp</name></wpt>
  <trk><name>one</name>
    <trkseg>
      <trkpt lat="39.92" lon="116.32"><time>2020-01-01T00:02:00Z</time></trkpt>
      <trkpt lat="39.90" lon="116.30"><time>2020-01-01T00:00:00Z</time></trkpt>
      <trkpt lat="39.91" lon="116.31"><time>2020-01-01T00:01:00Z</time></trkpt>
    </trkseg>
    <trkseg>
      <trkpt lat="39.95" lon="116.35"><time>2020-01-01T01:00:00Z</time></trkpt>
      <trkpt lat="39.96" lon="116.36"><time>2020-01-01T01:01:00Z</time></trkpt>
    </trkseg>
  </trk>
  <trk><name>two</name>
    <trkseg>
      <trkpt lat="39.97" lon="116.37"><time>2020-01-02T00:00:00Z</time></trkpt>
      <trkpt lat="39.98" lon="116.38"><time>2020-01-02T00:01:00Z</time></trkpt>
    </trkseg>
  </trk>
</gpx>
"""


def test_gpx_tracks_become_one_trajectory_per_segment(tmp_path, city_points):
    path = tmp_path / "t.gpx"
    path.write_text(GPX)
    pts = gio.read_trajectories(path, traj_id_col="trajectory", time_col="time")
    assert list(pts["trajectory"]) == ["0-0"] * 3 + ["0-1"] * 2 + ["1-0"] * 2
    assert pts["time"].is_monotonic_increasing  # in time order within (and across) segments
    assert list(pts.geometry.x[:3]) == [116.30, 116.31, 116.32]
    from geoldp import prepare

    lines = prepare.trajectories_from_points(pts, traj_id_col="trajectory", time_col="time")
    assert len(lines) == 3 and list(shapely.get_num_points(lines.geometry.values)) == [3, 2, 2]
    out = pts.ldp.perturb(city_points, epsilon=4.0, rng=0, traj_id_col="trajectory", time_col="time")
    assert len(out) == len(pts)


def test_gpx_without_tracks_is_an_error(tmp_path):
    path = tmp_path / "w.gpx"
    path.write_text(
        '<?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1">'
        '<wpt lat="39.0" lon="116.0"/></gpx>'
    )
    with pytest.raises(ValueError, match="no track points"):
        gio.read_trajectories(path)


def test_gpx_with_entities_is_refused(tmp_path):
    path = tmp_path / "x.gpx"
    path.write_text('<?xml version="1.0"?><!DOCTYPE gpx [<!ENTITY s SYSTEM "file:///etc/hostname">]><gpx/>')
    with pytest.raises(ValueError, match="DOCTYPE"):
        gio.read_trajectories(path)


_GPX_BODY = GPX.split("\n", 1)[1].replace("<name>one</name>", "<name>&s;</name>")
_XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'
_GPX_DTDS = {
    "doctype after a 70 kB comment": (
        "<!-- <gpx " + "x" * 70_000 + ' -->\n<!DOCTYPE gpx [<!ENTITY s "boom">]>'
    ),
    "internal entity": '<!DOCTYPE gpx [<!ENTITY s "boom">]>',
    "external file entity": '<!DOCTYPE gpx [<!ENTITY s SYSTEM "file:///etc/hostname">]>',
    "external http entity": '<!DOCTYPE gpx [<!ENTITY s SYSTEM "http://127.0.0.1:{port}/e">]>',
    "parameter entity": (
        '<!DOCTYPE gpx [<!ENTITY % p SYSTEM "http://127.0.0.1:{port}/p"> %p; <!ENTITY s "x">]>'
    ),
    "external dtd": '<!DOCTYPE gpx SYSTEM "http://127.0.0.1:{port}/gpx.dtd">',
    "entity expansion bomb": (
        '<!DOCTYPE gpx [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY s "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>'
    ),
    "unparsed entity": '<!DOCTYPE gpx [<!NOTATION n SYSTEM "x"><!ENTITY u SYSTEM "y" NDATA n>]>',
}


@pytest.mark.parametrize("case", sorted(_GPX_DTDS))
def test_gpx_dtd_and_entities_are_refused_anywhere(tmp_path, listener, case):
    path = tmp_path / "x.gpx"
    doc = _XML_HEAD + _GPX_DTDS[case].replace("{port}", str(listener.port)) + "\n" + _GPX_BODY
    if case == "unparsed entity":
        doc = doc.replace("&s;", "one")
    path.write_text(doc)
    with pytest.raises(ValueError, match="refuses them anywhere") as info:
        gio.read_trajectories(path)
    assert "boom" not in str(info.value) and "hostname" not in str(info.value)
    assert listener.connections == 0


@pytest.mark.parametrize(
    "doc",
    [
        _XML_HEAD + _GPX_BODY,  # &s; without a declaration
        _XML_HEAD + GPX.split("\n", 1)[1] + '<!DOCTYPE gpx [<!ENTITY s "x">]>',  # a DOCTYPE after the root
        _XML_HEAD + GPX.split("\n", 1)[1][:-20],  # truncated
    ],
    ids=["undeclared entity", "doctype after the root", "truncated"],
)
def test_gpx_that_is_not_well_formed_is_refused(tmp_path, doc):
    path = tmp_path / "x.gpx"
    path.write_text(doc)
    with pytest.raises(ValueError, match="not well-formed XML|refuses them"):
        gio.read_trajectories(path)


def test_gpx_whose_root_is_not_gpx_is_refused(tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text(f'WKT,name\n"POINT (1 2)",{SECRET}\n')
    path = tmp_path / "x.gpx"
    # "<gpx" in a long leading comment passes the sniffing of the first bytes; the root is a VRT
    path.write_text(
        "<!-- <gpx " + "x" * 5000 + ' -->\n<OGRVRTDataSource><OGRVRTLayer name="track_points">'
        f"<SrcDataSource>{secret}</SrcDataSource></OGRVRTLayer></OGRVRTDataSource>"
    )
    with pytest.raises(ValueError, match="document element is not <gpx>") as info:
        gio.read_trajectories(path)
    assert SECRET not in str(info.value)


def test_gpx_dtd_through_the_cli_is_one_line(tmp_path, city_points_gdf, capsys):
    path = tmp_path / "x.gpx"
    path.write_text(_XML_HEAD + _GPX_DTDS["doctype after a 70 kB comment"] + "\n" + _GPX_BODY)
    city_points_gdf.to_file(tmp_path / "p.geojson", driver="GeoJSON")
    argv = ["perturb", str(path), "--points", str(tmp_path / "p.geojson"), "--epsilon", "1"]
    assert main([*argv, "--traj-id-col", "trajectory", "-o", str(tmp_path / "o.csv")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "DOCTYPE" in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "o.csv").exists()


def test_empty_file_or_layer_is_an_error_that_says_why(tmp_path, toy_lines):
    empty = tmp_path / "e.geojson"
    empty.write_text('{"type": "FeatureCollection", "features": []}')
    with pytest.raises(ValueError, match="holds no rows"):
        gio.read_trajectories(empty)
    with pytest.raises(ValueError, match="holds no rows"):
        gio.read_points(empty)
    csv = tmp_path / "e.csv"
    csv.write_text("lon,lat\n")
    with pytest.raises(ValueError, match="holds no rows"):
        gio.read_trajectories(csv)
    (tmp_path / "z.csv").write_text("")
    with pytest.raises(ValueError, match="is empty"):
        gio.read_trajectories(tmp_path / "z.csv")
    gpkg = tmp_path / "two.gpkg"
    toy_lines.to_file(gpkg, layer="a", driver="GPKG")
    toy_lines.iloc[:0].to_file(gpkg, layer="b", driver="GPKG", mode="a")
    with pytest.raises(ValueError, match="layer 'b' of 'two.gpkg' holds no rows"):
        gio.read_trajectories(gpkg, layer="b")
    with pytest.raises(ValueError, match="has no layer 'c'"):
        gio.read_trajectories(gpkg, layer="c")


@pytest.mark.parametrize("fmt", ["GeoJSON", "GPKG", "FlatGeobuf", "ESRI Shapefile", "Parquet"])
def test_every_allowed_format_reads(tmp_path, fmt):
    ext = {"GeoJSON": ".geojson", "GPKG": ".gpkg", "FlatGeobuf": ".fgb", "ESRI Shapefile": ".shp"}
    path = tmp_path / f"t{ext.get(fmt, '.parquet')}"
    frame = _lines()
    if fmt == "Parquet":
        frame.to_parquet(path)
    else:
        frame.to_file(path, driver=fmt)
    back = gio.read_trajectories(path)
    assert len(back) == 3 and back.crs.to_epsg() == 4326
    first = np.array([ls.coords[0] for ls in back.geometry])
    first = first[np.argsort(first[:, 1])]  # FlatGeobuf's spatial index may reorder features
    np.testing.assert_allclose(first, [[SECRET_LON, 39.9], [SECRET_LON, 39.91], [SECRET_LON, 39.92]])


# ------------------------------------------------------------------------------------------ messages


def test_malformed_files_do_not_echo_their_contents(tmp_path):
    cases = {
        "t.geojson": '{"type": "FeatureCollection", "features": [{"type": "Feature", "properties": '
        f'{{"u": "{SECRET}"}}, "geometry": {{"type": "LineString", "coordinates": [[{SECRET_LON}, 39.9], '
        f"[{SECRET_LON}, oops]]}}}}]}}",
        "t.csv": f"geometry,u\nLINESTRING ({SECRET_LON} 39.9, broken,{SECRET}\n",
        "t.gpkg": "SQLite format 3\x00" + "\x00" * 52 + "GPKG" + SECRET,
        "t.fgb": "fgb\x03fgb\x00" + SECRET,
        "t.parquet": "PAR1" + SECRET + "PAR1",
        "t.gpx": f'<gpx><trk><trkseg><trkpt lat="x" lon="{SECRET_LON}">{SECRET}',
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises((ValueError, TypeError)) as info:
            gio.read_trajectories(path)
        msg = str(info.value)
        assert name in msg, msg
        assert SECRET not in msg and str(SECRET_LON) not in msg and "116.12" not in msg, msg


def test_cli_unreadable_inputs_are_one_line_without_contents(tmp_path, city_points_gdf, capsys):
    points = tmp_path / "points.geojson"
    city_points_gdf.to_file(points, driver="GeoJSON")
    bad = tmp_path / "bad.geojson"
    bad.write_text(
        f'{{"type": "FeatureCollection", "features": [{{"u": "{SECRET}", "coordinates": [{SECRET_LON}'
    )
    code = main(
        ["perturb", str(bad), "--points", str(points), "--epsilon", "1", "-o", str(tmp_path / "o.csv")]
    )
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and err.startswith("geoldp: error: ")
    assert SECRET not in err and str(SECRET_LON) not in err


# ----------------------------------------------------------------------------- degenerate point sets


def test_identical_public_points_are_a_value_error_before_any_draw(tmp_path, toy_lines, capsys):
    with pytest.raises(ValueError, match="all at one location.*diameter 0"):
        PointSet([116.3] * 5, [39.9] * 5)
    pts = gpd.GeoDataFrame(geometry=gpd.points_from_xy([116.3] * 4, [39.9] * 4), crs="EPSG:4326")

    class Exploding(np.random.Generator):
        def __init__(self):
            super().__init__(np.random.PCG64(0))

        def random(self, *a, **k):  # pragma: no cover - must never be reached
            raise AssertionError("a random draw happened")

    with pytest.raises(ValueError, match="diameter 0"):
        toy_lines.ldp.perturb(pts, epsilon=1.0, rng=Exploding())
    trips, points = tmp_path / "t.geojson", tmp_path / "p.geojson"
    toy_lines.to_file(trips, driver="GeoJSON")
    pts.to_file(points, driver="GeoJSON")
    code = main(
        ["perturb", str(trips), "--points", str(points), "--epsilon", "1", "-o", str(tmp_path / "o.csv")]
    )
    err = capsys.readouterr().err
    assert code == 1 and "diameter 0" in err and "Traceback" not in err
    assert not (tmp_path / "o.csv").exists()


def test_demo_onto_an_existing_file_is_one_line(tmp_path, capsys):
    target = tmp_path / "file.txt"
    target.write_text("keep me")
    assert main(["demo", "-o", str(target), "--n-trips", "5", "--n-points", "20", "--no-plot"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not a directory" in err
    assert target.read_text() == "keep me"


def test_bad_read_arguments_are_type_or_value_errors(tmp_path):
    path = tmp_path / "p.csv"
    pd.DataFrame({"lon": [116.3, 116.4], "lat": [39.9, 39.95]}).to_csv(path, index=False)
    for crs in ("nonsense", 12345678):
        with pytest.raises(ValueError, match="'crs' parameter of read_points is not a CRS"):
            gio.read_points(path, crs=crs)
    with pytest.raises(TypeError, match="'layer' parameter"):
        gio.read_points(path, layer=1.5)
    for bad in (123, None):
        with pytest.raises(TypeError, match="must be a str or os.PathLike"):
            gio.read_trajectories(bad)
    with pytest.raises(TypeError, match="'ledger' parameter"):
        gio.read_trajectories(path, ledger=3)
    with pytest.raises(TypeError, match="'allow_vsi' parameter"):
        gio.read_trajectories(path, allow_vsi="yes")
    with pytest.raises(ValueError, match="not a readable CSV"):
        gio.read_trajectories(path, dtype={"lon": "int8"})


# ------------------------------------------------ GeoPackage geometry blobs and tables without geometry


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


@pytest.mark.parametrize("reader", ["read_trajectories", "read_points"])
def test_gpkg_table_without_geometry_is_a_clear_error(tmp_path, reader):
    import pyogrio

    path = tmp_path / "table.gpkg"
    pyogrio.write_dataframe(pd.DataFrame({"a": [1, 2]}), path, driver="GPKG", layer="t")
    with pytest.raises(ValueError, match="'table.gpkg' has no geometry column"):
        getattr(gio, reader)(path)
