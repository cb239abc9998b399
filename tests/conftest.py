"""Shared fixtures: a tiny deterministic public point set and toy trajectories (all synthetic).

- ``rng``: a fixed-seed NumPy Generator (tests only; never a deployment default).
- ``city_points`` / ``city_points_gdf``: 7 asymmetric public points in Beijing (EPSG:4326).
- ``toy_lines``: LineString trajectories whose vertices lie *off* the public set (so input coordinates can
  never coincide with output coordinates), with distinctive attribute values for no-leak checks.
- ``toy_point_frame``: the same kind of data as Point rows with ``traj_id`` and an unsorted ``time``.
- ``store_target``: where a :mod:`geoldp.store` lives, once a new GeoPackage file and once a new schema of
  the PostgreSQL server named by ``GEOLDP_TEST_POSTGRES_URL`` (``.ci/run`` starts one; skipped without).

ATP's public tables kept on disk (geoldp.trajectory._table_store) go to a temporary folder of the test
session (``GEOLDP_CACHE_DIR``, inherited by the subprocesses the tests start), never the user's cache.

A hypothesis profile ``ci`` (deadline=None, derandomized) is registered and loaded when ``CI`` is set; the
``dev`` profile (deadline=None) otherwise.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid

import numpy as np
import pandas as pd
import pytest

try:  # hypothesis is a test extra; property tests import-skip without it
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "ci",
        deadline=None,
        derandomize=True,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("ci" if os.environ.get("CI") else "dev")
except ImportError:  # pragma: no cover
    pass

_CACHE = tempfile.mkdtemp(prefix="geoldp-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
os.environ["GEOLDP_CACHE_DIR"] = _CACHE

# 7 public points in central Beijing, deliberately asymmetric (no two at equal distance from the centre)
CITY_LON = np.array([116.3200, 116.3475, 116.3890, 116.4052, 116.4310, 116.3611, 116.4605])
CITY_LAT = np.array([39.9010, 39.9262, 39.9135, 39.9489, 39.9041, 39.9733, 39.9357])

# trajectory vertices: near, but never exactly on, public points (offsets of a few hundred metres)
LINE_COORDS = [
    [(116.3213, 39.9031), (116.3482, 39.9249), (116.3871, 39.9152)],
    [(116.4031, 39.9470), (116.4335, 39.9052)],
    [(116.3625, 39.9711), (116.3466, 39.9281), (116.3223, 39.9002), (116.3907, 39.9121)],
    [(116.4589, 39.9372), (116.4589, 39.9372)],  # stationary: two fixes at one venue
]

SECRET_ID = "SECRET-ID"
SECRET_TIME = pd.Timestamp("2001-02-03T04:05:06")


@pytest.fixture
def rng() -> np.random.Generator:
    """A fixed-seed Generator."""
    return np.random.default_rng(20230707)


@pytest.fixture(scope="session")
def city_points():
    """7 public points (a geoldp.PointSet, EPSG:4326)."""
    from geoldp import PointSet

    return PointSet(CITY_LON, CITY_LAT)


@pytest.fixture
def city_points_gdf():
    """The same 7 public points as a GeoDataFrame in EPSG:4326 (a fresh copy per test)."""
    import geopandas as gpd

    return gpd.GeoDataFrame(
        {"name": [f"poi{i}" for i in range(len(CITY_LON))]},
        geometry=gpd.points_from_xy(CITY_LON, CITY_LAT),
        crs="EPSG:4326",
    )


@pytest.fixture
def toy_lines():
    """4 LineString trajectories (EPSG:4326) with a non-default index and attribute columns."""
    import geopandas as gpd
    import shapely

    n = len(LINE_COORDS)
    return gpd.GeoDataFrame(
        {
            "user": [SECRET_ID, "u2", "u3", "u4"],
            "start": [SECRET_TIME + pd.Timedelta(minutes=i) for i in range(n)],
            "speed": [12.3456789, 4.5, 6.25, 0.0],
        },
        geometry=[shapely.LineString(c) for c in LINE_COORDS],
        index=pd.Index([10, 3, 7, 5], name="trip"),
        crs="EPSG:4326",
    )


@pytest.fixture
def toy_point_frame():
    """Point rows of 3 trajectories (ids a, b, c) with an unsorted time column and a duplicate time."""
    import geopandas as gpd

    t0 = SECRET_TIME
    rows = [
        ("b", 2, 116.4031, 39.9470),
        ("a", 1, 116.3482, 39.9249),
        ("a", 0, 116.3213, 39.9031),
        ("c", 0, 116.3625, 39.9711),
        ("b", 0, 116.4335, 39.9052),
        ("a", 2, 116.3871, 39.9152),
        ("b", 2, 116.3223, 39.9002),  # same time as the first "b" row: input order breaks the tie
    ]
    ids, minutes, lon, lat = zip(*rows, strict=True)
    return gpd.GeoDataFrame(
        {
            "traj_id": list(ids),
            "time": [t0 + pd.Timedelta(minutes=m) for m in minutes],
            "speed": np.linspace(1.0, 7.0, len(rows)),
        },
        geometry=gpd.points_from_xy(lon, lat),
        crs="EPSG:4326",
    )


#: The PostgreSQL server of the store tests (``.ci/run`` starts a throwaway one and sets it).
POSTGRES_URL_ENV = "GEOLDP_TEST_POSTGRES_URL"


def postgres_schema_url() -> tuple[str, str]:
    """A new, empty schema on the test server: ``(url with that schema as its search path, schema)``."""
    url = os.environ.get(POSTGRES_URL_ENV)
    if not url:
        pytest.skip(f"no PostgreSQL server: {POSTGRES_URL_ENV} is not set (.ci/run starts one)")
    psycopg = pytest.importorskip("psycopg", reason='needs psycopg: pip install "geoldp[postgres]"')
    schema = "t_" + uuid.uuid4().hex[:16]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}", schema


def drop_postgres_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(os.environ[POSTGRES_URL_ENV], autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def store_target(request, tmp_path):
    """A new store's target: a GeoPackage path, or a PostgreSQL URL on a schema of its own."""
    if request.param == "sqlite":
        yield str(tmp_path / "store.gpkg")
        return
    url, schema = postgres_schema_url()
    yield url
    drop_postgres_schema(schema)
