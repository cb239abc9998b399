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

    def boom(*args, **kwargs):  # os.replace(src, dst, *, src_dir_fd=..., dst_dir_fd=...)
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        acc.save(path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["acc.json"]  # no temp file left


def _signed(data):
    """``data`` with a matching checksum, so that only the other checks can refuse it."""
    from geoldp import accounting

    return json.dumps({**data, "sha256": accounting._digest(data)})


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        json.dumps({"format": "other"}),
        _signed({"format": "geoldp.BudgetAccountant", "version": 2, "total_epsilon": 1.0, "spent": [["a"]]}),
        _signed(
            {"format": "geoldp.BudgetAccountant", "version": 2, "total_epsilon": 1.0, "spent": [["a", "-1"]]}
        ),
        _signed({"format": "geoldp.BudgetAccountant", "version": 3, "total_epsilon": 1.0, "spent": []}),
        b"\xff\xfe not utf-8",
        "[" * 100_000,
    ],
)
def test_load_rejects_bad_files(tmp_path, content):
    path = tmp_path / "acc.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(ValueError, match="acc.json"):
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
    with pytest.raises(ValueError, match="Row position 2 .* missing user id"):
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
    assert isinstance(again.attrs["geoldp"], geoldp._core.ledger.ReleaseRecord)  # a later concat still warns
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


# ------------------------------------------------------------------------------------------------------
# one user is one user: the canonical user key


@pytest.mark.parametrize(
    "same",
    [7, "7", np.int64(7), np.uint8(7), np.str_("7"), "007", "+7"],
    ids=["int", "str", "int64", "uint8", "np.str_", "leading-zeros", "plus"],
)
def test_an_int_and_its_decimal_string_are_one_user(same):
    acc = BudgetAccountant(1.0)
    acc.charge({7: 0.75})
    if same == "+7":  # a sign is not a digit: "+7" is a string id of its own
        acc.charge({same: 0.75})
        assert len(acc) == 2
        return
    with pytest.raises(geoldp.BudgetError):
        acc.charge({same: 0.75})
    assert acc.spent_by(same) == 0.75 and acc.remaining(same) == 0.25
    with pytest.raises(geoldp.BudgetError):
        acc.check({same: 0.5})
    assert acc.spent == {7: 0.75} and len(acc) == 1


def test_one_mapping_with_both_kinds_sums_them():
    acc = BudgetAccountant(1.0)
    with pytest.raises(geoldp.BudgetError):
        acc.charge({7: 0.75, "7": 0.75})
    acc.charge({-3: 0.25, "-3": 0.25, "x7": 0.5})
    assert acc.spent == {-3: 0.5, "x7": 0.5}


def test_user_key_survives_save_and_load(tmp_path):
    acc = BudgetAccountant(1.0)
    acc.charge({"7": 0.75, "007a": 0.5})
    acc.save(tmp_path / "acc.json")
    back = BudgetAccountant.load(tmp_path / "acc.json")
    with pytest.raises(geoldp.BudgetError):
        back.charge({7: 0.75})
    assert back.spent == {7: 0.75, "007a": 0.5}


def test_user_col_of_mixed_kinds_charges_one_user(trips, city_points):
    acc = geoldp.BudgetAccountant(4.0)
    first = trips.iloc[[0]].copy()
    first["user"] = [7]  # an int column
    first.ldp.perturb(city_points, epsilon=3.0, accountant=acc, user_col="user", rng=1)
    again = trips.iloc[[1]].copy()
    again["user"] = ["7"]  # the same person from a str column
    with pytest.raises(geoldp.BudgetError):
        again.ldp.perturb(city_points, epsilon=3.0, accountant=acc, user_col="user", rng=1)
    # one object column holding both kinds: one user with two trajectories
    both = trips.iloc[[2, 3]].copy()
    both["user"] = pd.Series([8, "8"], index=both.index, dtype=object)
    both.ldp.perturb(city_points, epsilon=1.5, accountant=acc, user_col="user", rng=1)
    assert acc.spent == {7: 3.0, 8: 3.0}


# ------------------------------------------------------------------------------------------------------
# threads: every check-and-spend is atomic


def _race(n_threads, work):
    import sys
    import threading

    barrier = threading.Barrier(n_threads)
    results = []

    def run():
        barrier.wait()
        try:
            work()
            results.append(True)
        except geoldp.BudgetError:
            results.append(False)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: widens any race
    try:
        threads = [threading.Thread(target=run) for _ in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    return results


def test_concurrent_charges_never_overspend():
    users = range(300)  # many users per charge: a long window between the check and the spend
    for _ in range(20):
        acc = BudgetAccountant(1.0)
        ok = _race(16, lambda acc=acc: acc.charge({u: 0.25 for u in users}))
        assert sum(ok) == 4  # exactly 4 charges of 0.25 fit in 1.0
        assert max(acc.spent.values()) == 1.0


@pytest.fixture
def slow_check(monkeypatch):
    """The budget check yields to other threads once it has passed: any gap before the spend shows."""
    import time

    check = BudgetAccountant._refuse

    def slow(self, costs, **kwargs):
        check(self, costs, **kwargs)
        time.sleep(0.005)

    monkeypatch.setattr(BudgetAccountant, "_refuse", slow)


def test_check_and_spend_is_atomic(slow_check):
    acc = BudgetAccountant(1.0)
    ok = _race(8, lambda: acc.charge({"u": 0.25}))
    assert sum(ok) == 4 and acc.spent == {"u": 1.0}


def test_concurrent_commits_never_overspend(slow_check):
    from geoldp.accounting import charge_release

    frame = pd.DataFrame({"user": ["u", "v", "u"]})
    acc = BudgetAccountant(1.0)
    pending = [charge_release(acc, frame, "user", 0.25) for _ in range(8)]  # all checked before any commit
    it = iter(pending)
    ok = _race(8, lambda: next(it).commit())
    assert sum(ok) == 2 and acc.spent == {"u": 1.0, "v": 0.5}


def test_accountant_pickles_and_copies():
    import copy

    acc = BudgetAccountant(2.0)
    acc.charge({"a": 0.5})
    for back in (pickle.loads(pickle.dumps(acc)), copy.deepcopy(acc)):
        back.charge({"a": 1.5})
        assert back.spent == {"a": 2.0} and acc.spent == {"a": 0.5}


# ------------------------------------------------------------------------------------------------------
# the file: integrity checked on load


def _saved(tmp_path, acc=None):
    if acc is None:
        acc = BudgetAccountant(1.0)
        acc.charge({"a": 0.5, 7: 0.25})
    path = tmp_path / "acc.json"
    acc.save(path)
    return path, json.loads(path.read_text())


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(total_epsilon=10.0),  # a raised total
        lambda d: d["spent"].pop(0),  # a deleted entry
        lambda d: d["spent"].__setitem__(0, ["a", "1/4"]),  # a lowered spend
        lambda d: d["spent"].append(["b", "1/2"]),  # an added entry
    ],
    ids=["raised-total", "deleted-entry", "lowered-spend", "added-entry"],
)
def test_load_refuses_an_edited_file(tmp_path, edit):
    path, data = _saved(tmp_path)
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="checksum") as err:
        BudgetAccountant.load(path)
    assert "acc.json" in str(err.value)


@pytest.mark.parametrize(
    ("spent", "match"),
    [
        ([["a", "3/2"]], "above the total"),
        ([["a", "-1/2"]], "negative|not a valid"),
        ([["a", "1/2"], ["a", "1/4"]], "repeats a user"),
        ([[7, "1/2"], ["7", "1/4"]], "repeats a user"),
    ],
)
def test_load_refuses_inconsistent_spends_even_with_a_matching_checksum(tmp_path, spent, match):
    path, data = _saved(tmp_path)
    data["spent"] = spent
    path.write_text(_signed(data))  # a matching checksum: only the consistency checks can refuse it
    with pytest.raises(ValueError, match=match):
        BudgetAccountant.load(path)


@pytest.mark.parametrize("total", [float("inf"), float("nan"), -1.0, True, "1"])
def test_load_refuses_a_bad_total(tmp_path, total):
    path, data = _saved(tmp_path)
    data["total_epsilon"] = total
    path.write_text(_signed(data))
    with pytest.raises(ValueError, match="total_epsilon"):
        BudgetAccountant.load(path)


def test_load_of_a_file_without_checksum_warns(tmp_path):
    path, data = _saved(tmp_path)
    old = {"format": data["format"], "version": 1, "total_epsilon": 1.0, "spent": [["a", "1/2"]]}
    path.write_text(json.dumps(old))
    with pytest.warns(geoldp.GeoLDPWarning, match="no checksum"):
        back = BudgetAccountant.load(path)
    assert back.spent == {"a": 0.5}
    old["spent"] = [["a", "3/2"]]  # the consistency checks still apply
    path.write_text(json.dumps(old))
    with pytest.warns(geoldp.GeoLDPWarning), pytest.raises(ValueError, match="above the total"):
        BudgetAccountant.load(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_load_refuses_a_fifo_without_blocking(tmp_path):
    import threading

    fifo = tmp_path / "acc.json"
    os.mkfifo(fifo)
    out = []

    def run():
        try:
            BudgetAccountant.load(fifo)
        except ValueError as err:
            out.append(str(err))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(5.0)
    if t.is_alive():  # unblock the reader so that the test process can end
        with open(fifo, "w"):
            pass
        t.join(5.0)
        pytest.fail("BudgetAccountant.load blocked on a FIFO")
    assert out and "regular file" in out[0]


def test_load_refuses_a_directory_and_a_huge_file(tmp_path):
    with pytest.raises(ValueError, match="regular file"):
        BudgetAccountant.load(tmp_path)
    path, _ = _saved(tmp_path)
    with pytest.raises(ValueError, match="max_bytes"):
        BudgetAccountant.load(path, max_bytes=10)
    assert BudgetAccountant.load(path, max_bytes=10_000).spent == {"a": 0.5, 7: 0.25}


def test_from_dict_checks_the_record_too():
    acc = BudgetAccountant(2.0)
    acc.charge({"a": 0.5, 7: 1.0})
    data = acc.to_dict()
    assert BudgetAccountant.from_dict(data).spent == acc.spent  # in memory, no file: the same checks
    with pytest.raises(ValueError, match="checksum"):
        BudgetAccountant.from_dict({**data, "total_epsilon": 4.0})
    with pytest.raises(ValueError, match="checksum"):
        BudgetAccountant.from_dict({**data, "spent": [[{1, 2}, "1/2"]]})  # not JSON: no checksum matches
    with pytest.raises(ValueError, match="version"):
        BudgetAccountant.from_dict({**data, "version": True})


def test_the_release_pipeline_keeps_refuse_draw_commit_in_order():
    # every driver (perturb, report, their Dask forms) spends through one Spend: no key before the
    # accountant's check, no ledger (and no commit) before the key
    from geoldp._core.randomness import resolve_rng
    from geoldp._release import Spend

    frame = pd.DataFrame({"user": ["a", "a", "b"]})
    acc = BudgetAccountant(2.0)
    spend = Spend(frame, acc, "user", caller="C")
    with pytest.raises(RuntimeError, match="order"):
        spend.draw(resolve_rng(1))  # before the check
    spend.refuse(frame, 1.0)
    with pytest.raises(RuntimeError, match="order"):
        spend.finish({"mechanism": "tp", "epsilon": 1.0, "rng": "seeded"})  # before the draw
    assert acc.spent == {}  # checked, not charged
    assert spend.draw(resolve_rng(1)).shape == (8,)
    ledger = spend.finish({"mechanism": "tp", "epsilon": 1.0, "rng": "seeded"})
    assert acc.spent == {"a": 2.0, "b": 1.0} and ledger.accounting["user_col"] == "user"
    with pytest.raises(geoldp.BudgetError, match="1 of the 2 user"):  # refused before any draw
        Spend(frame, acc, "user", caller="C").refuse(frame, 0.5)
    with pytest.raises(ValueError, match="'user_col' parameter of C names a column"):  # no row read
        Spend(frame.iloc[:0], acc, "nobody", caller="C")
