"""Tests of geoldp.dask: chunk-invariant seeded perturbation of dask_geopandas frames."""

from __future__ import annotations

import builtins
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from routes_support import route_points, route_series

import geoldp
from geoldp import GeoLDPWarning
from geoldp.datasets import synthetic_city

dask_geopandas = pytest.importorskip("dask_geopandas")
import geoldp.dask  # noqa: E402

MECHANISMS = ["tp", "atp", "pointem"]

# The synthetic trips (up to 7 points) at ε ≤ 4 get a per-point budget below the near-uniform threshold;
# that PrivacyWarning is tested by the accessor's and prepare's own tests, not here.
pytestmark = pytest.mark.filterwarnings("ignore:.*close to uniform noise:geoldp.PrivacyWarning")


@pytest.fixture(scope="module")
def city():
    points, trips = synthetic_city(n_points=80, n_trips=37, max_len=7, seed=11)
    trips["mode"] = np.where(np.arange(len(trips)) % 2 == 0, "walk", "bike")
    return points, trips


def _same_geometry(a, b):
    assert len(a) == len(b)
    assert a.index.equals(b.index)
    return bool(a.geometry.geom_equals_exact(b.geometry, tolerance=0).all())


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("npartitions", [1, 4])
def test_dask_equals_in_memory_accessor(city, mechanism, npartitions):
    points, trips = city
    ddf = dask_geopandas.from_geopandas(trips, npartitions=npartitions)
    out = geoldp.dask.perturb(ddf, points, mechanism=mechanism, epsilon=3.0, rng=2024).compute()
    expected = trips.ldp.perturb(points, mechanism=mechanism, epsilon=3.0, rng=2024)
    assert _same_geometry(out, expected)
    assert out.crs == trips.crs
    assert list(out.columns) == list(expected.columns)


def test_partitioning_does_not_change_the_output(city):
    points, trips = city
    outs = [
        geoldp.dask.perturb(
            dask_geopandas.from_geopandas(trips, npartitions=k), points, mechanism="atp", epsilon=2.0, rng=5
        ).compute()
        for k in (1, 2, 5)
    ]
    # uneven, explicit chunk sizes too
    ddf = dask_geopandas.from_geopandas(trips, chunksize=9)
    outs.append(geoldp.dask.perturb(ddf, points, mechanism="atp", epsilon=2.0, rng=5).compute())
    for other in outs[1:]:
        assert _same_geometry(outs[0], other)


def test_outputs_are_public_points_and_lengths_kept(city):
    points, trips = city
    ddf = dask_geopandas.from_geopandas(trips, npartitions=3)
    out = geoldp.dask.perturb(ddf, points, mechanism="tp", epsilon=1.0, rng=0).compute()
    np.testing.assert_array_equal(
        shapely.get_num_coordinates(out.geometry.values), shapely.get_num_coordinates(trips.geometry.values)
    )
    public = {tuple(c) for c in shapely.get_coordinates(points.geometry.values)}
    assert {tuple(c) for c in shapely.get_coordinates(out.geometry.values)} <= public


def test_provenance_attrs_without_seed(city):
    points, trips = city
    ddf = dask_geopandas.from_geopandas(trips, npartitions=2)
    seed = 918273645
    out = geoldp.dask.perturb(ddf, points, mechanism="atp", epsilon=4.0, rng=seed).compute()
    prov = out.attrs["geoldp"]
    assert prov["mechanism"] == "atp"
    assert prov["epsilon"] == 4.0
    assert prov["rng"] == "seeded"
    assert str(seed) not in repr(prov)
    expected = trips.ldp.perturb(points, mechanism="atp", epsilon=4.0, rng=seed).attrs["geoldp"]
    assert prov["ledger"] == expected["ledger"]


def test_default_rng_is_os_csprng_and_not_repeated(city):
    points, trips = city
    ddf = dask_geopandas.from_geopandas(trips, npartitions=2)
    a = geoldp.dask.perturb(ddf, points, mechanism="tp", epsilon=1.0)
    b = geoldp.dask.perturb(ddf, points, mechanism="tp", epsilon=1.0)
    a1, a2, b1 = a.compute(), a.compute(), b.compute()
    assert a1.attrs["geoldp"]["rng"] == "os-csprng"
    assert _same_geometry(a1, a2)  # the key is fixed in the graph: one release, computed twice
    assert not _same_geometry(a1, b1)


def test_generator_advances_between_calls(city):
    points, trips = city
    ddf = dask_geopandas.from_geopandas(trips, npartitions=2)
    gen = np.random.default_rng(3)
    a = geoldp.dask.perturb(ddf, points, mechanism="tp", epsilon=1.0, rng=gen).compute()
    b = geoldp.dask.perturb(ddf, points, mechanism="tp", epsilon=1.0, rng=gen).compute()
    assert not _same_geometry(a, b)


def test_keep_columns_warns_and_keeps(city):
    points, trips = city
    ddf = dask_geopandas.from_geopandas(trips, npartitions=2)
    with pytest.warns(geoldp.PrivacyWarning, match="mode"):
        lazy = geoldp.dask.perturb(ddf, points, mechanism="tp", epsilon=1.0, keep_columns=["mode"], rng=1)
    out = lazy.compute()
    assert list(out["mode"]) == list(trips["mode"])
    assert "trip_id" not in out.columns


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"epsilon": 1.0, "keep_columns": ["nope"]}, ValueError, "nope"),
        ({"epsilon": 1.0, "mechanism": "xyz"}, ValueError, "mechanism"),
        ({"epsilon": 1.0, "traj_id_col": "trip_id"}, ValueError, "trajectories_from_points"),
        ({"epsilon": 1.0, "rng": "seed"}, TypeError, "rng"),
    ],
)
def test_invalid_arguments_raise_before_compute(city, kwargs, exc, match):
    points, trips = city
    ddf = dask_geopandas.from_geopandas(trips, npartitions=2)
    kwargs = {"mechanism": "atp", **kwargs}
    with pytest.raises(exc, match=match):
        geoldp.dask.perturb(ddf, points, **kwargs)


def test_not_a_dask_frame(city):
    points, trips = city
    with pytest.raises(TypeError, match=r"dask_geopandas\.GeoDataFrame"):
        geoldp.dask.perturb(trips, points, mechanism="atp", epsilon=1.0)


def test_missing_crs(city):
    points, trips = city
    ddf = dask_geopandas.from_geopandas(trips.set_crs(None, allow_override=True), npartitions=2)
    with pytest.raises(ValueError, match="set_crs"):
        geoldp.dask.perturb(ddf, points, mechanism="atp", epsilon=1.0)


def test_invalid_row_names_partition(city):
    points, trips = city
    bad = trips.copy()
    bad.loc[bad.index[-1], "geometry"] = None
    ddf = dask_geopandas.from_geopandas(bad, npartitions=3)
    lazy = geoldp.dask.perturb(ddf, points, mechanism="tp", epsilon=1.0, rng=0)
    with pytest.raises(ValueError, match="In partition 2"):
        lazy.compute()


def test_missing_dask_gives_clear_import_error(monkeypatch, city):
    points, _ = city
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("dask"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ImportError, match=r"geoldp\[dask\]"):
        geoldp.dask.perturb(object(), points, mechanism="atp", epsilon=1.0)


def test_importing_geoldp_dask_does_not_import_dask():
    import subprocess
    import sys

    code = (
        "import sys, geoldp, geoldp.dask; "
        "print(any(m == 'dask' or m.startswith('dask.') for m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_subset_of_partitions_gives_the_same_rows(city):
    # Computing part of the result (one partition, head) must not renumber the trajectories: each row keeps
    # the stream of its global position, so it equals the same row of the full result.
    points, trips = city
    ddf = dask_geopandas.from_geopandas(trips, npartitions=4)
    lazy = geoldp.dask.perturb(ddf, points, mechanism="atp", epsilon=2.0, rng=8)
    full = lazy.compute()
    for k in (1, 3):
        part = lazy.partitions[k].compute()
        assert len(part) > 0
        assert _same_geometry(part, full.loc[part.index])
    head = lazy.head(3)
    assert _same_geometry(head, full.iloc[:3])
    assert lazy.npartitions == ddf.npartitions
    assert lazy.divisions == ddf.divisions
    assert lazy.crs == trips.crs


def test_task_graph_holds_the_key_not_the_random_source(city):
    # the plan bound into every partition task carries the stream key drawn once, never the source
    from geoldp._core.randomness import RandomSource

    points, trips = city
    ddf = dask_geopandas.from_geopandas(trips, npartitions=3)
    out = geoldp.dask.perturb(ddf, points, mechanism="tp", epsilon=2.0, rng=5)

    def walk(obj, seen):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        assert not isinstance(obj, RandomSource)
        if isinstance(obj, dict):
            values = list(obj.values())
        elif isinstance(obj, list | tuple | set):
            values = list(obj)
        elif hasattr(obj, "__dataclass_fields__"):
            values = [getattr(obj, f) for f in obj.__dataclass_fields__]
        else:
            values = [getattr(obj, a) for a in ("args", "kwargs", "value") if hasattr(obj, a)]
        for v in values:
            walk(v, seen)

    plans = []
    graph = dict(out.__dask_graph__())
    for task in graph.values():
        walk(task, set())
        plans += [v for v in getattr(task, "kwargs", {}).values() if hasattr(v, "key")]
    assert plans, "no plan found in the graph: the walk above checked nothing"
    assert all(p.request.source is None and p.key is not None for p in plans)


def test_ledger_extras_match_the_accessor(city):
    # release_id and the public points' provenance, as gdf.ldp.perturb writes them, once per graph
    points, trips = city
    grid = geoldp.points.grid(tuple(points.total_bounds), 400.0)
    ddf = dask_geopandas.from_geopandas(trips, npartitions=3)
    lazy = geoldp.dask.perturb(ddf, grid, mechanism="tp", epsilon=2.0, rng=4)
    full, again = lazy.compute(), lazy.compute()
    led = full.attrs["geoldp"]
    expected = trips.ldp.perturb(grid, mechanism="tp", epsilon=2.0, rng=4).attrs["geoldp"]
    assert isinstance(led, geoldp._core.ledger.ReleaseRecord)
    assert set(led) == set(expected) | {"partitioned"}
    assert led["points"] == expected["points"]
    assert led["points"]["provenance"] == geoldp.points.provenance_of(grid) is not None
    assert len(led["release_id"]) == 32
    # one release: every partition and every computation carry the same id; a new call gets a new one
    assert again.attrs["geoldp"]["release_id"] == led["release_id"]
    assert lazy.partitions[1].compute().attrs["geoldp"]["release_id"] == led["release_id"]
    other = geoldp.dask.perturb(ddf, grid, mechanism="tp", epsilon=2.0, rng=4).compute()
    assert other.attrs["geoldp"]["release_id"] != led["release_id"]


def test_accountant_charges_each_user_before_the_key_is_drawn(city):
    points, trips = city
    trips = trips.assign(user=np.arange(len(trips)) % 5)  # 37 rows: users 0, 1 have 8 rows, others 7
    ddf = dask_geopandas.from_geopandas(trips, npartitions=4)
    acc = geoldp.BudgetAccountant(20.0)
    out = geoldp.dask.perturb(ddf, points, epsilon=2.0, accountant=acc, user_col="user", rng=1)
    assert acc.spent == {0: 16.0, 1: 16.0, 2: 14.0, 3: 14.0, 4: 14.0}  # charged at call time
    assert "user" not in out.columns
    led = out.compute().attrs["geoldp"]["accounting"]
    assert led["user_col"] == "user" and led["total_epsilon_per_user"] == 20.0
    gen = np.random.default_rng(5)
    state = gen.bit_generator.state
    with pytest.raises(geoldp.BudgetError, match="2 of the 5 user"):  # 16 + 8 * 0.75 > 20
        geoldp.dask.perturb(ddf, points, epsilon=0.75, accountant=acc, user_col="user", rng=gen)
    assert gen.bit_generator.state == state  # nothing was drawn
    assert acc.spent_by(0) == 16.0  # nothing was charged


def test_accountant_arguments_are_checked_before_any_pass(city, monkeypatch):
    points, trips = city
    ddf = dask_geopandas.from_geopandas(trips, npartitions=2)
    acc = geoldp.BudgetAccountant(4.0)

    def no_compute(*args, **kwargs):
        raise AssertionError("computed")

    monkeypatch.setattr(geoldp.dask, "_partition_stats", no_compute)
    with pytest.raises(TypeError, match="accountant"):
        geoldp.dask.perturb(ddf, points, epsilon=1.0, user_col="mode")
    with pytest.raises(ValueError, match="user_col"):
        geoldp.dask.perturb(ddf, points, epsilon=1.0, accountant=acc)
    with pytest.raises(ValueError, match="not in the frame"):
        geoldp.dask.perturb(ddf, points, epsilon=1.0, accountant=acc, user_col="nobody")
    assert acc.spent == {}


def test_area_from_the_data_warns_as_in_memory(city):
    # the accessor's guard: points built over the very bounds of the trajectories being perturbed
    points, trips = city
    ddf = dask_geopandas.from_geopandas(trips, npartitions=3)
    private = geoldp.points.grid(tuple(trips.total_bounds), 400.0)
    with pytest.warns(geoldp.PrivacyWarning, match="bounds of the trajectories") as rec:
        geoldp.dask.perturb(ddf, private, mechanism="tp", epsilon=2.0, rng=1)
    assert any(r.filename == __file__ for r in rec)  # points at the user's line
    public = geoldp.points.grid(tuple(points.total_bounds), 400.0)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*bounds of the trajectories")
        geoldp.dask.perturb(ddf, public, mechanism="tp", epsilon=2.0, rng=1)


# ---------------------------------------- partitions checked like a frame: geometry types, CRS, epsilon


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


def test_dask_partition_in_another_crs_is_refused(toy_lines, city_points):
    pytest.importorskip("dask_geopandas")
    import dask
    import dask.dataframe as dd
    import dask_geopandas

    import geoldp.dask

    a, b = toy_lines.iloc[:2], toy_lines.iloc[2:].to_crs(3857)
    parts = dd.from_delayed([dask.delayed(a), dask.delayed(b)], meta=a.iloc[:0], verify_meta=False)
    ddf = dask_geopandas.from_dask_dataframe(parts)
    with pytest.raises(ValueError, match="Partition 1 .* is in EPSG:3857, but the frame declares EPSG:4326"):
        geoldp.dask.perturb(ddf, city_points, epsilon=4.0, rng=0)


def test_tiny_epsilon_is_refused_by_dask(toy_lines, city_points):
    dask_geopandas = pytest.importorskip("dask_geopandas")
    import geoldp.dask

    ddf = dask_geopandas.from_geopandas(toy_lines, npartitions=2)
    with pytest.raises(ValueError, match="below the smallest"):
        geoldp.dask.perturb(ddf, city_points, epsilon=1e-300, rng=0)


# ------------------------------------------------------- ddf.ldp: the accessor of dask_geopandas frames


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

    lines = route_series().iloc[:2]
    gdf = gpd.GeoDataFrame({"k": [1, 2]}, geometry=lines.values, index=lines.index, crs=lines.crs)
    ddf = dask_geopandas.from_geopandas(gdf, npartitions=2)
    pts = route_points()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", geoldp.PrivacyWarning)  # short trips: per-point budget warning
        got = ddf.ldp.perturb(pts, mechanism="atp", epsilon=6.0, rng=3).compute()
        ref = geoldp.dask.perturb(ddf, pts, mechanism="atp", epsilon=6.0, rng=3).compute()
    assert got.index.equals(ref.index)
    assert got.geometry.geom_equals_exact(ref.geometry, tolerance=0).all()
    assert got.attrs["geoldp"]["mechanism"] == "atp"
    with pytest.raises(AttributeError, match="dask_geopandas.GeoDataFrame"):
        dask_geopandas.from_geopandas(gdf, npartitions=1).to_dask_dataframe().ldp  # noqa: B018


# ----------------------------------------------------------------------------------- geoldp.dask.report


def _report_trips(n, seed=0):
    from shapely.geometry import LineString

    g = np.random.default_rng(seed)
    rows = [LineString(g.uniform(0.05, 1.95, (3, 2))) for _ in range(n)]
    return gpd.GeoDataFrame(geometry=rows, crs="EPSG:4326")


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
