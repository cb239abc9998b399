from __future__ import annotations

import numpy as np
import pytest
import shapely

from geoldp.datasets import synthetic_city, synthetic_city_arrays


@pytest.fixture(scope="module")
def city():
    return synthetic_city(500, 300, seed=3)


def _xy_km(lon, lat, lat0):
    return (lon * np.cos(np.radians(lat0)) * 111.19492664455873, lat * 111.19492664455873)


def test_deterministic_and_seed_dependent(city):
    points, trips = city
    points2, trips2 = synthetic_city(500, 300, seed=3)
    assert points.equals(points2)
    assert trips.geometry.geom_equals_exact(trips2.geometry, tolerance=0.0).all()
    points3, _ = synthetic_city(500, 300, seed=4)
    assert not points.geometry.geom_equals_exact(points3.geometry, tolerance=0.0).all()


def test_frames_shape_crs_columns(city):
    points, trips = city
    assert points.crs.to_epsg() == 4326 and trips.crs.to_epsg() == 4326
    assert len(points) == 500 and len(trips) == 300
    assert list(points.columns) == ["point_id", "kind", "geometry"]
    assert list(trips.columns) == ["trip_id", "n_points", "geometry"]
    assert (points.geom_type == "Point").all() and (trips.geom_type == "LineString").all()
    assert set(points["kind"]) <= {"centre", "hub", "road", "suburb"}
    assert (points["point_id"].to_numpy() == np.arange(500)).all()
    n = shapely.get_num_coordinates(trips.geometry.values)
    assert (n == trips["n_points"].to_numpy()).all()
    assert n.min() >= 2 and n.max() <= 8


def test_vertices_are_public_points_without_consecutive_repeats(city):
    points, trips = city
    lon, lat, flat, offsets, _ = synthetic_city_arrays(500, 300, seed=3)
    coords = shapely.get_coordinates(trips.geometry.values)
    assert np.array_equal(coords[:, 0], lon[flat]) and np.array_equal(coords[:, 1], lat[flat])
    assert np.array_equal(points.geometry.x.to_numpy(), lon)
    starts = np.zeros(len(flat), dtype=bool)
    starts[offsets[:-1]] = True
    assert not np.any((np.diff(flat) == 0) & ~starts[1:])


def test_points_distinct_and_inside_extent():
    lon, lat, *_ = synthetic_city_arrays(3000, 0, extent_km=10.0, center=(2.35, 48.85), seed=1)
    x, y = _xy_km(lon - 2.35, lat - 48.85, 48.85)
    assert np.abs(x).max() <= 5.0 + 1e-6 and np.abs(y).max() <= 5.0 + 1e-6
    from scipy.spatial import cKDTree

    d, _ = cKDTree(np.column_stack([x, y])).query(np.column_stack([x, y]), k=2)
    assert d[:, 1].min() > 1e-6  # > 1 mm


def test_points_are_clustered_not_uniform():
    lon, lat, *_ = synthetic_city_arrays(5000, 0, extent_km=20.0, seed=2)
    x, y = _xy_km(lon - lon.mean(), lat - lat.mean(), lat.mean())
    central = np.mean((np.abs(x) < 2.5) & (np.abs(y) < 2.5))
    # A uniform layout would put 25/400 = 6 % of the points in the central 5 x 5 km square.
    assert central > 0.2


def test_trips_progress_towards_destination():
    lon, lat, flat, offsets, _ = synthetic_city_arrays(2000, 1000, min_len=5, max_len=8, seed=5)
    x, y = _xy_km(lon, lat, lat.mean())
    toward = []
    for i in range(len(offsets) - 1):
        t = flat[offsets[i] : offsets[i + 1]]
        d = np.hypot(x[t] - x[t[-1]], y[t] - y[t[-1]])
        toward.append(np.mean(np.diff(d) < 0))
    # Uniform noise would move towards the destination about half the time.
    assert np.mean(toward) > 0.8
    lengths = np.diff(offsets)
    assert lengths.min() == 5 and lengths.max() == 8


def test_jitter_moves_trip_vertices_only():
    p0, t0 = synthetic_city(200, 20, seed=7)
    p1, t1 = synthetic_city(200, 20, seed=7, jitter_m=5.0)
    assert p0.equals(p1)
    c0 = shapely.get_coordinates(t0.geometry.values)
    c1 = shapely.get_coordinates(t1.geometry.values)
    assert c0.shape == c1.shape and not np.array_equal(c0, c1)
    dy_m = (c1[:, 1] - c0[:, 1]) * 111194.9
    assert 2.0 < dy_m.std() < 8.0


def test_small_and_empty_cases():
    points, trips = synthetic_city(2, 5, max_len=6, seed=0)
    assert len(points) == 2 and len(trips) == 5
    flat, offsets = synthetic_city_arrays(2, 5, max_len=6)[2:4]
    assert flat.min() >= 0 and flat.max() <= 1 and len(offsets) == 6
    _, empty = synthetic_city(10, 0)
    assert len(empty) == 0 and empty.crs.to_epsg() == 4326


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"n_points": 1}, ValueError, "'n_points' parameter of synthetic_city"),
        ({"n_points": 2.5}, TypeError, "'n_points' parameter of synthetic_city"),
        ({"n_trips": -1}, ValueError, "'n_trips' parameter"),
        ({"min_len": 1}, ValueError, "'min_len' parameter"),
        ({"min_len": 4, "max_len": 3}, ValueError, "'max_len' parameter"),
        ({"extent_km": 0.0}, ValueError, "'extent_km' parameter"),
        ({"extent_km": float("nan")}, ValueError, "'extent_km' parameter"),
        ({"center": (0.0, 95.0)}, ValueError, "'center' parameter"),
        ({"center": 3}, TypeError, "'center' parameter"),
        ({"jitter_m": -1.0}, ValueError, "'jitter_m' parameter"),
        ({"n_points": True}, TypeError, "'n_points' parameter"),
    ],
)
def test_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        synthetic_city(**kwargs)
