"""PointSet: validation, duplicates, exact diameter (vs brute force), queries, immutability, interop."""

from __future__ import annotations

import math
import pickle
import re
import warnings

import geopandas as gpd
import numpy as np
import pytest
import shapely

import geoldp
from geoldp._core import kernels as _kernels
from geoldp._core.errors import GeoLDPWarning
from geoldp._core.geo import EARTH_RADIUS_M, bearing, haversine_m
from geoldp._core.pointset import PointSet


def brute_diameter(ps):
    return float(_kernels.max_pairwise_brute(ps.lam, ps.phi))


def test_basic_attributes():
    ps = PointSet([0.0, 1.0, 0.0], [0.0, 0.0, 1.0])
    assert len(ps) == ps.size == 3
    assert ps.crs == "EPSG:4326"
    assert ps.lon.dtype == np.float64 and ps.xyz.shape == (3, 3)
    assert np.allclose(np.linalg.norm(ps.xyz, axis=1), 1.0)
    assert ps.lam[1] == math.pi / 180
    assert ps.diameter_m == pytest.approx(haversine_m(1, 0, 0, 1), rel=0)
    assert ps.diameter_km == ps.diameter_m / 1000
    for arr in (ps.lon, ps.lat, ps.lam, ps.phi, ps.xyz):
        assert not arr.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 1.0


def test_input_not_aliased():
    lon = np.array([0.0, 1.0])
    ps = PointSet(lon, [0.0, 0.0])
    lon[0] = 5.0
    assert ps.lon[0] == 0.0


def test_immutable():
    ps = PointSet([0.0, 1.0], [0.0, 0.0])
    with pytest.raises(AttributeError, match="immutable"):
        ps.foo = 1
    with pytest.raises(AttributeError, match="immutable"):
        ps._lon = None


@pytest.mark.parametrize(
    ("lon", "lat", "exc", "match"),
    [
        ([0.0], [0.0], ValueError, "at least 2 points"),
        ([0.0, 1.0], [0.0], ValueError, "same length"),
        ([0.0, np.nan], [0.0, 0.0], ValueError, "'lon'.*position 1 is not"),
        ([0.0, 1.0], [0.0, np.inf], ValueError, "'lat'.*position 1"),
        ([0.0, 1.0], [0.0, 90.5], ValueError, r"'lat'.*\[-90, 90\]; position 1"),
        ([0.0, 180.1], [0.0, 0.0], ValueError, r"'lon'.*\[-180, 180\]; position 1"),
        (["a", "b"], [0.0, 0.0], TypeError, "'lon'.*real numbers"),
        ([0.0, 1.0], [None, 0.0], TypeError, "'lat'.*real numbers"),
        ([[0.0, 1.0]], [[0.0, 0.0]], ValueError, "1-D"),
    ],
)
def test_validation(lon, lat, exc, match):
    with pytest.raises(exc, match=match):
        PointSet(lon, lat)


def test_duplicates_warn_and_dedupe():
    lon = [0.0, 1.0, 0.0, 180.0, -180.0, 10.0, 20.0]
    lat = [0.0, 0.0, 0.0, 5.0, 5.0, 90.0, 90.0]
    with pytest.warns(GeoLDPWarning, match=r"3 point\(s\) within 1 mm"):
        ps = PointSet(lon, lat)
    assert ps.size == 7
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dd = PointSet(lon, lat, deduplicate=True)
    assert dd.lon.tolist() == [0.0, 1.0, 180.0, 10.0]
    # 0.5 mm apart is a duplicate, 2 mm is not
    off = 0.5e-3 / 111_194.93
    with pytest.warns(GeoLDPWarning, match="1 point"):
        PointSet([0.0, off, 1.0], [0.0, 0.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PointSet([0.0, 4 * off, 1.0], [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="2 distinct locations"):
        PointSet([0.0, 0.0], [1.0, 1.0], deduplicate=True)
    with pytest.raises(TypeError, match="deduplicate"):
        PointSet([0.0, 1.0], [1.0, 1.0], deduplicate="yes")


def _random_sets():
    rng = np.random.default_rng(0)
    yield "city", rng.uniform(116.2, 116.6, 600), rng.uniform(39.7, 40.1, 600)
    yield "country", rng.uniform(-5, 10, 700), rng.uniform(40, 52, 700)
    lon = rng.uniform(-180, 180, 800)
    yield "globe", lon, np.degrees(np.arcsin(rng.uniform(-1, 1, 800)))
    yield "antimeridian", (rng.uniform(175, 185, 500) + 180) % 360 - 180, rng.uniform(-5, 5, 500)
    yield "north pole", rng.uniform(-180, 180, 500), rng.uniform(88, 90, 500)
    yield (
        "both poles",
        rng.uniform(-180, 180, 500),
        np.r_[rng.uniform(88, 90, 250), rng.uniform(-90, -88, 250)],
    )
    t = np.sort(rng.uniform(0, 1, 400))
    yield "collinear meridian", np.full(400, 7.0), -60 + 120 * t
    yield "equator band", rng.uniform(-180, 180, 600), rng.uniform(-0.5, 0.5, 600)
    a = np.linspace(0, 2 * np.pi, 500, endpoint=False)
    yield "circle", 0.2 * np.cos(a), 0.2 * np.sin(a)
    yield "hemisphere", rng.uniform(-180, 180, 600), np.degrees(np.arcsin(rng.uniform(0, 1, 600)))
    yield "wide box", rng.uniform(-120, 120, 600), rng.uniform(-60, 60, 600)
    yield (
        "near antipodal",
        np.r_[0.0, 180.0 - 1e-7, rng.uniform(-1, 1, 400)],
        np.r_[0.0, 0.0, rng.uniform(-1, 1, 400)],
    )


@pytest.mark.parametrize(
    ("name", "lon", "lat"), list(_random_sets()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_diameter_equals_brute_force(name, lon, lat):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GeoLDPWarning)
        ps = PointSet(lon, lat)
    assert ps.size > 256  # exercises the pruned path, not the small-set brute force
    assert ps.diameter_m == brute_diameter(ps)


def test_diameter_small_sets():
    assert PointSet([0.0, 0.0], [0.0, 1.0]).diameter_m == haversine_m(0, 0, 0, 1)
    assert PointSet([0.0, 180.0], [0.0, 0.0]).diameter_m == pytest.approx(math.pi * EARTH_RADIUS_M, rel=1e-15)
    rng = np.random.default_rng(3)
    lon, lat = rng.uniform(-10, 10, 50), rng.uniform(-10, 10, 50)
    ps = PointSet(lon, lat)
    d = haversine_m(lon[:, None], lat[:, None], lon[None, :], lat[None, :])
    assert ps.diameter_m == d.max()


def test_diameter_cached_and_pickled():
    rng = np.random.default_rng(4)
    ps = PointSet(rng.uniform(0, 1, 300), rng.uniform(0, 1, 300))
    d = ps.diameter_m
    assert ps.diameter_m is d or ps.diameter_m == d
    ps2 = pickle.loads(pickle.dumps(ps))
    assert ps2 == ps and hash(ps2) == hash(ps)
    assert ps2.diameter_m == d
    assert not ps2.lon.flags.writeable
    assert ps != PointSet(rng.uniform(0, 1, 300), rng.uniform(0, 1, 300))
    assert ps.__eq__("x") is NotImplemented


def test_nearest_matches_brute_force():
    rng = np.random.default_rng(5)
    lon = np.r_[rng.uniform(-180, 180, 300), 179.99, -179.99, 0.0]
    lat = np.r_[rng.uniform(-90, 90, 300), 0.0, 10.0, 90.0]
    ps = PointSet(lon, lat)
    assert not ps.has_tree
    qlon = np.r_[rng.uniform(-180, 180, 500), -180.0, 180.0, 123.0]
    qlat = np.r_[rng.uniform(-90, 90, 500), 0.0, 10.0, 89.999]
    idx, dist = ps.nearest(qlon, qlat)
    assert ps.has_tree
    assert idx.dtype == np.int64 and dist.dtype == np.float64
    full = haversine_m(qlon[:, None], qlat[:, None], lon[None, :], lat[None, :])
    assert np.allclose(dist, full.min(axis=1), rtol=1e-9, atol=1e-6)
    assert np.array_equal(dist, full[np.arange(qlon.size), idx])
    assert idx[-3] == 300 and idx[-2] == 301 and idx[-1] == 302
    i0, d0 = ps.nearest(lon[7], lat[7])
    assert int(i0) == 7 and float(d0) == 0.0
    with pytest.raises(ValueError, match="finite"):
        ps.nearest([np.nan], [0.0])


def test_within_distances_bearings():
    rng = np.random.default_rng(6)
    lon, lat = rng.uniform(116.2, 116.6, 200), rng.uniform(39.7, 40.1, 200)
    ps = PointSet(lon, lat)
    d = ps.distances_m(3)
    assert np.array_equal(d, haversine_m(lon[3], lat[3], lon, lat))
    assert d[3] == 0.0
    w = ps.within(3, 5.0)
    assert w.dtype == np.int64 and np.all(np.diff(w) > 0)
    assert np.array_equal(w, np.flatnonzero(d <= 5000.0))
    assert ps.within(3, 0).tolist() == [3]
    t = np.array([5, 1, 9])
    assert np.array_equal(ps.distances_m(3, t), d[t])
    b = ps.bearings(3, t)
    assert np.array_equal(b, bearing(lon[3], lat[3], lon[t], lat[t]))
    assert ps.bearings(3)[3] == 0.0
    with pytest.raises(ValueError, match="'index' parameter"):
        ps.distances_m(200)
    with pytest.raises(TypeError, match="'index' parameter"):
        ps.distances_m(1.0)
    with pytest.raises(ValueError, match="'targets'"):
        ps.bearings(0, [0, 999])
    with pytest.raises(ValueError, match="radius_km"):
        ps.within(0, -1.0)


def test_geopandas_interop():
    gs = gpd.GeoSeries(gpd.points_from_xy([116.3, 116.4, 116.5], [39.9, 39.95, 40.0]), crs="EPSG:4326")
    ps = PointSet.from_geoseries(gs)
    assert ps.lon.tolist() == [116.3, 116.4, 116.5]
    proj = gs.to_crs("EPSG:3857")
    ps2 = PointSet.from_geodataframe(gpd.GeoDataFrame({"a": [1, 2, 3]}, geometry=proj))
    assert np.allclose(ps2.lon, ps.lon, atol=1e-9) and np.allclose(ps2.lat, ps.lat, atol=1e-9)
    out = ps.to_geoseries()
    assert out.crs == "EPSG:4326" and out.x.tolist() == ps.lon.tolist()
    assert ps.to_geoseries(crs="EPSG:3857").crs == "EPSG:3857"
    with pytest.raises(ValueError, match=r"no CRS\. Use `set_crs\(\)`"):
        PointSet.from_geoseries(gpd.GeoSeries(gpd.points_from_xy([0, 1], [0, 1])))
    lines = gpd.GeoSeries([shapely.Point(0, 0), shapely.LineString([(0, 0), (1, 1)])], crs="EPSG:4326")
    with pytest.raises(TypeError, match="position 1 is a LineString"):
        PointSet.from_geoseries(lines)
    with pytest.raises(ValueError, match="position 1 is missing or empty"):
        PointSet.from_geoseries(gpd.GeoSeries([shapely.Point(0, 0), None], crs="EPSG:4326"))
    with pytest.raises(TypeError, match="GeoDataFrame"):
        PointSet.from_geodataframe(gs)


@pytest.mark.slow
def test_diameter_large_sets_fast():
    rng = np.random.default_rng(7)
    for scale in (0.05, 5.0, 60.0, 180.0):
        m = 100_000
        ps = PointSet(
            rng.uniform(-scale, scale, m),
            rng.uniform(-min(scale, 90) / 2, min(scale, 90) / 2, m),
            deduplicate=True,
        )
        sub = np.sort(rng.choice(ps.size, 2000, replace=False))
        lower = float(_kernels.max_pairwise_brute(ps.lam[sub], ps.phi[sub]))
        assert ps.diameter_m >= lower


def _brute_nearest(ps, qlon, qlat):
    """Reference rule: argmin of the haversine kernel over all points, first minimum (lowest index)."""
    from geoldp._core import kernels as _kernels
    from geoldp._core.geo import to_radians

    lam, phi = to_radians(np.asarray(qlon, float), np.asarray(qlat, float))
    out = np.empty(lam.shape[0], dtype=np.int64)
    d = np.empty(ps.size)
    for t in range(lam.shape[0]):
        _kernels.haversine_from_one(lam[t], phi[t], ps.lam, ps.phi, d)
        out[t] = int(np.argmin(d))
    return out


def test_nearest_is_exact_haversine_nearest_on_hard_cases():
    rng = np.random.default_rng(21)
    # a dense city, a polar cap, points on both sides of the antimeridian, exact duplicates (ties)
    lon = np.r_[
        rng.uniform(-87.8, -87.5, 400),
        rng.uniform(-180, 180, 100),
        rng.uniform(179.9, 180, 50),
        rng.uniform(-180, -179.9, 50),
        [10.0, 10.0, -170.0, -170.0, 0.0, 90.0, 180.0],
    ]
    lat = np.r_[
        rng.uniform(41.7, 42.0, 400),
        rng.uniform(89.0, 90.0, 100),
        rng.uniform(-1, 1, 50),
        rng.uniform(-1, 1, 50),
        [5.0, 5.0, -5.0, -5.0, 90.0, 90.0, -90.0],
    ]
    with pytest.warns(Warning, match="duplicate"):
        ps = PointSet(lon, lat)
    qlon = np.r_[
        rng.uniform(-87.8, -87.5, 500),
        rng.uniform(-180, 180, 300),
        rng.choice([-180.0, 180.0], 100),
        lon[:50] + 180.0 - 360.0 * (lon[:50] > 0),  # antipodes of city points: near-antipodal queries
        [10.0, -170.0, 0.0, 45.0, -180.0],
    ]
    qlat = np.r_[
        rng.uniform(41.7, 42.0, 500),
        rng.uniform(85.0, 90.0, 300),
        rng.uniform(-1, 1, 100),
        -lat[:50],
        [5.0, -5.0, 90.0, -90.0, 0.0],
    ]
    idx, dist = ps.nearest(qlon, qlat)
    want = _brute_nearest(ps, qlon, qlat)
    assert np.array_equal(idx, want)
    # ties between exact duplicates go to the lower index
    assert idx[-5] == 600 and idx[-4] == 602
    # the second copy of a duplicated point maps to the first
    assert int(ps.nearest(10.0, 5.0)[0]) == 600


def test_nearest_of_public_points_is_exact_without_the_tree():
    rng = np.random.default_rng(5)
    # a city, the poles at several longitudes (distinct points, a few nanometres apart), the antimeridian
    lon = np.r_[rng.uniform(-87.8, -87.5, 300), [0.0, 90.0, -45.0, 0.0, 180.0, -180.0, 179.0]]
    lat = np.r_[rng.uniform(41.7, 42.0, 300), [90.0, 90.0, 90.0, -90.0, 0.0, 0.0, -3.0]]
    with pytest.warns(Warning, match="duplicate"):  # the poles' points (and ±180°) are within 1 mm
        ps = PointSet(lon, lat)
    ps.nearest(lon[:0], lat[:0])  # builds every structure (even for an empty query)
    assert ps.has_tree
    tree = ps._tree

    class NoTree:
        def query(self, *args, **kwargs):
            raise AssertionError("the tree was queried")

    object.__setattr__(ps, "_tree", NoTree())
    idx, dist = ps.nearest(lon, lat)
    assert np.array_equal(idx, np.arange(ps.size)) and not dist.any()  # every query an exact, unique match
    object.__setattr__(ps, "_tree", tree)
    # mixed with other queries, the answer is still the brute-force rule
    qlon = np.r_[lon, rng.uniform(-87.8, -87.5, 200)]
    qlat = np.r_[lat, rng.uniform(41.7, 42.0, 200)]
    assert np.array_equal(ps.nearest(qlon, qlat)[0], _brute_nearest(ps, qlon, qlat))


@pytest.mark.parametrize(
    "lon, lat",
    [
        ([10.0, 10.0, 11.0, 12.0], [5.0, 5.0, 6.0, 7.0]),  # exact duplicates: the lowest index wins
        ([0.0, 1e-200, 3.0, 4.0], [0.0, 0.0, 1.0, 2.0]),  # kernel distance 0 between distinct coordinates
        ([0.0, -0.0, 3.0, 4.0], [0.0, 0.0, 1.0, 2.0]),  # signed zeros are the same point
    ],
)
def test_nearest_exact_lookup_leaves_coincident_points_to_the_tie_rule(lon, lat):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the duplicate warning of the first case
        ps = PointSet(np.array(lon), np.array(lat))
    idx, _ = ps.nearest(np.array(lon), np.array(lat))
    assert np.array_equal(idx, _brute_nearest(ps, lon, lat))
    assert idx[1] == 0


def test_nearest_ties_on_a_meridian_go_to_the_lowest_index():
    # two points at exactly the same distance from a query on the equator (mirror images in latitude)
    lon = np.array([5.0, 0.0, 0.0, 3.0])
    lat = np.array([0.0, 1.0, -1.0, 50.0])
    ps = PointSet(lon, lat)
    idx, _ = ps.nearest([0.0, 0.0], [0.0, 0.0])
    assert idx.tolist() == [1, 1]
    ps2 = PointSet(lon[[0, 2, 1, 3]], lat[[0, 2, 1, 3]])
    assert int(ps2.nearest(0.0, 0.0)[0]) == 1
    assert np.array_equal(ps2.nearest([0.0], [0.0])[0], _brute_nearest(ps2, [0.0], [0.0]))


def test_exact_lookup_with_colliding_keys_is_still_the_nearest(monkeypatch):
    from geoldp._core import pointset

    # a weak key (the longitude's bits alone): points on one meridian collide, queries off P share keys
    monkeypatch.setattr(pointset, "_exact_keys", lambda lam, phi: (lam + 0.0).view(np.uint64).copy())
    lon = np.array([10.0, 10.0, 11.0, 12.0, 12.5])
    lat = np.array([5.0, 6.0, 6.0, 7.0, 7.0])
    ps = PointSet(lon, lat)
    qlon = np.r_[lon, 10.0, 12.0, 12.5]
    qlat = np.r_[lat, 5.4, 6.0, 8.0]  # same keys as points of P, other coordinates
    idx, dist = ps.nearest(qlon, qlat)
    assert np.array_equal(idx, _brute_nearest(ps, qlon, qlat))
    assert np.array_equal(idx[:5], np.arange(5)) and not dist[:5].any()


@pytest.mark.parametrize(
    "first_use",
    [
        lambda ps: ps.nearest([], []),
        lambda ps: ps.nearest(ps.lon[:3], ps.lat[:3]),  # exact matches: no tree needed
        lambda ps: ps.nearest(ps.lon[:3] + 1e-4, ps.lat[:3]),  # off P
        lambda ps: ps.diameter_m,
        lambda ps: pytest.raises(ValueError, ps.nearest, [np.nan], [0.0]),  # even a refused query
    ],
    ids=["empty", "on-P", "off-P", "diameter", "refused"],
)
def test_first_use_builds_every_structure_whatever_it_asks(first_use):
    from scipy.spatial import cKDTree

    rng = np.random.default_rng(9)
    lon, lat = rng.uniform(-87.8, -87.5, 400), rng.uniform(41.7, 42.0, 400)
    ref = PointSet(lon, lat)
    ps = PointSet(lon, lat)
    assert not ps.has_tree and ps._diameter is None and ps._exact is None
    first_use(ps)
    assert ps.has_tree and isinstance(ps._tree, cKDTree)
    assert ps._diameter == brute_diameter(ref)
    keys, index = ps._exact
    assert np.array_equal(np.sort(index), np.arange(400))  # no duplicates: every point is in the table
    ps.nearest(lon + 1e-3, lat)
    assert ps._exact is not None and ps._exact[0] is keys  # nothing is rebuilt or added later


def test_one_kdtree_per_point_set():
    # the mechanisms' fast index queries P's own tree (built from P alone), never a second one
    from geoldp.trajectory._fast.grid import get_index

    ps = PointSet(np.linspace(116.3, 116.4, 50), np.linspace(39.9, 40.0, 50) ** 1.0001)
    assert not ps.has_tree
    tree = ps.tree
    assert ps.has_tree and get_index(ps).kdtree() is tree
    np.testing.assert_array_equal(tree.data, ps.xyz)


def _duplicates_by_kdtree(lam, phi, xyz):
    """The oracle: every pair within 1 mm (k-d tree candidates, haversine decides), later point marked."""
    from scipy.spatial import cKDTree

    from geoldp._core import kernels as _kernels
    from geoldp._core.pointset import DUPLICATE_TOLERANCE_M, EARTH_RADIUS_M

    pairs = cKDTree(xyz * EARTH_RADIUS_M).query_pairs(r=DUPLICATE_TOLERANCE_M * 1.01, output_type="ndarray")
    dup = np.zeros(lam.shape[0], dtype=bool)
    if pairs.size:
        i, j = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
        d = np.empty(i.shape[0])
        _kernels.haversine_rad_many(lam[i], phi[i], lam[j], phi[j], d)
        close = d < DUPLICATE_TOLERANCE_M
        dup[np.maximum(i[close], j[close])] = True
    return dup


@pytest.mark.parametrize("case", range(40))
def test_duplicate_mask_matches_a_kdtree_oracle(case):
    from geoldp._core.geo import to_radians
    from geoldp._core.pointset import _duplicate_mask, _unit_vectors

    rng = np.random.default_rng(case)
    n = int(rng.integers(2, 2000))
    if case % 3 == 0:  # a 10 m box: many pairs near the tolerance
        lon, lat = rng.uniform(10, 10.0001, n), rng.uniform(50, 50.0001, n)
    else:
        lon, lat = rng.uniform(-180, 180, n), rng.uniform(-90, 90, n)
    k = int(rng.integers(0, n))
    at, src = rng.integers(0, n, k), rng.integers(0, n, k)
    jitter = 10 ** rng.uniform(-12, -7, k)[:, None] * rng.normal(size=(k, 2))  # 0.1 µm ... 1 m
    lon[at] = np.clip(lon[src] + jitter[:, 0], -180, 180)
    lat[at] = np.clip(lat[src] + jitter[:, 1], -90, 90)
    if case % 5 == 0:  # the poles (any longitude), ±180°, and exact copies
        lat[:4], lon[:4] = 90.0, rng.uniform(-180, 180, 4)
        lon[4:6], lat[4:6] = [180.0, -180.0], 0.0
        lon[6:9], lat[6:9] = lon[10], lat[10]
    lam, phi = to_radians(lon, lat)
    xyz = _unit_vectors(lam, phi)
    expected = _duplicates_by_kdtree(lam, phi, xyz)
    assert np.array_equal(_duplicate_mask(lam, phi, xyz), expected)
    if case == 0:
        assert expected.sum() > 10  # the planted pairs are there


def test_duplicate_mask_many_copies_and_a_crowded_millimetre():
    from geoldp._core.geo import to_radians
    from geoldp._core.pointset import _duplicate_mask, _unit_vectors

    rng = np.random.default_rng(3)
    # 20,000 copies of one location: linear, not 2·10^8 pairs; the first copy is kept
    lon = np.r_[5.0, np.full(20_000, 1.0), 7.0]
    lat = np.r_[5.0, np.full(20_000, 2.0), 7.0]
    lam, phi = to_radians(lon, lat)
    dup = _duplicate_mask(lam, phi, _unit_vectors(lam, phi))
    assert np.flatnonzero(~dup).tolist() == [0, 1, 20_001]
    # 1,500 distinct locations within about 1 mm: one crowded cube, exact all the same
    lon, lat = 10 + rng.uniform(0, 1e-8, 1500), 50 + rng.uniform(0, 1e-8, 1500)
    lam, phi = to_radians(lon, lat)
    xyz = _unit_vectors(lam, phi)
    assert np.array_equal(_duplicate_mask(lam, phi, xyz), _duplicates_by_kdtree(lam, phi, xyz))


# ----------------------------------------------- duplicate points: the warning names a call that exists


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
