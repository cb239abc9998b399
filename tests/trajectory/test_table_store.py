"""ATP's table counted across calls and kept on disk (geoldp.trajectory._table_store).

* Calls each too small to repay the table build it once their copies together do; a later process (here:
  a fresh index of P and a fresh count) finds the table on disk and uses it from its first call.
* Releases are identical with the kept table, without any table, and with the table built ahead.
* The kept files are a function of P and public options only: two campaigns over P with other
  trajectories (as many) leave byte-identical files, equal to the table built from P alone.
* A corrupt or foreign file is never trusted: a warning, then a rebuild; the release does not change.
* Threads build the same table.
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np
import pytest

import geoldp
from geoldp._core.errors import GeoLDPWarning
from geoldp.datasets import synthetic_city_arrays
from geoldp.trajectory import ATP
from geoldp.trajectory import _atp_table as AT
from geoldp.trajectory import _table_store as TS
from geoldp.trajectory._fast import driver as F
from geoldp.trajectory._fast import grid as FG

M = 1_000  # a table that costs more than a trifle (kept on disk), repaid by about 8,500 copies
EPS = 4.0


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty table cache, a fresh count and no index cached in memory ("a new process")."""
    monkeypatch.setenv("GEOLDP_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(TS, "ENABLED", [True])
    monkeypatch.setattr(TS, "_DEMAND", {})
    monkeypatch.setattr(FG, "_INDEX_CACHE", weakref.WeakKeyDictionary())
    return tmp_path / "atp-tables"


def _new_process(monkeypatch):
    TS._flush()
    monkeypatch.setattr(TS, "_DEMAND", {})
    monkeypatch.setattr(FG, "_INDEX_CACHE", weakref.WeakKeyDictionary())


def _points(seed=5):
    lon, lat, *_ = synthetic_city_arrays(M, 0, seed=seed)
    return geoldp.PointSet(lon, lat)


def _trips(n, seed):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, M, 2) for _ in range(n)]


def _has_table(P):
    return bool(F.get_index(P)._atp_tables)


def _release(trips, P, rng):
    return np.concatenate(geoldp.perturb_trajectories(trips, P, mechanism="atp", epsilon=EPS, rng=rng))


def test_calls_too_small_alone_build_the_table_together_and_later_processes_read_it(cache, monkeypatch):
    assert AT.TABLE_MAX_POINTS >= M and not AT.wants_table(M, 2 * 1_500)
    P = _points()
    trips = _trips(1_500, seed=1)
    _release(trips, P, 0)
    _release(trips, P, 1)
    assert not _has_table(P) and not list(cache.glob("*.atptable"))  # 6,000 copies: not yet
    _release(trips, P, 2)
    assert _has_table(P) and len(list(cache.glob("*.atptable"))) == 1  # 9,000 copies: built and kept
    _new_process(monkeypatch)
    P2 = _points()
    _release(trips[:10], P2, 3)  # far too small to build it: it is read
    assert _has_table(P2)


def test_the_count_carries_over_to_later_processes(cache, monkeypatch):
    P = _points(seed=6)
    trips = _trips(2_500, seed=2)
    for k in range(2):  # two "CLI runs" of 5,000 copies each: the second builds it
        _new_process(monkeypatch)
        P = _points(seed=6)
        _release(trips, P, k)
    assert _has_table(P) and len(list(cache.glob("*.atptable"))) == 1


def test_releases_are_identical_with_the_kept_table_without_a_table_and_precomputed(cache, monkeypatch):
    trips = _trips(300, seed=3)
    P = _points(seed=7)
    assert geoldp.trajectory.precompute(P, mechanism="atp", epsilon=EPS)
    precomputed = _release(trips, P, 11)
    _new_process(monkeypatch)
    P = _points(seed=7)
    kept = _release(trips, P, 11)
    assert _has_table(P)  # read from disk
    _new_process(monkeypatch)
    monkeypatch.setattr(AT, "ENABLED", [False])
    P = _points(seed=7)
    without = _release(trips, P, 11)
    assert not _has_table(P)
    assert np.array_equal(kept, without) and np.array_equal(precomputed, without)
    assert not np.array_equal(_release(trips, P, 12), without)  # power: the seed matters


def test_kept_files_are_a_function_of_p_and_public_options_only(tmp_path, monkeypatch):
    """Two campaigns over P with different trajectories (as many, as long) leave byte-identical files."""
    files = []
    for seed in (4, 5):
        folder = tmp_path / str(seed)
        monkeypatch.setenv("GEOLDP_CACHE_DIR", str(folder))
        monkeypatch.setattr(TS, "_DEMAND", {})
        monkeypatch.setattr(FG, "_INDEX_CACHE", weakref.WeakKeyDictionary())
        P = _points(seed=8)
        trips = _trips(2_500, seed=seed)
        for k in range(2):
            _release(trips, P, k)
        TS._flush()
        files.append({p.name: p.read_bytes() for p in (folder / "atp-tables").iterdir()})
    assert files[0] == files[1] and len(files[0]) == 2  # the table and the count
    # the table is the one built from P and the options alone
    ((key, (tab, _, _)),) = F.get_index(P)._atp_tables.items()
    fresh = FG.FastIndex(_points(seed=8))
    fresh.tree()
    b, eps_r, mapping, tol, buckets, continuous = key
    pairs = AT.band_pairs(b, buckets, continuous)
    assert np.array_equal(tab[0], AT.build_table(fresh, b, eps_r, mapping, tol, pairs))
    assert np.array_equal(TS.load(fresh.digest(), key, M), tab[0])


def _kept_file(cache):
    (path,) = cache.glob("*.atptable")
    return path


@pytest.mark.parametrize("damage", ["payload", "header", "truncated", "foreign"])
def test_a_corrupt_or_foreign_file_is_ignored_with_a_warning_and_rebuilt(cache, monkeypatch, damage):
    trips = _trips(200, seed=6)
    P = _points(seed=9)
    geoldp.trajectory.precompute(P, mechanism="atp", epsilon=EPS)
    want = _release(trips, P, 5)
    path = _kept_file(cache)
    data = bytearray(path.read_bytes())
    if damage == "payload":
        data[-3] ^= 0x40
    elif damage == "header":
        data[len(TS.MAGIC) + 12] ^= 0x01
    elif damage == "truncated":
        data = data[: len(data) // 2]
    else:  # another P's valid table under this name
        (key,) = F.get_index(P)._atp_tables  # the same options
        other = FG.FastIndex(_points(seed=10))
        other.tree()
        TS.save(other.digest(), key, AT.build_table(other, *key[:4], AT.band_pairs(key[0], key[4], key[5])))
        data = bytearray(_other_file(cache, path).read_bytes())
    path.write_bytes(bytes(data))
    _new_process(monkeypatch)
    P = _points(seed=9)
    with pytest.warns(GeoLDPWarning, match="ignored the kept ATP table"):
        assert geoldp.trajectory.precompute(P, mechanism="atp", epsilon=EPS)
    assert np.array_equal(_release(trips, P, 5), want)
    _new_process(monkeypatch)  # rebuilt and kept again: read without a warning
    P = _points(seed=9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(_release(trips, P, 5), want)
    assert _has_table(P)


def _other_file(cache, path):
    (other,) = [p for p in cache.glob("*.atptable") if p != path]
    return other


def test_threads_build_the_same_table(monkeypatch):
    monkeypatch.setattr(AT, "_MIN_ROWS_PER_JOB", 50)
    index = FG.FastIndex(_points(seed=11))
    index.tree()
    radius = float(ATP(epsilon=EPS).copy_budgets(2, "A").radius)
    b = float(geoldp.mechanisms.sw_half_width(radius))
    pairs = AT.band_pairs(b, 1024, False)
    one = AT.build_table(index, b, radius, False, 2.0, pairs)
    assert np.array_equal(one, AT.build_table(index, b, radius, False, 2.0, pairs, n_jobs=3))
