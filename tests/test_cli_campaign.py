"""The campaign on the command line: prepare, points, perturb with per-user budgets, evaluate, estimate.

The fixture is a small GeoLife-like file of raw fixes built here (zero-padded user ids that look numeric,
ISO times with gaps between trips, one trip that leaves the public area).
"""

from __future__ import annotations

import gzip
import json

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest

import geoldp
from geoldp import points as gp
from geoldp.cli import main

AREA = "--area=116.30,39.90,116.40,39.96"
BOX = (116.30, 39.90, 116.40, 39.96)
# (user, number of trips); each trip is 30 fixes 5 s apart, trips 2 h apart
USERS = (("000", 3), ("002", 2), ("019", 1))


def _fixes() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    t0 = pd.Timestamp("2008-12-11T04:42:14Z")
    for user, n_trips in USERS:
        for k in range(n_trips):
            start = t0 + pd.Timedelta(hours=2 * k)
            lon = 116.32 + np.cumsum(rng.normal(0, 0.0004, 30)) + 0.01 * k
            lat = 39.92 + np.cumsum(rng.normal(0, 0.0004, 30))
            if user == "019":  # this trip walks out of the area to the east for its last 10 fixes
                lon[20:] = 116.45 + 0.001 * np.arange(10)
            for i in range(30):
                rows.append((user, i, lon[i], lat[i], (start + pd.Timedelta(seconds=5 * i)).isoformat()))
    df = pd.DataFrame(rows, columns=["tracker", "seq", "lon", "lat", "time"])
    return df.sample(frac=1.0, random_state=1).reset_index(drop=True)  # rows in no particular order


@pytest.fixture
def fixes_file(tmp_path):
    path = tmp_path / "fixes.csv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        _fixes().to_csv(fh, index=False)
    return path


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _prepare(tmp_path, fixes_file, capsys, *extra):
    out = tmp_path / "trips.gpkg"
    code, _, err = _run(
        ["prepare", fixes_file, "--traj-id-col", "tracker", "--user-col", "tracker", "--time-col", "time",
         "--max-gap", "10min", AREA, "-o", out, *extra],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    return out


def test_prepare_splits_clips_and_keeps_text_ids(tmp_path, fixes_file, capsys):
    path = _prepare(tmp_path, fixes_file, capsys, "--max-points", "12")
    trips = gpd.read_file(path)
    # 6 trips (gaps of 2 h > 10 min); the user ids stay text
    assert len(trips) == 6
    assert sorted(trips["tracker"].unique()) == ["000", "002", "019"]
    assert trips.groupby("tracker").size().to_dict() == {"000": 3, "002": 2, "019": 1}
    # at most 12 vertices; clipping dropped the 10 fixes of user 019 outside the box
    n = trips.geometry.count_coordinates()
    assert (n <= 12).all() and (trips["n_points"] == n).all()
    xy = trips.get_coordinates()
    assert xy.x.between(BOX[0], BOX[2]).all() and xy.y.between(BOX[1], BOX[3]).all()


def test_prepare_drop_outside_and_max_km(tmp_path, fixes_file, capsys):
    path = _prepare(tmp_path, fixes_file, capsys, "--outside", "drop")
    trips = gpd.read_file(path)
    assert len(trips) == 5 and "019" not in set(trips["tracker"])
    pts = tmp_path / "P.gpkg"
    assert _run(["points", "--grid", "500", AREA, "-o", pts], capsys)[0] == 0
    out = tmp_path / "near.gpkg"
    code, _, err = _run(
        ["prepare", fixes_file, "--traj-id-col", "tracker", "--time-col", "time", "--max-gap", "10min",
         "--points", pts, "--max-km", "2", "-o", out],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert len(gpd.read_file(out)) == 5  # the trip reaching 116.459 is > 2 km from every public point


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--max-km", "2"], "--max-km needs --points"),
        (["--outside", "drop"], "--outside goes with --area"),
    ],
)
def test_prepare_usage_errors(tmp_path, fixes_file, capsys, argv, match):
    code, _, err = _run(
        ["prepare", fixes_file, "--traj-id-col", "tracker", "-o", tmp_path / "x.gpkg", *argv], capsys
    )
    assert code == 2 and match in err


def test_prepare_points_need_traj_id(tmp_path, fixes_file, capsys):
    code, _, err = _run(["prepare", fixes_file, "-o", tmp_path / "x.gpkg"], capsys)
    assert code == 2 and "--traj-id-col" in err


def test_points_command_writes_the_public_grid(tmp_path, capsys):
    out = tmp_path / "P.geojson"
    code, stdout, err = _run(["points", "--grid", "1000", AREA, "-o", out], capsys)
    assert code == 0, err
    back = gpd.read_file(out)
    expected = gp.grid(BOX, 1000)
    assert len(back) == len(expected)
    assert gp.digest_of(back) == gp.digest_of(expected)
    assert gp.digest_of(expected)[:19] in err
    code, _, err = _run(["points", "--grid", "1000", "-o", tmp_path / "Q.geojson"], capsys)
    assert code == 2 and "--area" in err
    code, _, err = _run(["points", "--grid", "1000", "--h3", "8", AREA, "-o", tmp_path / "Q.geojson"], capsys)
    assert code == 2


def test_perturb_with_accountant_and_max_per_user(tmp_path, fixes_file, capsys):
    trips_path = _prepare(tmp_path, fixes_file, capsys)
    acc_path = tmp_path / "budget.gpkg"
    base = ["perturb", trips_path, "--grid", "1000", AREA, "--epsilon", "4", "--seed", "1"]
    # 3 trips of user 000 at 4 each pass a total of 8: refused, naming the fix, nothing charged
    code, _, err = _run(
        [
            *base,
            "--user-col",
            "tracker",
            "--accountant",
            acc_path,
            "--total-epsilon",
            "8",
            "-o",
            tmp_path / "r0.gpkg",
        ],
        capsys,
    )
    assert code == 1 and "--max-per-user" in err and "--user-budget split" in err
    assert geoldp.BudgetAccountant.open(acc_path).spent == {} and not (tmp_path / "r0.gpkg").exists()
    out = tmp_path / "r1.gpkg"
    kept = tmp_path / "kept.csv"
    code, _, err = _run(
        [*base, "--user-col", "tracker", "--accountant", acc_path, "--total-epsilon", "8",
         "--max-per-user", "2", "--kept-rows", kept, "-o", out],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert "kept 5 of 6 rows" in err
    acc = geoldp.BudgetAccountant.open(acc_path)
    assert acc.spent == {0: 8.0, 2: 8.0, 19: 4.0}  # "000" is charged as the user 0
    trips = gpd.read_file(trips_path)
    rows = pd.read_csv(kept)["row"].to_numpy()
    expected = np.flatnonzero((trips.groupby("tracker").cumcount() < 2).to_numpy())
    assert rows.tolist() == expected.tolist()
    release = geoldp.io.read_trajectories(out, ledger=True)
    assert len(release) == 5 and "tracker" not in release.columns  # the user ids are not released
    assert release.attrs["geoldp"]["user_budget"]["max_per_user"] == 2
    assert release.attrs["geoldp"]["points"]["recipe"]["area"] == list(BOX)
    # the accountant now refuses another release of user 000 and 002
    code, _, err = _run(
        [
            *base,
            "--user-col",
            "tracker",
            "--accountant",
            acc_path,
            "--max-per-user",
            "1",
            "-o",
            tmp_path / "r2.gpkg",
        ],
        capsys,
    )
    assert code == 1 and "2 of the 3 user(s)" in err
    assert geoldp.BudgetAccountant.open(acc_path).spent == acc.spent


def test_perturb_split_and_estimate(tmp_path, fixes_file, capsys):
    trips_path = _prepare(tmp_path, fixes_file, capsys, "--max-points", "8")
    out = tmp_path / "r.geojson"
    acc_path = tmp_path / "b.json"
    code, _, err = _run(
        ["perturb", trips_path, "--grid", "1000", AREA, "--epsilon", "6", "--seed", "1",
         "--user-col", "tracker", "--user-budget", "split", "--accountant", acc_path,
         "--total-epsilon", "6", "-o", out],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert "epsilon=6 per user" in err
    doc = json.loads(out.read_text())
    assert all("id" not in f for f in doc["features"])
    eps = sorted({f["properties"]["epsilon"] for f in doc["features"]})
    assert eps == pytest.approx([2.0, 3.0, 6.0])
    assert geoldp.BudgetAccountant.open(acc_path).spent == {0: 6.0, 2: 6.0, 19: 6.0}
    # estimate from the release alone: P rebuilt from its recipe
    est = tmp_path / "est.gpkg"
    code, stdout, err = _run(
        [
            "estimate",
            out,
            "-o",
            est,
            "--cell-km",
            "3",
            "--n-candidates",
            "50",
            "--n-boot",
            "2",
            "--fit-rows",
            "100",
            "--seed",
            "0",
        ],
        capsys,
    )
    assert code == 0, err
    import pyogrio

    assert [str(n) for n in pyogrio.list_layers(est)[:, 0]] == ["zone_visits", "od_flows", "hotspots"]
    zv = gpd.read_file(est, layer="zone_visits")
    assert {"zone", "estimate", "lower", "upper", "width", "raw"} <= set(zv.columns)
    # regions given are regions to count: their layer joins the default ones
    regions = tmp_path / "regions.geojson"
    geoldp.zone_grid(BOX, cells=2).to_file(regions, driver="GeoJSON")
    args = ["--cell-km", "3", "--n-candidates", "50", "--n-boot", "2", "--fit-rows", "100", "--seed", "0"]
    code, _, err = _run(["estimate", out, "-o", tmp_path / "r.gpkg", "--regions", regions, *args], capsys)
    assert code == 0, err
    layers = [str(n) for n in pyogrio.list_layers(tmp_path / "r.gpkg")[:, 0]]
    assert layers == ["zone_visits", "od_flows", "hotspots", "range_counts"]
    assert len(gpd.read_file(tmp_path / "r.gpkg", layer="range_counts")) == 4
    # a P that is not the release's is refused
    wrong = tmp_path / "P9.gpkg"
    assert _run(["points", "--grid", "900", AREA, "-o", wrong], capsys)[0] == 0
    code, _, err = _run(["estimate", out, "--points", wrong, "-o", tmp_path / "e2.gpkg"], capsys)
    assert code == 1 and "do not match the release" in err
    assert not (tmp_path / "e2.gpkg").exists()


def test_evaluate_checks_rows_on_reading(tmp_path, fixes_file, capsys):
    trips_path = _prepare(tmp_path, fixes_file, capsys)
    out = tmp_path / "r.gpkg"
    code, _, err = _run(
        ["perturb", trips_path, "--grid", "1000", AREA, "--epsilon", "4", "--seed", "1", "--max-points", "5",
         "-o", out],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    code, _, err = _run(["evaluate", trips_path, out], capsys)
    assert code == 1 and "geoldp prepare" in err and "row 0 has" in err
    short = tmp_path / "short.gpkg"
    assert _run(["prepare", trips_path, "--max-points", "5", "-o", short], capsys)[0] == 0
    zones = tmp_path / "zones.geojson"
    geoldp.zone_grid(gp.grid(BOX, 1000), cell_km=2.0).to_file(zones, driver="GeoJSON")
    code, stdout, err = _run(["evaluate", short, out, "--zones", zones], capsys)
    assert code == 0, err
    assert "zone_l1" in stdout


def test_perturb_user_options_usage(tmp_path, fixes_file, capsys):
    trips_path = _prepare(tmp_path, fixes_file, capsys)
    base = ["perturb", trips_path, "--grid", "1000", AREA, "--epsilon", "4", "-o", tmp_path / "r.gpkg"]
    for extra, match in (
        (["--max-per-user", "2"], "--user-col"),
        (["--user-col", "tracker"], "goes with"),
        (["--user-col", "tracker", "--accountant", tmp_path / "none.json"], "--total-epsilon"),
        (["--select-trips", "last"], "--max-per-user"),
    ):
        code, _, err = _run([*base, *extra], capsys)
        assert code in (1, 2) and match in err, (extra, err)
        assert not (tmp_path / "r.gpkg").exists()


def test_estimate_fit_rows_must_be_in_the_hundreds(tmp_path, capsys):
    code, _, err = _run(
        ["estimate", tmp_path / "r.geojson", "-o", tmp_path / "e.gpkg", "--fit-rows", "50"], capsys
    )
    assert code == 2 and "--fit-rows" in err and "Traceback" not in err


def test_prepare_says_which_trips_it_dropped_and_prints_warnings_as_geoldp_lines(tmp_path, capsys):
    fixes = _fixes()
    lone = pd.DataFrame([("999", 0, 116.33, 39.93, "2008-12-11T09:00:00+00:00")], columns=fixes.columns)
    path = tmp_path / "fixes.csv"
    pd.concat([fixes, lone]).to_csv(path, index=False)
    out = tmp_path / "trips.gpkg"
    code, _, err = _run(
        ["prepare", path, "--traj-id-col", "tracker", "--time-col", "time", "--max-gap", "10min", AREA,
         "--outside", "drop", "-o", out],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert "1 trip(s) leaving the area dropped" in err  # user 019's trip walks out of the box
    warnings = [line for line in err.splitlines() if "warning" in line.lower()]
    assert warnings and all(line.startswith("geoldp: warning: ") for line in warnings)  # the lone fix
    assert ".py:" not in err and "warnings.warn" not in err  # no source line, no file name


def test_a_box_starting_with_a_minus_sign_needs_no_equals_sign(tmp_path, capsys):
    from geoldp.cli._args import join_negative_boxes

    out = tmp_path / "P.geojson"
    argv = ["points", "--grid", "2000", "--area", "-122.52,37.70,-122.35,37.83", "-o", out]
    code, _, err = _run(argv, capsys)
    assert code == 0, err
    assert gpd.read_file(out).total_bounds[0] >= -122.52
    assert join_negative_boxes(["--area", "-1,2,3,4", "--x", "-5"]) == ["--area=-1,2,3,4", "--x", "-5"]
    assert join_negative_boxes(["--area", "--overwrite"]) == ["--area", "--overwrite"]  # argparse says it


def test_the_area_clip_is_a_python_function_and_the_cli_uses_it(tmp_path, fixes_file, capsys):
    from geoldp import prepare

    df = _fixes().assign(time=lambda d: pd.to_datetime(d["time"]))
    fixes = gpd.GeoDataFrame(df, geometry=gpd.points_from_xy(df["lon"], df["lat"]), crs="EPSG:4326")
    trips = prepare.trajectories_from_points(fixes, "tracker", "time", max_gap="10min")
    before = trips.copy()
    clipped = prepare.clip_to_area(trips, BOX)
    dropped = prepare.clip_to_area(trips, BOX, outside="drop")
    pd.testing.assert_frame_equal(trips, before)  # the input is not changed
    assert len(clipped) == 6 and len(dropped) == 5 and dropped.attrs["dropped"] == 1
    xy = clipped.get_coordinates()
    assert xy.x.between(BOX[0], BOX[2]).all() and xy.y.between(BOX[1], BOX[3]).all()
    assert clipped.geometry.count_coordinates().sum() == trips.geometry.count_coordinates().sum() - 10
    cli = gpd.read_file(_prepare(tmp_path, fixes_file, capsys))
    assert sorted(cli.geometry.count_coordinates()) == sorted(clipped.geometry.count_coordinates())
    with pytest.raises(ValueError, match="'area' parameter of clip_to_area"):
        prepare.clip_to_area(trips, (1, 2, 0, 3))
    with pytest.raises(ValueError, match="'outside' parameter"):
        prepare.clip_to_area(trips, BOX, outside="keep")


def test_evaluate_takes_a_max_per_user_release_with_its_kept_rows(tmp_path, fixes_file, capsys):
    trips_path = _prepare(tmp_path, fixes_file, capsys)
    out, kept = tmp_path / "r.gpkg", tmp_path / "kept.csv"
    code, _, err = _run(
        ["perturb", trips_path, "--grid", "1000", AREA, "--epsilon", "4", "--seed", "1", "--user-col",
         "tracker", "--max-per-user", "1", "--kept-rows", kept, "-o", out],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    code, _, err = _run(["evaluate", trips_path, out], capsys)
    assert code == 1 and "--kept-rows CSV" in err  # 6 rows against 3: says how
    code, table, err = _run(["evaluate", trips_path, out, "--kept-rows", kept], capsys)
    assert code == 0, err
    assert "NE_km" in table
    bad = tmp_path / "bad.csv"
    bad.write_text("row\n2\n1\n")
    code, _, err = _run(["evaluate", trips_path, out, "--kept-rows", bad], capsys)
    assert code == 1 and "increasing row positions" in err


def test_points_written_by_the_cli_keep_their_recipe_in_the_release_ledger(tmp_path, fixes_file, capsys):
    """As in Python (a release over gp.grid(...) records its provenance and recipe), a release over the
    file 'geoldp points' wrote records them too; an edited points file does not pass for the grid."""
    trips_path = _prepare(tmp_path, fixes_file, capsys)
    pts = tmp_path / "P.gpkg"
    code, stdout, err = _run(["points", "--grid", "1000", AREA, "-o", pts], capsys)
    assert code == 0, err
    assert str(pts) + ".points.json" in stdout.split()
    out = tmp_path / "r.gpkg"
    code, _, err = _run(
        ["perturb", trips_path, "--points", pts, "--epsilon", "4", "--seed", "1", "-o", out], capsys
    )
    assert code == 0, err
    record = geoldp.io.read_trajectories(out, ledger=True).attrs["geoldp"]["points"]
    python = gp.ledger_record(gp.grid(BOX, 1000))
    assert record["provenance"] == python["provenance"] and record["recipe"] == python["recipe"]
    assert record["recipe"]["area"] == list(BOX)
    moved = gpd.read_file(pts)
    moved.geometry = moved.geometry.translate(0.001, 0.0)
    moved.to_file(pts, driver="GPKG")  # edited after 'geoldp points': the record no longer applies
    code, _, err = _run(
        ["perturb", trips_path, "--points", pts, "--epsilon", "4", "--seed", "1", "-o", tmp_path / "s.gpkg"],
        capsys,
    )  # fmt: skip
    assert code == 0 and "geoldp: warning:" in err and "does not describe the points" in err
    assert (
        geoldp.io.read_trajectories(tmp_path / "s.gpkg", ledger=True).attrs["geoldp"]["points"].get("recipe")
        is None
    )
