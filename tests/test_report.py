"""The report release: rows, index and order, ledger, accountant, randomness, bad input."""

from __future__ import annotations

import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from shapely.geometry import LineString, Point

import geoldp
from geoldp import GeoLDPWarning, zone_grid
from geoldp.reports import release, report, true_counts

# Small report tables are below the no-data noise level on purpose; that warning has its own tests.
pytestmark = pytest.mark.filterwarnings("ignore:.*told from no data:geoldp.GeoLDPWarning")

ZONES = zone_grid((0.0, 0.0, 2.0, 2.0), cells=2)  # zones 0..3; centres below
C = [(0.5, 0.5), (1.5, 0.5), (0.5, 1.5), (1.5, 1.5)]
OUT = (5.0, 5.0)


def trips(n=50, seed=0):
    rng = np.random.default_rng(seed)
    lines = [LineString([C[i] for i in rng.integers(0, 4, size=rng.integers(2, 5))]) for _ in range(n)]
    return gpd.GeoDataFrame(
        {"user": rng.integers(0, 5, size=n), "secret": np.arange(n)},
        geometry=lines,
        crs="EPSG:4326",
        index=pd.Index(np.r_[np.arange(n - 1), 0], name="trip"),  # a duplicate label
    )


@pytest.mark.parametrize("statistic", ["visited_zone", "od", "transitions"])
@pytest.mark.parametrize("oracle", ["krr", "oue", "olh", "auto"])
def test_rows_index_order_and_ledger(statistic, oracle):
    gdf = trips()
    before = gdf.copy(deep=True)
    rep = report(gdf, ZONES, statistic=statistic, epsilon=2.0, oracle=oracle, rng=1)
    assert rep.index.equals(gdf.index)
    assert "secret" not in rep.columns and "user" not in rep.columns
    pd.testing.assert_frame_equal(gdf, before)  # input untouched
    led = rep.attrs["geoldp"]
    assert led["epsilon"] == 2.0 and led["ledger"]["max_total_epsilon"] == 2.0
    assert led["statistic"] == statistic and led["rng"] == "seeded"
    assert led["domain"]["zones"] == 4 and led["domain"]["size"] >= 5
    assert "seed" not in {k.lower() for k in led}  # never the seed
    if oracle != "auto":
        assert led["oracle"] == oracle


def test_seeded_is_reproducible_and_chunk_invariant():
    gdf = trips(80)
    a = report(gdf, ZONES, statistic="od", epsilon=1.0, oracle="krr", rng=5)
    b = report(gdf, ZONES, statistic="od", epsilon=1.0, oracle="krr", rng=5)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs["geoldp"]["release_id"] == b.attrs["geoldp"]["release_id"]
    head = report(gdf.iloc[:30], ZONES, statistic="od", epsilon=1.0, oracle="krr", rng=5)
    np.testing.assert_array_equal(head["report"].to_numpy(), a["report"].to_numpy()[:30])
    gen = np.random.default_rng(5)
    c = report(gdf, ZONES, statistic="od", epsilon=1.0, oracle="krr", rng=gen)
    d = report(gdf, ZONES, statistic="od", epsilon=1.0, oracle="krr", rng=gen)
    assert not np.array_equal(c["report"].to_numpy(), d["report"].to_numpy())


def test_unseeded_uses_the_os_csprng():
    gdf = trips(200)
    a = report(gdf, ZONES, statistic="od", epsilon=1.0, oracle="krr")
    b = report(gdf, ZONES, statistic="od", epsilon=1.0, oracle="krr")
    assert a.attrs["geoldp"]["rng"] == "os-csprng"
    assert not np.array_equal(a["report"].to_numpy(), b["report"].to_numpy())
    assert a.attrs["geoldp"]["release_id"] != b.attrs["geoldp"]["release_id"]


def test_accountant_charges_each_row_to_its_user():
    gdf = trips(20)
    acc = geoldp.BudgetAccountant(100.0)
    report(gdf, ZONES, epsilon=1.5, rng=0, accountant=acc, user_col="user")
    u = int(gdf["user"].iloc[0])
    assert acc.spent_by(u) == pytest.approx(1.5 * int((gdf["user"] == u).sum()))
    with pytest.raises(geoldp.BudgetError):
        report(gdf, ZONES, epsilon=36.0, rng=0, accountant=acc, user_col="user")
    assert acc.spent_by(u) == pytest.approx(1.5 * int((gdf["user"] == u).sum()))  # nothing charged


def test_accessor_is_the_same_release():
    gdf = trips(30)
    a = gdf.ldp.report(ZONES, statistic="transitions", epsilon=2.0, oracle="olh", pad_length=2, rng=3)
    b = report(gdf, ZONES, statistic="transitions", epsilon=2.0, oracle="olh", pad_length=2, rng=3)
    pd.testing.assert_frame_equal(a, b)
    assert callable(geoldp.report)


def test_statistics_and_the_outside_category():
    k = 5  # 4 zones + outside (value 4)
    gdf = gpd.GeoDataFrame(
        geometry=[
            LineString([C[0], C[1], C[1], OUT]),
            LineString([OUT, OUT]),
            LineString([C[3], C[2], C[3]]),
        ],
        crs="EPSG:4326",
    )
    vis = true_counts(gdf, ZONES, statistic="visited_zone", include_outside=True)
    assert vis.tolist() == [1, 1, 1, 1, 2]
    od = true_counts(gdf, ZONES, statistic="od", include_outside=True)
    assert od[(0, "outside")] == 1 and od[("outside", "outside")] == 1 and od[(3, 3)] == 1
    assert od.sum() == 3
    tr = true_counts(gdf, ZONES, statistic="transitions", include_outside=True)
    assert tr[(0, 1)] == 1 and tr[(1, "outside")] == 1 and tr[(3, 2)] == 1 and tr[(2, 3)] == 1
    assert tr.sum() == 4  # (1, 1) repeats are not transitions; the stationary outside trip has none
    offs, items = release.statistic_items("od", np.array([0, 1, 1, 4]), np.array([0, 4]), 4)
    assert items.tolist() == [0 * k + 4]


def test_point_rows_and_invalid_rows():
    gdf = gpd.GeoDataFrame(geometry=[Point(C[0]), None, Point(C[2])], crs="EPSG:4326")
    with pytest.raises(ValueError, match="Row position 1"):
        report(gdf, ZONES, epsilon=1.0, rng=0)
    rep = report(gdf, ZONES, epsilon=1.0, rng=0, oracle="krr", on_invalid="null")
    assert rep["report"].isna().tolist() == [False, True, False]


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"zones": "nope"}, TypeError, "zones"),
        ({"zones": ZONES.set_crs(None, allow_override=True)}, ValueError, "CRS"),
        ({"zones": ZONES.iloc[:0]}, ValueError, "no rows"),
        ({"statistic": "speed"}, ValueError, "statistic"),
        ({"oracle": "laplace"}, ValueError, "oracle"),
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"epsilon": "1"}, TypeError, "epsilon"),
        ({"pad_length": 0}, ValueError, "pad_length"),
        ({"pad_length": 2, "statistic": "od"}, ValueError, "pad_length"),
        ({"rng": 1.5}, TypeError, "rng"),
        ({"user_col": "user"}, TypeError, "accountant"),
    ],
)
def test_bad_input_is_refused_before_any_draw(kwargs, exc, match):
    args = {"zones": ZONES, "epsilon": 1.0, **kwargs}
    with pytest.raises(exc, match=match):
        report(trips(5), args.pop("zones"), **args)


def test_zone_points_not_a_frame():
    with pytest.raises(TypeError, match="GeoDataFrame"):
        report(pd.DataFrame({"a": [1]}), ZONES, epsilon=1.0)


def test_hybrid_splits_one_budget_between_both_releases():
    from fractions import Fraction

    from geoldp.hybrids import hybrid, split_epsilon

    gdf = trips(30)
    pts = gpd.GeoDataFrame(geometry=[Point(c) for c in C], crs="EPSG:4326")
    acc = geoldp.BudgetAccountant(100.0)
    traj, rep = hybrid(gdf, pts, ZONES, epsilon=3.0, fraction=0.25, rng=4, accountant=acc, user_col="user")
    assert traj.index.equals(gdf.index) and rep.index.equals(gdf.index)
    lt, lr = traj.attrs["geoldp"], rep.attrs["geoldp"]
    assert lt["epsilon"] == 0.75 and lr["epsilon"] == 2.25
    assert lt["hybrid"] == lr["hybrid"] and lt["hybrid"]["total_epsilon"] == 3.0
    assert lt["hybrid"]["release_ids"] == [lt["release_id"], lr["release_id"]]
    u = int(gdf["user"].iloc[0])
    assert acc.spent_by(u) == pytest.approx(3.0 * int((gdf["user"] == u).sum()))
    again = hybrid(gdf, pts, ZONES, epsilon=3.0, fraction=0.25, rng=4)
    pd.testing.assert_frame_equal(again[1], rep)
    # a total past the accountant is refused before either part is drawn or charged
    spent = acc.spent_by(u)
    with pytest.raises(geoldp.BudgetError):
        hybrid(gdf, pts, ZONES, epsilon=36.0, rng=4, accountant=acc, user_col="user")
    assert acc.spent_by(u) == spent
    for eps in (0.1, 1 / 3, 7.3, 1e-6):
        for f in (0.1, 0.3, 0.7, 1 / 3):
            a, b = split_epsilon(eps, f)
            assert Fraction(a) + Fraction(b) <= Fraction(eps) and a > 0 and b > 0
    with pytest.raises(ValueError, match="fraction"):
        hybrid(gdf, pts, ZONES, epsilon=1.0, fraction=1.0)


def test_hybrid_is_public_and_the_accessor_is_the_same_release():
    from geoldp import hybrids

    assert geoldp.hybrid is hybrids.hybrid and "hybrid" in geoldp.__all__
    gdf = trips(20)
    pts = gpd.GeoDataFrame(geometry=[Point(c) for c in C], crs="EPSG:4326")
    a_traj, a_rep = geoldp.hybrid(gdf, pts, ZONES, epsilon=2.0, mechanism="tp", rng=9)
    b_traj, b_rep = gdf.ldp.hybrid(pts, ZONES, epsilon=2.0, mechanism="tp", rng=9)
    pd.testing.assert_frame_equal(a_rep, b_rep)
    assert a_traj.geometry.equals(b_traj.geometry)
    assert a_traj.attrs["geoldp"]["hybrid"] == b_traj.attrs["geoldp"]["hybrid"]


# ------------------------------------------------------------ the no-data-level warning, before drawing


def _report_trips(n, seed=0):
    from shapely.geometry import LineString

    g = np.random.default_rng(seed)
    rows = [LineString(g.uniform(0.05, 1.95, (3, 2))) for _ in range(n)]
    return gpd.GeoDataFrame(geometry=rows, crs="EPSG:4326")


def _krr_reports_needed(d, base, eps):
    # k-RR (Wang et al. 2017): p* = e^ε/(e^ε+d−1), q* = 1/(e^ε+d−1); the debiased count of a value has the
    # data-independent variance n·q*(1−q*)/(p*−q*)², so its share's standard error is below 1/base once
    # n > base²·q*(1−q*)/(p*−q*)².
    import math

    e = math.exp(eps)
    p, q = e / (e + d - 1), 1.0 / (e + d - 1)
    return math.floor(base**2 * q * (1 - q) / (p - q) ** 2) + 1


def test_report_warns_at_the_no_data_level_with_the_numbers_and_the_planner():
    from geoldp import zone_grid
    from geoldp.reports import report

    zones = zone_grid((0.0, 0.0, 2.0, 2.0), cells=2)  # 4 zones + outside = 5 values
    need = _krr_reports_needed(5, 5, 1.0)
    assert need == 49  # hand check: q* = 1/(e+4), p* − q* = (e−1)/(e+4); 25·q*(1−q*)/(p*−q*)² = 48.4
    with pytest.warns(GeoLDPWarning, match="told from no data") as rec:
        report(_report_trips(need - 1), zones, epsilon=1.0, oracle="krr", rng=0)
    msg = str(rec[0].message)
    assert f"About {need} reports" in msg and "geoldp.plan(" in msg and "geoldp plan" in msg
    assert callable(geoldp.plan)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report(_report_trips(need), zones, epsilon=1.0, oracle="krr", rng=0)
        report(_report_trips(need - 1), zones, epsilon=4.0, oracle="krr", rng=0)  # more budget: fine


def test_report_warning_is_raised_before_any_draw_and_reads_only_public_inputs(monkeypatch):
    from geoldp import zone_grid
    from geoldp.reports import release, report

    zones = zone_grid((0.0, 0.0, 2.0, 2.0), cells=4)
    texts = []
    for seed in (1, 2):  # two different private data sets of the same size: the same warning
        with pytest.warns(GeoLDPWarning, match="told from no data") as rec:
            report(_report_trips(30, seed=seed), zones, statistic="od", epsilon=2.0, rng=0)
        texts.append(str(rec[0].message))
    assert texts[0] == texts[1]

    def no_draw(*args, **kwargs):
        raise AssertionError("drew before warning")

    monkeypatch.setattr(release, "_draw", no_draw)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GeoLDPWarning)
        with pytest.raises(GeoLDPWarning, match="told from no data"):
            report(_report_trips(30), zones, statistic="od", epsilon=2.0, rng=0)
