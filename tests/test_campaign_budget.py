"""Per-user budget strategies: user_budget="split" and max_per_user (geoldp.budget_strategies)."""

from __future__ import annotations

from fractions import Fraction

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from shapely import LineString, Point

import geoldp
from geoldp import points as gp
from geoldp.budget_strategies import release_parts, select_per_user, split_epsilon

AREA = (116.30, 39.90, 116.40, 39.96)


@pytest.fixture(scope="module")
def P():
    return gp.grid(AREA, 1500)


def _trips(counts, seed=0):
    """LineString trips: user u ("000", "001", ...) has counts[u] trips of 4 vertices."""
    rng = np.random.default_rng(seed)
    lines, users = [], []
    for u, n in enumerate(counts):
        for _ in range(n):
            x = 116.31 + rng.random(4) * 0.08
            y = 39.91 + rng.random(4) * 0.04
            lines.append(LineString(zip(x, y, strict=True)))
            users.append(f"{u:03d}")
    # interleave users, as real files do, and a non-default index
    order = rng.permutation(len(lines))
    frame = gpd.GeoDataFrame(
        {"user": [users[i] for i in order]}, geometry=[lines[i] for i in order], crs="EPSG:4326"
    )
    frame.index = pd.Index(np.arange(len(frame)) * 10 + 3)
    return frame


def test_refusal_names_the_strategies(P):
    trips = _trips([1, 3, 2])
    acc = geoldp.BudgetAccountant(4.0)
    with pytest.raises(geoldp.BudgetError, match="user_budget='split'.*max_per_user=k"):
        trips.ldp.perturb(P, epsilon=4.0, accountant=acc, user_col="user", rng=0)
    assert acc.spent == {}


@pytest.mark.parametrize("k", [1, 2, 3, 7, 10, 49])
def test_split_epsilon_never_sums_past_epsilon(k):
    for eps in (0.1, 1.0, 4.0, 5.3):
        share = split_epsilon(eps, k)
        assert Fraction(share) * k <= Fraction(eps)
        assert share == pytest.approx(eps / k, rel=1e-12)


def test_split_charges_each_user_her_epsilon(P):
    counts = [1, 3, 2, 4]
    trips = _trips(counts)
    acc = geoldp.BudgetAccountant(4.0)
    out = trips.ldp.perturb(P, epsilon=4.0, accountant=acc, user_col="user", user_budget="split", rng=0)
    # every row kept, in order, index kept
    assert out.index.equals(trips.index)
    assert out.crs == trips.crs
    # each row's epsilon is 4 / (trips of its user)
    n_of_user = trips.groupby("user")["user"].transform("size").to_numpy()
    assert np.allclose(out["epsilon"].to_numpy(), 4.0 / n_of_user)
    for _u, spent in acc.spent.items():
        assert spent <= 4.0 and spent == pytest.approx(4.0)
    assert set(acc.spent) == set(range(4))  # "000", "001", ... are charged under their int keys
    led = out.attrs["geoldp"]
    assert led["user_budget"]["strategy"] == "split"
    assert "epsilon" in led["unprotected_columns"]
    text = repr(led)
    assert "'000'" not in text and "001" not in text  # no user id in the ledger
    # the same vertices count and geometry type per row
    assert (out.geometry.count_coordinates() == trips.geometry.count_coordinates()).all()
    # a second split release of the same users is refused (each already spent 4)
    with pytest.raises(geoldp.BudgetError):
        trips.ldp.perturb(P, epsilon=1.0, accountant=acc, user_col="user", user_budget="split", rng=0)


def test_release_parts_feed_the_estimators(P):
    trips = _trips([1, 2, 2])
    out = trips.ldp.perturb(P, epsilon=4.0, user_col="user", user_budget="split", rng=0)
    parts = release_parts(out)
    assert sorted(p.attrs["geoldp"]["epsilon"] for p in parts) == [2.0, 4.0]
    assert sum(len(p) for p in parts) == len(out)
    assert all("epsilon" not in p.columns for p in parts)
    from geoldp import estimate

    with pytest.raises(ValueError, match="release_parts"):
        estimate.visit_counts(out, P, n_boot=0, n_candidates=10, rng=0)
    table = estimate.visit_counts(parts[0], P, n_boot=0, n_candidates=20, n_sims=2, rng=0)
    assert len(table) == len(P)


def _expected_first(trips, k, last=False):
    rank = trips.groupby("user").cumcount(ascending=not last)
    return (rank < k).to_numpy()


@pytest.mark.parametrize("select", ["first", "last"])
def test_max_per_user_keeps_first_or_last(P, select):
    counts = [1, 3, 2, 5]
    trips = _trips(counts)
    acc = geoldp.BudgetAccountant(8.0)
    out = trips.ldp.perturb(
        P, epsilon=4.0, accountant=acc, user_col="user", max_per_user=2, select_trips=select, rng=0
    )
    keep = _expected_first(trips, 2, last=select == "last")
    assert out.index.equals(trips.index[keep])
    assert acc.spent == {u: 4.0 * min(n, 2) for u, n in enumerate(counts)}
    rule = out.attrs["geoldp"]["user_budget"]
    assert rule["max_per_user"] == 2 and rule["select_trips"] == select
    assert out.attrs["geoldp"]["epsilon"] == 4.0
    mask = select_per_user(trips, "user", 2, select_trips=select)
    assert mask.tolist() == keep.tolist()


def test_max_per_user_random_is_uniform_and_seeded(P):
    trips = _trips([4, 1])
    a = select_per_user(trips, "user", 2, select_trips="random", rng=5)
    b = select_per_user(trips, "user", 2, select_trips="random", rng=5)
    assert a.tolist() == b.tolist()
    user0 = (trips["user"] == "000").to_numpy()
    hits = np.zeros(len(trips))
    n = 150
    for seed in range(n):
        m = select_per_user(trips, "user", 2, select_trips="random", rng=seed)
        assert m[user0].sum() == 2 and m[~user0].sum() == 1
        hits += m
    # each of user 0's 4 trips is kept with probability 1/2: binomial(150, 1/2), sd 6.1, 5 sd tolerance
    assert np.all(np.abs(hits[user0] - n / 2) < 5 * np.sqrt(n / 4))


def test_split_and_max_per_user_combine(P):
    trips = _trips([5, 1])
    acc = geoldp.BudgetAccountant(2.0)
    out = trips.ldp.perturb(
        P, epsilon=2.0, accountant=acc, user_col="user", user_budget="split", max_per_user=2, rng=0
    )
    assert len(out) == 3
    assert sorted(out["epsilon"].tolist()) == [1.0, 1.0, 2.0]
    assert acc.spent == {0: 2.0, 1: 2.0}


def test_point_rows_with_traj_id(P):
    rng = np.random.default_rng(1)
    rows = []
    for u, n_traj in ((0, 3), (1, 1)):
        for t in range(n_traj):
            for s in range(3):
                rows.append(
                    (f"u{u}", f"u{u}-t{t}", s, 116.31 + rng.random() * 0.08, 39.91 + rng.random() * 0.04)
                )
    df = pd.DataFrame(rows, columns=["user", "trip", "seq", "lon", "lat"])
    fixes = gpd.GeoDataFrame(
        df, geometry=[Point(x, y) for x, y in zip(df.lon, df.lat, strict=True)], crs=4326
    )
    acc = geoldp.BudgetAccountant(6.0)
    out = fixes.ldp.perturb(
        P,
        epsilon=3.0,
        accountant=acc,
        user_col="user",
        traj_id_col="trip",
        time_col="seq",
        max_per_user=2,
        rng=0,
    )
    assert sorted(out["trip"].unique()) == ["u0-t0", "u0-t1", "u1-t0"]
    assert len(out) == 9
    assert acc.spent == {"u0": 6.0, "u1": 3.0}


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"user_budget": "user"}, ValueError, "user_budget"),
        ({"max_per_user": 0}, ValueError, "max_per_user"),
        ({"max_per_user": 1.5}, TypeError, "max_per_user"),
        ({"select_trips": "last"}, ValueError, "goes with 'max_per_user'"),
        ({"max_per_user": 2, "select_trips": "middle"}, ValueError, "select_trips"),
        ({"max_per_user": 2, "user_col": None}, ValueError, "user_col"),
        ({"max_per_user": 2, "user_col": "nope"}, ValueError, "user_col"),
    ],
)
def test_bad_strategy_parameters(P, kwargs, error, match):
    trips = _trips([2, 1])
    call = {"user_col": "user", **kwargs}
    with pytest.raises(error, match=match):
        trips.ldp.perturb(P, epsilon=1.0, rng=0, **call)


def test_input_not_mutated(P):
    trips = _trips([3, 2])
    before = trips.copy()
    trips.ldp.perturb(P, epsilon=2.0, user_col="user", user_budget="split", max_per_user=2, rng=0)
    pd.testing.assert_frame_equal(trips, before)


def test_split_counts_an_int_id_and_its_string_as_one_user(P):
    # user 7 has two trips, one under the int 7 and one under "007": one user, who shares her ε over both
    trips = _trips([1, 1]).astype({"user": object})
    trips["user"] = [7, "007"]
    acc = geoldp.BudgetAccountant(4.0)
    out = trips.ldp.perturb(
        P, mechanism="pointem", epsilon=4.0, accountant=acc, user_col="user", user_budget="split", rng=0
    )
    assert out["epsilon"].tolist() == [2.0, 2.0]
    assert acc.spent == {7: pytest.approx(4.0)}
