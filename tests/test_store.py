"""The transactional store (geoldp.store): one logic on SQLite (a GeoPackage) and PostgreSQL.

Every test runs on both back ends (``store_target``: the PostgreSQL cases skip without a server). The
concurrency tests start real processes that share one store; the kill test kills a process that charges
in a loop with SIGKILL at seeded random moments and checks the store's invariants after each kill.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from geoldp.store import Report, Store

ROOT = Path(__file__).resolve().parents[1]
CLEAN = {
    "budget_mismatch": 0,
    "overspent": 0,
    "report_without_spend": 0,
    "spend_without_report": 0,
    "duplicate_reports": 0,
}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def test_check_and_spend_is_all_or_nothing_and_idempotent(store_target):
    with Store.open(store_target, total_epsilon=4.5) as store:
        assert store.charge("r1", {"7": Fraction(4), "u": Fraction(1, 2)}) == []
        assert store.charge("r1", {"7": Fraction(4), "u": Fraction(1, 2)}) == []  # sent twice, charged once
        assert store.spent() == {"7": Fraction(4), "u": Fraction(1, 2)}
        # one user over: nothing charged, not even the users who fit
        assert store.charge("r2", {"7": Fraction(1), "u": Fraction(1)}) == ["7"]
        assert store.spent() == {"7": Fraction(4), "u": Fraction(1, 2)}
        with pytest.raises(ValueError, match="charged before with other users or costs"):
            store.charge("r1", {"7": Fraction(1, 2)})
        # exact arithmetic: 4 + 1/2 is exactly the total
        assert store.charge("r3", {"7": Fraction(1, 2)}) == []
        assert store.spent(["7", "nobody"]) == {"7": Fraction(9, 2)}
        assert store.verify() == CLEAN


def test_a_new_store_needs_a_total_and_keeps_it(store_target):
    with pytest.raises(FileNotFoundError):
        Store.open(store_target)
    Store.open(store_target, total_epsilon=2.0).close()
    with Store.open(store_target) as again:
        assert again.total_epsilon == 2.0 and again.total_exact == Fraction(2)
    with pytest.raises(ValueError, match="keeps a total of 2 per user, not 3"):
        Store.open(store_target, total_epsilon=3.0)


def test_pending_spends_count_until_confirmed_or_refunded(store_target):
    with Store.open(store_target, total_epsilon=2.0) as store:
        assert store.charge("a", {"u": Fraction(1)}, pending_output="/out/a.gpkg") == []
        assert store.charge("b", {"u": Fraction(1)}, pending_output="/out/b.gpkg") == []
        assert store.charge("c", {"u": Fraction(1)}) == ["u"]  # pending spends count
        assert [p["release_id"] for p in store.pending()] == ["a", "b"]
        assert store.pending()[0]["output"] == "/out/a.gpkg" and store.pending()[0]["users"] == 1
        assert store.confirm("a") == 1 and store.confirm("a") == 0
        assert store.refund("a") == 0  # committed spends are final
        assert store.refund("b") == 1 and store.pending() == []
        assert store.spent() == {"u": Fraction(1)}
        assert store.verify() == CLEAN


def test_reports_are_stored_once_with_their_spend(store_target):
    def rec(user: str, digest: str, eps: float) -> Report:
        return Report(user, digest, eps, json.dumps({"v": digest}), json.dumps({"epsilon": eps}))

    with Store.open(store_target, total_epsilon=3.0) as store:
        assert store.add_campaign("c1", '{"id": "c1"}') and not store.add_campaign("c1", '{"id": "c1"}')
        with pytest.raises(ValueError, match="another document"):
            store.add_campaign("c1", "{}")
        out = store.append_reports(
            "c1", [rec("a", "d1", 1.0), rec("a", "d1", 1.0), rec("a", "d2", 2.5), rec("b", "d3", 3.0)]
        )
        assert out == ["stored", "duplicate", "over budget", "stored"]
        again = store.append_reports("c1", [rec("a", "d1", 1.0), rec("a", "d4", 2.0)])
        assert again == ["duplicate", "stored"]
        assert store.count("geoldp_reports") == 3 and store.count("geoldp_spends") == 3
        assert [r[0] for r in store.reports("c1")] == ["d1", "d3", "d4"] and store.reports("other") == []
        assert store.reports("c1")[0][1:] == (json.dumps({"v": "d1"}), json.dumps({"epsilon": 1.0}))
        assert store.spent() == {"a": Fraction(3), "b": Fraction(3)}
        assert store.verify() == CLEAN


def test_the_sqlite_store_is_a_geopackage_gdal_opens(tmp_path):
    pyogrio = pytest.importorskip("pyogrio")
    path = tmp_path / "store.gpkg"
    with Store.open(path, total_epsilon=1.0) as store:
        store.charge("r", {"u1": Fraction(1, 2)})
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x47504B47
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 10400
        srs = {r[0] for r in conn.execute("SELECT srs_id FROM gpkg_spatial_ref_sys")}
        assert {-1, 0, 4326} <= srs
    layers = {name for name, _ in pyogrio.list_layers(path)}
    assert layers == {f"geoldp_{t}" for t in ("accountant", "budgets", "spends", "campaigns", "reports")}
    budgets = pyogrio.read_dataframe(path, layer="geoldp_budgets")
    assert budgets["user_id"].tolist() == ["u1"] and budgets["spent_epsilon"].tolist() == [0.5]
    assert os.stat(path).st_mode & 0o077 == 0  # private: readable by its owner only


def test_other_files_are_refused_never_changed(tmp_path):
    gpd = pytest.importorskip("geopandas")
    from shapely.geometry import Point

    data = tmp_path / "trips.gpkg"
    gpd.GeoDataFrame({"a": [1]}, geometry=[Point(0, 0)], crs="EPSG:4326").to_file(data)
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    for path in (data, text):
        before = path.read_bytes()
        with pytest.raises(ValueError, match="not a geoldp store"):
            Store.open(path, total_epsilon=1.0)
        assert path.read_bytes() == before
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(ValueError, match="not a regular file"):
        Store.open(tmp_path / "fifo", total_epsilon=1.0)


def test_links_are_followed_and_a_dangling_link_refused(tmp_path):
    real = tmp_path / "real.gpkg"
    Store.open(real, total_epsilon=1.0).close()
    link = tmp_path / "link.gpkg"
    link.symlink_to(real)
    with Store.open(link) as store:
        store.charge("r", {"u": Fraction(1)})
    assert link.is_symlink() and Store.open(real).spent() == {"u": Fraction(1)}
    dangling = tmp_path / "dangling.gpkg"
    dangling.symlink_to(tmp_path / "nowhere.gpkg")
    with pytest.raises(ValueError, match="does not exist"):
        Store.open(dangling, total_epsilon=1.0)
    assert dangling.is_symlink() and not (tmp_path / "nowhere.gpkg").exists()


# ------------------------------------------------------------------------------------------------------
# processes sharing one store

WORKER = """
import json, sys
from fractions import Fraction
import numpy as np
from geoldp.store import Report, Store

target, seed, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(seed)
won = {}
stored = []
with Store.open(target) as store:
    for i in range(n):
        users = sorted({f"u{k}" for k in rng.integers(0, 8, size=3)})
        if store.charge(f"w{seed}-{i}", {u: Fraction(1) for u in users}) == []:
            for u in users:
                won[u] = won.get(u, 0) + 1
        # reports whose digests every worker sends too: each is stored once
        recs = [Report(f"u{k}", f"d{k}-{i}", 0.5, "{}", "{}") for k in rng.integers(0, 8, size=2)]
        for r, outcome in zip(recs, store.append_reports("c", recs)):
            if outcome == "stored":
                stored.append(r.record_digest)
print(json.dumps({"won": won, "stored": stored}))
"""


def test_processes_sharing_a_store_never_overspend(store_target):
    Store.open(store_target, total_epsilon=6.0).close()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, store_target, str(seed), "25"],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in range(4)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    with Store.open(store_target) as store:
        spent = store.spent()
        assert store.verify() == CLEAN
        n_reports = store.count("geoldp_reports")
    won: dict[str, int] = {}
    for r in results:
        for u, k in r["won"].items():
            won[u] = won.get(u, 0) + k
    stored = [d for r in results for d in r["stored"]]
    assert len(stored) == len(set(stored)) == n_reports  # no record lost, none stored twice
    reports_of = {u: sum(d.startswith(f"d{u[1:]}-") for d in stored) for u in spent}
    for u, s in spent.items():
        assert s <= 6  # nobody past her total
        assert s == won.get(u, 0) + Fraction(reports_of[u], 2)  # every spend is one that a worker saw succeed
    assert max(spent.values()) == 6  # the budgets ran out: the workers really competed


KILLED = """
import sys
from fractions import Fraction
from geoldp.store import Report, Store

target = sys.argv[1]
with Store.open(target) as store:
    print("ready", flush=True)
    i = 0
    while True:
        store.charge(f"k{sys.argv[2]}-{i}", {f"u{i % 5}": Fraction(1, 8), f"v{i % 3}": Fraction(1, 8)})
        store.append_reports("c", [Report(f"u{i % 7}", f"x{sys.argv[2]}-{i}", 0.125, "{}", "{}")])
        i += 1
"""


def test_kill_9_at_any_moment_leaves_the_store_consistent(store_target):
    Store.open(store_target, total_epsilon=1000.0).close()
    delays = np.random.default_rng(38).uniform(0.05, 0.6, size=5)
    for trial, delay in enumerate(delays):
        child = subprocess.Popen(
            [sys.executable, "-c", KILLED, store_target, str(trial)],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(float(delay))
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
        with Store.open(store_target) as store:
            assert store.verify() == CLEAN, trial
            assert store.count("geoldp_spends") > 0
    if not store_target.startswith("postgres"):
        with sqlite3.connect(store_target) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
