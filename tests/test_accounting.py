"""geoldp.BudgetAccountant and the ledger of combined releases (pd.concat, merge, join)."""

from __future__ import annotations

import json
import os
import pickle
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from conftest import SECRET_ID

import geoldp
from geoldp.accounting import BudgetAccountant
from geoldp.budget import exact_share


@pytest.fixture
def trips(toy_lines):
    """toy_lines with user "u2" owning two trajectories."""
    out = toy_lines.copy()
    out["user"] = [SECRET_ID, "u2", "u2", "u4"]
    return out


def test_charge_spent_remaining():
    acc = BudgetAccountant(4.0)
    acc.charge({SECRET_ID: 0.5})
    assert SECRET_ID not in repr(acc) and repr(acc) == "BudgetAccountant(total_epsilon=4.0, users=1)"
    acc = BudgetAccountant(4.0)
    acc.charge({"a": 1.0, "b": 3.0})
    acc.charge({"a": 2.5})
    assert acc.spent == {"a": 3.5, "b": 3.0}
    assert acc.remaining("a") == 0.5 and acc.remaining("never") == 4.0
    assert acc.spent_by("b") == 3.0 and len(acc) == 2
    with pytest.raises(geoldp.BudgetError, match="1 of the 2 user"):
        acc.charge({"a": 0.75, "b": 0.5})
    assert acc.spent == {"a": 3.5, "b": 3.0}  # all or nothing


def test_composition_is_exact():
    acc = BudgetAccountant(1.0)
    for _ in range(9):
        acc.charge({"u": 0.1})
    # 10 * Fraction(0.1) > 1 exactly: the tenth float 0.1 does not fit; exact_share(1, 1/10) does
    with pytest.raises(geoldp.BudgetError):
        acc.charge({"u": 0.1})
    acc2 = BudgetAccountant(1.0)
    share = exact_share(1.0, Fraction(1, 10))
    for _ in range(10):
        acc2.charge({"u": share})
    assert acc2.remaining("u") >= 0.0 and acc2.spent_by("u") <= 1.0


@pytest.mark.parametrize(
    ("costs", "exc"),
    [({1.5: 1.0}, TypeError), ({True: 1.0}, TypeError), ({"u": -1.0}, ValueError), ({"u": "1"}, TypeError)],
)
def test_bad_costs(costs, exc):
    with pytest.raises(exc):
        BudgetAccountant(1.0).charge(costs)


def test_bad_total():
    with pytest.raises(ValueError, match="total_epsilon"):
        BudgetAccountant(0.0)
    with pytest.raises(TypeError, match="total_epsilon"):
        BudgetAccountant("4")


def test_save_load_roundtrip(tmp_path):
    acc = BudgetAccountant(4.0)
    acc.charge({"a": 0.1, 7: 1.25, np.int64(8): 2.0})
    path = tmp_path / "acc.json"
    acc.save(path)
    back = BudgetAccountant.load(path)
    assert back.spent == acc.spent and back.total_epsilon == 4.0
    assert set(back.spent) == {"a", 7, 8}
    back.charge({"a": 0.1})
    assert back.spent_by("a") == float(Fraction(0.1) * 2)  # exact sums survive the file
    assert [p.name for p in tmp_path.iterdir()] == ["acc.json"]


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "acc.json"
    BudgetAccountant(4.0).save(path)
    before = path.read_text()
    acc = BudgetAccountant(4.0)
    acc.charge({"a": 1.0})

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        acc.save(path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["acc.json"]  # no temp file left


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        json.dumps({"format": "other"}),
        json.dumps(
            {"format": "geoldp.BudgetAccountant", "version": 1, "total_epsilon": 1.0, "spent": [["a"]]}
        ),
        json.dumps(
            {"format": "geoldp.BudgetAccountant", "version": 1, "total_epsilon": 1.0, "spent": [["a", "-1"]]}
        ),
    ],
)
def test_load_rejects_bad_files(tmp_path, content):
    path = tmp_path / "acc.json"
    path.write_text(content)
    with pytest.raises(ValueError):
        BudgetAccountant.load(path)


# ------------------------------------------------------------------------------------------------------
# perturb(..., accountant=, user_col=)


def test_perturb_charges_every_trajectory_of_each_user(trips, city_points):
    acc = geoldp.BudgetAccountant(4.0)
    out = trips.ldp.perturb(city_points, epsilon=2.0, accountant=acc, user_col="user", rng=1)
    assert acc.spent == {SECRET_ID: 2.0, "u2": 4.0, "u4": 2.0}  # two rows of u2 compose
    assert "user" not in out.columns
    led = out.attrs["geoldp"]["accounting"]
    assert led["user_col"] == "user" and led["total_epsilon_per_user"] == 4.0
    assert SECRET_ID not in json.dumps(out.attrs["geoldp"])


def test_refused_before_any_random_draw(trips, city_points):
    acc = geoldp.BudgetAccountant(4.0)
    trips.ldp.perturb(city_points, epsilon=2.0, accountant=acc, user_col="user", rng=1)
    gen = np.random.default_rng(5)
    state = gen.bit_generator.state
    with pytest.raises(geoldp.BudgetError, match="1 of the 3 user") as err:
        trips.ldp.perturb(city_points, epsilon=2.0, accountant=acc, user_col="user", rng=gen)
    assert gen.bit_generator.state == state  # nothing was drawn
    assert SECRET_ID not in str(err.value) and "u2" not in str(err.value)
    assert acc.spent == {SECRET_ID: 2.0, "u2": 4.0, "u4": 2.0}  # nothing was charged
    # the users with budget left can still be released
    rest = trips[trips["user"] != "u2"]
    rest.ldp.perturb(city_points, epsilon=2.0, accountant=acc, user_col="user", rng=1)
    assert acc.remaining(SECRET_ID) == 0.0 and acc.remaining("u2") == 0.0


def test_failed_release_charges_nothing(trips, city_points):
    acc = geoldp.BudgetAccountant(4.0)
    with pytest.raises(ValueError, match="snap_max_km|farther"):
        trips.ldp.perturb(city_points, epsilon=2.0, accountant=acc, user_col="user", snap_max_km=1e-6)
    assert acc.spent == {}


def test_point_rows_charge_each_trajectory_once(toy_point_frame, city_points):
    frame = toy_point_frame.copy()
    frame["user"] = frame["traj_id"].map({"a": 1, "b": 1, "c": 2})
    acc = geoldp.BudgetAccountant(10.0)
    frame.ldp.perturb(
        city_points,
        epsilon=1.5,
        traj_id_col="traj_id",
        time_col="time",
        accountant=acc,
        user_col="user",
        rng=1,
    )
    assert acc.spent == {1: 3.0, 2: 1.5}  # 7 rows, 3 trajectories


def test_mechanism_object_epsilon_is_charged(trips, city_points):
    acc = geoldp.BudgetAccountant(10.0)
    trips.ldp.perturb(city_points, mechanism=geoldp.TP(epsilon=1.25), accountant=acc, user_col="user", rng=1)
    assert acc.spent_by("u2") == 2.5


def test_accountant_arguments_are_checked(trips, city_points):
    acc = geoldp.BudgetAccountant(4.0)
    with pytest.raises(TypeError, match="accountant"):
        trips.ldp.perturb(city_points, epsilon=1.0, user_col="user")
    with pytest.raises(ValueError, match="user_col"):
        trips.ldp.perturb(city_points, epsilon=1.0, accountant=acc)
    with pytest.raises(ValueError, match="not in the frame"):
        trips.ldp.perturb(city_points, epsilon=1.0, accountant=acc, user_col="nobody")
    bad = trips.copy()
    bad["user"] = [1.0, 2.0, np.nan, 3.0]
    with pytest.raises(ValueError, match="row position 2"):
        bad.ldp.perturb(city_points, epsilon=1.0, accountant=acc, user_col="user")
    bad["user"] = [1.0, 2.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="row position 0"):
        bad.ldp.perturb(city_points, epsilon=1.0, accountant=acc, user_col="user")
    assert acc.spent == {}


# ------------------------------------------------------------------------------------------------------
# the ledger through pandas: correct or removed with a warning, never wrong


def test_each_release_has_a_unique_id(toy_lines, city_points):
    a = toy_lines.ldp.perturb(city_points, epsilon=4.0)
    b = toy_lines.ldp.perturb(city_points, epsilon=4.0)
    assert a.attrs["geoldp"]["release_id"] != b.attrs["geoldp"]["release_id"]  # random UUIDs
    # comparing outside pandas is an ordinary dict comparison, without a warning
    assert (a.attrs["geoldp"] == b.attrs["geoldp"]) is False
    assert a.attrs["geoldp"] != b.attrs["geoldp"]


def test_seeded_release_id_is_a_digest_of_the_release(toy_lines, city_points):
    a = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=1)
    b = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=1)
    assert a.geometry.equals(b.geometry)  # same seed: the very same release ...
    assert a.attrs["geoldp"] == b.attrs["geoldp"]  # ... and the same ledger: reproducible experiments
    seeds = range(1, 9)
    outs = [toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=s) for s in seeds]
    distinct_geoms = {tuple(o.geometry.to_wkb()) for o in outs}
    distinct_ids = {o.attrs["geoldp"]["release_id"] for o in outs}
    assert len(distinct_ids) == len(distinct_geoms) > 1  # an id per distinct release
    other_eps = toy_lines.ldp.perturb(city_points, epsilon=3.0, rng=1)
    assert other_eps.attrs["geoldp"]["release_id"] != a.attrs["geoldp"]["release_id"]


def test_concat_of_different_releases_drops_the_ledger_with_a_warning(toy_lines, city_points):
    a = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=1)
    b = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=2)
    with pytest.warns(geoldp.GeoLDPWarning, match="drops the ledger") as rec:
        both = pd.concat([a, b])
    assert "geoldp" not in both.attrs and len(both) == 2 * len(a)
    assert rec[0].filename == __file__  # points at the user's line, not at pandas'
    c = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=3)
    with pytest.warns(geoldp.GeoLDPWarning, match="drops the ledger"):
        assert "geoldp" not in pd.concat([a, a.iloc[:1], c]).attrs  # one foreign part is enough


def test_join_and_merge_of_different_releases_drop_the_ledger_with_a_warning(toy_lines, city_points):
    a = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=1)
    b = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=2)
    with pytest.warns(geoldp.GeoLDPWarning, match="drops the ledger"):
        joined = a.join(b.geometry.rename("second").to_frame())
    assert "geoldp" not in joined.attrs
    left = a.reset_index()
    right = b.reset_index().rename(columns={"geometry": "g2"})
    with pytest.warns(geoldp.GeoLDPWarning, match="drops the ledger"):
        merged = left.merge(right, on="trip")
    assert "geoldp" not in merged.attrs


def test_parts_of_one_release_keep_its_ledger(toy_lines, city_points):
    a = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = pd.concat([a.iloc[:2], a.iloc[2:]])
        extra = a.join(a.geometry.rename("copy").to_frame())
    assert again.attrs["geoldp"] == a.attrs["geoldp"]  # post-processing of one release: still correct
    assert extra.attrs["geoldp"] == a.attrs["geoldp"]
    assert isinstance(again.attrs["geoldp"], geoldp.accounting.ReleaseLedger)  # a later concat still warns
    b = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=2)
    with pytest.warns(geoldp.GeoLDPWarning, match="drops the ledger"):
        assert "geoldp" not in pd.concat([again, b]).attrs


def test_join_with_a_frame_without_ledger_drops_it(toy_lines, city_points):
    a = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=1)
    plain = pd.DataFrame({"x": range(len(a))}, index=a.index)
    assert "geoldp" not in a.join(plain).attrs  # pandas' rule: removed, never wrong


def test_ledger_is_json_and_pickle_safe(toy_lines, city_points):
    a = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=1)
    text = json.dumps(a.attrs)
    assert json.loads(text)["geoldp"]["release_id"] == a.attrs["geoldp"]["release_id"]
    back = pickle.loads(pickle.dumps(a))
    assert back.attrs["geoldp"] == a.attrs["geoldp"]
    assert isinstance(back.attrs["geoldp"], type(a.attrs["geoldp"]))
