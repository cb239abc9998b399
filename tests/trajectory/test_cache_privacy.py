"""Nothing computed from a private input outlives the call (charter: privacy is correctness).

A secret trajectory is perturbed (with ``rng=None`` and with a seed, by every mechanism, with the fast and
the reference sampler); afterwards every module-level global of every loaded ``geoldp`` module, the public
PointSet and every object reachable from them (the fast path's cached spatial index included) must be
exactly what it was after a warm-up run on a public, unrelated trajectory. Lazily built public structures
(the spatial index, the KD-tree) are built by the warm-up, so any difference is state that depends on the
secret run.
"""

from __future__ import annotations

import gc
import hashlib
import sys
import types
import weakref

import numpy as np
import pytest

import geoldp
from geoldp.budget import ReleaseCache
from geoldp.datasets import synthetic_city_arrays
from geoldp.trajectory._table_store import DemandCounts


def _fingerprint(obj, seen, depth=0):
    """A hashable summary of ``obj``'s data (arrays by content), following containers and instances."""
    if depth > 6:
        return "<deep>"
    if isinstance(obj, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)):
        return "<code>"
    if isinstance(obj, ReleaseCache):
        # keyed by the lengths and ε of returned releases only: checked by the release-cache tests below
        return "<release cache>"
    if isinstance(obj, DemandCounts):
        # how many ATP copies were asked for (twice the trajectories released): checked below
        return "<release counts>"
    if callable(obj) and not isinstance(obj, (dict, list, tuple, set, np.ndarray)):
        # numba dispatchers, methods: their compiled-code caches depend on argument types, not values
        return "<callable>"
    if isinstance(obj, np.ndarray):
        return ("nd", obj.dtype.str, obj.shape, hashlib.sha1(np.ascontiguousarray(obj).tobytes()).hexdigest())
    if isinstance(obj, (int, float, complex, str, bytes, bool, type(None))):
        return repr(obj)
    oid = id(obj)
    if oid in seen:
        return "<seen>"
    # keep the object alive while the walk lasts: a freed temporary (the dict(state) below) would hand its
    # id to a later object, which would then read as "<seen>" depending on the allocator
    seen[oid] = obj
    if isinstance(obj, weakref.WeakKeyDictionary):
        return ("wkd", tuple(sorted(repr(_fingerprint(v, seen, depth + 1)) for v in obj.values())))
    if isinstance(obj, dict):
        return (
            "dict",
            tuple(sorted((repr(k), repr(_fingerprint(v, seen, depth + 1))) for k, v in obj.items())),
        )
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, tuple(_fingerprint(v, seen, depth + 1) for v in obj))
    if isinstance(obj, (set, frozenset)):
        return ("set", tuple(sorted(repr(_fingerprint(v, seen, depth + 1)) for v in obj)))
    state = getattr(obj, "__dict__", None)
    if state is not None:
        return (type(obj).__name__, _fingerprint(dict(state), seen, depth + 1))
    slots = getattr(type(obj), "__slots__", ())
    if slots:
        return (
            type(obj).__name__,
            tuple(_fingerprint(getattr(obj, s, None), seen, depth + 1) for s in slots),
        )
    return type(obj).__name__


def _state(points):
    # collect first: a PointSet of an earlier test dying during the run would drop out of the index cache
    gc.collect()
    mods = {}
    for name, mod in sorted(sys.modules.items()):
        if name == "geoldp" or name.startswith("geoldp."):
            # a fresh ``seen`` per root: an object shared by two modules is summarised in both
            mods[name] = _fingerprint({k: v for k, v in vars(mod).items() if not k.startswith("__")}, {})
    return mods, _fingerprint(points, {})


def _diff(before, after):
    mods_b, p_b = before
    mods_a, p_a = after
    changed = [n for n in mods_b if mods_a.get(n) != mods_b[n]]
    if p_a != p_b:
        changed.append("<PointSet>")
    return changed


@pytest.fixture(scope="module")
def public_points():
    lon, lat, *_ = synthetic_city_arrays(1500, 0, seed=11)
    return geoldp.PointSet(lon, lat)


@pytest.mark.parametrize("mechanism", ["atp", "tp", "pointem"])
@pytest.mark.parametrize("reference", [False, True], ids=["fast", "reference"])
def test_secret_run_leaves_no_state(public_points, mechanism, reference):
    P = public_points
    m = len(P)
    public = [np.array([0, 1, 2, 3], dtype=np.int64), np.array([m - 1], dtype=np.int64)]
    # return_diagnostics runs the reference sampler
    kw = {"mechanism": mechanism, "epsilon": 4.0, "return_diagnostics": reference}
    geoldp.perturb_trajectories(public, P, rng=0, **kw)
    before = _state(P)
    rng = np.random.default_rng(12345)
    secret = [rng.integers(0, m, int(k)).astype(np.int64) for k in (2, 5, 8, 3)]
    for seed in (None, 7):
        geoldp.perturb_trajectories(secret, P, rng=seed, **kw)
    after = _state(P)
    assert _diff(before, after) == []


def test_the_counts_of_atp_copies_depend_on_the_number_of_trajectories_only(tmp_path, monkeypatch):
    """The counts ATP keeps to decide when its public table pays (in memory and on disk) are the same after
    secret trajectories as after as many public ones: a function of the release's size only."""
    from geoldp.trajectory import _table_store
    from geoldp.trajectory._fast import grid

    lon, lat, *_ = synthetic_city_arrays(1500, 0, seed=12)
    seen = []
    for seed in (1, 2):
        monkeypatch.setenv("GEOLDP_CACHE_DIR", str(tmp_path / str(seed)))
        monkeypatch.setattr(_table_store, "_DEMAND", DemandCounts())
        monkeypatch.setattr(grid, "_INDEX_CACHE", weakref.WeakKeyDictionary())
        P = geoldp.PointSet(lon, lat)
        rng = np.random.default_rng(seed)
        trips = [rng.integers(0, len(P), int(k)).astype(np.int64) for k in rng.integers(2, 9, 40)]
        geoldp.perturb_trajectories(trips, P, mechanism="atp", epsilon=4.0, rng=seed)
        _table_store._flush()
        files = {p.name: p.read_bytes() for p in (tmp_path / str(seed) / "atp-tables").iterdir()}
        seen.append((files, dict(grid.get_index(P)._atp_demand)))
    assert seen[0] == seen[1] and seen[0][0]  # a count was kept, the same


# ------------------------------------------------------------------------------------------------------
# the budget-split caches: a length or an ε stays there only once a release with it was returned


def _release_caches():
    """Every ReleaseCache of every loaded geoldp module, by name."""
    found = {}
    for name, mod in sorted(sys.modules.items()):
        if name == "geoldp" or name.startswith("geoldp."):
            for attr, value in vars(mod).items():
                if isinstance(value, ReleaseCache):
                    found[f"{name}.{attr}"] = value
    return found


def _cache_keys():
    return {name: cache.keys() for name, cache in _release_caches().items()}


def _lengths_and_epsilons(keys):
    """The ints and floats at the top level of cache keys (their lengths and their ε)."""
    ints = {k for key in keys for k in key if isinstance(k, int) and not isinstance(k, bool)}
    floats = {k for key in keys for k in key if isinstance(k, float)}
    return ints, floats


def _secret(P, lengths, seed=99):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, len(P), k).astype(np.int64) for k in lengths]


@pytest.mark.parametrize("mechanism", ["atp", "tp", "pointem"])
def test_a_call_that_fails_after_planning_leaves_the_caches_as_they_were(public_points, mechanism):
    # before: the LRU caches of the budget split kept the lengths of a release that was never returned
    P = public_points
    geoldp.perturb_trajectories(_secret(P, (3, 4)), P, mechanism=mechanism, epsilon=4.0, rng=0)
    before = _cache_keys()
    assert any(before.values())  # the successful call above was cached (the caches are found)
    with pytest.raises(ValueError, match="n_jobs"):  # checked after every budget was planned
        geoldp.perturb_trajectories(
            _secret(P, (23, 31)), P, mechanism=mechanism, epsilon=4.0, rng=0, n_jobs=0, return_ledger=True
        )
    with pytest.raises(TypeError, match="rng"):
        geoldp.perturb_trajectories(_secret(P, (29,)), P, mechanism=mechanism, epsilon=2.5, rng="seed")
    assert _cache_keys() == before


def test_a_frame_release_refused_by_a_warning_leaves_the_caches_as_they_were(public_points):
    # the GeoDataFrame path: the near-uniform PrivacyWarning, an error under pytest's filterwarnings
    import shapely

    from geoldp._core.errors import PrivacyWarning

    P = public_points
    idx = np.random.default_rng(8).integers(0, len(P), 41)
    gdf = __import__("geopandas").GeoDataFrame(
        geometry=[shapely.LineString(np.column_stack([P.lon[idx], P.lat[idx]]))], crs="EPSG:4326"
    )
    before = _cache_keys()
    with pytest.raises(PrivacyWarning):
        gdf.ldp.perturb(P, mechanism="tp", epsilon=1.5, rng=0)
    assert _cache_keys() == before


def test_a_returned_release_keeps_only_its_own_lengths_and_epsilon(public_points):
    P = public_points
    for cache in _release_caches().values():
        cache.clear()
    geoldp.perturb_trajectories(_secret(P, (6, 9, 6)), P, mechanism="atp", epsilon=3.5, rng=1)
    ints, floats = _lengths_and_epsilons(k for keys in _cache_keys().values() for k in keys)
    # besides the release's lengths and ε only |P| (the budget checks' key), which is public
    assert ints - {len(P)} == {6, 9} and floats <= {3.5}
    # a nested scope keeps its entries only when the outer one returns
    from geoldp.budget import release_scope

    with pytest.raises(RuntimeError), release_scope():
        geoldp.perturb_trajectories(_secret(P, (13,)), P, mechanism="tp", epsilon=3.5, rng=1)
        raise RuntimeError("the outer call fails after the inner release")
    ints, _ = _lengths_and_epsilons(k for keys in _cache_keys().values() for k in keys)
    assert ints - {len(P)} == {6, 9}


def test_outside_a_release_nothing_is_cached():
    from geoldp.trajectory import ATP

    cache = ReleaseCache(maxsize=4)
    calls = []
    assert cache.get(("k", 3), lambda: calls.append(1) or "v") == "v"
    assert ATP(epsilon=2.0).ledger(17) is not None
    assert cache.keys() == [] and calls == [1]
    assert "geoldp.trajectory.split._LEDGERS" in _release_caches()
    assert all(17 not in key for keys in _cache_keys().values() for key in keys)


def test_fingerprint_sees_a_module_cache(public_points):
    # power check: a module-level cache of drawn values would be detected
    import geoldp.trajectory._fast.driver as fast

    before = _state(public_points)
    fast._LAST_STATS["leak"] = 3
    try:
        assert "geoldp.trajectory._fast.driver" in _diff(before, _state(public_points))
    finally:
        fast._LAST_STATS.pop("leak")
    # ... and so would a cache kept on the PointSet's cached spatial index (held by the grid module)
    idx = fast.get_index(public_points)
    before = _state(public_points)
    idx.probe = np.zeros(3)
    try:
        assert "geoldp.trajectory._fast.grid" in _diff(before, _state(public_points))
    finally:
        del idx.probe
    # ... and so would an ATP table under another key than P's own
    before = _state(public_points)
    idx._atp_tables[("probe",)] = (np.zeros(3), np.zeros(2), np.zeros(1))
    try:
        assert "geoldp.trajectory._fast.grid" in _diff(before, _state(public_points))
    finally:
        del idx._atp_tables[("probe",)]


def test_the_atp_table_is_p_own():
    # the cached ATP tables equal tables rebuilt from a fresh copy of P, under public keys only
    from geoldp.trajectory import _atp_table
    from geoldp.trajectory._fast import driver as _fast
    from geoldp.trajectory._fast import grid as _fast_grid

    lon, lat, *_ = synthetic_city_arrays(300, 0, seed=6)
    P = geoldp.PointSet(lon, lat)  # small: the table is built at once
    geoldp.perturb_trajectories(_secret(P, (3, 7, 2)), P, mechanism="atp", epsilon=4.0, rng=None)
    geoldp.perturb_trajectories(_secret(P, (4,)), P, mechanism="atp", epsilon=1.0, distance_mapping="input")
    idx = _fast.get_index(P)
    assert len(idx._atp_tables) == 2
    fresh = _fast_grid.FastIndex(geoldp.PointSet(lon.copy(), lat.copy()))  # not the cached one
    for key, (tab, _, _) in idx._atp_tables.items():
        b, eps_r, mapping, tol, buckets, continuous = key
        assert [type(v) for v in key] == [float, float, bool, float, int, bool]
        pairs = _atp_table.band_pairs(b, buckets, continuous)
        assert np.array_equal(tab[0], _atp_table.build_table(fresh, b, eps_r, mapping, tol, pairs))


# ------------------------------------------------------------------------------------------------------
# cold structures: a fresh P, two different secret inputs, the same state afterwards


def _cold_state(run):
    """Module state and P's full state (every slot, and its cached fast-path index) after ``run(P)``."""
    import geopandas as gpd  # noqa: F401  (imported before the first fingerprint: its modules are not ours)

    from geoldp.trajectory._fast import grid as _fast_grid

    lon, lat, *_ = synthetic_city_arrays(400, 0, seed=5)
    P = geoldp.PointSet(lon, lat)  # cold: nothing has been asked of it yet
    run(P)
    gc.collect()
    index = _fast_grid._INDEX_CACHE.get(P)
    state = (_fingerprint(P, {}), _fingerprint(index, {}))
    del P, index
    gc.collect()
    mods, _ = _state(None)
    return mods, state


def _lines(P, moved_m):
    """30 LineStrings whose vertices are public points, one moved ``moved_m`` metres north."""
    import geopandas as gpd
    import shapely

    rng = np.random.default_rng(3)
    lines = []
    for k in range(30):
        idx = rng.integers(0, len(P), 4)
        coords = np.column_stack([P.lon[idx], P.lat[idx]])
        if k == 17:
            coords[2, 1] += moved_m / 111_195.0
        lines.append(shapely.LineString(coords))
    return gpd.GeoDataFrame({"user": np.arange(30)}, geometry=lines, crs="EPSG:4326")


@pytest.mark.parametrize("mechanism", ["atp", "tp"])
def test_cold_structures_do_not_tell_whether_a_vertex_was_off_P(mechanism):
    # before: the snapping tree was built only when some vertex was off P (one bit of the input)
    def run(moved_m):
        def go(P):
            _lines(P, moved_m).ldp.perturb(P, mechanism=mechanism, epsilon=4.0, rng=1)

        return go

    assert _cold_state(run(0.0)) == _cold_state(run(0.01))


def test_cold_structures_do_not_tell_the_trajectory_lengths():
    # ATP's region structures of P were built only when some trajectory had two points or more
    def run(lengths):
        def go(P):
            rng = np.random.default_rng(4)
            secret = [rng.integers(0, len(P), k).astype(np.int64) for k in lengths]
            geoldp.perturb_trajectories(secret, P, mechanism="atp", epsilon=4.0, rng=2)

        return go

    assert _cold_state(run((1, 1, 1))) == _cold_state(run((1, 5, 2)))


def test_after_any_first_use_a_point_set_is_in_one_state():
    # nearest on an empty query, on P, off P, or the diameter: the same structures afterwards
    lon, lat, *_ = synthetic_city_arrays(400, 0, seed=5)
    states = []
    for use in (
        lambda P: P.nearest(lon[:0], lat[:0]),
        lambda P: P.nearest(lon[:3], lat[:3]),
        lambda P: P.nearest(lon[:3] + 1e-4, lat[:3]),
        lambda P: P.diameter_m,
    ):
        P = geoldp.PointSet(lon, lat)
        use(P)
        states.append(_fingerprint(P, {}))
        P.nearest(lon[:5] + 2e-4, lat[:5])  # later queries change nothing
        assert _fingerprint(P, {}) == states[-1]
    assert all(s == states[0] for s in states)
