"""Issue 8, writing: atomic writes, no silent overwrite or merge, outputs never resolve to inputs, no
writing through symlinks, a sidecar that never goes out of step with its data file."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pytest

from geoldp import io as gio
from geoldp.cli import main

SUFFIXES = [".geojson", ".gpkg", ".parquet", ".csv", ".fgb", ".shp"]


@pytest.fixture
def release(toy_lines, city_points):
    return toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=0)


def _listing(directory):
    return sorted(p.name for p in directory.iterdir())


def _no_temps(directory):
    return not [n for n in os.listdir(directory) if ".geoldp-tmp-" in n]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_every_format_round_trips_with_a_matching_sidecar(tmp_path, release, suffix):
    path = tmp_path / f"out{suffix}"
    written = gio.write_file(release, path)
    assert written == [path, gio.ledger_path(path)]
    back = gio.read_trajectories(path, ledger=True)
    assert len(back) == len(release)
    assert back.attrs["geoldp"] == json.loads(json.dumps(release.attrs["geoldp"]))
    record = json.loads(gio.ledger_path(path).read_text())["data_file"]
    assert record["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert _no_temps(tmp_path)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_existing_output_is_an_error_unless_overwrite(tmp_path, release, toy_lines, city_points, suffix):
    path = tmp_path / f"out{suffix}"
    gio.write_file(release, path)
    before = {n: (tmp_path / n).read_bytes() for n in _listing(tmp_path)}
    other = toy_lines.ldp.perturb(city_points, epsilon=1.0, rng=5)
    with pytest.raises(ValueError, match="already exists.*overwrite=True"):
        gio.write_file(other, path)
    assert {n: (tmp_path / n).read_bytes() for n in _listing(tmp_path)} == before
    gio.write_file(other, path, overwrite=True)
    assert gio.read_trajectories(path, ledger=True).attrs["geoldp"]["epsilon"] == 1.0
    assert _no_temps(tmp_path)


def test_to_geojson_does_not_overwrite_by_default(tmp_path, release):
    path = gio.to_geojson(release, tmp_path / "a.geojson")
    before = path.read_bytes()
    with pytest.raises(ValueError, match="already exists"):
        release.ldp.to_geojson(path)
    assert path.read_bytes() == before
    release.ldp.to_geojson(path, overwrite=True, ledger="sidecar")
    assert "geoldp" not in json.loads(path.read_text())
    assert gio.read_ledger(path).mechanism == "atp"
    with pytest.raises(TypeError, match="overwrite"):
        gio.to_geojson(release, tmp_path / "b.geojson", overwrite="yes")


def test_sidecar_alone_blocks_a_write(tmp_path, release):
    path = tmp_path / "out.gpkg"
    gio.ledger_path(path).write_text("someone else's file")
    with pytest.raises(ValueError, match="ledger sidecar file .* already exists"):
        gio.write_file(release, path)
    assert not path.exists() and gio.ledger_path(path).read_text() == "someone else's file"


def test_existing_geopackage_is_replaced_whole(tmp_path, release, toy_lines):
    path = tmp_path / "out.gpkg"
    toy_lines.to_file(path, layer="raw_trips", driver="GPKG")
    gio.write_file(release, path, overwrite=True)
    layers = [str(n) for n in pyogrio.list_layers(path)[:, 0]]
    assert layers == ["out"]  # the raw trips are gone, not kept next to the release


def test_adding_a_named_layer_is_explicit(tmp_path, release, toy_lines):
    path = tmp_path / "out.gpkg"
    gio.write_file(release, path)
    gio.write_file(release.iloc[:2], path, layer="second", add_layer=True)
    assert sorted(str(n) for n in pyogrio.list_layers(path)[:, 0]) == ["out", "second"]
    assert len(gio.read_trajectories(path, layer="second")) == 2
    assert gio.read_trajectories(path, layer="second", ledger=True).attrs["geoldp"]["mechanism"] == "atp"
    with pytest.raises(ValueError, match="already has a layer 'second'"):
        gio.write_file(release, path, layer="second", add_layer=True)
    with pytest.raises(ValueError, match="needs a .gpkg output and a layer name"):
        gio.write_file(release, tmp_path / "x.geojson", add_layer=True, layer="a")
    assert _no_temps(tmp_path)


def test_symlink_at_output_or_sidecar_is_refused(tmp_path, release):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out.geojson"
    out.symlink_to(victim)
    with pytest.raises(ValueError, match="symbolic link"):
        gio.write_file(release, out, overwrite=True)
    out.unlink()
    gio.ledger_path(out).symlink_to(victim)
    with pytest.raises(ValueError, match="symbolic link"):
        gio.write_file(release, out, overwrite=True)
    assert victim.read_text() == "precious" and not out.exists()
    dangling = tmp_path / "d.csv"
    dangling.symlink_to(tmp_path / "nowhere.csv")
    with pytest.raises(ValueError, match="symbolic link"):
        gio.write_file(release, dangling)
    assert not (tmp_path / "nowhere.csv").exists()


def test_hard_link_to_an_input_is_refused(tmp_path, release):
    trips = tmp_path / "trips.geojson"
    release.to_file(trips, driver="GeoJSON")
    before = trips.read_bytes()
    link = tmp_path / "release.geojson"
    os.link(trips, link)
    with pytest.raises(ValueError, match="is the input file"):
        gio.write_file(release, link, overwrite=True, inputs=[trips])
    assert trips.read_bytes() == before


def test_sidecar_that_would_be_an_input_is_refused(tmp_path, release):
    out = tmp_path / "x.geojson"
    points = tmp_path / "x.geojson.ledger.json"  # an input that happens to sit at the sidecar path
    points.write_text('{"type": "FeatureCollection", "features": []}')
    with pytest.raises(ValueError, match="is the input file"):
        gio.write_file(release, out, overwrite=True, inputs=[points])
    assert points.read_text().startswith('{"type"') and not out.exists()


def test_inf_in_a_kept_column_writes_nothing(tmp_path, release):
    bad = release.copy()
    bad["speed"] = [np.inf] + [1.0] * (len(bad) - 1)
    path = tmp_path / "out.geojson"
    with pytest.raises(ValueError, match="NaN or infinite"):
        gio.write_file(bad, path)
    assert _listing(tmp_path) == []
    gio.write_file(release, path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="NaN or infinite"):
        gio.write_file(bad, path, overwrite=True)
    assert path.read_bytes() == before and _no_temps(tmp_path)


def test_failed_serialisation_keeps_the_previous_file_and_sidecar(tmp_path, release, monkeypatch):
    path = tmp_path / "out.gpkg"
    gio.write_file(release, path)
    before = {n: (tmp_path / n).read_bytes() for n in _listing(tmp_path)}

    def boom(*args, **kwargs):
        raise RuntimeError("driver failure")

    monkeypatch.setattr(gpd.GeoDataFrame, "to_file", boom)
    with pytest.raises(RuntimeError):
        gio.write_file(release, path, overwrite=True)
    assert {n: (tmp_path / n).read_bytes() for n in _listing(tmp_path)} == before


def test_write_error_after_the_temp_file_is_opened_leaves_nothing(tmp_path, release, monkeypatch):
    from geoldp._core import safe_write as _safe_write

    path = tmp_path / "out.csv"
    gio.write_file(release, path, sidecar=False)
    before = path.read_bytes()

    def failing(self, data):
        self.file.write(data[:10])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_safe_write.AtomicFile, "write", failing)
    with pytest.raises(OSError, match="cannot write .*out.csv.*previous file"):
        gio.write_file(release, path, overwrite=True, sidecar=False)
    assert path.read_bytes() == before and _listing(tmp_path) == ["out.csv"]


def test_named_temp_fallback_without_o_tmpfile(tmp_path, release, monkeypatch):
    monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    path = tmp_path / "out.csv"
    gio.write_file(release, path)
    gio.write_file(release, path, overwrite=True)
    with pytest.raises(ValueError, match="already exists"):
        gio.write_file(release, path)
    assert _listing(tmp_path) == ["out.csv", "out.csv.ledger.json"]


# ---------------------------------------------------------------------------------------------- CLI


@pytest.fixture
def files(tmp_path, city):
    points, trips = city
    trips_path, points_path = tmp_path / "trips.geojson", tmp_path / "points.geojson"
    trips.to_file(trips_path, driver="GeoJSON")
    points.to_file(points_path, driver="GeoJSON")
    return trips_path, points_path


@pytest.fixture(scope="module")
def city():
    from geoldp.datasets import synthetic_city

    return synthetic_city(n_points=40, n_trips=10, max_len=5, seed=3)


def _perturb(trips, points, out, *extra):
    return main(
        [
            "perturb",
            str(trips),
            "--points",
            str(points),
            "--epsilon",
            "1",
            "--seed",
            "0",
            "-o",
            str(out),
            *extra,
        ]
    )


def _one_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("geoldp: error: ") and "Traceback" not in err, err
    return lines[0]


def test_cli_refuses_to_overwrite_without_flag(tmp_path, files, capsys):
    trips, points = files
    out = tmp_path / "out.gpkg"
    assert _perturb(trips, points, out) == 0
    before = out.read_bytes()
    capsys.readouterr()
    assert _perturb(trips, points, out) == 1
    assert "--overwrite" in _one_line(capsys.readouterr().err)
    assert out.read_bytes() == before
    assert _perturb(trips, points, out, "--overwrite") == 0


def test_cli_hard_link_to_trips_is_refused(tmp_path, files, capsys):
    trips, points = files
    before = trips.read_bytes()
    link = tmp_path / "release.geojson"
    os.link(trips, link)
    assert _perturb(trips, points, link, "--overwrite") == 1
    assert "TRIPS" in _one_line(capsys.readouterr().err)
    assert trips.read_bytes() == before


@pytest.mark.parametrize("which", ["trips", "points"])
def test_cli_sidecar_cannot_overwrite_an_input(tmp_path, city, which, capsys):
    points, trips = city
    # OUT is chosen so that OUT.ledger.json is the trips or the points file
    trips_path = tmp_path / ("o.csv.ledger.json" if which == "trips" else "trips.geojson")
    points_path = tmp_path / ("o.csv.ledger.json" if which == "points" else "points.geojson")
    trips.to_file(trips_path, driver="GeoJSON")
    points.to_file(points_path, driver="GeoJSON")
    before = (tmp_path / "o.csv.ledger.json").read_bytes()
    code = _perturb(trips_path, points_path, tmp_path / "o.csv", "--overwrite")
    assert code == 1
    assert "input file" in _one_line(capsys.readouterr().err)
    assert (tmp_path / "o.csv.ledger.json").read_bytes() == before
    assert not (tmp_path / "o.csv").exists()


def test_cli_symlinked_sidecar_is_refused(tmp_path, files, capsys):
    trips, points = files
    before = trips.read_bytes()
    out = tmp_path / "o.geojson"
    gio.ledger_path(out).symlink_to(trips)
    assert _perturb(trips, points, out, "--overwrite") == 1
    assert "symbolic link" in _one_line(capsys.readouterr().err)
    assert trips.read_bytes() == before and not out.exists()


def test_cli_existing_gpkg_is_not_merged(tmp_path, files, city, capsys):
    trips, points = files
    out = tmp_path / "o.gpkg"
    city[1].to_file(out, layer="raw", driver="GPKG")
    assert _perturb(trips, points, out, "--overwrite") == 0
    assert [str(n) for n in pyogrio.list_layers(out)[:, 0]] == ["o"]


def test_cli_full_disk_is_one_line(tmp_path, files, capsys):
    """Full disk on a 1 MiB tmpfs (skipped where mounting is not permitted)."""
    trips, points = files
    mnt = tmp_path / "small"
    mnt.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True, capture_output=True
        )
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("mounting a tmpfs is not permitted here")
    try:
        out = mnt / "o.geojson"
        out.write_text("old valid content")
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)  # fill the file system to the last block
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        assert _perturb(trips, points, out, "--overwrite") == 1
        line = _one_line(capsys.readouterr().err)
        assert "No space left" in line
        assert out.read_text() == "old valid content"
        assert sorted(os.listdir(mnt)) == ["filler", "o.geojson"]
        # each format, through the Python API
        big = city_release(trips, points)
        for suffix in SUFFIXES:
            target = mnt / f"x{suffix}"
            with pytest.raises(OSError, match="No space left"):
                gio.write_file(big, target)
            assert sorted(os.listdir(mnt)) == ["filler", "o.geojson"], suffix
    finally:
        subprocess.run(["umount", str(mnt)], check=False, capture_output=True)


def city_release(trips, points):
    frame = gpd.read_file(trips)
    frame = pd.concat([frame] * 50, ignore_index=True)
    return frame.ldp.perturb(gpd.read_file(points), epsilon=1.0, rng=0)


def test_python_m_geoldp_overwrite_flag_in_help():
    out = subprocess.run(
        [sys.executable, "-m", "geoldp", "perturb", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    ).stdout
    assert "--overwrite" in out


def test_cli_evaluate_plot_is_not_overwritten_silently(tmp_path, files, capsys):
    pytest.importorskip("matplotlib")
    trips, points = files
    out = tmp_path / "o.geojson"
    assert _perturb(trips, points, out) == 0
    plot = tmp_path / "map.png"
    plot.write_bytes(b"old image")
    capsys.readouterr()
    assert main(["evaluate", str(trips), str(out), "--plot", str(plot)]) == 1
    assert "--overwrite" in _one_line(capsys.readouterr().err)
    assert plot.read_bytes() == b"old image"
    assert main(["evaluate", str(trips), str(out), "--plot", str(plot), "--overwrite"]) == 0
    assert plot.read_bytes().startswith(b"\x89PNG") and _no_temps(tmp_path)
    link = tmp_path / "trips.png"
    link.symlink_to(trips)
    capsys.readouterr()
    assert main(["evaluate", str(trips), str(out), "--plot", str(link), "--overwrite"]) == 1
    assert "symbolic link" in _one_line(capsys.readouterr().err)


# ------------------------------------------------------------------------------ order and vertex counts


@pytest.fixture(scope="module")
def scattered_release():
    """A release of 60 trips over a wide area, ids in an order no spatial index would keep."""
    from geoldp.datasets import synthetic_city

    points, trips = synthetic_city(n_points=80, n_trips=60, max_len=6, seed=11)
    trips = trips.iloc[::-1].reset_index(drop=True)  # the city's own order could be spatially sorted
    trips["trip_key"] = [f"k{(i * 37) % 60:02d}" for i in range(len(trips))]
    from geoldp._core.errors import PrivacyWarning

    with pytest.warns(PrivacyWarning, match="unprotected"):
        return trips.ldp.perturb(points, epsilon=4.0, rng=1, keep_columns=["trip_key"])


@pytest.mark.parametrize("suffix", sorted(gio.WRITE_FORMATS))
def test_every_writable_format_keeps_ids_order_and_vertex_counts(tmp_path, scattered_release, suffix):
    import shapely

    path = tmp_path / f"out{suffix}"
    gio.write_file(scattered_release, path)
    back = gio.read_trajectories(path)
    assert len(back) == len(scattered_release)
    assert list(back["trip_key"]) == list(scattered_release["trip_key"])  # same rows, same order
    want = shapely.get_num_coordinates(np.asarray(scattered_release.geometry.values))
    got = shapely.get_num_coordinates(np.asarray(back.geometry.values))
    assert got.tolist() == want.tolist()
    # and the same vertices (WGS 84 in and out, so exact up to the format's float precision)
    a = shapely.get_coordinates(np.asarray(scattered_release.geometry.values))
    b = shapely.get_coordinates(np.asarray(back.geometry.values))
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-9)


# ------------------------------------------------------------------------------------ CSV injection

FORMULAS = ["=1+1", "+A1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", '=HYPERLINK("http://x","y")']


def _csv_cells(path):
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


@pytest.mark.parametrize("text", FORMULAS)
def test_csv_neutralises_formula_text_in_values_ids_and_names(tmp_path, city_points, text):
    from geoldp._core.errors import PrivacyWarning

    rows = gpd.GeoDataFrame(
        {
            "trip": [text, text, "plain"],
            text: [text, "ok", None],  # a column name and a value
            "speed": [-3.5, 2.0, -0.0],  # numbers stay numbers
        },
        geometry=gpd.points_from_xy([116.32, 116.35, 116.39], [39.90, 39.93, 39.91]),
        crs="EPSG:4326",
    )
    with pytest.warns(PrivacyWarning):
        out = rows.ldp.perturb(
            city_points, epsilon=4.0, rng=0, traj_id_col="trip", keep_columns=[text, "speed"]
        )
    path = tmp_path / "out.csv"
    gio.write_file(out, path)
    cells = _csv_cells(path)
    header, body = cells[0], cells[1:]
    assert len(body) == 3  # a CR inside a cell is quoted, never a row break
    for cell in [*header, *(c for row in body for c in row)]:
        if cell.startswith(("=", "+", "-", "@", "\t", "\r")):
            float(cell)  # only a number may begin like that
    assert "'" + text in header
    assert [row[header.index("trip")] for row in body] == ["'" + text, "'" + text, "plain"]
    assert [row[header.index("speed")] for row in body] == ["-3.5", "2.0", "-0.0"]
    back = gio.read_trajectories(path)
    assert back["speed"].tolist() == [-3.5, 2.0, -0.0] and back["speed"].dtype == np.float64
    assert back["'" + text].tolist()[:2] == ["'" + text, "ok"]  # documented: the quote stays


def test_csv_keeps_a_numeric_looking_text_as_neutralised_text(tmp_path):
    frame = gpd.GeoDataFrame(
        {"label": pd.Series([-1, "-2", "=3"], dtype=object)},
        geometry=gpd.points_from_xy([1, 2, 3], [1, 2, 3]),
        crs="EPSG:4326",
    )
    path = tmp_path / "m.csv"
    gio.write_file(frame, path)
    assert [row[0] for row in _csv_cells(path)[1:]] == ["-1", "'-2", "'=3"]  # the int -1 is a number


def test_csv_refuses_a_kept_geometry_column_that_is_not_active(tmp_path, release):
    frame = release.rename_geometry("geom")
    frame["geometry"] = ["kept text"] * len(frame)
    path = tmp_path / "out.csv"
    with pytest.raises(ValueError, match="column named 'geometry' that is not its active geometry"):
        gio.write_file(frame, path)
    assert _listing(tmp_path) == []
    gio.write_file(frame.drop(columns="geometry"), path)  # the active geometry under another name
    assert len(gio.read_trajectories(path)) == len(release)


# ------------------------------------------------------------------------------- NaN in to_geojson


@pytest.mark.parametrize("writer", ["to_geojson", "write_file", "accessor"])
def test_nan_is_null_and_inf_writes_nothing(tmp_path, release, writer):
    def write(frame, path, **kw):
        if writer == "to_geojson":
            return gio.to_geojson(frame, path, **kw)
        if writer == "accessor":
            return frame.ldp.to_geojson(path, **kw)
        return gio.write_file(frame, path, **kw)

    nan = release.copy()
    nan["speed"] = [np.nan] + [1.0] * (len(nan) - 1)
    path = tmp_path / "out.geojson"
    write(nan, path)  # documented: a missing value (NaN, None, NaT) is a JSON null
    doc = json.loads(path.read_text())
    assert doc["features"][0]["properties"]["speed"] is None
    before = {n: (tmp_path / n).read_bytes() for n in _listing(tmp_path)}
    bad = release.copy()
    bad["speed"] = [np.inf] + [1.0] * (len(bad) - 1)
    with pytest.raises(ValueError, match="NaN or infinite.*nothing was written"):
        write(bad, path, overwrite=True)
    with pytest.raises(ValueError, match="NaN or infinite.*nothing was written"):
        write(bad, tmp_path / "new.geojson")
    assert {n: (tmp_path / n).read_bytes() for n in _listing(tmp_path)} == before  # no file, no temp


# ------------------------------------------------------------------------------------- odd names


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("name", ["a\nb", "tab\there", "x" * 243], ids=["newline", "tab", "243 chars"])
def test_odd_output_names_are_refused_before_anything_is_written(tmp_path, release, suffix, name):
    with pytest.raises(ValueError, match="control character|is too long.*nothing was written"):
        gio.write_file(release, tmp_path / f"{name}{suffix}")
    assert _listing(tmp_path) == []
    if suffix == ".geojson":
        with pytest.raises(ValueError, match="control character|is too long"):
            gio.to_geojson(release, tmp_path / f"{name}{suffix}", ledger="sidecar")
        assert _listing(tmp_path) == []


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_long_but_acceptable_names_write_both_files(tmp_path, release, suffix):
    path = tmp_path / ("y" * (200 - len(suffix)) + suffix)
    assert gio.write_file(release, path) == [path, gio.ledger_path(path)]
    assert len(gio.read_trajectories(path, ledger=True)) == len(release)


# -- one rule for file names that are not UTF-8 -----------------------------------------------------------

NON_UTF8 = os.fsdecode(b"out\xff")


@pytest.mark.parametrize("suffix", [".csv", ".geojson", ".gpkg", ".parquet", ".fgb", ".shp"])
def test_every_output_refuses_a_name_that_is_not_utf8_alike(tmp_path, release, suffix, capsys):
    target = tmp_path / (NON_UTF8 + suffix)
    with pytest.raises(ValueError, match=r"is not valid UTF-8 .* choose a UTF-8 name\. Nothing was written"):
        gio.write_file(release, target)
    assert os.listdir(tmp_path) == []
    gio.write_file(release, tmp_path / f"café{suffix}")  # any UTF-8 name is fine
    trips = tmp_path / "trips.geojson"
    release.to_file(trips, driver="GeoJSON")
    code = main(["perturb", str(trips), "--points", str(trips), "--epsilon", "1", "-o", str(target)])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "is not valid UTF-8" in err
