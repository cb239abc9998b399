"""ATP's public table over P (geoldp.trajectory._atp_table): exact contents, same releases, public only.

* The table's columns are what the kernel would compute: ΔR of every anchor (the haversine maximum) and,
  per band slot, the quadtree traversal's η interval (or the exact η without a grid), which contains the
  exact η; the band slots cover every released value.
* Releases with the table equal releases without it, bit for bit, for several |P|, ε and options, lazily
  and eagerly resolved, and when bands miss the table (the traversal fallback); a corrupted table changes
  the output (power check: the comparison could fail).
* The table is a function of P and public options only: rebuilt on a fresh copy of P it is identical, and
  the fast index keeps it under public keys alone.
"""

from __future__ import annotations

import numpy as np
import pytest

import geoldp
from geoldp._core import kernels as K
from geoldp.datasets import synthetic_city_arrays
from geoldp.mechanisms import sw_half_width
from geoldp.trajectory import ATP
from geoldp.trajectory import _atp_region as AR
from geoldp.trajectory import _atp_table as AT
from geoldp.trajectory import calibration as C
from geoldp.trajectory._fast import driver as F
from geoldp.trajectory._fast import grid as FG

KEY = np.arange(1, 9, dtype=np.uint32) * np.uint32(0x9E3779B9)


def _points(m, seed=5):
    lon, lat, *_ = synthetic_city_arrays(m, 0, seed=seed)
    return geoldp.PointSet(lon, lat)


def _layout(m, n_traj, seed=1):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 9, n_traj)
    flat = rng.integers(0, m, int(lengths.sum())).astype(np.int64)
    offsets = np.zeros(n_traj + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return flat, offsets


def _budget(eps):
    radius = float(ATP(epsilon=eps).copy_budgets(2, "A").radius)
    return float(sw_half_width(radius)), radius


def _release(P, mech, flat, offsets, eager=False):
    old = F._EAGER_REGION[0]
    F._EAGER_REGION[0] = eager
    try:
        return F.perturb_fast(flat, offsets, P, mech, KEY, 11)
    finally:
        F._EAGER_REGION[0] = old


@pytest.mark.parametrize("input_mapping", [False, True])
def test_table_holds_what_the_kernel_would_compute(input_mapping):
    P = _points(500)
    index = F.get_index(P)
    tree = index.tree()
    assert tree is not None  # a city: the traversal route
    b, eps_r = _budget(4.0)
    pairs = AT.band_pairs(b, 1024, False)
    assert 5 <= len(pairs) <= 40 and len({tuple(p) for p in pairs}) == len(pairs)
    tab = AT.build_table(index, b, eps_r, input_mapping, 2.0, pairs)
    assert tab.shape == (len(P), 1 + 2 * len(pairs)) and not tab.flags.writeable
    stack = np.zeros(AR.STACK, dtype=np.int64)
    work = np.zeros(8)
    ri = AR.region_index(index)
    for a in range(0, len(P), 37):
        hav = [K.haversine_rad(P.lam[a], P.phi[a], P.lam[p], P.phi[p]) for p in range(len(P))]
        dr = tab[a, 0]
        assert dr == max(hav)
        for s, (k_lo, k_hi) in enumerate(pairs):
            has_k, d_lo, d_hi = (k_lo >= 0, 0.0, 0.0)
            if has_k:
                d_lo = C.band_distance(int(k_lo), b, dr, input_mapping)
                d_hi = C.band_distance(int(k_hi), b, dr, input_mapping)
            AR.eta_interval(a, ri, has_k, d_lo, d_hi, 2.0, 0.0, eps_r, stack, work)
            assert (tab[a, 1 + 2 * s], tab[a, 2 + 2 * s]) == (work[0], work[1])
            eta = AR.eta_exact(a, index.lam, index.phi, index.xyz, has_k, d_lo, d_hi, eps_r)
            assert work[0] - 1e-6 <= eta <= work[1] + 1e-6


@pytest.mark.parametrize("eps", [0.5, 4.0, 10.0])
def test_band_slots_cover_every_released_value(eps):
    b, _ = _budget(eps)
    bucketed = {tuple(p) for p in AT.band_pairs(b, 1024, False)}
    continuous = {tuple(p) for p in AT.band_pairs(b, 1024, True)}
    rng = np.random.default_rng(2)
    for r in rng.uniform(-b, 1 + b, 20_000):
        assert C.candidate_range(float(r), b) in continuous
    for j in range(0, 1024, 7):
        assert C.candidate_range(C.sw_bucket_midpoint(j, b, 1024), b) in bucketed


@pytest.mark.parametrize("m", [300, 2500])
@pytest.mark.parametrize(
    "kwargs",
    [{"epsilon": 0.5}, {"epsilon": 4.0}, {"epsilon": 8.0, "sw_output": "continuous"},
     {"epsilon": 2.0, "distance_mapping": "input"}, {"epsilon": 4.0, "decay_epsilon": "total"}],
)  # fmt: skip
def test_releases_with_and_without_the_table_are_identical(m, kwargs, monkeypatch):
    monkeypatch.setattr(AT, "_FREE_S", 1e9)  # build it whatever it costs
    mech = ATP(**kwargs)
    flat, offsets = _layout(m, 300)
    with_table = _points(m)
    got = _release(with_table, mech, flat, offsets)
    assert F.get_index(with_table)._atp_tables  # the table was built and used
    assert np.array_equal(got, _release(with_table, mech, flat, offsets, eager=True))
    monkeypatch.setattr(AT, "ENABLED", [False])  # (an equal PointSet shares the cached index: no table used)
    without = _points(m)
    assert np.array_equal(got, _release(without, mech, flat, offsets))
    assert np.array_equal(got, _release(without, mech, flat, offsets, eager=True))


def test_bands_missing_from_the_table_take_the_traversal_and_a_wrong_table_is_caught(monkeypatch):
    monkeypatch.setattr(AT, "_FREE_S", 1e9)
    m = 800
    mech = ATP(epsilon=4.0)
    flat, offsets = _layout(m, 300, seed=2)
    monkeypatch.setattr(AT, "ENABLED", [False])
    P = _points(m, seed=22)
    want = _release(P, mech, flat, offsets)
    monkeypatch.setattr(AT, "ENABLED", [True])
    full = AT.band_pairs
    monkeypatch.setattr(AT, "band_pairs", lambda *args: full(*args)[::3])  # two bands in three missing
    assert np.array_equal(_release(P, mech, flat, offsets), want)
    # power: a table with a wrong ΔR gives other regions, hence another release
    index = F.get_index(P)
    ((key, (good, keys, slots)),) = index._atp_tables.items()
    wrong = good.copy()
    wrong[0, :, 0] *= 1.01
    wrong.setflags(write=False)
    index._atp_tables[key] = (wrong, keys, slots)
    assert not np.array_equal(_release(P, mech, flat, offsets), want)
    index._atp_tables[key] = (good, keys, slots)
    assert np.array_equal(_release(P, mech, flat, offsets), want)


def test_table_is_a_function_of_p_and_public_options_only():
    m = 300  # built at once (wants_table)
    P = _points(m, seed=21)
    mech = ATP(epsilon=3.0)
    F.perturb_fast(*_layout(m, 50, seed=4), P, mech, KEY, 0)
    index = F.get_index(P)
    ((key, (tab, _, _)),) = index._atp_tables.items()
    b, eps_r = _budget(3.0)
    assert key == (b, eps_r, False, float(F._REGION_TOL_PT), 1024, False)
    fresh = FG.FastIndex(_points(m, seed=21))  # a new index of an equal P (not the cached one)
    assert np.array_equal(
        tab[0], AT.build_table(fresh, b, eps_r, False, key[3], AT.band_pairs(b, 1024, False))
    )
    # other secret inputs (only trajectories of length 1 among them) leave the same table
    F.perturb_fast(*_layout(m, 70, seed=9), P, mech, KEY, 5)
    F.perturb_fast(np.array([3, 4], dtype=np.int64), np.array([0, 1, 2]), P, mech, KEY, 5)
    assert list(index._atp_tables) == [key] and index._atp_tables[key][0] is tab


def test_only_calls_where_the_table_pays_build_it():
    assert AT.wants_table(300, 2)  # a small P: built at once (a few milliseconds)
    assert not AT.wants_table(5_000, 2)  # a larger P: only for a call that repays it
    assert AT.wants_table(5_000, 5_000 * 24)
    assert not AT.wants_table(AT.TABLE_MAX_POINTS + 1, 10**9)  # never above the cut-off


def test_two_budgets_give_two_tables_the_kernel_can_find():
    P = _points(300, seed=23)
    index = F.get_index(P)
    plan = ATP(epsilon=4.0).sampler_plan
    budgets = np.array([_budget(4.0), _budget(2.0)])
    tables, keys, slots = AT.plan_tables(index, budgets, 1, plan, 2.0)
    assert tables.shape[:2] == (2, len(P)) and keys.shape == (2, 2) and slots.shape == (2, 12, 12)
    assert not (tables.flags.writeable or keys.flags.writeable or slots.flags.writeable)
    for j, (b, eps_r) in enumerate(budgets):
        assert AT.find(keys, b, eps_r) == j
        single, _, _ = index.atp_table((b, eps_r, False, 2.0, 1024, False))
        assert np.array_equal(tables[j, :, : single.shape[2]], single[0])
    assert AT.find(keys, budgets[0, 0], budgets[1, 1]) == -1


@pytest.mark.parametrize("kwargs", [{"epsilon": 4.0}, {"epsilon": 2.0, "sw_output": "continuous"}])
def test_precompute_builds_the_table_a_small_call_then_uses(kwargs, monkeypatch):
    """``precompute`` builds the table a call too small to repay it would not build; the call then reads it
    (the table the call asks for is the one built: its keys match), and its release is the one without."""
    m = 5_000
    mech = ATP(**kwargs)
    flat, offsets = _layout(m, 20, seed=6)
    assert not AT.wants_table(m, 2 * 20)  # this call alone would not build it
    monkeypatch.setattr(AT, "ENABLED", [False])
    want = _release(_points(m, seed=24), mech, flat, offsets)
    monkeypatch.setattr(AT, "ENABLED", [True])
    P = _points(m, seed=24)
    assert geoldp.trajectory.precompute(P, mechanism=mech)
    index = F.get_index(P)
    built = dict(index._atp_tables)
    assert built
    asked = []
    plan_tables = AT.plan_tables

    def spy(index, budgets, n_traj, plan, tol_pt, n_jobs=1):
        out = plan_tables(index, budgets, n_traj, plan, tol_pt, n_jobs)
        asked.append(out[1].shape[0] == budgets.shape[0])
        return out

    monkeypatch.setattr(AT, "plan_tables", spy)
    assert np.array_equal(_release(P, mech, flat, offsets), want)
    assert asked == [True]  # every table the call asked for was there
    assert dict(index._atp_tables) == built  # and nothing new was built


def test_precompute_of_tp_pointem_and_large_sets_builds_no_table_and_checks_its_input(monkeypatch):
    P = _points(300, seed=25)
    assert geoldp.trajectory.precompute(P, mechanism="tp", epsilon=4.0) is False
    assert geoldp.trajectory.precompute(P, mechanism="pointem", epsilon=4.0) is False
    assert not F.get_index(P)._atp_tables
    monkeypatch.setattr(AT, "TABLE_MAX_POINTS", 299)  # above the cut-off: the traversal, no table
    assert geoldp.trajectory.precompute(P, mechanism="atp", epsilon=4.0) is False
    with pytest.raises(TypeError, match="'points' parameter of precompute"):
        geoldp.trajectory.precompute(np.zeros((3, 2)), mechanism="atp", epsilon=4.0)
    with pytest.raises(ValueError, match="mechanism"):
        geoldp.trajectory.precompute(P, mechanism="nope", epsilon=4.0)
    with pytest.raises(TypeError, match="options"):
        geoldp.trajectory.precompute(P, mechanism=ATP(epsilon=4.0), sw_output="continuous")
