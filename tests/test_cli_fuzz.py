"""Issue 8: no input produces a traceback from the CLI.

Hypothesis (fixed: ``derandomize=True``) generates a few hundred bad files (random bytes, truncated valid
files of every format, malformed JSON/CSV/GPX, degenerate point sets) and bad arguments; every run must end
with exactly one ``geoldp: error: ...`` line on stderr and a non-zero exit status. The larger sweep is
marked slow.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from geoldp.cli import main

SUFFIXES = [".geojson", ".json", ".gpkg", ".parquet", ".fgb", ".shp", ".gpx", ".csv", ".csv.gz", ".csv.zip"]
FAST = settings(
    max_examples=120,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SLOW = settings(FAST, max_examples=600)
_counter = itertools.count()


class Workdir:
    """The fuzz directory and the bytes of valid files of each format (short repr for Hypothesis)."""

    def __init__(self, path, valid):
        self.path, self.valid = path, valid

    def __repr__(self) -> str:
        return "Workdir()"

    def __iter__(self):
        return iter((self.path, self.valid))


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def assert_one_line_error(code: int, err: str, argv: list[str]) -> None:
    assert code in (1, 2), (code, argv, err)
    lines = err.strip().splitlines()
    assert "Traceback" not in err, (argv, err)
    # warnings are printed only on success; an error is exactly one line
    assert len(lines) == 1 and lines[0].startswith("geoldp: error: "), (argv, err)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    rng = np.random.default_rng(7)
    lon, lat = rng.uniform(116.2, 116.5, 40), rng.uniform(39.8, 40.0, 40)
    points = gpd.GeoDataFrame(geometry=gpd.points_from_xy(lon, lat), crs="EPSG:4326")
    points.to_file(d / "points.geojson", driver="GeoJSON")
    trips = gpd.GeoDataFrame(
        {"trip_id": [f"{i:03d}" for i in range(6)]},
        geometry=[shapely.LineString(rng.uniform([116.2, 39.8], [116.5, 40.0], (4, 2))) for _ in range(6)],
        crs="EPSG:4326",
    )
    trips.to_file(d / "trips.geojson", driver="GeoJSON")
    valid: dict[str, bytes] = {}
    for suffix, driver in ((".geojson", "GeoJSON"), (".gpkg", "GPKG"), (".fgb", "FlatGeobuf")):
        path = d / f"valid{suffix}"
        trips.to_file(path, driver=driver)
        valid[suffix] = path.read_bytes()
    trips.to_parquet(d / "valid.parquet")
    valid[".parquet"] = (d / "valid.parquet").read_bytes()
    table = pd.DataFrame({"trip_id": trips["trip_id"], "geometry": trips.geometry.to_wkt()})
    valid[".csv"] = table.to_csv(index=False).encode()
    valid[".gpx"] = (
        b'<?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1">'
        b'<trk><trkseg><trkpt lat="39.9" lon="116.3"><time>2020-01-01T00:00:00Z</time></trkpt>'
        b'<trkpt lat="39.91" lon="116.31"><time>2020-01-01T00:01:00Z</time></trkpt></trkseg></trk></gpx>'
    )
    return Workdir(d, valid)


def _perturb_argv(d, trips, points=None, extra=()):
    out = d / f"out{next(_counter)}.geojson"
    return [
        "perturb",
        str(trips),
        "--points",
        str(points or d / "points.geojson"),
        "--epsilon",
        "1",
        "-o",
        str(out),
        *extra,
    ]


# ----------------------------------------------------------------------------------------- bad files

garbage = st.binary(max_size=600).map(lambda b: b"\x00\xff" + b)  # never a valid file of any format
json_junk = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["type", "features", "geometry", "coordinates", "properties", "crs", "geoldp"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


def _bad_feature_collection(payload) -> bytes:
    doc = {
        "type": "FeatureCollection",
        "features": [{"type": "Feature", "geometry": payload, "properties": {}}],
    }
    return json.dumps(doc).encode()


@given(data=st.data())
@FAST
def test_bad_trips_files_give_one_line(workdir, data):
    d, valid = workdir
    kind = data.draw(st.sampled_from(["garbage", "truncated", "json", "feature", "csv"]))
    if kind == "garbage":
        suffix = data.draw(st.sampled_from(SUFFIXES))
        content = data.draw(garbage)
    elif kind == "truncated":
        suffix = data.draw(st.sampled_from([".geojson", ".gpkg", ".fgb", ".parquet", ".gpx"]))
        full = valid[suffix]
        # a proper prefix that cuts into the structure (JSON/XML: before the last closing bracket)
        limit = (
            full.rstrip().rfind(b"}" if suffix == ".geojson" else b"<")
            if suffix in (".geojson", ".gpx")
            else (len(full) // 2)
        )
        content = full[: data.draw(st.integers(0, max(0, limit - 1)))]
    elif kind == "json":
        suffix = ".geojson"
        value = data.draw(json_junk)
        content = json.dumps(value).encode()
        if isinstance(value, dict) and value.get("type") == "FeatureCollection":
            value["features"] = "not a list"
            content = json.dumps(value).encode()
    elif kind == "feature":
        suffix = ".geojson"
        payload = data.draw(
            st.sampled_from(
                [
                    {"type": "LineString", "coordinates": [[1e308, 1e308], [float("1e308"), 0]]},
                    {"type": "LineString", "coordinates": [[200.0, 0.0], [0.0, 95.0]]},
                    {"type": "LineString", "coordinates": []},
                    {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]},
                    {"type": "GeometryCollection", "geometries": []},
                    {"type": "LineString", "coordinates": [["a", "b"], [1, 2]]},
                    None,
                ]
            )
        )
        content = _bad_feature_collection(payload)
    else:
        suffix = ".csv"
        header = data.draw(st.sampled_from(["geometry", "lon,lat", "wkt,trip_id", "x,y,trip_id", "a,b"]))
        body = data.draw(st.text(alphabet="0123456789.,-eLINESTRG() \n\"'", max_size=80))
        content = (header + "\n" + body).encode()
        if header in ("lon,lat", "x,y,trip_id"):
            content = (header + "\n" + "nan,nan\n").encode()  # points without a trajectory id: all missing
        elif header == "a,b":
            pass
        else:
            content = (header + "\nLINESTRING (1 2,\n").encode()
    path = d / f"bad{next(_counter)}{suffix}"
    path.write_bytes(content)
    if suffix == ".shp":
        for ext in (".shx", ".dbf"):
            path.with_suffix(ext).write_bytes(data.draw(garbage))
    argv = _perturb_argv(d, path)
    code, _, err = run(argv)
    assert_one_line_error(code, err, argv)


@given(data=st.data())
@FAST
def test_bad_points_files_give_one_line(workdir, data):
    d, _ = workdir
    kind = data.draw(st.sampled_from(["identical", "one", "lines", "garbage", "empty", "outside"]))
    n = data.draw(st.integers(2, 6))
    lon = data.draw(st.floats(-179, 179))
    lat = data.draw(st.floats(-89, 89))
    if kind == "identical":
        frame = gpd.GeoDataFrame(geometry=gpd.points_from_xy([lon] * n, [lat] * n), crs="EPSG:4326")
    elif kind == "one":
        frame = gpd.GeoDataFrame(geometry=gpd.points_from_xy([lon], [lat]), crs="EPSG:4326")
    elif kind == "lines":
        frame = gpd.GeoDataFrame(geometry=[shapely.LineString([(lon, lat), (0, 0)])] * n, crs="EPSG:4326")
    elif kind == "outside":
        frame = None
    else:
        frame = None
    path = d / f"pts{next(_counter)}.geojson"
    if frame is not None:
        frame.to_file(path, driver="GeoJSON")
    elif kind == "garbage":
        path.write_bytes(data.draw(garbage))
    elif kind == "empty":
        path.write_text('{"type": "FeatureCollection", "features": []}')
    else:  # coordinates outside lon/lat ranges, declared WGS 84
        path.write_bytes(_bad_feature_collection({"type": "Point", "coordinates": [lon + 400.0, lat]}))
    argv = _perturb_argv(d, d / "trips.geojson", points=path)
    code, _, err = run(argv)
    assert_one_line_error(code, err, argv)


# ------------------------------------------------------------------------------------- bad arguments


def _bad_number(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return True
    return not (math.isfinite(value) and 0 < value <= 1e6)


bad_args = st.one_of(
    st.tuples(st.just("--epsilon"), st.text(max_size=10).filter(_bad_number)),
    st.tuples(st.just("--epsilon"), st.sampled_from(["0", "-1", "nan", "inf", "-inf", "1e400", "1e9"])),
    st.tuples(
        st.just("--seed"),
        st.one_of(
            st.integers(max_value=-1).map(str), st.text(max_size=6).filter(lambda t: not t.strip().isdigit())
        ),
    ),
    st.tuples(
        st.just("--granularity"), st.one_of(st.integers(-5, 0).map(str), st.sampled_from(["x", "1.5", ""]))
    ),
    st.tuples(st.just("--snap-max-km"), st.sampled_from(["0", "-1", "nan", "abc", "0.000001"])),
    st.tuples(
        st.just("--mechanism"),
        st.text(max_size=8).filter(lambda t: t.lower() not in ("tp", "atp", "pointem")),
    ),
    st.tuples(st.just("--option"), st.from_regex(r"zz_[a-z]{1,6}=[0-9a-z'\[\]]{0,6}", fullmatch=True)),
    st.tuples(st.just("--option"), st.text(max_size=10).filter(lambda t: "=" not in t)),
    st.tuples(st.just("--traj-id-col"), st.text(min_size=1, max_size=8).filter(lambda t: t != "trip_id")),
    st.tuples(
        st.just("--keep-columns"), st.text(min_size=1, max_size=8).filter(lambda t: t not in ("trip_id",))
    ),
    st.tuples(st.just("--crs"), st.sampled_from(["EPSG:0", "nonsense", "+proj=xyz"])),
    # a tiny epsilon: the output would be uniform noise (an error below geoldp.prepare.MIN_EPSILON)
    st.tuples(st.just("--epsilon"), st.sampled_from(["1e-300", "5e-324", "0.0009", "1e-4"])),
    # huge option values are refused up front (no MemoryError/RecursionError from the value parser)
    st.tuples(
        st.just("--option"),
        st.sampled_from(["[", "(", "{", "9", "a", "1+"]).map(lambda c: "granularity=" + c * 300_000),
    ),
    st.tuples(st.just("--option"), st.just("granularity=" + "[" * 400 + "]" * 400)),
)


@given(arg=bad_args)
@FAST
def test_bad_arguments_give_one_line(workdir, arg):
    d, _ = workdir
    name, value = arg
    if value.startswith("-") and name != "--option":
        value = f" {value}"  # argparse would read it as an option name
    argv = _perturb_argv(d, d / "trips.geojson", extra=[name, value])
    if name == "--snap-max-km" and value == "0.000001":
        pass  # valid syntax; every vertex is farther than 1 mm from the public points
    code, _, err = run(argv)
    assert_one_line_error(code, err, argv)


@given(
    output=st.one_of(
        st.text(max_size=10).map(lambda t: f"{t}.unknown"),
        st.sampled_from(["nodir/x.geojson", "", ".", "adir.geojson", "adir.geojson/x.csv.gz"]),
        # odd names: control characters, quotes, names too long for the sidecar and temporary files
        st.sampled_from(["a\nb.geojson", "a\rb.csv", "tab\t.gpkg", 'q"uote.geojson', "it's.csv"]),
        st.integers(201, 400).map(lambda n: "x" * n + ".geojson"),
    )
)
@FAST
def test_bad_outputs_give_one_line(workdir, output):
    d, _ = workdir
    (d / "adir.geojson").mkdir(exist_ok=True)
    argv = [
        "perturb",
        str(d / "trips.geojson"),
        "--points",
        str(d / "points.geojson"),
        "--epsilon",
        "1",
        "-o",
        str(d / output) if output else output,
    ]
    code, _, err = run(argv)
    assert_one_line_error(code, err, argv)
    assert [p.name for p in d.iterdir() if "\n" in p.name or '"' in p.name or len(p.name) > 200] == []


@pytest.mark.parametrize(
    "area, grid",
    [
        ("-180,-90,180,90", "1000"),
        ("-180,-85,180,85", "1000"),
        ("-180,-90,180,90", "500000"),
        ("0,0,1,1", "1e-9"),
    ],
)
def test_whole_world_or_too_fine_grid_is_refused_up_front(workdir, area, grid):
    import time

    d, _ = workdir
    out = d / f"grid{next(_counter)}.geojson"
    argv = [
        "perturb",
        str(d / "trips.geojson"),
        "--grid",
        grid,
        f"--area={area}",
        "--epsilon",
        "1",
        "-o",
        str(out),
    ]
    start = time.process_time()
    code, _, err = run(argv)
    assert_one_line_error(code, err, argv)
    assert "MAX_POINTS" in err or "too large for one metric grid" in err
    assert time.process_time() - start < 5.0 and not out.exists()  # refused before building anything


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("boom"),
        RecursionError("deep"),
        MemoryError(),
        OSError(5, "I/O error"),
        KeyboardInterrupt(),
    ],
    ids=lambda e: type(e).__name__,
)
def test_unexpected_failures_are_one_line(workdir, monkeypatch, exc):
    from geoldp.cli import perturb as cli_perturb

    d, _ = workdir

    def fail(*args, **kwargs):
        raise exc

    monkeypatch.delenv("GEOLDP_TRACEBACK", raising=False)
    monkeypatch.setattr(cli_perturb, "_prepare_trips", fail)  # after reading, outside any file stage
    argv = _perturb_argv(d, d / "trips.geojson")
    code, _, err = run(argv)
    if isinstance(exc, KeyboardInterrupt):
        assert code == 130 and err.strip() == "geoldp: interrupted"
    else:
        assert_one_line_error(code, err, argv)
        assert type(exc).__name__ in err or "out of memory" in err


def test_existing_output_file_for_demo_and_perturb(workdir):
    d, _ = workdir
    existing = d / "existing.geojson"
    existing.write_text("x")
    for argv in (
        ["demo", "-o", str(existing), "--n-trips", "3", "--n-points", "10", "--no-plot"],
        _perturb_argv(d, d / "trips.geojson")[:-1] + [str(existing)],
        ["evaluate", str(d / "trips.geojson"), str(existing)],
    ):
        code, _, err = run(argv)
        assert_one_line_error(code, err, argv)
    assert existing.read_text() == "x"


@pytest.mark.slow
@given(data=st.data())
@SLOW
def test_bad_trips_files_give_one_line_large_sweep(workdir, data):
    test_bad_trips_files_give_one_line.hypothesis.inner_test(workdir, data)


@pytest.mark.slow
@given(arg=bad_args)
@SLOW
def test_bad_arguments_give_one_line_large_sweep(workdir, arg):
    test_bad_arguments_give_one_line.hypothesis.inner_test(workdir, arg)
