"""The other designs on the command line: geoldp report, report-estimate and synthesize."""

from __future__ import annotations

import json

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from shapely.geometry import LineString, Point

import geoldp
from geoldp import io as gio
from geoldp.cli import main
from geoldp.cli import reports as cli_reports
from geoldp.designs import ANSWER_COLUMNS
from geoldp.reports import estimate_counts

pytestmark = pytest.mark.filterwarnings("ignore:.*told from no data:geoldp.GeoLDPWarning")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("reports")
    rng = np.random.default_rng(0)
    pts = gpd.GeoDataFrame(
        geometry=[Point(116.3 + 0.01 * i, 39.9 + 0.01 * j) for i in range(10) for j in range(10)],
        crs="EPSG:4326",
    )
    pts.to_file(d / "P.gpkg")
    xy = np.column_stack([pts.geometry.x, pts.geometry.y])
    lines = [LineString(xy[rng.choice(100, 3, replace=False)]) for _ in range(600)]
    users = [f"{i % 200:03d}" for i in range(600)]  # numeric-looking ids stay text
    trips = gpd.GeoDataFrame({"user": users}, geometry=lines, crs="EPSG:4326")
    trips.to_file(d / "trips.gpkg")
    return d, trips, pts


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_spelt_out_choices_match_the_library():
    assert cli_reports.STATISTICS == geoldp.reports.STATISTICS
    assert cli_reports.ORACLES == geoldp.reports.ORACLES


@pytest.mark.parametrize(("statistic", "oracle"), [("visited_zone", "krr"), ("od", "oue"), ("od", "olh")])
def test_report_file_round_trips_and_equals_the_library_release(files, tmp_path, capsys, statistic, oracle):
    d, trips, pts = files
    out = tmp_path / "rep.csv"
    code, stdout, err = _run(
        [
            "report",
            d / "trips.gpkg",
            "--points",
            d / "P.gpkg",
            "--cell-km",
            2,
            "--statistic",
            statistic,
            "--oracle",
            oracle,
            "--epsilon",
            4,
            "--seed",
            5,
            "-o",
            out,
        ],
        capsys,
    )
    assert code == 0, err
    assert stdout.split() == [str(out), str(out) + ".ledger.json"]
    back = gio.read_report_table(out)
    zones = geoldp.zone_grid(gpd.read_file(d / "P.gpkg"), cell_km=2)
    same = geoldp.report(
        geoldp.io.read_trajectories(d / "trips.gpkg"),
        zones,
        statistic=statistic,
        epsilon=4.0,
        oracle=oracle,
        rng=5,
    )
    assert len(back) == len(trips) and list(back.columns) == list(same.columns)
    for col in same.columns:
        assert list(back[col]) == list(same[col])
    led = json.loads((tmp_path / "rep.csv.ledger.json").read_text())
    assert (
        led["mechanism"] == "report"
        and led["oracle"] == oracle
        and "seed" not in led
        and led["rng"] == "seeded"
    )
    pd.testing.assert_frame_equal(estimate_counts(back, zones), estimate_counts(same, zones))


def test_report_writes_one_row_per_trip_and_nothing_else_of_trips(files, tmp_path, capsys):
    d, trips, _ = files
    out = tmp_path / "r.csv"
    _run(
        ["report", d / "trips.gpkg", "--points", d / "P.gpkg", "--epsilon", 2, "--seed", 1, "-o", out], capsys
    )
    text = out.read_text()
    assert "user" not in text and "116." not in text
    assert len(text.splitlines()) == len(trips) + 1


def test_report_estimate_writes_layers_with_intervals(files, tmp_path, capsys):
    d, trips, pts = files
    rep = tmp_path / "vz.csv"
    code, _, err = _run(
        [
            "report",
            d / "trips.gpkg",
            "--points",
            d / "P.gpkg",
            "--cell-km",
            2,
            "--pad-length",
            3,
            "--epsilon",
            4,
            "--seed",
            2,
            "-o",
            rep,
        ],
        capsys,
    )
    assert code == 0, err
    gpkg = tmp_path / "vz.gpkg"
    code, stdout, err = _run(
        ["report-estimate", rep, "--points", d / "P.gpkg", "--cell-km", 2, "-o", gpkg], capsys
    )
    assert code == 0, err
    import pyogrio

    names = [n for n, _ in pyogrio.list_layers(gpkg)]
    assert names == ["zone_visits", "hotspots"]
    layer = gpd.read_file(gpkg, layer="zone_visits")
    zones = geoldp.zone_grid(pts, cell_km=2)
    est = estimate_counts(gio.read_report_table(rep), zones)
    # the columns of every answer: the count inside its interval, the unbiased estimate as raw
    np.testing.assert_allclose(layer["estimate"], est["projected"])
    np.testing.assert_allclose(layer["raw"], est["estimate"])
    np.testing.assert_allclose(layer["upper"] - layer["lower"], layer["width"])
    assert set(ANSWER_COLUMNS) | {"support"} <= set(layer.columns)
    assert ((layer["lower"] <= layer["estimate"]) & (layer["estimate"] <= layer["upper"])).all()
    hot = gpd.read_file(gpkg, layer="hotspots")
    assert list(hot["rank"]) == list(range(1, 11)) and hot["estimate"].is_monotonic_decreasing
    # a public bound on the zones a trip visits narrows the padded counts' upper ends, as in Python
    bounded = tmp_path / "vz4.gpkg"
    bound = ["--points", d / "P.gpkg", "--cell-km", 2, "--max-set-size", 4]
    code, _, err = _run(["report-estimate", rep, *bound, "-o", bounded], capsys)
    assert code == 0, err
    narrow = gpd.read_file(bounded, layer="zone_visits")
    est4 = estimate_counts(gio.read_report_table(rep), zones, max_set_size=4)
    np.testing.assert_allclose(narrow["upper"], est4["upper"])
    np.testing.assert_allclose(narrow["lower"], layer["lower"])
    assert (narrow["upper"] <= layer["upper"]).all() and (narrow["upper"] < layer["upper"]).any()
    # OD reports give flow lines, one GeoJSON file per layer
    od = tmp_path / "od.csv"
    _run(
        [
            "report",
            d / "trips.gpkg",
            "--points",
            d / "P.gpkg",
            "--cell-km",
            2,
            "--statistic",
            "od",
            "--epsilon",
            4,
            "--seed",
            3,
            "-o",
            od,
        ],
        capsys,
    )
    code, stdout, err = _run(
        ["report-estimate", od, "--points", d / "P.gpkg", "--cell-km", 2, "-o", tmp_path / "od.geojson"],
        capsys,
    )
    assert code == 0, err
    flows = gpd.read_file(tmp_path / "od.od_flows.geojson")  # sparse: the supported pairs only
    assert flows["supported"].all() and (flows["lower"] > 0).all() and set(flows.geom_type) <= {"LineString"}
    assert f"{len(flows)} of {len(zones) ** 2} cells supported" in err
    code, _, err = _run(
        ["report-estimate", od, "--points", d / "P.gpkg", "--cell-km", 2, "--all-cells", "--simultaneous"]
        + ["-o", tmp_path / "all.geojson"],
        capsys,
    )
    assert code == 0 and "simultaneous" in err, err
    every = gpd.read_file(tmp_path / "all.od_flows.geojson")
    assert len(every) == len(zones) ** 2 and set(every.geom_type) == {"LineString"}
    # family-wise intervals are wider than the cell-by-cell ones, never narrower
    merged = every.merge(flows, on=["origin", "destination"], suffixes=("", "_cell"))
    assert (merged["upper"] >= merged["upper_cell"]).all() and (merged["lower"] <= merged["lower_cell"]).all()
    # the bound applies to visited-zone reports only: one line, no traceback
    code, _, err = _run(["report-estimate", od, *bound, "-o", tmp_path / "od4.geojson"], capsys)
    assert code != 0 and "max_set_size" in err and "Traceback" not in err


def test_per_user_options_and_the_accountant(files, tmp_path, capsys):
    d, trips, _ = files
    acc = tmp_path / "acc.gpkg"
    out = tmp_path / "od.csv"
    kept = tmp_path / "kept.csv"
    code, _, err = _run(
        [
            "report",
            d / "trips.gpkg",
            "--points",
            d / "P.gpkg",
            "--statistic",
            "od",
            "--epsilon",
            3,
            "--user-col",
            "user",
            "--max-per-user",
            1,
            "--kept-rows",
            kept,
            "--accountant",
            acc,
            "--total-epsilon",
            4,
            "--seed",
            1,
            "-o",
            out,
        ],
        capsys,
    )
    assert code == 0, err
    assert "charged the release to 200 user(s)" in err and "kept 200 of 600 rows" in err
    assert len(gio.read_report_table(out)) == 200
    assert pd.read_csv(kept)["row"].tolist() == list(range(200))  # the first trip of each user
    spent = geoldp.BudgetAccountant.open(acc)
    assert spent.spent_by("000") == 3.0 and spent.pending() == []  # confirmed once written
    led = json.loads((tmp_path / "od.csv.ledger.json").read_text())
    assert led["user_budget"]["max_per_user"] == 1
    # a second release would take every user past 4: refused, nothing written, nothing charged
    before = spent.spent
    code, _, err = _run(
        [
            "report",
            d / "trips.gpkg",
            "--points",
            d / "P.gpkg",
            "--epsilon",
            3,
            "--user-col",
            "user",
            "--max-per-user",
            1,
            "--accountant",
            acc,
            "-o",
            tmp_path / "again.csv",
        ],
        capsys,
    )
    assert code == 1 and err.count("\n") == 1 and "budget" in err.lower(), err
    assert not (tmp_path / "again.csv").exists() and geoldp.BudgetAccountant.open(acc).spent == before


@pytest.mark.parametrize("oracle", ["auto", "olh"])
def test_split_report_round_trips_charges_each_user_her_epsilon_and_estimates(
    files, tmp_path, capsys, oracle
):
    d, trips, pts = files
    # 120 users with 1 to 4 trips each (user u has u % 4 + 1), ids that look numeric
    users = [f"{u:03d}" for u in range(120) for _ in range(u % 4 + 1)]
    many = gpd.GeoDataFrame({"user": users}, geometry=list(trips.geometry[: len(users)]), crs="EPSG:4326")
    many.to_file(tmp_path / "many.gpkg")
    acc, out = tmp_path / "acc.gpkg", tmp_path / "split.csv"
    base = [
        "report",
        tmp_path / "many.gpkg",
        "--points",
        d / "P.gpkg",
        "--statistic",
        "od",
        "--oracle",
        oracle,
    ]
    argv = [*base, "--epsilon", 4, "--user-col", "user", "--user-budget", "split", "--seed", 5]
    code, _, err = _run([*argv, "--accountant", acc, "--total-epsilon", 4, "-o", out], capsys)
    assert code == 0, err
    assert "per user, shared by her trips" in err
    table = gio.read_report_table(out)
    assert "user" not in table.columns and table.columns[-1] == "epsilon"
    # the same table as the library release with the same seed (values and dtypes)
    zones = geoldp.zone_grid(gpd.read_file(d / "P.gpkg"), cell_km=1.5)
    same = geoldp.report(
        many,
        zones,
        statistic="od",
        epsilon=4.0,
        oracle=oracle,
        user_col="user",
        user_budget="split",
        rng=5,
    )
    assert list(table.columns) == list(same.columns)
    for col in same.columns:
        assert table[col].dtype == same[col].dtype
        assert list(table[col]) == list(same[col])
    pd.testing.assert_frame_equal(estimate_counts(table, zones), estimate_counts(same, zones))
    assert table["epsilon"].dtype == np.float64
    assert all(table[c].dtype == np.int64 for c in ("seed", "report") if c in table.columns)
    spent = geoldp.BudgetAccountant.open(acc)
    assert max(spent.spent_by(u) for u in spent.spent) <= 4.0
    assert spent.spent_by("003") == pytest.approx(4.0)  # 4 trips at 1.0 each
    led = json.loads((tmp_path / "split.csv.ledger.json").read_text())
    assert led["user_budget"]["strategy"] == "split" and len(led["ledger"]["by_part"]) == 4
    text = json.dumps(led)
    assert '"000"' not in text and "003" not in text  # no user id in the ledger
    code, _, err = _run(
        ["report-estimate", out, "--points", d / "P.gpkg", "-o", tmp_path / "split_est.gpkg"], capsys
    )
    assert code == 0, err
    est = estimate_counts(table)
    assert np.isfinite(est["estimate"]).all() and (est["upper"] >= est["lower"]).all()
    # a tampered epsilon cell is refused in one line
    lines = out.read_text().splitlines()
    lines[1] = lines[1].rsplit(",", 1)[0] + ",9.5"
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    (tmp_path / "bad.csv.ledger.json").write_text((tmp_path / "split.csv.ledger.json").read_text())
    code, _, err = _run(["report-estimate", bad, "--points", d / "P.gpkg", "-o", tmp_path / "b.gpkg"], capsys)
    assert code == 1 and err.count("\n") == 1, err
    # past the sidecar's digest (a rewritten sidecar), the budget of every row is still checked
    led_obj = gio.read_ledger(out)
    (tmp_path / "bad.csv.ledger.json").unlink()
    gio.write_bytes_with_ledger(bad.read_bytes(), led_obj, tmp_path / "bad2.csv")
    with pytest.raises(ValueError, match="row 0 .*'epsilon' is not one of the budgets"):
        gio.read_report_table(tmp_path / "bad2.csv")


def test_synthesize_still_refuses_a_split_budget(files, tmp_path, capsys):
    d, _, _ = files
    argv = ["synthesize", d / "trips.gpkg", "--points", d / "P.gpkg", "--epsilon", 4, "--user-col", "user"]
    code, _, err = _run([*argv, "--user-budget", "split", "-o", tmp_path / "s.gpkg"], capsys)
    assert code == 1 and "--user-budget split is not available for 'synthesize'" in err
    assert err.count("\n") == 1 and not (tmp_path / "s.gpkg").exists()


@pytest.mark.parametrize(
    ("argv", "code", "match"),
    [
        (["--epsilon", 4], 2, "give either --zones FILE or --points POINTS"),
        (["--points", "P.gpkg", "--zones", "P.gpkg", "--epsilon", 4], 2, "give either"),
        (
            ["--points", "P.gpkg", "--epsilon", 4, "--user-budget", "split"],
            2,
            "need --user-col",
        ),
        (
            ["--points", "P.gpkg", "--epsilon", 4, "--user-col", "nobody", "--user-budget", "split"],
            1,
            "--user-col names a column",
        ),
        (["--points", "P.gpkg", "--epsilon", 4, "--max-per-user", 1], 2, "need --user-col"),
        (["--points", "P.gpkg", "--epsilon", -1], 1, "epsilon"),
        (["--points", "P.gpkg", "--epsilon", 4, "--statistic", "od", "--pad-length", 2], 1, "pad_length"),
        (["--zones", "P.gpkg", "--epsilon", 4], 1, "not a polygon"),
        (["--points", "missing.gpkg", "--epsilon", 4], 1, "does not exist"),
    ],
)
def test_report_errors_are_one_line(files, tmp_path, capsys, monkeypatch, argv, code, match):
    d, _, _ = files
    monkeypatch.chdir(d)
    got, _, err = _run(["report", "trips.gpkg", *argv, "-o", tmp_path / "x.csv"], capsys)
    assert got == code and match in err and err.count("\n") == 1, err
    assert not (tmp_path / "x.csv").exists()


def test_outputs_are_never_overwritten_by_surprise(files, tmp_path, capsys):
    d, _, _ = files
    out = tmp_path / "r.csv"
    args = ["report", d / "trips.gpkg", "--points", d / "P.gpkg", "--epsilon", 2, "-o", out]
    assert _run(args, capsys)[0] == 0
    first = out.read_bytes()
    code, _, err = _run(args, capsys)
    assert code == 1 and "--overwrite" in err and out.read_bytes() == first
    assert _run([*args, "--overwrite"], capsys)[0] == 0
    code, _, err = _run(
        ["report", d / "trips.gpkg", "--points", d / "P.gpkg", "--epsilon", 2, "-o", tmp_path / "r.gpkg"],
        capsys,
    )
    assert code == 1 and ".csv" in err
    code, _, err = _run(
        ["report", d / "trips.gpkg", "--points", d / "P.gpkg", "--epsilon", 2, "-o", d / "trips.gpkg"], capsys
    )
    assert code == 1


def test_report_estimate_refuses_other_zones_and_tampered_tables(files, tmp_path, capsys):
    d, _, _ = files
    rep = tmp_path / "r.csv"
    _run(
        [
            "report",
            d / "trips.gpkg",
            "--points",
            d / "P.gpkg",
            "--cell-km",
            2,
            "--epsilon",
            2,
            "--seed",
            1,
            "-o",
            rep,
        ],
        capsys,
    )
    code, _, err = _run(
        ["report-estimate", rep, "--points", d / "P.gpkg", "--cell-km", 3, "-o", tmp_path / "e.gpkg"], capsys
    )
    assert code == 1 and "not the zones the reports were made over" in err
    lines = rep.read_text().splitlines()
    lines[1] = "0" if lines[1] != "0" else "1"  # one cell changed: the SHA-256 differs
    rep.write_text("\n".join(lines) + "\n")
    code, _, err = _run(
        ["report-estimate", rep, "--points", d / "P.gpkg", "--cell-km", 2, "-o", tmp_path / "e.gpkg"], capsys
    )
    assert code == 1 and "out of step" in err and err.count("\n") == 1
    plain = tmp_path / "plain.csv"
    plain.write_text("report\n1\n")
    code, _, err = _run(
        ["report-estimate", plain, "--points", d / "P.gpkg", "-o", tmp_path / "e.gpkg"], capsys
    )
    assert code == 1 and "no report ledger" in err


def test_read_report_table_checks_every_cell(files, tmp_path):
    d, trips, pts = files
    zones = geoldp.zone_grid(pts, cell_km=2)
    for oracle, col, bad in (("krr", "report", "999"), ("oue", "bits", "zz"), ("olh", "seed", "x")):
        rep = geoldp.report(trips, zones, epsilon=2.0, oracle=oracle, rng=1)
        path = tmp_path / f"{oracle}.csv"
        gio.write_file(rep, path)
        back = gio.read_report_table(path)
        pd.testing.assert_frame_equal(
            back.reset_index(drop=True), rep.reset_index(drop=True), check_dtype=False
        )
        table = pd.read_csv(path, dtype=str)
        table.loc[3, col] = bad
        path.write_text(table.to_csv(index=False))
        (tmp_path / f"{oracle}.csv.ledger.json").unlink()
        geoldp.io.write_ledger(rep, path)  # a fresh ledger: the cell check itself must refuse it
        with pytest.raises(ValueError, match="row 3"):
            gio.read_report_table(path)


def test_synthesize_command(files, tmp_path, capsys):
    d, trips, _ = files
    out = tmp_path / "syn.gpkg"
    code, stdout, err = _run(
        [
            "synthesize",
            d / "trips.gpkg",
            "--points",
            d / "P.gpkg",
            "--grid-size",
            4,
            "--epsilon",
            4,
            "--user-col",
            "user",
            "--max-per-user",
            2,
            "--seed",
            3,
            "-o",
            out,
        ],
        capsys,
    )
    assert code == 0, err
    syn = geoldp.io.read_trajectories(out, ledger=True)
    led = syn.attrs["geoldp"]
    assert len(syn) == 400 and led["mechanism"] == "ldptrace" and led["grid"]["n"] == 4
    assert led["user_budget"]["max_per_user"] == 2
    code, _, err = _run(["synthesize", d / "trips.gpkg", "--epsilon", 4, "-o", tmp_path / "s2.gpkg"], capsys)
    assert code == 2 and "--points POINTS" in err
    code, _, err = _run(
        [
            "synthesize",
            d / "trips.gpkg",
            "--area=116.3,39.9,116.4,40.0",
            "--grid-size",
            "auto",
            "--epsilon",
            4,
            "-o",
            tmp_path / "s3.gpkg",
        ],
        capsys,
    )
    assert code == 1 and "length_hint" in err


def test_report_estimate_checks_every_layer_file_before_writing(files, tmp_path, capsys):
    d, _, _ = files
    rep = tmp_path / "vz.csv"
    _run(
        ["report", d / "trips.gpkg", "--points", d / "P.gpkg", "--epsilon", 2, "--seed", 1, "-o", rep], capsys
    )
    (tmp_path / "e.hotspots.geojson").write_text("keep me")  # the second layer's file exists
    code, _, err = _run(
        ["report-estimate", rep, "--points", d / "P.gpkg", "-o", tmp_path / "e.geojson"], capsys
    )
    assert code == 1 and "--overwrite" in err
    assert not (tmp_path / "e.zone_visits.geojson").exists()  # nothing written, not even the first layer
    assert (tmp_path / "e.hotspots.geojson").read_text() == "keep me"


def test_an_incomplete_report_ledger_is_one_line(files, tmp_path, capsys):
    d, _, _ = files
    rep = tmp_path / "r.csv"
    _run(["report", d / "trips.gpkg", "--points", d / "P.gpkg", "--epsilon", 2, "-o", rep], capsys)
    side = tmp_path / "r.csv.ledger.json"
    led = json.loads(side.read_text())
    del led["domain"]
    side.write_text(json.dumps(led))
    code, _, err = _run(["report-estimate", rep, "--points", d / "P.gpkg", "-o", tmp_path / "e.gpkg"], capsys)
    assert code == 1 and "not a complete report ledger" in err and err.count("\n") == 1


def test_report_estimate_shrinks_toward_the_public_points(files, tmp_path, capsys):
    d, _, pts = files
    rep = tmp_path / "vz.csv"
    grid = ["--points", d / "P.gpkg", "--cell-km", 2]
    code, _, err = _run(["report", d / "trips.gpkg", *grid, "--epsilon", 2, "--seed", 7, "-o", rep], capsys)
    assert code == 0, err
    out = tmp_path / "vz.gpkg"
    shrink = ["--shrink", d / "P.gpkg", "--lengths", "3"]
    code, _, err = _run(["report-estimate", rep, *grid, *shrink, "-o", out], capsys)
    assert code == 0, err
    zones = geoldp.zone_grid(pts, cell_km=2)
    est = estimate_counts(gio.read_report_table(rep), zones)
    want = geoldp.shrinkage.shrunk_counts(est, pts, zones, lengths=[3])
    layer = gpd.read_file(out, layer="zone_visits")
    np.testing.assert_allclose(layer["shrunk"], want.to_numpy())
    hot = gpd.read_file(out, layer="hotspots")
    assert hot["shrunk"].is_monotonic_decreasing  # ranked by the shrunk counts
    # --lengths alone, a missing points file, a bad length: one line each, nothing written
    for extra, words in (
        (["--lengths", "3"], "--lengths goes with --shrink"),
        (["--shrink", tmp_path / "none.gpkg"], "none.gpkg"),
        (["--shrink", d / "P.gpkg", "--lengths", "0,2"], "integers >= 1"),
    ):
        target = tmp_path / "x.gpkg"
        code, _, err = _run(["report-estimate", rep, *grid, *extra, "-o", target], capsys)
        assert code != 0 and words in err and not target.exists()
