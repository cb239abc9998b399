"""The kernels compiled at install time: exact signatures, numba's outputs bit for bit, a safe fallback."""

from __future__ import annotations

import os
import subprocess
import sys
import types as pytypes
from pathlib import Path

import numpy as np
import pytest

import geoldp
from geoldp._core import aot as _aot
from geoldp.datasets import synthetic_city_arrays
from geoldp.trajectory import perturb_coordinates

NEEDS_EXTENSION = pytest.mark.skipif(
    _aot.extension() is None, reason="the compiled kernels are not installed (no C compiler at install time)"
)


def _entries():
    """Every Entry of the loaded geoldp modules, by qualified name."""
    import geoldp.trajectory._fast  # noqa: F401  (loads every module with an entry)

    found = {}
    for name, mod in sorted(sys.modules.items()):
        if name.startswith("geoldp"):
            for attr, value in vars(mod).items():
                if isinstance(value, _aot.Entry):
                    found[f"{name}.{attr}"] = value
    return found


def _points(m, seed=1):
    lon, lat, *_ = synthetic_city_arrays(m, 5, seed=seed)
    return geoldp.PointSet(lon, lat)


def _trajectories(m, lengths=(5, 1, 2, 8, 3), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, m, k) for k in lengths]


CASES = [
    ("pointem", {}, 300),
    ("tp", {}, 300),
    ("tp", {"split": "grouped", "fallback": "region"}, 100),
    ("atp", {}, 300),
    ("atp", {"sw_output": "continuous"}, 2000),
    ("atp", {}, 100),
]


# The checks below that run every kernel through numba's JIT compile them all first: about 75 s on a cold
# numba cache (any fresh install), so they are slow-tier tests, run by CI's bounded slow step.
@pytest.mark.slow
def test_every_export_signature_is_the_type_of_a_real_call(monkeypatch):
    # a stand-in extension that has every export and records which one a call was routed to: the check
    # runs without the compiled extension too, and fails if a signature differs from what Python passes
    entries = _entries()
    routed: set[str] = set()

    def stand_in(name, entry):
        def call(*args):
            routed.add(name)
            return entry._jit(*args)

        return call

    fake = pytypes.SimpleNamespace()
    for entry in _aot.entries():
        for name in entry.exports:
            setattr(fake, name, stand_in(name, entry))
    monkeypatch.setattr(_aot, "_LOADED", [(fake,)])
    monkeypatch.setattr(_aot, "_ENABLED", [True])
    for entry in entries.values():
        monkeypatch.setattr(entry, "_routes", {})
    _forget_budget_splits()  # so that the pivot positions are computed again
    for mech, options, m in CASES:
        P = _points(m)
        for seed, n_jobs in ((1, 1), (2, 2)):
            trajs = _trajectories(m)
            kw = dict(options, mechanism=mech, epsilon=4.0, rng=seed, n_jobs=n_jobs)
            geoldp.perturb_trajectories(trajs, P, **kw)
    for mech in ("tracs-d", "tracs-c"):  # the continuous-space kernels
        xy = [np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0, 5.0]])]
        perturb_coordinates(xy, mechanism=mech, epsilon=4.0, bounds=(0, 0, 10, 10), rng=1)
    # every route taken went to an export, never to the JIT (the types matched a declared signature) ...
    for name, entry in entries.items():
        assert all(target is not entry._jit for target in entry._routes.values()), name
    assert routed == {name for entry in _aot.entries() for name in entry.exports} - {"nearest_scan"}
    # ... and the declared return type is the one numba infers for those arguments
    for entry in _aot.entries():
        inferred = {args: cres.signature.return_type for args, cres in entry._jit.overloads.items()}
        for name, signature in entry.exports.items():
            if name not in routed:
                continue
            matching = [ret for args, ret in inferred.items() if _aot._same_types(signature.args, args)]
            assert matching and all(ret == signature.return_type for ret in matching), name


def _forget_budget_splits():
    from geoldp.budget import ReleaseCache

    for name, mod in list(sys.modules.items()):
        if name.startswith("geoldp"):
            for value in list(vars(mod).values()):
                if isinstance(value, ReleaseCache):
                    value.clear()


def test_other_argument_types_go_to_numba(monkeypatch):
    from geoldp._core import kernels as _kernels

    lam = np.linspace(0.0, 0.01, 7)
    phi = np.linspace(0.0, 0.02, 7)
    expected = _kernels.max_pairwise_brute._jit(lam, phi)
    assert _kernels.max_pairwise_brute(lam, phi) == expected  # writable where read-only is declared: export
    entry = _kernels.max_pairwise_brute
    monkeypatch.setattr(entry, "_routes", {})
    for other in (lam.astype(np.float32), lam[::-1], np.arange(7)):  # another dtype, layout, an int array
        args = (other, np.ascontiguousarray(phi[: other.shape[0]]))
        assert entry(*args) == entry._jit(*args)
    if _aot.extension() is not None:
        targets = set(entry._routes.values())
        assert entry._jit in targets  # those went to numba
        assert any(t is not entry._jit for t in targets) or len(entry._routes) == 3


def test_an_extension_built_from_other_sources_is_not_used(monkeypatch):
    monkeypatch.setattr(_aot, "kernel_digest", lambda package=None: -1)
    assert _aot._load() is None


def test_numba_code_that_names_an_entry_calls_its_numba_function():
    import numba

    from geoldp._core import kernels as _kernels

    @numba.njit
    def through_entry(lam, phi, out):
        _kernels.haversine_from_one(lam[0], phi[0], lam, phi, out)
        return out[-1]

    lam = np.linspace(0.0, 0.01, 5)
    assert (
        through_entry(lam, lam, np.empty(5))
        == _kernels.haversine_from_one._jit(lam[0], lam[0], lam, lam, np.empty(5))[-1]
    )


@pytest.mark.slow
def test_without_the_extension_every_entry_is_numba(monkeypatch):
    monkeypatch.setattr(_aot, "_LOADED", [None])
    for entry in _entries().values():
        monkeypatch.setattr(entry, "_routes", {})
    P = _points(300)
    out = geoldp.perturb_trajectories(_trajectories(300), P, mechanism="atp", epsilon=4.0, rng=3)
    assert len(out) == 5
    for entry in _entries().values():
        assert all(t is entry._jit for t in entry._routes.values())


@pytest.mark.slow
@NEEDS_EXTENSION
@pytest.mark.parametrize(("mech", "options", "m"), CASES)
def test_compiled_kernels_give_the_jit_outputs_bit_for_bit(monkeypatch, mech, options, m):
    P = _points(m, seed=4)
    trajs = _trajectories(m, lengths=(7, 1, 2, 12, 4, 30), seed=9)
    outs = {}
    for on in (True, False):
        monkeypatch.setattr(_aot, "_ENABLED", [on])
        outs[on] = [
            geoldp.perturb_trajectories(trajs, P, mechanism=mech, epsilon=eps, rng=seed, **options)
            for eps, seed in ((4.0, 11), (1.0, 12), (8.0, 13))
        ]
    for a, b in zip(outs[True], outs[False], strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert P.diameter_m > 0


@NEEDS_EXTENSION
def test_a_first_call_with_the_extension_compiles_nothing(tmp_path):
    # numba writes a cache file for every kernel it compiles: with the extension, a fresh process leaves
    # the (empty) cache directory empty after a first call of every mechanism
    code = (
        "import numpy as np, geoldp\n"
        "from geoldp.datasets import synthetic_city_arrays\n"
        "lon, lat, *_ = synthetic_city_arrays(300, 5, seed=1)\n"
        "P = geoldp.PointSet(lon, lat)\n"
        "for mech in ('pointem', 'tp', 'atp'):\n"
        "    trajs = [np.arange(6), np.arange(1)]\n"
        "    geoldp.perturb_trajectories(trajs, P, mechanism=mech, epsilon=4.0, rng=0)\n"
        "from geoldp.trajectory import perturb_coordinates\n"
        "for mech in ('tracs-d', 'tracs-c'):\n"
        "    xy = [np.ones((3, 2))]\n"
        "    perturb_coordinates(xy, mechanism=mech, epsilon=4.0, bounds=(0, 0, 9, 9), rng=0)\n"
        "from geoldp.trajectory.engine import kernel_state\n"
        "print(kernel_state(geoldp.TP(epsilon=1.0)))\n"
    )
    cache = tmp_path / "numba-cache"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(Path(geoldp.__file__).parents[1]))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    compiled = sorted(p.name for p in cache.rglob("*.nbi")) if cache.exists() else []
    assert compiled == []
    assert proc.stdout.split()[-1] == "ready"


@NEEDS_EXTENSION
def test_the_kernel_stage_says_loading(monkeypatch):
    from geoldp.trajectory._fast import driver as _fast
    from geoldp.trajectory.engine import kernel_state

    monkeypatch.setattr(_fast, "_WARM", set())
    assert kernel_state(geoldp.PointEM(epsilon=1.0)) == "cached"  # "loading compiled kernels"
    monkeypatch.setattr(_aot, "_ENABLED", [False])
    assert kernel_state(geoldp.PointEM(epsilon=1.0)) in {"cached", "compile"}  # numba's own cache


def test_a_first_call_that_compiles_without_installed_kernels_says_so_with_the_fix(monkeypatch):
    """Installed without a C compiler: the first call that compiles warns once, naming the fix; where the
    kernels are installed (or the user turned them off) it is silent."""
    import warnings

    from geoldp._core.errors import GeoLDPWarning
    from geoldp.trajectory._fast import driver as _fast

    mech = geoldp.PointEM(epsilon=1.0)
    monkeypatch.setattr(_fast, "_COMPILE_WARNED", [])
    monkeypatch.setattr(_fast, "kernel_state", lambda mechanism: "compile")
    monkeypatch.setattr(_fast, "_aot_installed", lambda: False)
    with pytest.warns(GeoLDPWarning, match="not installed .* C compiler.*pip install --force-reinstall"):
        _fast.warn_if_compiling(mech)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _fast.warn_if_compiling(mech)  # once per process
        monkeypatch.setattr(_fast, "_COMPILE_WARNED", [])
        monkeypatch.setattr(_fast, "_aot_installed", lambda: True)
        _fast.warn_if_compiling(mech)  # installed (maybe stale after an edit): nothing to fix
        monkeypatch.setattr(_fast, "_aot_installed", lambda: False)
        monkeypatch.setenv("GEOLDP_AOT", "0")
        _fast.warn_if_compiling(mech)  # turned off on purpose
