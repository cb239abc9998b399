"""The accountant kept in a store (BudgetAccountant.open) and every CLI --accountant on it.

- Python: a store accountant behaves as the in-memory one (keys, exact sums, refusals), a release id is
  charged once, a JSON accountant is migrated once (the file kept) and a changed one refused.
- CLI: an accountant that is the output, its sidecar or --kept-rows is refused (exit status 2, nothing
  changed); a link is followed; concurrent `geoldp perturb`/`geoldp report` runs sharing one accountant
  never overspend (exactly one of them succeeds where the budget fits one); a run killed between the
  charge and the write leaves a pending charge that `geoldp accountant reconcile` settles.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import geopandas as gpd
import numpy as np
import pytest
from shapely.geometry import LineString

import geoldp
from geoldp._core.errors import BudgetError, GeoLDPWarning
from geoldp.cli import main

ROOT = Path(__file__).resolve().parents[1]
AREA = "--area=116.30,39.90,116.40,40.00"


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), **extra}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def trips_file(tmp_path_factory) -> Path:
    """5 users with one short trip each, inside AREA."""
    rng = np.random.default_rng(5)
    lines = [LineString(rng.uniform((116.31, 39.91), (116.39, 39.99), size=(4, 2))) for _ in range(5)]
    path = tmp_path_factory.mktemp("trips") / "trips.gpkg"
    gpd.GeoDataFrame({"user": [f"u{i}" for i in range(5)]}, geometry=lines, crs="EPSG:4326").to_file(path)
    lon, lat = np.meshgrid(np.linspace(116.31, 116.39, 5), np.linspace(39.91, 39.99, 5))
    P = gpd.GeoDataFrame(geometry=gpd.points_from_xy(lon.ravel(), lat.ravel()), crs="EPSG:4326")
    P.to_file(path.with_name("P.gpkg"))
    return path


def _perturb(trips: Path, acc: Path | str, out: Path, *extra: str) -> list[str]:
    return ["perturb", str(trips), "--grid", "2000", AREA, "--epsilon", "4", "--user-col", "user",
            "--accountant", str(acc), *extra, "-o", str(out)]  # fmt: skip


def _report(trips: Path, acc: Path | str, out: Path, *extra: str) -> list[str]:
    points = str(trips.with_name("P.gpkg"))
    return ["report", str(trips), "--points", points, "--cell-km", "3", "--epsilon", "4", "--user-col",
            "user", "--accountant", str(acc), *extra, "-o", str(out)]  # fmt: skip


# ------------------------------------------------------------------------------------------------------
# the Python accountant on a store


def test_a_stored_accountant_charges_as_the_in_memory_one(store_target):
    acc = geoldp.BudgetAccountant.open(store_target, total_epsilon=2.0)
    mem = geoldp.BudgetAccountant(2.0)
    for a in (acc, mem):
        a.charge({"a": 1.5, 7: 0.5}, release_id="r1")
        a.charge({"a": 1.5, 7: 0.5}, release_id="r1")  # the same release again: charged once
        with pytest.raises(BudgetError, match="1 of the 2 user"):
            a.charge({"a": 1.0, "007": 0.5})
        a.charge({"7": 1.5})  # "7", 7 and "007" are one user
    assert acc.spent == mem.spent == {"a": 1.5, 7: 2.0}
    assert acc.remaining("007") == mem.remaining(7) == 0.0 and len(acc) == 2
    assert "store=" in repr(acc) and "'a'" not in repr(acc)
    again = geoldp.BudgetAccountant.open(store_target)
    assert again.spent == acc.spent and again.total_epsilon == 2.0
    with pytest.raises(ValueError, match="not 3"):
        geoldp.BudgetAccountant.open(store_target, total_epsilon=3.0)


def test_releases_charge_a_stored_accountant_once_each(tmp_path, city_points_gdf, toy_lines):
    trips = toy_lines.assign(user=["a", "b", "a", "c"][: len(toy_lines)])
    acc = geoldp.BudgetAccountant.open(tmp_path / "acc.gpkg", total_epsilon=4.0)
    r = trips.ldp.perturb(city_points_gdf, epsilon=1.0, accountant=acc, user_col="user", rng=1)
    assert acc.spent_by("a") == 2.0 and acc.pending() == []
    with pytest.raises(BudgetError):
        trips.ldp.perturb(city_points_gdf, epsilon=1.5, accountant=acc, user_col="user", rng=2)
    # a seeded release's id is a digest of the release: the same release again is not charged again
    same = trips.ldp.perturb(city_points_gdf, epsilon=0.5, accountant=acc, user_col="user", rng=3)
    twice = trips.ldp.perturb(city_points_gdf, epsilon=0.5, accountant=acc, user_col="user", rng=3)
    assert same.attrs["geoldp"]["release_id"] == twice.attrs["geoldp"]["release_id"]
    assert acc.spent_by("a") == 3.0 and r.attrs["geoldp"]["release_id"] != same.attrs["geoldp"]["release_id"]


def test_a_json_accountant_is_migrated_once_and_kept(tmp_path):
    old = geoldp.BudgetAccountant(8.0)
    old.charge({"000": 4.0, "u": 1.5})
    path = tmp_path / "budget.json"
    old.save(path)
    before = _digest(path)
    with pytest.warns(GeoLDPWarning, match="migrated to the store"):
        acc = geoldp.BudgetAccountant.open(path)
    assert acc.location == str(tmp_path / "budget.gpkg") and acc.migrated_from == str(path)
    assert acc.spent == {0: 4.0, "u": 1.5} and _digest(path) == before
    acc.charge({0: 4.0})
    assert geoldp.BudgetAccountant.open(path).spent_by(0) == 8.0  # no second migration, no warning
    assert geoldp.BudgetAccountant.load(path).spent_by(0) == 4.0  # the JSON file is never charged
    # a JSON file changed after its migration (an old geoldp charged it) is refused, not merged
    old.charge({"u": 1.0})
    old.save(path)
    with pytest.raises(ValueError, match="changed after it was migrated"):
        geoldp.BudgetAccountant.open(path)
    # a JSON name that does not exist names its GeoPackage
    acc2 = geoldp.BudgetAccountant.open(tmp_path / "new.json", total_epsilon=1.0)
    assert acc2.location == str(tmp_path / "new.gpkg") and not (tmp_path / "new.json").exists()


# ------------------------------------------------------------------------------------------------------
# the CLI's --accountant


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_an_accountant_that_is_a_file_the_command_writes_is_refused(tmp_path, trips_file, capsys):
    acc = tmp_path / "acc.gpkg"
    code, _, err = _run(_perturb(trips_file, acc, tmp_path / "r.gpkg", "--total-epsilon", "9"), capsys)
    assert code == 0, err
    kept = ["--max-per-user", "1", "--kept-rows", str(acc), "--overwrite"]
    side = tmp_path / "r.gpkg.ledger.json"
    cases = [
        (_perturb(trips_file, acc, acc, "--overwrite"), "is the output"),  # -o F --accountant F
        (_perturb(trips_file, side, tmp_path / "r.gpkg", "--overwrite"), "sidecar"),
        (_perturb(trips_file, acc, tmp_path / "r2.gpkg", *kept), "kept"),
        (_report(trips_file, tmp_path / "t.csv.ledger.json", tmp_path / "t.csv"), "sidecar"),
        (_perturb(trips_file, trips_file, tmp_path / "r3.gpkg", "--total-epsilon", "9"), "TRIPS"),
    ]
    files = [acc, tmp_path / "r.gpkg", tmp_path / "r.gpkg.ledger.json", trips_file]
    before = {p: _digest(p) for p in files}
    for argv, role in cases:
        code, _, err = _run(argv, capsys)
        assert code == 2 and "--accountant" in err and role in err, (argv, err)
        assert err.count("error:") == 1
    assert {p: _digest(p) for p in files} == before  # nothing changed
    assert not (tmp_path / "r2.gpkg").exists() and not (tmp_path / "t.csv").exists()
    # a link to the accountant is refused the same way when it is the output, and followed otherwise
    link = tmp_path / "link.gpkg"
    link.symlink_to(acc)
    code, _, err = _run(_perturb(trips_file, link, acc, "--overwrite"), capsys)
    assert code == 2 and "is the output" in err
    code, _, err = _run(_perturb(trips_file, link, tmp_path / "r4.gpkg"), capsys)
    assert code == 0, err
    assert link.is_symlink() and geoldp.BudgetAccountant.open(acc).spent_by("u0") == 8.0


def _race(argvs: list[list[str]]) -> list[subprocess.CompletedProcess[str]]:
    """Start the commands together (separate processes); return them all, finished."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "geoldp", *argv],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    done = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


def _overspend_trials(tmp_path: Path, trips: Path, command, trials: int, sizes: tuple[int, ...]) -> None:
    """``trials`` races of 2, 3, 4 ... commands sharing one new accountant whose total (4.5) fits one run."""
    for trial in range(trials):
        n = sizes[trial % len(sizes)]
        acc = tmp_path / f"acc{trial}.gpkg"
        geoldp.BudgetAccountant.open(acc, total_epsilon=4.5).close()
        outs = [tmp_path / f"t{trial}-{i}.{'csv' if command is _report else 'gpkg'}" for i in range(n)]
        results = _race([command(trips, acc, out) for out in outs])
        codes = sorted(r.returncode for r in results)
        assert codes == [0] + [1] * (n - 1), [r.stderr for r in results]
        assert all("Traceback" not in r.stderr for r in results)
        assert sum(out.exists() for out in outs) == 1  # only the charged release is written
        stored = geoldp.BudgetAccountant.open(acc)
        assert stored.spent == {f"u{i}": 4.0 for i in range(5)} and stored.pending() == []
        for r in results:
            if r.returncode:
                assert "budget" in r.stderr.lower()


@pytest.mark.parametrize("command", [_perturb, _report], ids=["perturb", "report"])
def test_concurrent_commands_sharing_an_accountant_never_overspend(tmp_path, trips_file, command):
    _overspend_trials(tmp_path, trips_file, command, trials=1, sizes=(3,))


@pytest.mark.slow
@pytest.mark.parametrize("command", [_perturb, _report], ids=["perturb", "report"])
def test_concurrent_commands_never_overspend_in_20_trials(tmp_path, trips_file, command):
    _overspend_trials(tmp_path, trips_file, command, trials=20, sizes=(2, 3, 4))


def _killed_at(point: str, argv: list[str], tmp_path: Path) -> None:
    """Run the command, pausing at the named point of its output's write, and kill -9 it there."""
    resume = tmp_path / "never"
    proc = subprocess.Popen(
        [sys.executable, "-m", "geoldp", *argv],
        env=_env(GEOLDP_TEST_PAUSE=point, GEOLDP_TEST_RESUME=str(resume)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 300
    for line in proc.stderr:
        if line.startswith(f"geoldp-test-pause {point}") or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)


def test_a_kill_between_the_charge_and_the_write_is_reconciled(tmp_path, trips_file, capsys):
    acc = tmp_path / "acc.gpkg"
    geoldp.BudgetAccountant.open(acc, total_epsilon=9.0).close()
    # killed before the output was written: the charge is pending (counted), and refunded only on request
    _killed_at("write", _perturb(trips_file, acc, tmp_path / "lost.gpkg"), tmp_path)
    stored = geoldp.BudgetAccountant.open(acc)
    (pending,) = stored.pending()
    assert pending["output"] == str(tmp_path / "lost.gpkg") and stored.spent_by("u1") == 4.0
    code, out, err = _run(["accountant", "reconcile", acc], capsys)
    assert code == 0 and "kept pending" in out and stored.spent_by("u1") == 4.0
    code, out, err = _run(["accountant", "reconcile", acc, "--refund-missing"], capsys)
    assert code == 0 and "refunded" in out and stored.spent_by("u1") == 0.0 and stored.pending() == []
    # killed once the output was in place: reconcile finds the release id in its ledger and confirms
    _killed_at("done", _perturb(trips_file, acc, tmp_path / "kept.gpkg"), tmp_path)
    assert len(stored.pending()) == 1 and (tmp_path / "kept.gpkg").exists()
    code, out, err = _run(["accountant", "reconcile", acc, "--refund-missing"], capsys)
    assert code == 0 and "confirmed" in out and stored.pending() == [] and stored.spent_by("u1") == 4.0
    code, out, _ = _run(["accountant", "show", acc], capsys)
    assert code == 0 and "users charged: 5" in out and "pending releases: 0" in out and "u1" not in out


def test_the_cli_charges_a_store_on_either_back_end(store_target, tmp_path, trips_file, capsys):
    out = tmp_path / "r.gpkg"
    code, _, err = _run(_perturb(trips_file, store_target, out, "--total-epsilon", "6"), capsys)
    assert code == 0, err
    code, _, err = _run(_perturb(trips_file, store_target, tmp_path / "again.gpkg"), capsys)
    assert code == 1 and "5 of the 5 user(s)" in err and not (tmp_path / "again.gpkg").exists()
    code, shown, _ = _run(["accountant", "show", store_target], capsys)
    assert code == 0 and "users charged: 5" in shown and "pending releases: 0" in shown
    with geoldp.BudgetAccountant.open(store_target) as acc:
        assert acc.spent == {f"u{i}": 4.0 for i in range(5)}


def test_the_cli_migrates_a_json_accountant_and_keeps_the_file(tmp_path, trips_file, capsys):
    old = geoldp.BudgetAccountant(9.0)
    old.charge({"u0": 1.0})
    path = tmp_path / "budget.json"
    old.save(path)
    before = _digest(path)
    code, _, err = _run(_perturb(trips_file, path, tmp_path / "r.gpkg"), capsys)
    assert code == 0, err
    assert "note:" in err and "migrated" in err and str(tmp_path / "budget.gpkg") in err
    assert _digest(path) == before
    with geoldp.BudgetAccountant.open(tmp_path / "budget.gpkg") as acc:
        assert acc.spent_by("u0") == 5.0 and acc.spent_by("u1") == 4.0


def test_a_json_copy_of_a_stored_accountant_never_replaces_the_store(tmp_path):
    with geoldp.BudgetAccountant.open(tmp_path / "acc.gpkg", total_epsilon=2.0) as acc:
        acc.charge({"u": 1.0})
        before = _digest(tmp_path / "acc.gpkg")
        with pytest.raises(ValueError, match="own store"):
            acc.save(tmp_path / "acc.gpkg")
        assert _digest(tmp_path / "acc.gpkg") == before
        acc.save(tmp_path / "copy.json")
    assert geoldp.BudgetAccountant.load(tmp_path / "copy.json").spent == {"u": 1.0}
