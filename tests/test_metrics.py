"""Tests of geoldp.metrics against hand-computed examples (points on a meridian: exact distances)."""

from __future__ import annotations

import math

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

import geoldp
from geoldp import metrics
from geoldp._core import frames as _frames
from geoldp._core.geo import haversine_array_m
from geoldp.metrics import (
    _distributions,
    _hotspots,
    diameter_error,
    evaluate,
    hotspot_preservation,
    length_error,
    normalized_error,
    preservation_range_query,
    range_query_error,
)

# One degree of latitude on the sphere R = 6371 km (ALGORITHM §12): along a meridian d = R·Δφ exactly.
K = 111.194926645

# P_i = (0, i): distances |i - j| * K km.
P = np.array([[0.0, 0.0], [0.0, 1.0], [0.0, 2.0], [0.0, 3.0]])
ORIG = [np.array([0, 1]), np.array([2, 2, 2]), np.array([3])]
PERT = [np.array([1, 1]), np.array([2, 0, 3]), np.array([3])]
# per-point distances: [K, 0], [0, 2K, K], [0]  -> per-trajectory means K/2, K, 0


def as_gdf(trajs, crs="EPSG:4326"):
    geoms = [shapely.Point(P[t[0]]) if len(t) == 1 else shapely.LineString(P[t]) for t in trajs]
    return gpd.GeoDataFrame({"traj_id": range(len(trajs))}, geometry=geoms, crs="EPSG:4326").to_crs(crs)


def test_normalized_error_hand_example():
    ne = normalized_error(ORIG, PERT, points=P)
    assert ne == pytest.approx((K / 2 + K + 0.0) / 3, rel=1e-9)


def test_normalized_error_geodataframe_any_crs_matches_index_input():
    ne = normalized_error(ORIG, PERT, points=P)
    assert normalized_error(as_gdf(ORIG), as_gdf(PERT)) == pytest.approx(ne, rel=1e-12)
    # projected CRS: vertices are reprojected back to WGS84 before the haversine
    assert normalized_error(as_gdf(ORIG, "EPSG:3857"), as_gdf(PERT, "EPSG:32631")) == pytest.approx(
        ne, rel=1e-9
    )
    # mixed: index arrays against a GeoDataFrame
    assert normalized_error(ORIG, as_gdf(PERT), points=P) == pytest.approx(ne, rel=1e-12)


def test_preservation_range_query_hand_example():
    # traj0 distances [K, 0]; traj1 [0, 2K, K]; traj2 [0]
    deltas = [0.0, 100.0, 150.0, 250.0]
    expected = [
        (1 / 2 + 1 / 3 + 1) / 3,
        (1 / 2 + 1 / 3 + 1) / 3,
        (1 + 2 / 3 + 1) / 3,
        1.0,
    ]
    got = preservation_range_query(ORIG, PERT, deltas, points=P)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert preservation_range_query(ORIG, PERT, 150.0, points=P) == pytest.approx(expected[2])


def test_identical_inputs_give_perfect_scores():
    gdf = as_gdf(ORIG, "EPSG:32631")
    assert normalized_error(gdf, gdf) == 0.0
    assert preservation_range_query(gdf, gdf, 0.0) == 1.0
    np.testing.assert_array_equal(preservation_range_query(ORIG, ORIG, [0.0, 1.0], points=P), [1.0, 1.0])
    table = evaluate(ORIG, ORIG, points=P, k=3)
    val = table.loc["perturbed"]
    assert val["NE_km"] == 0.0
    assert all(val[c] == 1.0 for c in table.columns if c.startswith("PRQ_"))
    assert val["range_query_error"] == 0.0
    assert val["zone_l1"] == 0.0 and val["zone_jsd"] == 0.0
    assert val["od_l1"] == 0.0 and val["od_jsd"] == 0.0
    assert val["hotspot_acd"] == 0.0
    assert val["hotspot_overlap"] == 1.0
    assert val["length_jsd"] == 0.0
    assert val["diameter_jsd"] == 0.0


def test_row_order_invariance():
    rng = np.random.default_rng(5)
    m = 30
    pts = np.column_stack([rng.uniform(-0.3, 0.3, m), rng.uniform(50.0, 50.4, m)])
    orig = [rng.integers(0, m, size=rng.integers(1, 6)) for _ in range(40)]
    pert = [rng.integers(0, m, size=len(t)) for t in orig]
    perm = rng.permutation(len(orig))
    orig2 = [orig[i] for i in perm]
    pert2 = [pert[i] for i in perm]
    a = evaluate(orig, pert, points=pts, k=5)
    b = evaluate(orig2, pert2, points=pts, k=5)
    # the uniform row's draw follows the rows, only its exact NE / PRQ expectations are order-free
    pd.testing.assert_frame_equal(
        a.drop(index="uniform"), b.drop(index="uniform"), check_exact=False, rtol=1e-12
    )
    exact_cols = [c for c in a.columns if c == "NE_km" or c.startswith("PRQ_")]
    pd.testing.assert_series_equal(a.loc["uniform", exact_cols], b.loc["uniform", exact_cols], rtol=1e-12)
    ra = range_query_error(orig, pert, [(0.0, 50.2, 10.0), (0.2, 50.1, 5.0)], points=pts)
    rb = range_query_error(orig2, pert2, [(0.0, 50.2, 10.0), (0.2, 50.1, 5.0)], points=pts)
    pd.testing.assert_frame_equal(ra, rb)
    for fn in (length_error, diameter_error):
        assert fn(orig, pert, points=pts, method="mae") == pytest.approx(
            fn(orig2, pert2, points=pts, method="mae")
        )


def test_row_count_mismatch_raises():
    with pytest.raises(ValueError, match="same number of rows"):
        normalized_error(ORIG, PERT[:2], points=P)


def test_row_length_mismatch_raises_naming_row():
    with pytest.raises(ValueError, match="row 1 has 3 points in 'original' and 2"):
        normalized_error(ORIG, [PERT[0], PERT[1][:2], PERT[2]], points=P)


def test_index_input_requires_points():
    with pytest.raises(ValueError, match="'points' parameter of normalized_error is required"):
        normalized_error(ORIG, PERT)


def test_index_out_of_range_raises():
    with pytest.raises(ValueError, match="Row position 2 of the 'perturbed' trajectories .* index outside"):
        normalized_error(ORIG, [PERT[0], PERT[1], np.array([4])], points=P)


def test_missing_crs_raises():
    gdf = as_gdf(ORIG).set_crs(None, allow_override=True)
    with pytest.raises(ValueError, match="set_crs"):
        normalized_error(gdf, gdf)


def test_non_linestring_raises():
    gdf = gpd.GeoDataFrame(geometry=[shapely.box(0, 0, 1, 1)], crs="EPSG:4326")
    with pytest.raises(TypeError, match="Row position 0 of the 'original' trajectories .* is a Polygon"):
        normalized_error(gdf, gdf)


def test_bad_delta_raises():
    with pytest.raises(ValueError, match="'delta_km' parameter"):
        preservation_range_query(ORIG, PERT, -1.0, points=P)


def test_range_query_error_hand_example():
    # circle of radius 1 km around P_0: original rows 0 (visits 0) -> c = 1; perturbed row 1 visits 0 -> ĉ = 1
    # circle around P_3: original rows 2 -> 1... perturbed rows 1, 2 -> 2
    regions = [(0.0, 0.0, 1.0), (0.0, 3.0, 1.0), (0.0, 1.0, 1.0)]
    t = range_query_error(ORIG, PERT, regions, points=P, sanity_bound=1.0)
    assert list(t.columns) == ["region", "true_count", "perturbed_count", "relative_error"]
    np.testing.assert_array_equal(t.true_count, [1, 1, 1])
    np.testing.assert_array_equal(t.perturbed_count, [1, 2, 1])
    np.testing.assert_allclose(t.relative_error, [0.0, 1.0, 0.0])
    # sanity bound b = 4 > c: |2 - 1| / 4
    t4 = range_query_error(ORIG, PERT, regions, points=P, sanity_bound=4.0)
    np.testing.assert_allclose(t4.relative_error, [0.0, 0.25, 0.0])
    # "auto": max(1, 1 % of 3) = 1
    pd.testing.assert_frame_equal(range_query_error(ORIG, PERT, regions, points=P), t)


def test_range_query_error_polygon_in_projected_crs():
    orig, pert = as_gdf(ORIG, "EPSG:3857"), as_gdf(PERT, "EPSG:3857")
    # a box around P_2 = (0, 2°) in Web Mercator metres
    y2 = gpd.GeoSeries([shapely.Point(0, 2)], crs="EPSG:4326").to_crs("EPSG:3857").y.iloc[0]
    box = shapely.box(-1000, y2 - 1000, 1000, y2 + 1000)
    t = range_query_error(orig, pert, [box], sanity_bound=1.0)
    assert t.true_count.tolist() == [1]
    assert t.perturbed_count.tolist() == [1]


def test_range_query_error_bad_sanity_bound():
    with pytest.raises(ValueError, match="'sanity_bound' parameter"):
        range_query_error(ORIG, PERT, [(0.0, 0.0, 1.0)], points=P, sanity_bound=0.0)


def test_hotspot_preservation_hand_example():
    # distinct visits: original c = [1, 1, 1, 1]; perturbed ĉ = [1, 1, 1, 2]
    orig = [np.array([0, 1, 1]), np.array([2, 3]), np.array([3]), np.array([3, 2])]
    pert = [np.array([0, 0, 1]), np.array([3, 3]), np.array([3]), np.array([2, 1])]
    # c = [1, 1, 2, 3]; ĉ = [1, 2, 1, 2]
    r = hotspot_preservation(orig, pert, k=2, points=P)
    # top-2 original: 3 (3), 2 (2); top-2 perturbed: 1, 3 (2 each; index order 1, 3)
    assert r["k"] == 2
    assert r["acd"] == pytest.approx((abs(2 - 3) + abs(1 - 2)) / 2)
    assert r["acd_relative"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert r["overlap"] == pytest.approx(0.5)
    # c[H] = (3, 2), ĉ[H] = (2, 1): concordant pair -> τ = 1
    assert r["kendall_tau"] == pytest.approx(1.0)
    r3 = hotspot_preservation(orig, pert, k=3, points=P)
    # H = (3, 2, 0 or 1 -> 0 by index) : c = (3, 2, 1), ĉ = (2, 1, 1): τ-b with one tie in ĉ
    from scipy.stats import kendalltau

    assert r3["kendall_tau"] == pytest.approx(kendalltau([3, 2, 1], [2, 1, 1]).statistic)


def test_hotspot_preservation_geodataframe_matches_index_input():
    orig = [np.array([0, 1, 1]), np.array([2, 3]), np.array([3]), np.array([3, 2])]
    pert = [np.array([0, 0, 1]), np.array([3, 3]), np.array([3]), np.array([2, 1])]
    pts = gpd.GeoDataFrame(geometry=gpd.points_from_xy(P[:, 0], P[:, 1]), crs="EPSG:4326").to_crs("EPSG:3857")
    a = hotspot_preservation(orig, pert, k=2, points=P)
    b = hotspot_preservation(as_gdf(orig, "EPSG:3857"), as_gdf(pert, "EPSG:3857"), k=2, points=pts)
    assert a == b


def test_hotspot_requires_points_and_valid_k():
    with pytest.raises(ValueError, match="'points' parameter of hotspot_preservation is required"):
        hotspot_preservation(as_gdf(ORIG), as_gdf(PERT))
    with pytest.raises(ValueError, match="'k' parameter"):
        hotspot_preservation(ORIG, PERT, k=5, points=P)


def test_length_error_hand_example():
    # lengths: original [K, 0, 0]; perturbed [0, 2K + 3K, 0]
    assert length_error(ORIG, PERT, points=P, method="mae") == pytest.approx((K + 5 * K + 0) / 3, rel=1e-9)
    # JSD with 5 bins over [0, 5K]: p = (2/3 in bin 0, 1/3 in bin 0)... original: 0, 0 in bin 0 and K in bin 1
    # (K / 5K = 0.2 is the left edge of bin 1); perturbed: 0, 0 in bin 0, 5K in bin 4 (right edge inclusive).
    p = np.array([2 / 3, 1 / 3, 0, 0, 0])
    q = np.array([2 / 3, 0, 0, 0, 1 / 3])
    mid = (p + q) / 2
    expected = 0.5 * sum(p[i] * math.log2(p[i] / mid[i]) for i in range(5) if p[i] > 0) + 0.5 * sum(
        q[i] * math.log2(q[i] / mid[i]) for i in range(5) if q[i] > 0
    )
    assert length_error(ORIG, PERT, points=P, bins=5) == pytest.approx(expected, rel=1e-12)
    assert length_error(ORIG, PERT, points=P, bins=5) == pytest.approx(1 / 3)


def test_diameter_error_hand_example():
    orig = [np.array([0, 1, 2, 1]), np.array([3])]
    pert = [np.array([0, 0, 0, 1]), np.array([3])]
    # diameters: original [2K, 0], perturbed [K, 0]
    assert diameter_error(orig, pert, points=P, method="mae") == pytest.approx(K / 2, rel=1e-9)
    # 2 bins over [0, 2K]: original (1/2, 1/2), perturbed K is the left edge of bin 1: (1/2, 1/2)
    assert diameter_error(orig, pert, points=P, bins=2) == 0.0


def test_diameters_long_trajectory_block_path_matches_brute_force():
    rng = np.random.default_rng(2)
    n = 300
    lon = rng.uniform(116.0, 116.5, n)
    lat = rng.uniform(39.8, 40.1, n)
    gdf = gpd.GeoDataFrame(geometry=[shapely.LineString(np.column_stack([lon, lat]))], crs="EPSG:4326")
    tr = _frames.trajectory_arrays(gdf, None, name="original", caller="test")
    i, j = np.triu_indices(n, 1)  # every pair once: the same kernel, elementwise, in one call
    brute = float(haversine_array_m(lon[i], lat[i], lon[j], lat[j]).max())
    assert _distributions.diameters_km(tr, budget=1000)[0] == pytest.approx(brute / 1000.0, rel=1e-12)
    assert _distributions.diameters_km(tr)[0] == pytest.approx(brute / 1000.0, rel=1e-12)


def test_distribution_error_bad_method():
    with pytest.raises(ValueError, match="`method` of length_error must be one of"):
        length_error(ORIG, PERT, points=P, method="kl")


def test_evaluate_table_shape_and_columns():
    deltas = (0.5, 1.0, 2.0)
    t = evaluate(ORIG, PERT, points=P, delta_km=deltas, k=2)
    assert t.index.name == "release"
    assert t.index.tolist() == ["perturbed", "uniform", "constant"]
    assert t.columns.tolist() == [
        "NE_km",
        "PRQ_0.5km",
        "PRQ_1km",
        "PRQ_2km",
        "range_query_error",
        "range_query_error_median",
        "zone_l1",
        "zone_jsd",
        "od_l1",
        "od_jsd",
        "hotspot_acd",
        "hotspot_acd_relative",
        "hotspot_kendall_tau",
        "hotspot_overlap",
        "length_jsd",
        "diameter_jsd",
    ]
    assert t.loc["perturbed", "NE_km"] == pytest.approx(normalized_error(ORIG, PERT, points=P))
    assert t.attrs["evaluate"]["k"] == 2
    # without points (geometry input) the hotspot, zone and baseline rows are absent; regions=None drops
    # the range columns
    t2 = evaluate(as_gdf(ORIG), as_gdf(PERT), regions=None, baselines=())
    assert t2.index.tolist() == ["perturbed"]
    assert not t2.columns.str.startswith(("hotspot", "range", "zone", "od")).any()
    assert t2.columns.str.startswith("PRQ").sum() == 5
    # baselines="auto" (default) adds them only with points; asked for explicitly, they need points
    assert evaluate(as_gdf(ORIG), as_gdf(PERT)).index.tolist() == ["perturbed"]
    with pytest.raises(ValueError, match="pass `points=`"):
        evaluate(as_gdf(ORIG), as_gdf(PERT), baselines=("uniform",))


def test_evaluate_exported_at_package_root():
    import geoldp

    assert geoldp.evaluate is metrics.evaluate


def test_every_public_name_keeps_its_path():
    # the package is split by concern behind one public path: each name is importable from it, is the
    # function its submodule defines, and documents itself under that path
    import importlib

    for name in metrics.__all__:
        obj = getattr(importlib.import_module("geoldp.metrics"), name)
        assert callable(obj), name
        assert obj.__module__.startswith("geoldp.metrics."), name
        assert obj.__doc__ and "Examples" in obj.__doc__, name
    assert metrics.normalised_error is metrics.normalized_error
    assert metrics.BASELINES == ("uniform", "constant")


def test_evaluate_hotspot_columns_equal_hotspot_preservation():
    # one scoring function behind both: the evaluate columns are the hotspot_preservation values
    t = evaluate(ORIG, PERT, points=P, k=2, baselines=(), zones=None, regions=None)
    r = hotspot_preservation(ORIG, PERT, k=2, points=P)
    for key in ("acd", "acd_relative", "overlap"):
        assert t.loc["perturbed", f"hotspot_{key}"] == r[key]
    assert np.isnan(r["kendall_tau"]) == np.isnan(t.loc["perturbed", "hotspot_kendall_tau"])


def test_max_zones_is_read_from_the_package_at_call_time(monkeypatch):
    n = len(geoldp.zone_grid(P, cell_km=50.0))
    monkeypatch.setattr(geoldp.zones, "MAX_ZONES", n - 1)
    with pytest.raises(ValueError, match=f"MAX_ZONES = {n - 1}"):
        geoldp.zone_grid(P, cell_km=50.0)


# ------------------------------------------------------------------------------------------------------
# experiments/paper_setup.py (the script must skip cleanly without data; loading maps loc_id -> row order)
# ------------------------------------------------------------------------------------------------------


def _paper_setup():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "experiments" / "paper_setup.py"
    spec = importlib.util.spec_from_file_location("paper_setup", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_paper_setup_skips_without_data(tmp_path, capsys):
    assert _paper_setup().main(["--data", str(tmp_path / "absent"), "--out", str(tmp_path / "out")]) == 0
    assert "not found" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_paper_setup_small_synthetic_run(tmp_path):
    mod = _paper_setup()
    folder = tmp_path / "data" / "cps_atp"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    m = 12
    ids = [f"B{i:02d}" for i in range(m)]
    lon = -123.25 + rng.uniform(0, 0.03, m)
    lat = 49.25 + rng.uniform(0, 0.02, m)
    pd.DataFrame({"loc_id": ids, "lon": lon, "lat": lat}).to_csv(folder / "points.csv", index=False)
    rows = []
    for t in range(30):
        for s, j in enumerate(rng.integers(0, m, size=int(rng.integers(2, 5)))):
            rows.append((str(t), s, lon[j], lat[j], ids[j]))
    traj = pd.DataFrame(rows, columns=["traj_id", "seq", "lon", "lat", "loc_id"])
    traj.to_csv(folder / "trajectories.csv.gz", index=False)
    plon, plat, trajs = mod.load_dataset(folder)
    np.testing.assert_array_equal(plon, lon)
    assert [len(t) for t in trajs] == traj.groupby("traj_id", sort=False).size().tolist()
    np.testing.assert_array_equal(np.concatenate(trajs), [ids.index(x) for x in traj.loc_id])
    out = tmp_path / "out"
    args = ["--data", str(tmp_path / "data"), "--out", str(out), "--datasets", "cps_atp,chi_atp"]
    args += ["--mechanisms", "uniform,pointem", "--epsilons", "1,4", "--reps", "2", "--no-plots"]
    assert mod.main(args) == 0
    table = pd.read_csv(out / "paper_setup.csv")
    # 2 mechanisms x 2 ε x 2 reps x (NE + 5 PRQ)
    assert len(table) == 2 * 2 * 2 * 6
    assert set(table.param.dropna()) == {0.1, 0.25, 0.5, 1.0, 2.0}
    exact = pd.read_csv(out / "exact_baselines.csv")
    assert exact.mechanism.tolist() == ["uniform", "pointem", "pointem"]


def test_kendall_tau_b_matches_scipy_with_ties():
    from scipy.stats import kendalltau

    rng = np.random.default_rng(9)
    for _ in range(20):
        k = int(rng.integers(2, 15))
        x = rng.integers(0, 5, k).astype(float)
        y = rng.integers(0, 5, k).astype(float)
        ref = kendalltau(x, y).statistic
        got = _hotspots.kendall_tau_b(x, y)
        if np.isnan(ref):
            assert np.isnan(got)
        else:
            assert got == pytest.approx(ref, rel=1e-12, abs=1e-15)


# ------------------------------------------------------------------------------------------------------
# zones, OD flows and the no-data baselines
# ------------------------------------------------------------------------------------------------------

# Three points 0.02 degrees apart at the equator (2.22 km): with 1.5 km cells, a 2 x 2 grid where point 0
# is in zone 0 (south-west), point 1 in zone 1 (south-east) and point 2 in zone 2 (north-west).
Q = np.array([[0.0, 0.0], [0.02, 0.0], [0.0, 0.02]])


def test_zone_grid_squares_cover_the_public_points():
    rng = np.random.default_rng(3)
    pts = np.column_stack([rng.uniform(-87.9, -87.5, 300), rng.uniform(41.6, 42.0, 300)])
    z = geoldp.zone_grid(pts, cell_km=1.5)
    assert z.crs.to_epsg() == 4326 and z.index.name == "zone"
    assert z.index.tolist() == list(range(len(z)))
    n_cols = int(z["col"].max()) + 1
    np.testing.assert_array_equal(z.index, z["row"] * n_cols + z["col"])
    # sides about 1.5 km (haversine): exact at the middle latitude, within 1 % over 0.4 degrees
    b = z.geometry.bounds.to_numpy()
    from geoldp._core.geo import haversine_m

    height = haversine_m(b[:, 0], b[:, 1], b[:, 0], b[:, 3]) / 1000
    width = haversine_m(b[:, 0], b[:, 1], b[:, 2], b[:, 1]) / 1000
    np.testing.assert_allclose(height, 1.5, rtol=1e-9)
    np.testing.assert_allclose(width, 1.5, rtol=0.01)
    # every public point strictly inside exactly one zone
    inside = shapely.contains_xy(np.asarray(z.geometry.values)[:, None], pts[:, 0], pts[:, 1])
    np.testing.assert_array_equal(inside.sum(axis=0), 1)
    # a function of P only: same P, same grid
    assert z.geom_equals(geoldp.zone_grid(pts.copy(), cell_km=1.5)).all()
    with pytest.raises(ValueError, match="cell_km"):
        geoldp.zone_grid(pts, cell_km=0)


def test_zone_visit_counts_hand_example():
    z = geoldp.zone_grid(Q, cell_km=1.5)
    assert len(z) == 4
    # traj 0 visits zone 0 twice and zone 1 (counts once each); traj 1 zone 1; traj 2 zone 2
    got = metrics.zone_visit_counts([[0, 0, 1], [1], [2]], z, points=Q)
    assert got.tolist() == [1.0, 2.0, 1.0, 0.0]
    assert got.index.equals(z.index)
    # same as geometry input in another CRS, and zones in another CRS
    lines = gpd.GeoSeries(
        [shapely.LineString(Q[[0, 0, 1]]), shapely.Point(Q[1]), shapely.Point(Q[2])], crs="EPSG:4326"
    )
    got2 = metrics.zone_visit_counts(lines.to_crs("EPSG:3857"), z.to_crs("EPSG:32631"))
    assert got2.tolist() == [1.0, 2.0, 1.0, 0.0]


def test_zone_visit_error_hand_values():
    # p = (1/2, 1/2, 0, 0), q = (1, 0, 0, 0): L1 = 1/2 + 1/2 = 1; m = (3/4, 1/4)
    # JSD = 1/2 [1/2 log2((1/2)/(3/4)) + 1/2 log2((1/2)/(1/4))] + 1/2 [log2(1/(3/4))]
    jsd = 0.5 * (0.5 * math.log2(2 / 3) + 0.5 * 1.0) + 0.5 * math.log2(4 / 3)
    r = metrics.zone_visit_error([[0], [1]], [[0], [0]], points=Q)
    assert r["l1"] == pytest.approx(1.0, abs=1e-12)
    assert r["jsd"] == pytest.approx(jsd, rel=1e-12)
    # disjoint supports: L1 = 2, JSD = 1; identical: 0, 0
    r = metrics.zone_visit_error([[0], [0]], [[2], [1, 2]], points=Q)
    assert (r["l1"], r["jsd"]) == (pytest.approx(2.0), pytest.approx(1.0))
    assert metrics.zone_visit_error([[0, 1]], [[1, 0]], points=Q) == {"l1": 0.0, "jsd": 0.0}
    # counts instead of a release: array, Series (missing zones = 0), DataFrame with an 'estimate' column;
    # scale does not matter (normalised) and negative estimates count as 0
    z = geoldp.zone_grid(Q, cell_km=1.5)
    for counts in (
        np.array([5.0, 0.0, 0.0, 0.0]),
        pd.Series([3.0], index=pd.Index([0], name="zone")),
        pd.DataFrame({"estimate": [7.0, -1.0, 0.0, 0.0]}, index=z.index),
    ):
        r = metrics.zone_visit_error([[0], [1]], counts, z, points=Q)
        assert r["l1"] == pytest.approx(1.0) and r["jsd"] == pytest.approx(jsd)
    with pytest.raises(ValueError, match="one per zone"):
        metrics.zone_visit_error([[0], [1]], np.array([1.0, 2.0]), z, points=Q)
    with pytest.raises(ValueError, match="no CRS"):
        metrics.zone_visit_error([[0]], [[0]], z.set_crs(None, allow_override=True), points=Q)


def test_od_counts_and_flow_error_hand_values():
    z = geoldp.zone_grid(Q, cell_km=1.5)
    od = metrics.od_counts([[0, 1], [0, 2, 1], [2]], z, points=Q)
    assert od.to_dict("list") == {"origin": [0, 2], "destination": [1, 2], "count": [2.0, 1.0]}
    # p = {(0,1): 1/2, (1,0): 1/2}, q = {(0,1): 1}: L1 = 1/2 + 1/2 = 1
    assert metrics.od_flow_error([[0, 1], [1, 0]], [[0, 1], [0, 1]], points=Q)["l1"] == pytest.approx(1.0)
    # OD is about first and last points only: the middle vertex does not matter
    assert metrics.od_flow_error([[0, 1]], [[0, 2, 1]], points=Q) == {"l1": 0.0, "jsd": 0.0}
    # swapped origin and destination: disjoint, L1 = 2, JSD = 1
    r = metrics.od_flow_error([[0, 1]], [[1, 0]], points=Q)
    assert (r["l1"], r["jsd"]) == (pytest.approx(2.0), pytest.approx(1.0))
    # counts: a long DataFrame (zones' labels) and a dense matrix
    long = pd.DataFrame({"origin": [0], "destination": [1], "estimate": [4.0]})
    dense = np.zeros((4, 4))
    dense[0, 1] = 4.0
    for counts in (long, dense):
        assert metrics.od_flow_error([[0, 1], [1, 0]], counts, z, points=Q)["l1"] == pytest.approx(1.0)


def test_one_median_is_the_brute_force_argmin():
    rng = np.random.default_rng(11)
    for trial in range(6):
        m = int(rng.integers(5, 120))
        # clustered, skewed points (a city with a dense centre and outliers)
        pts = np.column_stack(
            [rng.normal(-73.9, 0.05, m) + rng.exponential(0.05, m), rng.normal(40.7, 0.04, m)]
        )
        from geoldp._core.geo import haversine_m

        d = haversine_m(pts[:, None, 0], pts[:, None, 1], pts[None, :, 0], pts[None, :, 1])
        brute = int(np.argmin(d.sum(axis=1)))
        assert metrics.one_median(pts) == brute
        # the large-P path (Weiszfeld, snap, local search) on the same data
        assert metrics.one_median(pts, exact_max=0, n_candidates=4) == brute, trial


def test_baseline_releases_use_public_data_only():
    rng = np.random.default_rng(2)
    m = 40
    pts = np.column_stack([rng.uniform(2.2, 2.5, m), rng.uniform(48.8, 48.9, m)])
    lengths = rng.integers(1, 6, size=25)
    orig_a = [rng.integers(0, m, size=n) for n in lengths]
    orig_b = [rng.integers(0, m, size=n) for n in lengths]  # other people, same lengths
    # the function cannot see originals: its inputs are P, the lengths and rng
    import inspect

    assert list(inspect.signature(metrics.baseline_release).parameters) == [
        "kind",
        "points",
        "lengths",
        "rng",
    ]
    const = metrics.baseline_release("constant", pts, lengths)
    med = metrics.one_median(pts)
    assert [len(t) for t in const] == lengths.tolist()
    assert all((t == med).all() for t in const)
    uni = metrics.baseline_release("uniform", pts, lengths, rng=7)
    assert [len(t) for t in uni] == lengths.tolist()
    # in evaluate, the baseline rows come from the same releases whatever the originals are
    seen = []
    real = metrics.baseline_release

    def spy(kind, points, lengths, *, rng=None):
        out = real(kind, points, lengths, rng=rng)
        seen.append((kind, [t.copy() for t in out]))
        return out

    import unittest.mock

    from geoldp.metrics import _evaluate

    with unittest.mock.patch.object(_evaluate, "baseline_release", spy):  # the name evaluate calls
        ta = evaluate(orig_a, orig_b, points=pts, rng=5)
        tb = evaluate(orig_b, orig_a, points=pts, rng=5)
    assert [k for k, _ in seen] == ["uniform", "constant"] * 2
    for (_, ra), (_, rb) in zip(seen[:2], seen[2:], strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(ra, rb, strict=True))
    # and the rows are the metrics of those releases
    for table, orig in ((ta, orig_a), (tb, orig_b)):
        assert table.loc["constant", "NE_km"] == pytest.approx(normalized_error(orig, seen[1][1], points=pts))
        assert table.loc["constant", "zone_l1"] == pytest.approx(
            metrics.zone_visit_error(orig, seen[1][1], points=pts)["l1"]
        )
        assert table.loc["uniform", "od_l1"] == pytest.approx(
            metrics.od_flow_error(orig, seen[0][1], points=pts)["l1"]
        )


def test_uniform_row_holds_the_exact_expected_ne():
    # on the meridian P_i = (0, i): E d(P_i, U) = mean_j |i - j| K = 1.5K, K, K, 1.5K for i = 0..3;
    # ORIG = [0, 1], [2, 2, 2], [3]: per trajectory 1.25K, K, 1.5K; NE = 1.25K
    t = evaluate(ORIG, PERT, points=P, k=2)
    assert t.loc["uniform", "NE_km"] == pytest.approx(1.25 * K, rel=1e-9)
    # PRQ(δ = 0.5 km): a uniform draw hits the original point with probability 1/4
    assert t.loc["uniform", "PRQ_0.5km"] == pytest.approx(0.25, rel=1e-12)
    # the 1-median of P is P_1 (sum 4K; P_2 ties, lower index wins): NE = mean(K/2, K, 2K) = 7K/6
    assert t.attrs["evaluate"]["one_median"] == 1
    assert t.loc["constant", "NE_km"] == pytest.approx((0.5 + 1.0 + 2.0) / 3 * K, rel=1e-9)


def test_constant_fails_the_aggregate_metrics():
    rng = np.random.default_rng(4)
    m = 200
    pts = np.column_stack([rng.uniform(-87.8, -87.6, m), rng.uniform(41.8, 41.95, m)])
    orig = [rng.integers(0, m, size=int(rng.integers(2, 6))) for _ in range(300)]
    t = evaluate(orig, orig, points=pts, label="identity")
    assert t.loc["identity", "zone_l1"] == 0.0
    # all of the constant's mass is in one zone: L1 = 2 - 2 p(z_median) >= 2 - 2 max_z p(z)
    truth = metrics.zone_visit_counts(orig, points=pts).to_numpy()
    p = truth / truth.sum()
    assert t.loc["constant", "zone_l1"] >= 2 - 2 * p.max() - 1e-12
    assert t.loc["constant", "length_jsd"] > 0.5
    assert t.loc["constant", "zone_l1"] > t.loc["uniform", "zone_l1"]


def test_evaluate_mapping_and_count_entries():
    z = geoldp.zone_grid(P, cell_km=1.5)
    truth = metrics.zone_visit_counts(ORIG, z, points=P)
    est = {"zone_counts": truth.to_numpy()}
    t = evaluate(ORIG, {"A raw": PERT, "A estimated": est}, points=P, k=2, zones=z)
    assert t.index.tolist() == ["A raw", "A estimated", "uniform", "constant"]
    assert t.loc["A estimated", "zone_l1"] == 0.0
    assert np.isnan(t.loc["A estimated", "NE_km"])
    with pytest.raises(ValueError, match="unknown keys"):
        evaluate(ORIG, {"x": {"zones": truth}}, points=P)
    with pytest.raises(ValueError, match="unique"):
        evaluate(ORIG, {"uniform": PERT}, points=P)


def test_evaluate_label_from_the_ledger():
    g = as_gdf(PERT)
    g.attrs["geoldp"] = {"mechanism": "atp", "epsilon": 1.0}
    t = evaluate(as_gdf(ORIG), g, points=P, k=2)
    assert t.index[0] == "ATP raw"


# --------------------------------------------------------------------------------------------------
# evaluate(estimate=True): estimated and denoised rows from the release alone
# --------------------------------------------------------------------------------------------------

_FAST = dict(n_candidates=200, n_sims=2, n_boot=0, n_iter=8)


def _estimate_case(seed=0):
    from geoldp import PointSet, perturb_trajectories

    rs = np.random.default_rng(seed)
    pts = PointSet(rs.uniform(-87.7, -87.6, 120), rs.uniform(41.8, 41.9, 120))
    orig = [rs.integers(0, 120, size=3) for _ in range(60)]
    rel = perturb_trajectories(orig, pts, mechanism="atp", epsilon=4.0, rng=seed + 1)
    return pts, orig, rel


def test_evaluate_scores_a_synthetic_set_on_its_distributions():
    # a synthetic set's rows are not the originals': the originals themselves, labelled synthetic (once,
    # then twice over), score perfectly on every distribution column, and NE, PRQ and hotspots are NaN
    pts, orig, _ = _estimate_case()
    lines = as_gdf_for(pts, orig)
    once = lines.copy()
    twice = pd.concat([lines, lines], ignore_index=True)
    for synthetic in (once, twice):
        synthetic.attrs["geoldp"] = {"mechanism": "ldptrace", "epsilon": 4.0, "n_synthetic": len(synthetic)}
    t = evaluate(lines, {"once": once, "twice": twice}, points=pts)
    distributions = [
        "range_query_error",
        "zone_l1",
        "zone_jsd",
        "od_l1",
        "od_jsd",
        "length_jsd",
        "diameter_jsd",
    ]
    pointwise = ["NE_km", "PRQ_1km", "hotspot_overlap", "hotspot_acd"]
    for row in ("once", "twice"):
        np.testing.assert_allclose(t.loc[row, distributions].to_numpy(float), 0.0, atol=1e-12)
        assert t.loc[row, pointwise].isna().all()
    # a real LDPTrace release: its distribution columns are scored, and estimate=True adds no rows for it
    syn = geoldp.synthesize(lines, points=pts, epsilon=4.0, rng=1)
    t = evaluate(lines, syn, points=pts, estimate=True, estimate_options=_FAST)
    assert list(t.index) == ["LDPTRACE raw", "uniform", "constant"]
    assert t.loc["LDPTRACE raw", distributions].notna().all() and np.isnan(t.loc["LDPTRACE raw", "NE_km"])


def test_evaluate_estimate_rows():
    pts, orig, rel = _estimate_case()
    kw = dict(points=pts, mechanism="atp", epsilon=4.0, estimate_options=_FAST)
    t = evaluate(orig, rel, estimate=True, **kw)
    assert list(t.index) == ["ATP raw", "ATP estimated", "ATP denoised", "uniform", "constant"]
    est, den = t.loc["ATP estimated"], t.loc["ATP denoised"]
    # count-only row: counts metrics present, trajectory metrics NaN
    assert est[["NE_km", "length_jsd", "diameter_jsd"]].isna().all()
    assert est[["zone_l1", "od_l1", "range_query_error", "hotspot_overlap"]].notna().all()
    # the denoised trajectories are a release: every column present
    assert den.drop("hotspot_kendall_tau").notna().all()
    # the baseline rows do not depend on estimate=True (estimator seeds are drawn after them)
    plain = evaluate(orig, rel, **kw)
    pd.testing.assert_frame_equal(t.loc[["uniform", "constant"]], plain.loc[["uniform", "constant"]])
    pd.testing.assert_frame_equal(t.loc[["ATP raw"]], plain.loc[["ATP raw"]])


def test_evaluate_estimate_never_sees_the_originals(monkeypatch):
    import geoldp.estimate as est

    pts, orig, rel = _estimate_case()
    calls = []
    real = est.fit

    def wrapped(*args, **kwargs):
        calls.append((args, kwargs, real(*args, **kwargs)))
        return calls[-1][2]

    monkeypatch.setattr(est, "fit", wrapped)
    regions = [(-87.65, 41.85, 3.0), (-87.68, 41.82, 2.0)]
    kw = dict(points=pts, mechanism="atp", epsilon=4.0, estimate_options=_FAST, regions=regions)
    evaluate(orig, rel, estimate=True, **kw)
    assert len(calls) == 1  # one population fit answers every query
    args, kwargs, first = calls[0]
    assert args[0] is rel  # the release itself ...
    assert not any(v is orig for v in list(args) + list(kwargs.values()))  # ... and never the originals
    # other originals, same release and seed: the same fitted population (it reads the release only)
    calls.clear()
    other = [np.roll(t, 1) for t in orig[::-1]]
    evaluate(other, rel, estimate=True, **kw)
    second = calls[0][2]
    pd.testing.assert_frame_equal(first.visit_counts(), second.visit_counts())
    for a, b in zip(first.denoise(), second.denoise(), strict=True):  # denoised index arrays
        np.testing.assert_array_equal(a, b)


def test_evaluate_estimate_label_from_ledger_and_needs_points():
    pts, orig, rel = _estimate_case()
    gdf = as_gdf_for(pts, orig)
    out = gdf.ldp.perturb(pts, mechanism="atp", epsilon=4.0, rng=3)
    t = evaluate(gdf, out, points=pts, estimate=True, estimate_options=_FAST, baselines=())
    assert list(t.index) == ["ATP raw", "ATP estimated", "ATP denoised"]
    with pytest.raises(ValueError, match="points"):
        evaluate(orig, rel, estimate=True, mechanism="atp", epsilon=4.0)
    with pytest.raises(TypeError, match="estimate"):
        evaluate(orig, rel, points=pts, estimate="yes")


def as_gdf_for(pts, trajs):
    xy = np.column_stack([pts.lon, pts.lat])
    geoms = [shapely.LineString(xy[t]) for t in trajs]
    return gpd.GeoDataFrame({"traj_id": range(len(trajs))}, geometry=geoms, crs="EPSG:4326")


def _grid_circles(lon0, lon1, lat0, lat1, grid=4):
    """The documented automatic regions: grid x grid circles over a box, radius 1/8 of its diagonal."""
    from geoldp._core.geo import haversine_m

    radius = float(haversine_m(lon0, lat0, lon1, lat1)) / 1000.0 / (2 * grid)
    xs = lon0 + (np.arange(grid) + 0.5) * (lon1 - lon0) / grid
    ys = lat0 + (np.arange(grid) + 0.5) * (lat1 - lat0) / grid
    return [(float(x), float(y), radius) for y in ys for x in xs]


def test_evaluate_auto_regions_come_from_the_points_not_the_originals():
    # P spans lat 0..3; the originals visit only lat 0..2: regions over P's box, not the originals'
    orig = [np.array([0, 1]), np.array([2, 2, 1]), np.array([0])]
    pert = [np.array([1, 1]), np.array([2, 0, 3]), np.array([3])]
    kw = dict(points=P, baselines=(), zones=None)
    t = evaluate(orig, pert, **kw)
    assert t.attrs["evaluate"]["regions"] == "points"
    on_p = evaluate(orig, pert, regions=_grid_circles(0.0, 0.0, 0.0, 3.0), **kw)
    cols = ["range_query_error", "range_query_error_median"]
    pd.testing.assert_frame_equal(t[cols], on_p[cols])
    on_orig = evaluate(orig, pert, regions=_grid_circles(0.0, 0.0, 0.0, 2.0), **kw)
    assert not t[cols].equals(on_orig[cols])  # the test can tell the two boxes apart
    # the same P, other originals: the same regions (they say nothing about the originals)
    assert evaluate([np.array([3, 3])], [np.array([0, 1])], **kw).attrs["evaluate"]["n_regions"] == 16
    # given regions are recorded as given; without points the originals' box is the only choice
    assert on_p.attrs["evaluate"]["regions"] == "given"
    assert evaluate(as_gdf(orig), as_gdf(pert)).attrs["evaluate"]["regions"] == "originals"
    assert evaluate(orig, pert, regions=None, **kw).attrs["evaluate"]["regions"] is None


# --------------------------------------------------------------------------- evaluate's numeric options


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"k": 0}, ValueError, "'k' parameter of evaluate must be an int >= 1"),
        ({"k": -3}, ValueError, "'k' parameter"),
        ({"k": 2.5}, TypeError, "'k' parameter"),
        ({"k": True}, TypeError, "'k' parameter"),
        ({"bins": 0}, ValueError, "'bins' parameter of evaluate must be an int >= 1"),
        ({"bins": -1}, ValueError, "'bins' parameter"),
        ({"bins": 1.5}, ValueError, "'bins' parameter"),
    ],
)
def test_evaluate_numeric_options(city_points, kwargs, exc, match):
    from geoldp import metrics

    with pytest.raises(exc, match=match):
        metrics.evaluate([[0, 1], [2]], [[0, 1], [2]], points=city_points, **kwargs)
    table = metrics.evaluate([[0, 1], [2]], [[0, 1], [2]], points=city_points, k=1, bins=1)
    assert table.loc["perturbed", "hotspot_overlap"] == 1.0  # identical releases, one hotspot
