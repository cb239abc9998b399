"""Small user-facing fixes: advice in warnings names calls that exist, GeoSeries/Dask accessors."""

from __future__ import annotations

import re
import warnings

import geopandas as gpd
import numpy as np
import pytest
import shapely

import geoldp
from geoldp import GeoLDPWarning


def _dup_points():
    lon = [116.30, 116.31, 116.32, 116.30, 116.33]  # the 4th repeats the 1st
    lat = [39.90, 39.91, 39.90, 39.90, 39.92]
    return gpd.GeoDataFrame(geometry=gpd.points_from_xy(lon, lat), crs="EPSG:4326")


def _trips():
    rows = [
        shapely.linestrings([[116.301, 39.901], [116.311, 39.909], [116.321, 39.902]]),
        shapely.linestrings([[116.329, 39.918], [116.305, 39.903]]),
    ]
    return gpd.GeoDataFrame({"v": [1, 2]}, geometry=rows, crs="EPSG:4326")


def test_duplicate_points_warning_names_a_call_that_exists_and_silences_it():
    pts = _dup_points()
    # reached through a call that takes no deduplication argument
    with pytest.warns(GeoLDPWarning, match="duplicate") as rec:
        _trips().ldp.perturb(pts, epsilon=4.0, mechanism="pointem", rng=1)
    text = " ".join(str(w.message) for w in rec if "duplicate" in str(w.message))
    assert "pass deduplicate=True" not in text
    call = re.search(r"geoldp\.PointSet\.from_geodataframe\(points, deduplicate=True\)", text)
    assert call, text
    # the named call works, keeps one point per location, and the release then runs without the warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ps = geoldp.PointSet.from_geodataframe(pts, deduplicate=True)
        assert len(ps) == 4
        out = _trips().ldp.perturb(ps, epsilon=4.0, mechanism="pointem", rng=1)
    assert len(out) == 2
    # the other spelling named in the message works too
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(geoldp.PointSet(pts.geometry.x, pts.geometry.y, deduplicate=True)) == 4


# ------------------------------------------------------------------------------------ GeoSeries.ldp


def _series():
    rows = [
        shapely.linestrings([[116.301, 39.901], [116.311, 39.909], [116.321, 39.902]]),
        shapely.linestrings([[116.329, 39.918], [116.305, 39.903]]),
        shapely.linestrings([[116.312, 39.911], [116.318, 39.913], [116.325, 39.91], [116.302, 39.9]]),
    ]
    return gpd.GeoSeries(rows, index=["b", "a", "b"], crs="EPSG:4326", name="route")


def _points():
    lon = [116.30, 116.31, 116.32, 116.33, 116.305]
    lat = [39.90, 39.91, 39.90, 39.92, 39.915]
    return geoldp.PointSet(lon, lat)


@pytest.mark.parametrize("mechanism", ["tp", "atp", "pointem"])
def test_geoseries_accessor_equals_the_frame_path(mechanism):
    s, pts = _series(), _points()
    before = s.copy()
    out = s.ldp.perturb(pts, mechanism=mechanism, epsilon=6.0, rng=7)
    frame = gpd.GeoDataFrame(geometry=s.rename("geometry"), crs=s.crs)
    ref = frame.ldp.perturb(pts, mechanism=mechanism, epsilon=6.0, rng=7)
    assert isinstance(out, gpd.GeoSeries)
    assert out.index.equals(s.index) and out.name == "route" and out.crs == s.crs
    assert shapely.equals_exact(np.asarray(out.values), np.asarray(ref.geometry.values), tolerance=0).all()
    assert list(shapely.get_num_coordinates(out.values)) == [3, 2, 4]
    ledger = out.attrs["geoldp"]
    assert ledger["mechanism"] == mechanism and ledger["epsilon"] == 6.0
    assert shapely.equals_exact(np.asarray(before.values), np.asarray(s.values), tolerance=0).all()


def test_geoseries_accessor_refuses_frame_only_arguments_and_plain_series():
    import pandas as pd

    with pytest.raises(TypeError, match=r"'keep_columns'.*GeoDataFrame"):
        _series().ldp.perturb(_points(), epsilon=4.0, keep_columns=["x"])
    with pytest.raises(TypeError, match="'user_col'"):
        _series().ldp.perturb(_points(), epsilon=4.0, user_col="u")
    assert not hasattr(pd.Series([1.0, 2.0]), "ldp")
    with pytest.raises(AttributeError, match="GeoSeries"):
        pd.Series([1.0]).ldp  # noqa: B018


def test_geoseries_snap_equals_frame_snap():
    s, pts = _series(), _points()
    frame = gpd.GeoDataFrame(geometry=s.rename("geometry"), crs=s.crs)
    got = s.ldp.snap(pts)
    ref = frame.ldp.snap(pts)
    assert [a.tolist() for a in got] == [b.tolist() for b in ref]


def test_series_accessor_registered_lazily_without_warnings():
    import subprocess
    import sys

    code = (
        "import warnings; warnings.simplefilter('error'); import geoldp, pandas as pd, geopandas as gpd; "
        "import shapely; s = gpd.GeoSeries([shapely.Point(0, 0)], crs='EPSG:4326'); "
        "print(type(s.ldp).__name__, type(gpd.GeoDataFrame(geometry=s).ldp).__name__)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["GeoSeriesLDPAccessor", "LDPAccessor"]


# ------------------------------------------------------------------------------------------ ddf.ldp


@pytest.mark.parametrize("order", ["geoldp.dask first", "dask first"])
def test_dask_accessor_registered_in_either_import_order(order):
    pytest.importorskip("dask_geopandas")
    import subprocess
    import sys

    first, second = ("geoldp.dask", "dask_geopandas")
    if order == "dask first":
        first, second = second, first
    code = (
        f"import warnings; warnings.simplefilter('error'); import {first}; import {second}; "
        "import dask.dataframe as dd; print(dd.DataFrame.ldp.__name__)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "DaskLDPAccessor"


def test_dask_accessor_equals_geoldp_dask_perturb():
    dask_geopandas = pytest.importorskip("dask_geopandas")
    import geoldp.dask

    lines = _series().iloc[:2]
    gdf = gpd.GeoDataFrame({"k": [1, 2]}, geometry=lines.values, index=lines.index, crs=lines.crs)
    ddf = dask_geopandas.from_geopandas(gdf, npartitions=2)
    pts = _points()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", geoldp.PrivacyWarning)  # short trips: per-point budget warning
        got = ddf.ldp.perturb(pts, mechanism="atp", epsilon=6.0, rng=3).compute()
        ref = geoldp.dask.perturb(ddf, pts, mechanism="atp", epsilon=6.0, rng=3).compute()
    assert got.index.equals(ref.index)
    assert got.geometry.geom_equals_exact(ref.geometry, tolerance=0).all()
    assert got.attrs["geoldp"]["mechanism"] == "atp"
    with pytest.raises(AttributeError, match="dask_geopandas.GeoDataFrame"):
        dask_geopandas.from_geopandas(gdf, npartitions=1).to_dask_dataframe().ldp  # noqa: B018


# ------------------------------------------------------- report: no-data-level warning before drawing


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


# ------------------------------------------------------------------------------- geoldp.dask.report


@pytest.mark.parametrize("oracle", ["krr", "oue", "olh"])
@pytest.mark.parametrize("npartitions", [1, 3])
def test_dask_report_equals_the_in_memory_report(oracle, npartitions):
    dask_geopandas = pytest.importorskip("dask_geopandas")
    import geoldp.dask
    from geoldp import zone_grid
    from geoldp.reports import estimate_counts, report

    zones = zone_grid((0.0, 0.0, 2.0, 2.0), cells=2)
    gdf = _report_trips(120, seed=5)
    gdf.index = gdf.index * 10 + 7  # a non-default index is kept
    ddf = dask_geopandas.from_geopandas(gdf, npartitions=npartitions)
    got = geoldp.dask.report(ddf, zones, statistic="visited_zone", epsilon=3.0, oracle=oracle, rng=11)
    got = got.compute()
    ref = report(gdf, zones, statistic="visited_zone", epsilon=3.0, oracle=oracle, rng=11)
    assert got.index.equals(ref.index) and list(got.columns) == list(ref.columns)
    for col in ref.columns:
        assert got[col].tolist() == ref[col].tolist()
    led = got.attrs["geoldp"]
    assert led["oracle"] == oracle and led["epsilon"] == 3.0
    assert led["partitioned"] == {"backend": "dask", "npartitions": npartitions}
    # the collector's estimator reads the computed table as it reads an in-memory one
    a, b = estimate_counts(got, zones), estimate_counts(ref, zones)
    assert np.array_equal(a["estimate"].to_numpy(), b["estimate"].to_numpy())


def test_dask_report_checks_before_drawing_and_warns_like_in_memory():
    dask_geopandas = pytest.importorskip("dask_geopandas")
    import geoldp.dask
    from geoldp import zone_grid

    zones = zone_grid((0.0, 0.0, 2.0, 2.0), cells=2)
    ddf = dask_geopandas.from_geopandas(_report_trips(10), npartitions=2)
    with pytest.raises(TypeError, match="dask_geopandas.GeoDataFrame"):
        geoldp.dask.report(_report_trips(10), zones, epsilon=1.0)
    with pytest.raises(ValueError, match="statistic"):
        geoldp.dask.report(ddf, zones, statistic="nope", epsilon=1.0)
    with pytest.warns(GeoLDPWarning, match="told from no data"):
        geoldp.dask.report(ddf, zones, epsilon=1.0, oracle="krr", rng=0)


def test_dask_accessor_report_is_geoldp_dask_report():
    dask_geopandas = pytest.importorskip("dask_geopandas")
    import geoldp.dask
    from geoldp import zone_grid

    zones = zone_grid((0.0, 0.0, 2.0, 2.0), cells=2)
    ddf = dask_geopandas.from_geopandas(_report_trips(80), npartitions=2)
    a = ddf.ldp.report(zones, statistic="od", epsilon=4.0, rng=2).compute()
    b = geoldp.dask.report(ddf, zones, statistic="od", epsilon=4.0, rng=2).compute()
    assert a.index.equals(b.index)
    assert all(a[c].tolist() == b[c].tolist() for c in b.columns)


def test_dask_report_charges_each_user_and_refuses_before_drawing():
    dask_geopandas = pytest.importorskip("dask_geopandas")
    import geoldp.dask
    from geoldp import zone_grid

    zones = zone_grid((0.0, 0.0, 2.0, 2.0), cells=2)
    trips = _report_trips(60).assign(user=np.arange(60) % 4)  # 15 rows per user
    ddf = dask_geopandas.from_geopandas(trips, npartitions=3)
    acc = geoldp.BudgetAccountant(40.0)
    out = geoldp.dask.report(ddf, zones, epsilon=2.0, accountant=acc, user_col="user", rng=1)
    assert acc.spent == {0: 30.0, 1: 30.0, 2: 30.0, 3: 30.0}
    assert "user" not in out.columns
    gen = np.random.default_rng(5)
    state = gen.bit_generator.state
    with pytest.raises(geoldp.BudgetError):  # 30 + 15 * 1 > 40
        geoldp.dask.report(ddf, zones, epsilon=1.0, accountant=acc, user_col="user", rng=gen)
    assert gen.bit_generator.state == state and acc.spent_by(0) == 30.0
