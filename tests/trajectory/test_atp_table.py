"""ATP's public table over P (geoldp.trajectory._atp_table): exact contents, same releases, public only.

* The table's columns equal a direct numpy computation from P (ΔR from the haversine reference, the counts
  and sums of the chord-formula distances within every test distance, the flags where a point is near one).
* Releases with the table equal releases without it, bit for bit, for several |P|, ε and options, lazily
  and eagerly resolved; a table whose every threshold is flagged (the traversal fallback) too; and a
  corrupted table changes the output (power check: the comparison could fail).
* The table is a function of P and the public options only: rebuilt on a fresh copy of P it is identical,
  and the fast index keeps it under (b, mapping) keys alone.
"""

from __future__ import annotations

import numpy as np
import pytest

import geoldp
from geoldp import _kernels as K
from geoldp.datasets import synthetic_city_arrays
from geoldp.mechanisms import sw_half_width
from geoldp.trajectory import ATP
from geoldp.trajectory import _atp_table as AT
from geoldp.trajectory import _fast as F
from geoldp.trajectory import calibration as C

KEY = np.arange(8, dtype=np.uint32) * np.uint32(0x9E3779B9)


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


def _b(eps):
    return float(sw_half_width(ATP(epsilon=eps).copy_budgets(2, "A").radius))


@pytest.mark.parametrize("input_mapping", [False, True])
def test_table_equals_a_direct_computation_from_p(input_mapping):
    P = _points(400)
    b = _b(4.0)
    tab = F.get_index(P).atp_table(b, input_mapping)
    assert tab.shape == (len(P), AT.WIDTH) and not tab.flags.writeable
    lam, phi, xyz = P.lam, P.phi, F.get_index(P).xyz
    for a in range(0, len(P), 7):
        hav = np.array([K.haversine_rad(lam[a], phi[a], lam[p], phi[p]) for p in range(len(P))])
        assert tab[a, 0] == hav.max()
        chord = np.linalg.norm(xyz - xyz[a], axis=1)
        d = np.array([AT._reg.asin_dist(0.5 * h) for h in chord])
        assert tab[a, 1] == pytest.approx(d.sum(), rel=1e-12)
        flags = int(tab[a, 24])
        for k in range(11):
            t = C.band_distance(k, b, tab[a, 0], input_mapping)
            near = np.abs(d - t) <= 2e-6 + 2e-10 * tab[a, 0]
            assert bool((flags >> k) & 1) == bool(near.any())
            assert tab[a, 2 + k] == np.count_nonzero(d <= t)
            assert tab[a, 13 + k] == pytest.approx(d[d <= t].sum(), rel=1e-12, abs=1e-9)
        if input_mapping:
            assert flags & 1  # t_0 = 0 = d(a, a): always the traversal


def _release(P, mech, flat, offsets, eager=False):
    old = F._EAGER_REGION[0]
    F._EAGER_REGION[0] = eager
    try:
        return F.perturb_fast(flat, offsets, P, mech, KEY, 11)
    finally:
        F._EAGER_REGION[0] = old


@pytest.mark.parametrize("m", [300, 2500])
@pytest.mark.parametrize(
    "kwargs",
    [{"epsilon": 0.5}, {"epsilon": 4.0}, {"epsilon": 8.0, "sw_output": "continuous"},
     {"epsilon": 2.0, "distance_mapping": "input"}, {"epsilon": 4.0, "decay_epsilon": "total"}],
)  # fmt: skip
def test_releases_with_and_without_the_table_are_identical(m, kwargs, monkeypatch):
    mech = ATP(**kwargs)
    flat, offsets = _layout(m, 300)
    with_table = _points(m)
    got = _release(with_table, mech, flat, offsets)
    assert F.get_index(with_table)._atp_tables  # the table was built and used
    assert np.array_equal(got, _release(with_table, mech, flat, offsets, eager=True))
    monkeypatch.setattr(AT, "ENABLED", [False])
    without = _points(m)
    assert np.array_equal(got, _release(without, mech, flat, offsets))
    assert not F.get_index(without)._atp_tables


def test_every_flagged_threshold_falls_back_to_the_traversal_and_a_wrong_table_is_caught():
    m = 800
    mech = ATP(epsilon=4.0)
    flat, offsets = _layout(m, 300, seed=2)
    monkeypatch_key = (_b(4.0), False)
    ref_points = _points(m)
    AT.ENABLED[0] = False
    try:
        want = _release(ref_points, mech, flat, offsets)
    finally:
        AT.ENABLED[0] = True
    P = _points(m)
    index = F.get_index(P)
    good = index.atp_table(*monkeypatch_key)
    flagged = good.copy()
    flagged[:, 24] = 2**11 - 1
    flagged.setflags(write=False)
    index._atp_tables[monkeypatch_key] = flagged
    assert np.array_equal(_release(P, mech, flat, offsets), want)
    # power: a table whose candidate counts are off gives other regions, hence another release
    wrong = good.copy()
    wrong[:, 2:13] = np.maximum(wrong[:, 2:13] - 40, 0)
    wrong.setflags(write=False)
    index._atp_tables[monkeypatch_key] = wrong
    assert not np.array_equal(_release(P, mech, flat, offsets), want)
    index._atp_tables[monkeypatch_key] = good
    assert np.array_equal(_release(P, mech, flat, offsets), want)


def test_table_is_a_function_of_p_and_public_options_only():
    m = 600
    P = _points(m)
    mech = ATP(epsilon=3.0)
    flat, offsets = _layout(m, 50, seed=4)
    F.perturb_fast(flat, offsets, P, mech, KEY, 0)
    index = F.get_index(P)
    assert list(index._atp_tables) == [(_b(3.0), False)]
    fresh = F.get_index(_points(m)).atp_table(_b(3.0), False)
    assert np.array_equal(index._atp_tables[(_b(3.0), False)], fresh)
    # other secret inputs leave the same table
    flat2, offsets2 = _layout(m, 70, seed=9)
    F.perturb_fast(flat2, offsets2, P, mech, KEY, 5)
    assert list(index._atp_tables) == [(_b(3.0), False)]
    assert np.array_equal(index._atp_tables[(_b(3.0), False)], fresh)


def test_only_calls_where_the_table_pays_build_it():
    assert AT.wants_table(1000, 2)
    assert not AT.wants_table(100_000, 10**9)
    assert not AT.wants_table(15_000, 2)
    assert AT.wants_table(15_000, 10**6)
