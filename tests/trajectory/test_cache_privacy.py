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
from geoldp.datasets import synthetic_city_arrays


def _fingerprint(obj, seen, depth=0):
    """A hashable summary of ``obj``'s data (arrays by content), following containers and instances."""
    if depth > 6:
        return "<deep>"
    if isinstance(obj, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)):
        return "<code>"
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
    seen.add(oid)
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
            mods[name] = _fingerprint({k: v for k, v in vars(mod).items() if not k.startswith("__")}, set())
    return mods, _fingerprint(points, set())


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


def test_fingerprint_sees_a_module_cache(public_points):
    # power check: a module-level cache of drawn values would be detected
    import geoldp.trajectory._fast as fast

    before = _state(public_points)
    fast._LAST_STATS["leak"] = 3
    try:
        assert "geoldp.trajectory._fast" in _diff(before, _state(public_points))
    finally:
        fast._LAST_STATS.pop("leak")
    # ... and so would a cache kept on the PointSet's cached spatial index (held by the grid module)
    idx = fast.get_index(public_points)
    before = _state(public_points)
    idx.probe = np.zeros(3)
    try:
        assert "geoldp.trajectory._fast_grid" in _diff(before, _state(public_points))
    finally:
        del idx.probe
