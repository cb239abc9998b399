"""Geometry kernels and wrappers: ALGORITHM §2 and §12 vectors, TESTING N2–N4."""

from __future__ import annotations

import math

import numpy as np
import pytest

from geoldp._core import kernels as _kernels
from geoldp._core.geo import EARTH_RADIUS_M, bearing, haversine_m, sector_index, to_radians

# (a, b, d [m], theta [rad], centred g=2/4/6/12, floor g=2/4/6/12) from ALGORITHM §12
VECTORS = [
    ((0, 0), (0, 1), 111194.926645, 0.0, (0, 0, 0, 0), (0, 0, 0, 0)),
    ((0, 0), (1, 0), 111194.926645, 1.570796326795, (1, 1, 2, 3), (0, 1, 1, 3)),
    ((179.5, 0), (-179.5, 0), 111194.926645, 1.570796326795, (1, 1, 2, 3), (0, 1, 1, 3)),
    ((-87.6298, 41.8781), (-87.6232, 41.8827), 748.458655, 0.818348049665, (0, 1, 1, 2), (0, 0, 0, 1)),
    ((-123.2460, 49.2606), (-123.2510, 49.2640), 523.999229, 5.518380831236, (0, 0, 5, 11), (1, 3, 5, 10)),
    ((0, 89.9), (180, 89.9), 22238.985329, 0.0, (0, 0, 0, 0), (0, 0, 0, 0)),
    ((0, 0), (-1, -1), 157249.381272, 3.926914658766, (1, 2, 4, 7), (1, 2, 3, 7)),
]


@pytest.mark.parametrize(("a", "b", "d", "theta", "centred", "floor"), VECTORS)
def test_vectors(a, b, d, theta, centred, floor):
    assert haversine_m(*a, *b) == pytest.approx(d, rel=1e-9)
    th = bearing(*a, *b)
    assert abs(th - theta) <= 1e-12
    for g, c, f in zip((2, 4, 6, 12), centred, floor, strict=True):
        assert sector_index(th, g) == c
        assert sector_index(th, g, convention="floor") == f


def test_radius_and_conversion():
    assert EARTH_RADIUS_M == 6_371_000.0
    lam, phi = to_radians([180.0, -90.0], [90.0, 0.0])
    assert lam.tolist() == [math.pi, -math.pi / 2]
    assert phi.tolist() == [math.pi / 2, 0.0]


def test_antipode_and_near_antipodal():
    assert haversine_m(0, 0, 180, 0) == pytest.approx(20015086.796021, rel=1e-9)
    assert haversine_m(0, 0, 180, 0) == pytest.approx(math.pi * EARTH_RADIUS_M, rel=1e-15)
    rng = np.random.default_rng(1)
    lon = rng.uniform(-180, 180, 10_000)
    lat = rng.uniform(-90, 90, 10_000)
    alon = np.where(lon > 0, lon - 180, lon + 180) + rng.normal(0, 1e-9, lon.size)
    alat = -lat + rng.normal(0, 1e-9, lon.size)
    d = haversine_m(lon, lat, np.clip(alon, -180, 180), np.clip(alat, -90, 90))
    assert np.all(np.isfinite(d))
    assert np.all(d <= math.pi * EARTH_RADIUS_M)


def test_symmetric_bitwise_and_zero():
    rng = np.random.default_rng(2)
    lon1, lon2 = rng.uniform(-180, 180, (2, 10_000))
    lat1, lat2 = rng.uniform(-90, 90, (2, 10_000))
    d12 = haversine_m(lon1, lat1, lon2, lat2)
    d21 = haversine_m(lon2, lat2, lon1, lat1)
    assert np.array_equal(d12, d21)
    assert np.all(haversine_m(lon1, lat1, lon1, lat1) == 0.0)


def test_antimeridian_is_short():
    assert haversine_m(179.9, 10, -179.9, 10) < 25_000


def test_broadcasting_and_scalars():
    d = haversine_m(0, 0, [0, 1, 2], 0)
    assert d.shape == (3,)
    assert d[0] == 0.0
    assert isinstance(haversine_m(0, 0, 1, 1), float)
    grid = bearing(np.zeros((2, 1)), 0, np.array([[1.0, -1.0]]), 0)
    assert grid.shape == (2, 2)
    assert np.allclose(grid, [[math.pi / 2, 3 * math.pi / 2]] * 2, atol=1e-12)


def test_bearing_range_and_cardinal():
    rng = np.random.default_rng(3)
    n = 100_000
    lon1, lon2 = rng.uniform(-180, 180, (2, n))
    lat1, lat2 = rng.uniform(-90, 90, (2, n))
    # poles, antimeridian neighbours, identical points and near-wrap directions
    lat1[:1000] = 90.0
    lat2[1000:2000] = -90.0
    lon2[2000:3000] = np.clip(-lon1[2000:3000], -180, 180)
    lon2[3000:4000], lat2[3000:4000] = lon1[3000:4000], lat1[3000:4000]
    lon2[4000:5000] = lon1[4000:5000] - 1e-12
    lat2[4000:5000] = lat1[4000:5000] + 1e-3
    th = bearing(lon1, lat1, np.clip(lon2, -180, 180), np.clip(lat2, -90, 90))
    assert np.all((th >= 0) & (th < 2 * math.pi))
    assert np.all(th[3000:4000] == 0.0)
    assert bearing(0, 0, 1, 0) == pytest.approx(math.pi / 2, abs=1e-12)
    assert bearing(0, 0, -1, 0) == pytest.approx(3 * math.pi / 2, abs=1e-12)
    assert bearing(0, 0, 0, -1) == pytest.approx(math.pi, abs=1e-12)
    assert bearing(0, 0, 0, 1) == 0.0


@pytest.mark.parametrize("g", [2, 4, 6, 12])
def test_sector_boundaries(g):
    width = 2 * math.pi / g
    for d in range(g):
        # centred: sector d starts at (2d - 1)π/g; floor: at 2dπ/g
        for conv, start in (("centred", (d - 0.5) * width), ("floor", d * width)):
            theta = start % (2 * math.pi)
            s = sector_index(theta, g, convention=conv)
            expected = d % g
            # at the exact boundary the normative float expression decides; the ulp neighbours are unambiguous
            assert s in (expected, (expected - 1) % g)
            up = math.nextafter(theta, 4 * math.pi)
            if up < 2 * math.pi:
                assert sector_index(up + 1e-12, g, convention=conv) == expected
            if theta > 0:
                assert (
                    sector_index(math.nextafter(theta, 0) - 1e-12, g, convention=conv) == (expected - 1) % g
                )
    # exactly representable boundaries go to the higher sector
    assert sector_index(math.pi, 2, convention="floor") == 1
    assert sector_index(math.pi / 2, 2) == 1
    assert sector_index(math.pi / 2, 6) == 2
    top = math.nextafter(2 * math.pi, 0)
    assert sector_index(top, g) == 0
    assert sector_index(top, g, convention="floor") == g - 1
    assert sector_index(0.0, g) == 0 and sector_index(0.0, g, convention="floor") == 0


def test_sector_matches_formula():
    rng = np.random.default_rng(4)
    theta = rng.uniform(0, 2 * math.pi, 10_000)
    for g in (2, 4, 6, 12):
        c = sector_index(theta, g)
        f = sector_index(theta, g, convention="floor")
        assert np.array_equal(c, np.floor(theta * g / (2 * math.pi) + 0.5).astype(int) % g)
        assert np.array_equal(f, np.floor(theta * g / (2 * math.pi)).astype(int) % g)
        assert _kernels.sector(float(theta[0]), g, True) == c[0]


def test_origin_is_sector_zero_and_partition():
    rng = np.random.default_rng(5)
    lon = rng.uniform(116.3, 116.5, 40)
    lat = rng.uniform(39.8, 40.0, 40)
    for o in range(5):
        th = bearing(lon[o], lat[o], lon, lat)
        for g in (2, 4, 6, 12):
            for conv in ("centred", "floor"):
                s = sector_index(th, g, convention=conv)
                assert s[o] == 0
                sets = [set(np.flatnonzero(s == d)) for d in range(g)]
                assert set().union(*sets) == set(range(40))
                assert sum(len(x) for x in sets) == 40


def test_sector_index_validation():
    with pytest.raises(ValueError, match="convention"):
        sector_index(0.1, 4, convention="north")
    with pytest.raises(ValueError, match="'g' parameter"):
        sector_index(0.1, 1)
    with pytest.raises(TypeError, match="'g' parameter"):
        sector_index(0.1, 4.0)


def test_kernels_match_wrappers():
    lam, phi = to_radians([10.0, 11.0], [50.0, 51.0])
    assert _kernels.haversine_rad(lam[0], phi[0], lam[1], phi[1]) == haversine_m(10, 50, 11, 51)
    assert _kernels.bearing_rad(lam[0], phi[0], lam[1], phi[1]) == bearing(10, 50, 11, 51)
