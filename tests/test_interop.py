"""MovingPandas and trackintel interop: into geoldp and back; times only with an explicit argument."""

from __future__ import annotations

import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from conftest import LINE_COORDS, SECRET_TIME

import geoldp


def _import_quietly(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # movingpandas warns about its own optional extras on import
        return pytest.importorskip(name)


@pytest.fixture
def mpd():
    return _import_quietly("movingpandas")


@pytest.fixture
def ti():
    return _import_quietly("trackintel")


def _points_frame():
    """Point fixes of the first three toy trajectories, with per-vertex times and an object id."""
    rows = []
    for tid, coords in enumerate(LINE_COORDS[:3]):
        for k, (x, y) in enumerate(coords):
            rows.append((f"t{tid}", f"car{tid % 2}", SECRET_TIME + pd.Timedelta(minutes=10 * tid + k), x, y))
    ids, obj, t, x, y = zip(*rows, strict=True)
    return gpd.GeoDataFrame(
        {"tid": ids, "obj": obj, "t": list(t)}, geometry=gpd.points_from_xy(x, y), crs="EPSG:4326"
    )


@pytest.fixture
def tc(mpd):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # movingpandas on pandas 3 (sort_index inplace)
        warnings.simplefilter("ignore", FutureWarning)
        return mpd.TrajectoryCollection(_points_frame(), "tid", t="t", obj_id_col="obj")


# ------------------------------------------------------------------------------------------------------
# MovingPandas


def test_from_movingpandas_one_linestring_per_trajectory(tc):
    trips = geoldp.from_movingpandas(tc)
    assert list(trips.index) == ["t0", "t1", "t2"] and trips.index.name == "traj_id"
    assert list(trips["obj_id"]) == ["car0", "car1", "car0"]
    assert trips.crs.equals("EPSG:4326") and set(trips.geom_type) == {"LineString"}
    for line, coords in zip(trips.geometry, LINE_COORDS[:3], strict=True):
        np.testing.assert_array_equal(shapely.get_coordinates(line), np.asarray(coords))
    assert "t" not in trips.columns  # times are left behind


def test_from_movingpandas_single_trajectory(tc):
    one = geoldp.from_movingpandas(tc.trajectories[1])
    assert list(one.index) == ["t1"]


def test_round_trip_with_placeholder_times(tc, mpd, city_points):
    released = geoldp.from_movingpandas(tc).ldp.perturb(city_points, epsilon=4.0, rng=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no PrivacyWarning without times
        back = geoldp.to_movingpandas(released)
    assert isinstance(back, mpd.TrajectoryCollection)
    assert [t.id for t in back.trajectories] == ["t0", "t1", "t2"]
    for traj, line in zip(back.trajectories, released.geometry, strict=True):
        np.testing.assert_array_equal(
            shapely.get_coordinates(traj.to_linestring()), shapely.get_coordinates(line)
        )
        t = traj.df.index
        assert t[0] == geoldp.interop.PLACEHOLDER_START  # no information from the original times
        assert (np.diff(t.asi8) == 1_000_000_000).all() or (np.diff(t.as_unit("s").asi8) == 1).all()
        assert SECRET_TIME.year not in set(t.year)


def test_reattaching_times_warns_and_uses_them(tc, city_points):
    released = geoldp.from_movingpandas(tc).ldp.perturb(city_points, epsilon=4.0, rng=3)
    with pytest.warns(geoldp.PrivacyWarning, match="NOT protected"):
        back = geoldp.to_movingpandas(released, times=tc)
    for traj, orig in zip(back.trajectories, tc.trajectories, strict=True):
        assert list(traj.df.index) == list(orig.df.index)
    mapping = {t.id: list(t.df.index) for t in tc.trajectories}
    with pytest.warns(geoldp.PrivacyWarning):
        again = geoldp.to_movingpandas(released, times=mapping)
    assert [list(t.df.index) for t in again.trajectories] == list(mapping.values())


def test_to_movingpandas_errors(tc, city_points):
    released = geoldp.from_movingpandas(tc).ldp.perturb(city_points, epsilon=4.0, rng=3)
    with pytest.raises(ValueError, match="position 1"), pytest.warns(geoldp.PrivacyWarning):
        geoldp.to_movingpandas(
            released, times={"t0": list(tc.trajectories[0].df.index)[:3], "t1": [SECRET_TIME]}
        )
    with pytest.raises(ValueError, match="position 0"), pytest.warns(geoldp.PrivacyWarning):
        geoldp.to_movingpandas(released, times={})
    with pytest.raises(TypeError, match="times"):
        geoldp.to_movingpandas(released, times=[1, 2])
    with pytest.raises(TypeError, match="LineString"):
        geoldp.to_movingpandas(gpd.GeoDataFrame(geometry=gpd.points_from_xy([1, 2], [3, 4]), crs="EPSG:4326"))
    with pytest.raises(TypeError, match="GeoDataFrame"):
        geoldp.to_movingpandas(pd.DataFrame({"a": [1]}))
    with pytest.raises(TypeError, match="TrajectoryCollection"):
        geoldp.from_movingpandas(released)


def test_obj_id_as_user_col_with_an_accountant(tc, city_points):
    trips = geoldp.from_movingpandas(tc)
    acc = geoldp.BudgetAccountant(8.0)
    trips.ldp.perturb(city_points, epsilon=2.0, accountant=acc, user_col="obj_id", rng=3)
    assert acc.spent == {"car0": 4.0, "car1": 2.0}


# ------------------------------------------------------------------------------------------------------
# trackintel


@pytest.fixture
def triplegs(ti):
    frame = gpd.GeoDataFrame(
        {
            "user_id": [7, 7, 8],
            "started_at": pd.DatetimeIndex(
                [SECRET_TIME + pd.Timedelta(hours=h) for h in range(3)]
            ).tz_localize("UTC"),
            "finished_at": pd.DatetimeIndex(
                [SECRET_TIME + pd.Timedelta(hours=h, minutes=30) for h in range(3)]
            ).tz_localize("UTC"),
        },
        geometry=[shapely.LineString(c) for c in LINE_COORDS[:3]],
        index=pd.Index([11, 12, 13], name="id"),
        crs="EPSG:4326",
    )
    return ti.Triplegs(frame)


def test_from_trackintel_keeps_ids_and_users(triplegs):
    trips = geoldp.from_trackintel(triplegs)
    assert list(trips.index) == [11, 12, 13] and trips.index.name == "id"
    assert list(trips["user_id"]) == [7, 7, 8]
    assert list(trips.columns) == ["user_id", "geometry"]  # times left behind
    assert trips.geometry.equals(triplegs.geometry)
    trips["user_id"] = 0
    assert list(triplegs["user_id"]) == [7, 7, 8]  # input not mutated


def test_trackintel_round_trip(triplegs, ti, city_points):
    acc = geoldp.BudgetAccountant(10.0)
    trips = geoldp.from_trackintel(triplegs)
    released = trips.ldp.perturb(city_points, epsilon=2.0, accountant=acc, user_col="user_id", rng=4)
    assert acc.spent == {7: 4.0, 8: 2.0}
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        back = geoldp.to_trackintel(released)
    assert not [w for w in rec if issubclass(w.category, geoldp.PrivacyWarning)]
    assert isinstance(back, ti.Triplegs)
    assert list(back.index) == [11, 12, 13]
    assert list(back["user_id"]) == [11, 12, 13]  # one pseudo-user per tripleg: users not linked
    assert (back["started_at"] == geoldp.interop.PLACEHOLDER_START.tz_localize("UTC")).all()
    assert back.geometry.equals(released.geometry)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        timed = geoldp.to_trackintel(released, times=triplegs)
    assert any(
        issubclass(w.category, geoldp.PrivacyWarning) and "NOT protected" in str(w.message) for w in rec
    )
    assert timed["started_at"].equals(triplegs["started_at"])
    assert timed["finished_at"].equals(triplegs["finished_at"])


def test_to_trackintel_errors_and_degenerate_lines(triplegs, city_points):
    released = geoldp.from_trackintel(triplegs).ldp.perturb(city_points, epsilon=2.0, rng=4)
    with pytest.raises(TypeError, match="started_at"):
        geoldp.to_trackintel(released, times=pd.DataFrame({"x": [1]}))
    with pytest.raises(ValueError, match="position 2"):
        geoldp.to_trackintel(released, times=triplegs.iloc[:2])
    stuck = released.copy()
    p = shapely.get_coordinates(stuck.geometry.iloc[0])[0]
    stuck.loc[11, "geometry"] = shapely.LineString([p, p])
    n_bad = int((~stuck.geometry.is_valid).sum())
    with pytest.warns(geoldp.GeoLDPWarning, match=f"{n_bad} released tripleg"):
        back = geoldp.to_trackintel(stuck)
    assert len(back) == 3 and n_bad >= 1
    with pytest.raises(ValueError, match="user_id"):
        geoldp.from_trackintel(gpd.GeoDataFrame(geometry=released.geometry))


@pytest.mark.parametrize(
    ("module", "call"),
    [
        ("movingpandas", lambda: geoldp.from_movingpandas(None)),
        ("movingpandas", lambda: geoldp.to_movingpandas(None)),
        ("trackintel", lambda: geoldp.from_trackintel(None)),
        ("trackintel", lambda: geoldp.to_trackintel(None)),
    ],
)
def test_missing_optional_dependency_says_what_to_install(monkeypatch, module, call):
    import sys

    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    with pytest.raises(ImportError, match=rf"geoldp\[{module}\]"):
        call()
