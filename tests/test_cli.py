"""Tests of the command line (geoldp.cli), called through ``main([...])``."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

import geoldp
from geoldp.cli import main
from geoldp.datasets import synthetic_city

COMMANDS = ["perturb", "demo", "evaluate", "info"]


@pytest.fixture(scope="module")
def city():
    return synthetic_city(n_points=60, n_trips=25, max_len=6, seed=3)


@pytest.fixture
def files(tmp_path, city):
    points, trips = city
    trips_path = tmp_path / "trips.geojson"
    points_path = tmp_path / "points.geojson"
    trips.to_file(trips_path, driver="GeoJSON")
    points.to_file(points_path, driver="GeoJSON")
    return trips_path, points_path


def _single_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("geoldp: error: ")
    assert "Traceback" not in err
    return lines[0]


# -- help, version, info ---------------------------------------------------------------------------


def test_help_top_level(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert command in out


@pytest.mark.parametrize("command", COMMANDS)
def test_help_every_command(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"geoldp {command}" in out


def test_perturb_help_says_seed_is_for_experiments(capsys):
    assert main(["perturb", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "for experiments only; omit for deployment (OS CSPRNG)" in out


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"geoldp {geoldp.__version__}"


def test_no_command_prints_help(capsys):
    assert main([]) == 0
    assert "usage: geoldp" in capsys.readouterr().out


def test_info(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"geoldp {geoldp.__version__}")
    for name in ("numpy", "geopandas", "shapely", "numba", "dask-geopandas"):
        assert name in out


def test_show_versions_prints_and_returns_none(capsys):
    assert geoldp.show_versions() is None
    out = capsys.readouterr().out
    for name in (
        "geoldp",
        "python",
        "platform",
        "numpy",
        "pandas",
        "pyproj",
        "scikit-learn",
        "scipy",
        "matplotlib",
        "tqdm",
        "pyogrio",
        "pyarrow",
        "dask",
    ):
        assert f"\n{name}" in out


def test_python_dash_m(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "geoldp", "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"geoldp {geoldp.__version__}"


# -- usage errors (exit 2) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["frobnicate"], "invalid choice"),
        (["perturb", "t.geojson", "--mechanism", "tp", "--epsilon", "1", "-o", "o.geojson"], "--points"),
        (["perturb", "t.geojson", "--points", "p.geojson", "-o", "o.geojson"], "--epsilon"),
        (
            [
                "perturb",
                "t.geojson",
                "--points",
                "p.geojson",
                "--mechanism",
                "xx",
                "--epsilon",
                "1",
                "-o",
                "o.geojson",
            ],
            "invalid choice",
        ),
        (
            [
                "perturb",
                "t.geojson",
                "--points",
                "p.geojson",
                "--mechanism",
                "tp",
                "--epsilon",
                "abc",
                "-o",
                "o.geojson",
            ],
            "must be a number",
        ),
        (
            [
                "perturb",
                "t.geojson",
                "--points",
                "p.geojson",
                "--mechanism",
                "tp",
                "--epsilon",
                "1",
                "--seed",
                "-3",
                "-o",
                "o.geojson",
            ],
            "non-negative integer",
        ),
        (
            [
                "perturb",
                "t.geojson",
                "--points",
                "p.geojson",
                "--mechanism",
                "tp",
                "--epsilon",
                "1",
                "--snap-max-km",
                "0",
                "-o",
                "o.geojson",
            ],
            "positive number",
        ),
        (["demo", "--n-trips", "0"], "positive integer"),
        (["evaluate", "only-one.geojson"], "PERTURBED"),
    ],
)
def test_usage_errors_exit_2_with_one_line(argv, match, capsys):
    assert main(argv) == 2
    line = _single_error_line(capsys.readouterr().err)
    assert match in line


# -- user errors (exit 1) ---------------------------------------------------------------------------


def test_missing_trips_file(tmp_path, files, capsys):
    _, points_path = files
    code = main(
        [
            "perturb",
            str(tmp_path / "nope.geojson"),
            "--points",
            str(points_path),
            "--mechanism",
            "tp",
            "--epsilon",
            "1",
            "-o",
            str(tmp_path / "out.geojson"),
        ]
    )
    assert code == 1
    line = _single_error_line(capsys.readouterr().err)
    assert "does not exist" in line
    assert not (tmp_path / "out.geojson").exists()


def test_unknown_output_suffix(tmp_path, files, capsys):
    trips_path, points_path = files
    code = main(
        [
            "perturb",
            str(trips_path),
            "--points",
            str(points_path),
            "--mechanism",
            "tp",
            "--epsilon",
            "1",
            "-o",
            str(tmp_path / "out.xyz"),
        ]
    )
    assert code == 1
    assert "output format" in _single_error_line(capsys.readouterr().err)


def test_missing_output_directory(tmp_path, files, capsys):
    trips_path, points_path = files
    code = main(
        [
            "perturb",
            str(trips_path),
            "--points",
            str(points_path),
            "--mechanism",
            "tp",
            "--epsilon",
            "1",
            "-o",
            str(tmp_path / "nodir" / "out.geojson"),
        ]
    )
    assert code == 1
    assert "does not exist" in _single_error_line(capsys.readouterr().err)


def _writing_commands(trips_path, points_path, out):
    """Every command that writes a file, with valid inputs and ``out`` as its output (suffix added)."""
    t, p = str(trips_path), str(points_path)
    return {
        "perturb": ["perturb", t, "--points", p, "--epsilon", "1", "-o", f"{out}.geojson"],
        "report": ["report", t, "--points", p, "--cell-km", "2", "--epsilon", "1", "-o", f"{out}.csv"],
        "synthesize": ["synthesize", t, "--points", p, "--epsilon", "1", "-o", f"{out}.geojson"],
        "points": ["points", "--grid", "500", "--area=-122.7,45.5,-122.6,45.6", "-o", f"{out}.gpkg"],
        "prepare": ["prepare", t, "--area=-180,-90,180,90", "-o", f"{out}.geojson"],
    }


@pytest.mark.parametrize(
    "bad, words",
    [
        ("nodir/out", "output directory"),
        ('q"uote', "quote character"),
        ("x" * 210, "bytes long"),
        ("tab\tname", "control character"),
    ],
)
def test_every_writing_command_refuses_a_bad_output_the_same_way(tmp_path, files, bad, words, capsys):
    trips_path, points_path = files
    lines = {}
    for command, argv in _writing_commands(trips_path, points_path, str(tmp_path / bad)).items():
        code = main(argv)
        line = _single_error_line(capsys.readouterr().err)
        assert code == 1, (command, line)
        assert words in line, (command, line)
        # the same words but for the suffix each command writes (and so the name's length)
        lines[command] = re.sub(r"\.(geojson|csv|gpkg)\b|\d+ bytes", "", line)
    assert sorted(tmp_path.iterdir()) == sorted(files)  # nothing written by any of them
    assert len(set(lines.values())) == 1, lines  # one wording, whatever the command


def test_refuses_to_overwrite_an_input(files, capsys):
    trips_path, points_path = files
    before = trips_path.read_bytes()
    code = main(
        [
            "perturb",
            str(trips_path),
            "--points",
            str(points_path),
            "--mechanism",
            "tp",
            "--epsilon",
            "1",
            "-o",
            str(trips_path),
        ]
    )
    assert code == 1
    assert "is the TRIPS file" in _single_error_line(capsys.readouterr().err)
    assert trips_path.read_bytes() == before


def test_unreadable_trips_file(tmp_path, files, capsys):
    _, points_path = files
    bad = tmp_path / "bad.geojson"
    bad.write_text("this is not geojson")
    code = main(
        [
            "perturb",
            str(bad),
            "--points",
            str(points_path),
            "--mechanism",
            "tp",
            "--epsilon",
            "1",
            "-o",
            str(tmp_path / "out.geojson"),
        ]
    )
    assert code == 1
    assert "cannot read TRIPS" in _single_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("epsilon", ["-1", "0", "nan", "inf"])
def test_bad_epsilon_value(tmp_path, files, epsilon, capsys):
    trips_path, points_path = files
    code = main(
        [
            "perturb",
            str(trips_path),
            "--points",
            str(points_path),
            "--mechanism",
            "atp",
            "--epsilon",
            epsilon,
            "-o",
            str(tmp_path / "out.geojson"),
        ]
    )
    assert code == 1
    assert "epsilon" in _single_error_line(capsys.readouterr().err)
    assert not (tmp_path / "out.geojson").exists()


def test_bad_column(tmp_path, files, capsys):
    trips_path, points_path = files
    code = main(
        [
            "perturb",
            str(trips_path),
            "--points",
            str(points_path),
            "--mechanism",
            "tp",
            "--epsilon",
            "1",
            "--keep-columns",
            "no_such_column",
            "-o",
            str(tmp_path / "out.geojson"),
        ]
    )
    assert code == 1
    assert "no_such_column" in _single_error_line(capsys.readouterr().err)


# -- perturb ----------------------------------------------------------------------------------------


def _read_back(path):
    if path.suffix == ".parquet":
        return gpd.read_parquet(path)
    if path.suffix == ".csv":
        df = pd.read_csv(path)
        return gpd.GeoDataFrame(df, geometry=gpd.GeoSeries.from_wkt(df["geometry"]), crs="EPSG:4326")
    return gpd.read_file(path)


@pytest.mark.parametrize("suffix", [".geojson", ".gpkg", ".parquet", ".csv"])
def test_perturb_writes_file_and_ledger(tmp_path, files, city, suffix, capsys):
    trips_path, points_path = files
    points, trips = city
    out = tmp_path / f"out{suffix}"
    code = main(
        [
            "perturb",
            str(trips_path),
            "--points",
            str(points_path),
            "--mechanism",
            "atp",
            "--epsilon",
            "2",
            "--seed",
            "7",
            "-o",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert out.exists()
    assert str(out) in captured.out
    back = _read_back(out)
    assert len(back) == len(trips)
    counts_in = shapely.get_num_coordinates(trips.geometry.values)
    counts_out = shapely.get_num_coordinates(back.geometry.values)
    np.testing.assert_array_equal(counts_out, counts_in)
    # every output vertex is a public point
    public = {tuple(c) for c in shapely.get_coordinates(points.geometry.values)}
    assert {tuple(c) for c in shapely.get_coordinates(back.geometry.values)} <= public
    # the ledger is written next to the output (or inside the GeoJSON), and never holds the seed
    ledger_files = [p for p in tmp_path.iterdir() if "ledger" in p.name]
    assert [p.name for p in ledger_files] == [f"out{suffix}.ledger.json"]
    assert str(ledger_files[0]) in captured.out
    text = "".join(p.read_text() for p in ledger_files) + (out.read_text() if suffix == ".geojson" else "")
    assert "atp" in text.lower()
    assert '"seed"' not in text.lower().replace('"seeded"', "")


@pytest.mark.filterwarnings("ignore:.*close to uniform noise:geoldp.PrivacyWarning")
def test_perturb_equals_accessor_with_same_seed(tmp_path, files, city, capsys):
    trips_path, points_path = files
    out = tmp_path / "out.parquet"
    assert (
        main(
            [
                "perturb",
                str(trips_path),
                "--points",
                str(points_path),
                "--mechanism",
                "tp",
                "--epsilon",
                "3",
                "--seed",
                "11",
                "--no-progress",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    capsys.readouterr()
    trips = gpd.read_file(trips_path)
    points = gpd.read_file(points_path)
    expected = trips.ldp.perturb(points, mechanism="tp", epsilon=3.0, rng=11)
    back = gpd.read_parquet(out)
    assert back.geometry.geom_equals_exact(expected.geometry.reset_index(drop=True), tolerance=0).all()


def test_perturb_ledger_sidecar_contents(tmp_path, files, capsys):
    trips_path, points_path = files
    out = tmp_path / "out.gpkg"
    assert (
        main(
            [
                "perturb",
                str(trips_path),
                "--points",
                str(points_path),
                "--mechanism",
                "tp",
                "--epsilon",
                "1.5",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    capsys.readouterr()
    ledger = json.loads((tmp_path / "out.gpkg.ledger.json").read_text())
    assert json.dumps(ledger)  # JSON-able
    flat = json.dumps(ledger).lower()
    assert "tp" in flat
    assert "1.5" in flat


def test_default_mechanism_is_atp(tmp_path, files, capsys):
    trips_path, points_path = files
    out = tmp_path / "out.parquet"
    assert (
        main(["perturb", str(trips_path), "--points", str(points_path), "--epsilon", "4", "-o", str(out)])
        == 0
    )
    capsys.readouterr()
    ledger = json.loads((tmp_path / "out.parquet.ledger.json").read_text())
    assert ledger["mechanism"] == "atp"
    assert ledger["rng"] == "os-csprng"


def test_keep_columns_prints_one_warning_line(tmp_path, files, capsys):
    trips_path, points_path = files
    out = tmp_path / "out.geojson"
    code = main(
        [
            "perturb",
            str(trips_path),
            "--points",
            str(points_path),
            "--mechanism",
            "tp",
            "--epsilon",
            "1",
            "--keep-columns",
            "trip_id",
            "-o",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    warnings = [line for line in captured.err.splitlines() if line.startswith("geoldp: warning:")]
    kept = [line for line in warnings if "keep_columns" in line]
    assert len(kept) == 1
    assert "PrivacyWarning" in kept[0]
    assert "trip_id" in kept[0]
    assert "trip_id" in gpd.read_file(out).columns


def test_perturb_point_rows_with_traj_id(tmp_path, city, capsys):
    points, trips = city
    rows = []
    for tid, geom in zip(trips["trip_id"], trips.geometry, strict=True):
        for k, (x, y) in enumerate(geom.coords):
            rows.append({"tid": int(tid), "t": k, "lon": x, "lat": y})
    df = pd.DataFrame(rows).sample(frac=1.0, random_state=0)  # unordered rows
    pts_frame = gpd.GeoDataFrame(df, geometry=gpd.points_from_xy(df["lon"], df["lat"]), crs="EPSG:4326")
    trips_path = tmp_path / "fixes.gpkg"
    pts_frame.to_file(trips_path, driver="GPKG")
    points_path = tmp_path / "points.gpkg"
    points.to_file(points_path, driver="GPKG")
    out = tmp_path / "out.gpkg"
    code = main(
        [
            "perturb",
            str(trips_path),
            "--points",
            str(points_path),
            "--mechanism",
            "pointem",
            "--epsilon",
            "1",
            "--traj-id-col",
            "tid",
            "--time-col",
            "t",
            "-o",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert out.exists()


def test_perturb_bad_traj_id_col(tmp_path, files, capsys):
    trips_path, points_path = files
    code = main(
        [
            "perturb",
            str(trips_path),
            "--points",
            str(points_path),
            "--mechanism",
            "tp",
            "--epsilon",
            "1",
            "--traj-id-col",
            "nope",
            "-o",
            str(tmp_path / "o.geojson"),
        ]
    )
    assert code == 1
    assert "nope" in _single_error_line(capsys.readouterr().err)


# -- evaluate ---------------------------------------------------------------------------------------


def test_evaluate_prints_table_and_plot(tmp_path, files, capsys):
    trips_path, points_path = files
    out = tmp_path / "out.geojson"
    assert (
        main(
            [
                "perturb",
                str(trips_path),
                "--points",
                str(points_path),
                "--mechanism",
                "atp",
                "--epsilon",
                "4",
                "--seed",
                "1",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    capsys.readouterr()
    png = tmp_path / "map.png"
    code = main(["evaluate", str(trips_path), str(out), "--points", str(points_path), "--plot", str(png)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    for metric in ("NE", "PRQ", "hotspot", "zone_l1", "od_l1", "range_query_error"):
        assert metric in captured.out
    # one column per release: the perturbed file (labelled from its ledger) and the no-data baselines
    header = captured.out.splitlines()[0]
    assert header.split() == ["release", "ATP", "raw", "uniform", "constant"]
    assert png.exists()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("suffix", [".geojson", ".gpkg"])  # the ledger inside the file, or beside it
def test_evaluate_estimate_prints_estimated_and_denoised(tmp_path, files, capsys, suffix):
    trips_path, points_path = files
    out = tmp_path / f"out{suffix}"
    args = ["perturb", str(trips_path), "--points", str(points_path), "--mechanism", "atp"]
    assert main([*args, "--epsilon", "4", "--seed", "1", "-o", str(out)]) == 0
    capsys.readouterr()
    ev = ["evaluate", str(trips_path), str(out), "--points", str(points_path), "--estimate"]
    code = main([*ev, "--n-candidates", "100"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    header = captured.out.splitlines()[0].split()
    assert header == ["release", "ATP", "raw", "ATP", "estimated", "ATP", "denoised", "uniform", "constant"]
    assert "geoldp: fitting the population model: simulating length" in captured.err  # no silent wait
    assert main(["evaluate", str(trips_path), str(out), "--estimate"]) == 1
    assert "--points" in capsys.readouterr().err
    assert main([*ev, "--mechanism", "atp"]) == 1
    assert "--epsilon" in capsys.readouterr().err


def test_evaluate_scores_a_synthetic_set_on_its_distributions(tmp_path, files, capsys):
    # LDPTrace's trips are not the originals' rows: no row-by-row check, NE is NaN, the distributions count
    trips_path, points_path = files
    out = tmp_path / "synthetic.gpkg"
    args = ["synthesize", str(trips_path), "--points", str(points_path), "--epsilon", "4", "--seed", "1"]
    assert main([*args, "-o", str(out)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["evaluate", str(trips_path), str(out), "--points", str(points_path)]) == 0
    captured = capsys.readouterr()
    rows = {line.split()[0]: line.split()[1:] for line in captured.out.splitlines()[1:]}
    assert captured.out.split()[:2] == ["release", "LDPTRACE"]
    assert rows["NE_km"][0] == "NaN" and rows["zone_l1"][0] != "NaN" and rows["length_jsd"][0] != "NaN"


def test_evaluate_without_points_has_no_baselines(tmp_path, files, capsys):
    trips_path, points_path = files
    out = tmp_path / "out.geojson"
    args = ["perturb", str(trips_path), "--points", str(points_path), "--epsilon", "4", "--seed", "2"]
    assert main([*args, "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(trips_path), str(out)]) == 0
    captured = capsys.readouterr()
    assert "NE_km" in captured.out and "uniform" not in captured.out and "zone_l1" not in captured.out
    assert "--points" in captured.err
    assert main(["evaluate", str(trips_path), str(out), "--points", str(points_path), "--cell-km", "0"]) == 2
    assert "positive number" in capsys.readouterr().err


def test_evaluate_missing_file(tmp_path, files, capsys):
    trips_path, _ = files
    assert main(["evaluate", str(trips_path), str(tmp_path / "missing.geojson")]) == 1
    assert "does not exist" in _single_error_line(capsys.readouterr().err)


# -- mechanism options ------------------------------------------------------------------------------


def test_options_reach_the_mechanism(tmp_path, files, capsys):
    trips_path, points_path = files
    out = tmp_path / "out.gpkg"
    code = main(
        [
            "perturb",
            str(trips_path),
            "--points",
            str(points_path),
            "--mechanism",
            "atp",
            "--epsilon",
            "2",
            "--granularity",
            "6",
            "--option",
            "sector_convention='floor'",
            "--option",
            "tie_break=index",
            "--seed",
            "3",
            "-o",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    ledger = json.loads((tmp_path / "out.gpkg.ledger.json").read_text())
    assert ledger["granularity"] == 6
    assert ledger["options"]["sector_convention"] == "floor"
    assert ledger["options"]["tie_break"] == "index"


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--option", "sector_convention=north"], "sector_convention"),
        (["--option", "no_such_option=1"], "no_such_option"),
        (["--granularity", "1"], "granularity"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path, files, extra, match, capsys):
    trips_path, points_path = files
    code = main(
        [
            "perturb",
            str(trips_path),
            "--points",
            str(points_path),
            "--mechanism",
            "tp",
            "--epsilon",
            "2",
            *extra,
            "-o",
            str(tmp_path / "out.geojson"),
        ]
    )
    assert code == 1
    assert match in _single_error_line(capsys.readouterr().err)
    assert not (tmp_path / "out.geojson").exists()


def test_malformed_option_is_usage_error(capsys):
    assert (
        main(
            [
                "perturb",
                "t.geojson",
                "--points",
                "p.geojson",
                "--mechanism",
                "tp",
                "--epsilon",
                "1",
                "--option",
                "novalue",
                "-o",
                "o.geojson",
            ]
        )
        == 2
    )
    assert "NAME=VALUE" in _single_error_line(capsys.readouterr().err)


def test_csv_input_with_lon_lat_points(tmp_path, city, capsys):
    points, trips = city
    trips_csv = tmp_path / "trips.csv"
    pd.DataFrame(
        {"trip_id": trips["trip_id"], "wkt": shapely.to_wkt(trips.geometry.values, rounding_precision=-1)}
    ).to_csv(trips_csv, index=False)
    points_csv = tmp_path / "points.csv"
    pd.DataFrame({"lon": points.geometry.x, "lat": points.geometry.y}).to_csv(points_csv, index=False)
    out = tmp_path / "out.csv"
    code = main(
        [
            "perturb",
            str(trips_csv),
            "--points",
            str(points_csv),
            "--mechanism",
            "tp",
            "--epsilon",
            "2",
            "--wkt-col",
            "wkt",
            "-o",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    back = _read_back(out)
    assert len(back) == len(trips)


def test_warnings_before_an_error_are_not_printed(tmp_path, files, capsys):
    _, points_path = files
    _, jittered = synthetic_city(n_points=60, n_trips=25, max_len=6, seed=3, jitter_m=50.0)
    trips_path = tmp_path / "jittered.geojson"
    jittered.to_file(trips_path, driver="GeoJSON")
    # epsilon > 10 warns (PrivacyWarning) when the mechanism is built; the snap check then fails
    code = main(
        [
            "perturb",
            str(trips_path),
            "--points",
            str(points_path),
            "--mechanism",
            "tp",
            "--epsilon",
            "12",
            "--snap-max-km",
            "0.000001",
            "--keep-columns",
            "trip_id",
            "-o",
            str(tmp_path / "out.geojson"),
        ]
    )
    assert code == 1
    line = _single_error_line(capsys.readouterr().err)
    assert "snap_max_km" in line


# -- perturb: --max-points, --simplify, --points-crs, progress -------------------------------------


def _perturb_argv(trips_path, points_path, out, *extra):
    return [
        "perturb",
        str(trips_path),
        "--points",
        str(points_path),
        "--epsilon",
        "4",
        "-o",
        str(out),
        *extra,
    ]


def test_max_points_resamples_before_perturbing(tmp_path, files, city, capsys):
    from geoldp.prepare import resample

    points, trips = city
    trips_path, points_path = files
    assert max(len(g.coords) for g in trips.geometry) > 3  # the option has something to do
    out = tmp_path / "out.geojson"
    code = main(_perturb_argv(trips_path, points_path, out, "--max-points", "3", "--seed", "7"))
    assert code == 0, capsys.readouterr().err
    back = _read_back(out)
    assert max(len(g.coords) for g in back.geometry) <= 3
    # the same as preparing by hand, then perturbing with the same seed
    expected = resample(gpd.read_file(trips_path), max_points=3).ldp.perturb(
        gpd.read_file(points_path), mechanism="atp", epsilon=4.0, rng=7
    )
    got = shapely.get_coordinates(np.asarray(back.geometry.values))
    want = shapely.get_coordinates(np.asarray(expected.geometry.values))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


def test_simplify_with_a_huge_tolerance_keeps_the_end_points(tmp_path, files, city, capsys):
    points, trips = city
    trips_path, points_path = files
    out = tmp_path / "out.geojson"
    code = main(_perturb_argv(trips_path, points_path, out, "--simplify", "1e7", "--seed", "1"))
    assert code == 0, capsys.readouterr().err
    back = _read_back(out)
    # Douglas-Peucker with a tolerance larger than the city keeps only the first and last vertex
    assert [len(g.coords) for g in back.geometry] == [2] * len(trips)
    assert len(back) == len(trips) and back.crs == trips.crs


def test_simplify_and_max_points_on_point_rows_is_one_line_error(tmp_path, city, capsys):
    points, trips = city
    df = pd.DataFrame(
        [{"tid": 0, "t": k, "lon": x, "lat": y} for k, (x, y) in enumerate(trips.geometry[0].coords)]
    )
    fixes = gpd.GeoDataFrame(df, geometry=gpd.points_from_xy(df["lon"], df["lat"]), crs="EPSG:4326")
    trips_path = tmp_path / "fixes.gpkg"
    fixes.to_file(trips_path, driver="GPKG")
    points_path = tmp_path / "points.gpkg"
    points.to_file(points_path, driver="GPKG")
    argv = _perturb_argv(
        trips_path, points_path, tmp_path / "o.gpkg", "--traj-id-col", "tid", "--max-points", "3"
    )
    assert main(argv) == 1
    line = _single_error_line(capsys.readouterr().err)
    assert "--max-points" in line and "trajectories_from_points" in line


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--max-points", "1"], "--max-points"),
        (["--max-points", "x"], "--max-points"),
        (["--simplify", "-5"], "--simplify"),
        (["--simplify", "nan"], "--simplify"),
        (["--progress", "--no-progress"], "not allowed with"),
    ],
)
def test_new_perturb_options_usage_errors(tmp_path, files, extra, match, capsys):
    trips_path, points_path = files
    assert main(_perturb_argv(trips_path, points_path, tmp_path / "o.geojson", *extra)) == 2
    assert match in _single_error_line(capsys.readouterr().err)


def test_points_crs_declares_the_crs_of_a_points_csv(tmp_path, files, city, capsys):
    points, trips = city
    trips_path, _ = files
    metric = points.to_crs("EPSG:3857")
    points_csv = tmp_path / "points_3857.csv"
    pd.DataFrame({"x": metric.geometry.x, "y": metric.geometry.y}).to_csv(points_csv, index=False)
    out = tmp_path / "out.geojson"
    code = main(_perturb_argv(trips_path, points_csv, out, "--points-crs", "EPSG:3857", "--seed", "2"))
    err = capsys.readouterr().err
    assert code == 0, err
    # every output vertex is one of the public points, back in the trips' CRS (WGS 84)
    released = shapely.get_coordinates(np.asarray(_read_back(out).geometry.values))
    public = shapely.get_coordinates(np.asarray(points.geometry.values))
    nearest = np.min(np.abs(released[:, None, :] - public[None, :, :]).max(axis=2), axis=1)
    assert nearest.max() < 1e-7
    # without the option the metre values are read as degrees: a one-line error, not a silent mistake
    assert main(_perturb_argv(trips_path, points_csv, tmp_path / "bad.geojson")) == 1
    _single_error_line(capsys.readouterr().err)


def _tqdm_bar(err: str) -> bool:
    # tqdm's bar for the 25 trips, e.g. "geoldp:   0%|          | 0/25 [00:00<?, ?traj/s]"
    return re.search(r"\d+/25 \[", err) is not None


def test_progress_bar_on_request(tmp_path, files, capsys):
    pytest.importorskip("tqdm")
    trips_path, points_path = files
    # capsys' stderr is not a terminal, and 25 trips is a short run: no bar by default
    assert main(_perturb_argv(trips_path, points_path, tmp_path / "a.geojson", "--seed", "1")) == 0
    assert not _tqdm_bar(capsys.readouterr().err)
    assert (
        main(_perturb_argv(trips_path, points_path, tmp_path / "b.geojson", "--seed", "1", "--progress")) == 0
    )
    assert _tqdm_bar(capsys.readouterr().err)


def test_progress_bar_by_itself_only_for_long_runs_on_a_terminal(tmp_path, files, monkeypatch):
    pytest.importorskip("tqdm")
    import io

    from geoldp.cli import perturb as cli_perturb

    class TerminalStderr(io.StringIO):
        def isatty(self):
            return True

    trips_path, points_path = files
    cases = [(10**9, [], False), (25, [], True), (25, ["--no-progress"], False)]
    for k, (min_rows, extra, expected) in enumerate(cases):
        monkeypatch.setattr(cli_perturb, "PROGRESS_MIN_ROWS", min_rows)
        err = TerminalStderr()
        monkeypatch.setattr(sys, "stderr", err)
        out = tmp_path / f"o{k}.geojson"  # a new output each time: outputs are never overwritten silently
        assert main(_perturb_argv(trips_path, points_path, out, "--seed", "1", *extra)) == 0
        assert _tqdm_bar(err.getvalue()) is expected, (min_rows, extra)


# -- the sweep: every command with values at and beyond each bound ends in one clean line or a result ------

_CATCH_ALL = (
    "MemoryError",
    "ZeroDivisionError",
    "OverflowError",
    "RecursionError",
    "Traceback",
    "unknown error",
)


@pytest.fixture(scope="module")
def sweep_files(tmp_path_factory):
    from geoldp import zone_grid
    from geoldp.reports import report

    d = tmp_path_factory.mktemp("sweep")
    points, trips = synthetic_city(n_points=40, n_trips=12, max_len=5, seed=2)
    trips.to_file(d / "T.geojson", driver="GeoJSON")
    points.to_file(d / "P.geojson", driver="GeoJSON")
    geoldp.io.write_file(trips.ldp.perturb(points, epsilon=4.0, rng=0), d / "rel.gpkg")
    rep = report(trips, zone_grid(points, cells=3), epsilon=4.0, rng=0)

    geoldp.io.write_file(rep, d / "rep.csv")
    zone_grid(points, cells=3).to_file(d / "Z.geojson", driver="GeoJSON")
    return d


BIG = "1000000000000"
EPS_BEYOND = [
    "5e-324",
    "1e-300",
    "1e-20",
    "0.000999",
    "36.7369",
    "40",
    "700",
    "1e10",
    "1e308",
    "nan",
    "inf",
    "0",
]
EPS_AT = ["0.001", "36.7368"]


def _sweep_cases():
    cases = []
    per_eps = {
        "perturb": lambda e: ["perturb", "{T}", "--points", "{P}", "--epsilon", e],
        "report": lambda e: ["report", "{T}", "--points", "{P}", "--cell-km", "3", "--epsilon", e],
        "synthesize": lambda e: ["synthesize", "{T}", "--points", "{P}", "--epsilon", e],
        "plan": lambda e: ["plan", "{P}", "--epsilon", e, "--n", "50", "--lengths", "2"],
        "evaluate": lambda e: (
            ["evaluate", "{T}", "{rel}", "--points", "{P}", "--estimate", "--mechanism", "atp"]
            + ["--epsilon", e]
        ),
    }
    for cmd, argv in per_eps.items():
        for e in EPS_BEYOND:
            cases.append(pytest.param(argv(e), "error:epsilon", id=f"{cmd} --epsilon {e}"))
        if cmd != "evaluate":  # its --epsilon must agree with the release's ledger (4)
            for e in EPS_AT:
                cases.append(pytest.param(argv(e), "either", id=f"{cmd} --epsilon {e} (at the bound)"))
    counts = [
        (
            ["synthesize", "{T}", "--points", "{P}", "--epsilon", "2", "--n-synthetic", BIG],
            "error:n_synthetic",
        ),
        (["synthesize", "{T}", "--points", "{P}", "--epsilon", "2", "--grid-size", BIG], "error:grid_size"),
        (["plan", "{P}", "--epsilon", "2", "--n", "1000000000000000"], "error:'n'"),
        (["plan", "{P}", "--epsilon", "2", "--n", "100", "--lengths", "1000000000"], "error:lengths"),
        (["plan", "{P}", "--epsilon", "2", "--n", "100", "--lengths", "2,10001"], "error:lengths"),
        (["estimate", "{rel}", "--points", "{P}", "--n-boot", "1000000000"], "error:n_boot"),
        (["estimate", "{rel}", "--points", "{P}", "--n-boot", "0", "--n-candidates", BIG], "either"),
        (["estimate", "{rel}", "--points", "{P}", "--n-boot", "0", "--k", BIG], "either"),
        (["demo", "--n-trips", BIG], "error:n_trips"),
        (["demo", "--n-points", BIG], "error:n_points"),
        (
            ["report", "{T}", "--points", "{P}", "--cell-km", "3", "--epsilon", "2", "--pad-length", BIG],
            "error:--pad-length",
        ),
        (
            ["report", "{T}", "--points", "{P}", "--cell-km", "3", "--epsilon", "2", "--pad-length", "10000"],
            "either",
        ),
        (
            ["perturb", "{T}", "--points", "{P}", "--epsilon", "2", "--option", f"sw_buckets={BIG}"],
            "error:sw_buckets",
        ),
        (["perturb", "{T}", "--points", "{P}", "--epsilon", "2", "--option", "sw_buckets=1000000"], "either"),
        (
            [
                "collect",
                "{T}",
                "--design",
                f"report:visited_zone:pad{BIG}",
                "--epsilon",
                "2",
                "--points",
                "{P}",
            ],
            "error",
        ),
        (["report", "{T}", "--zones", "{notzones}", "--epsilon", "2"], "error:no geometry column"),
        (
            ["report", "{T}", "--points", "{P}", "--cell-km", "0.05", "--epsilon", "2"]
            + ["--statistic", "transitions", "--oracle", "oue"],
            "error:MAX_OUE_DOMAIN",
        ),
        (["points", "--area=116.3,39.9,116.4,40.0", "--grid", "1e-300"], "error:MAX_POINTS"),
        (["prepare", "{T}", "--max-gap", "1e12s"], "error"),
        (["report-estimate", "{rep}", "--zones", "{Z}", "--k", BIG], "either"),
        (["report-estimate", "{rep}", "--zones", "{Z}", "--max-set-size", BIG], "either"),
        (["prepare", "{T}", "--min-points", BIG], "error:--min-points"),
        (["prepare", "{T}", "--max-points", BIG], "either"),
        (["points", "--area=116.3,39.9,116.4,40.0", "--grid", "1", "--thin", BIG], "error"),
        (["points", "--area=116.3,39.9,116.4,40.0", "--h3", "99"], "error"),
        (
            [
                "perturb",
                "{T}",
                "--points",
                "{P}",
                "--epsilon",
                "2",
                "--user-col",
                "trip_id",
                "--max-per-user",
                BIG,
            ],
            "either",
        ),
    ]
    for argv, want in counts:
        cases.append(pytest.param(argv, want, id=" ".join(a for a in argv if "{" not in a)))
    return cases


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("argv, want", _sweep_cases())
def test_sweep_every_command_at_and_beyond_its_bounds(sweep_files, tmp_path, argv, want, capsys):
    d = sweep_files
    names = {"T": d / "T.geojson", "P": d / "P.geojson", "rel": d / "rel.gpkg", "rep": d / "rep.csv"}
    names["Z"] = d / "Z.geojson"
    names["notzones"] = d / "notzones.csv"  # a CSV of lon/lat: no polygons
    names["notzones"].write_text("lon,lat\n0,0\n")
    args = [a.format(**{k: str(v) for k, v in names.items()}) for a in argv]
    if args[0] not in ("plan", "evaluate"):
        out = tmp_path / ("out.csv" if args[0] in ("report",) else "out.gpkg")
        args += ["-o", str(out)]
    code = main(args)
    err = capsys.readouterr().err
    assert not any(word in err for word in _CATCH_ALL), err
    if code == 0:
        assert want in ("ok", "either"), f"accepted: {args}"
        return
    assert want.startswith("error") or want == "either", err
    # a run refused mid-way may have shown its progress (stage lines) before its one error line
    stage = re.compile(r"^geoldp: (?!error: |warning: ).+: (.*\(\d+/\d+\)|done in [\d.]+ s)$")
    line = _single_error_line("\n".join(x for x in err.splitlines() if not stage.match(x)))
    if want.startswith("error:"):  # the line names the parameter at fault
        assert want[len("error:") :] in line and "usage" not in line, line


def test_out_of_memory_is_one_line_that_says_what_to_do(files, tmp_path, monkeypatch, capsys):
    from geoldp import _release

    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 22.9 MiB for an array with shape (1000000, 3)")

    monkeypatch.setattr(_release, "request", no_memory)  # as under a tight address-space limit
    trips, points = files
    code = main(
        ["perturb", str(trips), "--points", str(points), "--epsilon", "4", "-o", str(tmp_path / "o.csv")]
    )
    line = _single_error_line(capsys.readouterr().err)
    assert code == 1 and "out of memory (Unable to allocate 22.9 MiB" in line
    assert "split the input, use fewer public points, or raise the memory limit" in line
    assert "MemoryError" not in line


# -- geoldp plan --max-length: a public bound on trajectory length, passed to geoldp.plan ----------------


def test_plan_max_length_is_the_public_bound_of_the_planner(files, monkeypatch, capsys):
    import geoldp.planner

    _, points_path = files
    seen = []
    real = geoldp.planner.plan

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(geoldp.planner, "plan", spy)
    base = ["plan", str(points_path), "--epsilon", "4", "--n", "200", "--seed", "0", "--cell-km", "3"]
    assert main([*base, "--max-length", "6", "--question", "zone_visits"]) == 0, capsys.readouterr().err
    assert "recommended:" in capsys.readouterr().out
    # the bound replaces the assumed lengths (drawn from 2..6 by the planner), and without it they stay
    assert seen[-1]["max_length"] == 6 and seen[-1]["lengths"] is None
    assert main(base) == 0
    capsys.readouterr()
    assert seen[-1]["max_length"] is None and seen[-1]["lengths"] == [2, 3, 5, 8]
    assert main([*base, "--lengths", "3,4", "--max-length", "4"]) == 0
    capsys.readouterr()
    assert seen[-1]["lengths"] == [3, 4] and seen[-1]["max_length"] == 4
    # a bad bound is a usage error naming the option, one line, before anything is simulated
    n_calls = len(seen)
    for bad in ("0", "-3", "x", "2.5", "10001"):  # above the longest trajectory geoldp models (10^4 points)
        assert main([*base, "--max-length", bad]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--max-length" in err and "[1, 10000]" in err, err
    assert len(seen) == n_calls


def test_collect_and_pilot_group_point_rows_into_trips(city, tmp_path, capsys):
    # GPS fixes or check-ins (one Point row each): --traj-id-col makes one LineString per trip, so that a
    # trip shares one epsilon, and the answer is the one of the same trips given as LineStrings
    points, trips = city
    trips = trips.iloc[:60].reset_index(drop=True)
    xy = shapely.get_coordinates(trips.geometry.values)
    trip = np.repeat(np.arange(len(trips)), shapely.get_num_coordinates(trips.geometry.values))
    step = np.concatenate([np.arange(k) for k in np.bincount(trip)])
    fixes = gpd.GeoDataFrame(
        {"trip": trip, "t": step}, geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=trips.crs
    ).sort_values(["trip", "t"], ascending=[True, False])  # --time-col, not the row order, orders a trip
    trips.to_file(tmp_path / "trips.gpkg")
    fixes.to_file(tmp_path / "fixes.gpkg")
    points.to_file(tmp_path / "points.gpkg")
    common = ["--epsilon", "4", "--points", str(tmp_path / "points.gpkg"), "--cell-km", "2", "--seed", "3"]
    grouped = [str(tmp_path / "fixes.gpkg"), "--traj-id-col", "trip", "--time-col", "t"]
    for name, source in (("lines", [str(tmp_path / "trips.gpkg")]), ("fixes", grouped)):
        argv = ["collect", *source, "--design", "atp", *common, "-o", str(tmp_path / f"answer-{name}.gpkg")]
        assert main(argv) == 0, capsys.readouterr().err
        assert f"collected {len(trips)} trips" in capsys.readouterr().err
        argv = ["pilot", *source, *common, "-o", str(tmp_path / f"pilot-{name}.csv")]
        assert main(argv) == 0, capsys.readouterr().err
    pd.testing.assert_frame_equal(
        gpd.read_file(tmp_path / "answer-lines.gpkg"), gpd.read_file(tmp_path / "answer-fixes.gpkg")
    )
    assert (tmp_path / "pilot-lines.csv").read_text() == (tmp_path / "pilot-fixes.csv").read_text()
    # without the option each fix is released as a trip of its own, and the warning says which option
    argv = [
        "collect",
        str(tmp_path / "fixes.gpkg"),
        "--design",
        "atp",
        *common,
        "-o",
        str(tmp_path / "x.gpkg"),
    ]
    assert main(argv) == 0
    assert f"collected {len(fixes)} trips" in (err := capsys.readouterr().err) and "--traj-id-col" in err
    assert main([*argv[:2], "--time-col", "t", *argv[2:], "--overwrite"]) == 2
    assert "--time-col" in _single_error_line(capsys.readouterr().err)


def test_collect_max_length_bounds_a_visited_zone_report_as_plan_does(files, tmp_path, capsys):
    # the public bound that geoldp plan takes travels to the command it prints, and narrows the upper ends
    # of a padded visited-zone report's intervals (a trip of 6 points visits at most 6 zones)
    trips_path, points_path = files
    common = ["--epsilon", "4", "--points", str(points_path), "--cell-km", "1", "--seed", "1"]
    argv = ["collect", str(trips_path), "--design", "report:visited_zone:padded", *common]
    assert main([*argv, "-o", str(tmp_path / "free.gpkg")]) == 0, capsys.readouterr().err
    assert main([*argv, "--max-length", "2", "-o", str(tmp_path / "bound.gpkg")]) == 0, (
        capsys.readouterr().err
    )
    free = gpd.read_file(tmp_path / "free.gpkg")
    bound = gpd.read_file(tmp_path / "bound.gpkg")
    np.testing.assert_array_equal(free["estimate"], bound["estimate"])  # the same release (seeded)
    assert (bound["upper"] <= free["upper"] + 1e-9).all() and (bound["upper"] < free["upper"] - 1e-9).any()
    capsys.readouterr()
    assert main([*argv, "--max-length", "0", "-o", str(tmp_path / "x.gpkg")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-length" in err
    plan = ["plan", str(points_path), "--epsilon", "4", "--n", "5000", "--seed", "0", "--cell-km", "3"]
    assert main([*plan, "--max-length", "6"]) == 0
    out = capsys.readouterr().out
    assert "run it: geoldp collect" in out and "--max-length 6 " in out
