"""The numba fast path (geoldp.trajectory._fast) against the exact reference (TESTING §3 S4/S5, §8 R5).

* Sampler = spec: chi-square goodness of fit of the fast path's merged output against the exact pmf that
  ``exact_enumeration`` computes from the reference stage machine (tiny domains), critical value
  chi2.isf(1e−6, df), fixed key; each exact branch of the EM sampler is forced once; a mutant is rejected
  after a power check.
* Exact components on a larger city: the merge, ΔR, the certified η / R̃ intervals and the resolved Ω, the
  sector and region supersets, the anchor rule and the ChaCha20 stream agree with the reference helpers
  (bit for bit; the resolved R̃ to 1e−10 relative with the same Ω); lazy and exact regions give the same
  output.
* Chunk invariance, determinism, output layout.
"""

from __future__ import annotations

import math

import exact_enumeration as exact
import numba
import numpy as np
import pytest
from trajectory_support import chi_square, city, make, noncentrality

from geoldp import PointSet
from geoldp._core import kernels as K
from geoldp._core import randomness as R
from geoldp.datasets import synthetic_city_arrays
from geoldp.mechanisms import sw_half_width
from geoldp.trajectory import ATP, TP, PointEM
from geoldp.trajectory import _atp_region as AR
from geoldp.trajectory import _atp_table as AT
from geoldp.trajectory import calibration as C
from geoldp.trajectory._fast import anchor as FA
from geoldp.trajectory._fast import driver as F
from geoldp.trajectory._fast import grid as FG
from geoldp.trajectory._fast import merge as FM
from geoldp.trajectory._fast import sampling as FS
from geoldp.trajectory.merge import TAU_FACTOR, merge_index

KEY = np.array(
    [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0, 0x082EFA98, 0xEC4E6C89],
    dtype=np.uint32,
)
N = 100_000


def _layout(trajs):
    trajs = [np.asarray(t, dtype=np.int64) for t in trajs]
    offsets = np.zeros(len(trajs) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in trajs], out=offsets[1:])
    return np.concatenate(trajs), offsets


# the exact pmf of (mechanism, P, x), computed once per session: several tests check different samplers (or
# mutants) against the same pmf; mechanisms and PointSets compare and hash by value, and the enumeration
# depends on nothing else (the fast path's monkeypatched proposal limits do not reach _exact)
_EXACT: dict = {}


def _exact_pmf(mech, points, x) -> dict:
    key = (mech, points, tuple(int(v) for v in x))
    if key not in _EXACT:
        dists = exact.full_distributions(mech, points, np.array([x], dtype=np.int64))
        seqs, pm = exact.merged_distribution(mech, points, dists)
        _EXACT[key] = {tuple(s): float(p) for s, p in zip(seqs.tolist(), pm[0], strict=True) if p > 0}
    return dict(_EXACT[key])


def _sample_counts(mech, points, x, n_draws=N, key=KEY) -> dict:
    n = len(x)
    flat = np.tile(np.asarray(x, dtype=np.int64), n_draws)
    offsets = np.arange(n_draws + 1, dtype=np.int64) * n
    out = F.perturb_fast(flat, offsets, points, mech, key, 0).reshape(n_draws, n)
    assert out.min() >= 0 and out.max() < len(points)
    u, c = np.unique(out, axis=0, return_counts=True)
    return {tuple(a): int(b) for a, b in zip(u.tolist(), c, strict=True)}


def _assert_fits(mech, points, x, **kw):
    expected = _exact_pmf(mech, points, x)
    counts = _sample_counts(mech, points, x, **kw)
    x2, crit, df = chi_square(counts, expected, N)
    assert x2 < crit, (
        f"{mech.name} eps={mech.epsilon} x={x}: X2={x2:.1f} >= crit={crit:.1f} (df={df}), key={KEY.tolist()}"
    )


# ------------------------------------------------------------------------------------------------------
# S4 / S5: the merged output of the fast path against the exact pmf
# ------------------------------------------------------------------------------------------------------

CONFIGS = [
    ("tp", {"epsilon": 10.0}, [0, 3, 5]),
    (
        "tp",
        {"epsilon": 40.0, "sector_convention": "floor", "tie_break": "index", "fallback": "region"},
        [2, 1, 5],
    ),
    ("atp", {"epsilon": 10.0, "sw_buckets": 8}, [0, 5]),
    ("atp", {"epsilon": 40.0, "sw_buckets": 8}, [1, 4]),
    (
        "atp",
        {
            "epsilon": 40.0,
            "sw_buckets": 8,
            "distance_mapping": "input",
            "anchor_mean": "vector",
            "decay_epsilon": "copy",
        },
        [2, 5],
    ),
    ("pointem", {"epsilon": 10.0}, [1, 4, 2]),
    ("tp", {"epsilon": 4.0}, [3]),
]
# n = 3 for ATP: the exact enumeration alone takes ~10 s here
SLOW_CONFIGS = [
    ("atp", {"epsilon": 10.0, "sw_buckets": 8}, [0, 3, 5]),
    (
        "atp",
        {
            "epsilon": 40.0,
            "sw_buckets": 8,
            "distance_mapping": "input",
            "anchor_mean": "vector",
            "split": "grouped",
            "decay_epsilon": "copy",
        },
        [2, 1, 5],
    ),
]
_CLS = {"tp": TP, "atp": ATP, "pointem": PointEM}


@pytest.mark.parametrize(("name", "kwargs", "x"), CONFIGS)
def test_fast_path_fits_exact_pmf(name, kwargs, x):
    _assert_fits(make(_CLS[name], **kwargs), city(6), x)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "kwargs", "x"), SLOW_CONFIGS)
def test_fast_path_fits_exact_pmf_atp_n3(name, kwargs, x):
    _assert_fits(make(_CLS[name], **kwargs), city(6), x)


@pytest.mark.parametrize(
    "prop", [(0, 0), (0, 64), (10**6, 0)], ids=["categorical", "enumerate-reject", "reject"]
)
def test_forced_em_branches_fit_exact_pmf(monkeypatch, prop):
    # (phase-1, phase-3) proposal limits: (0, 0) forces the inverse CDF over the enumerated domain for every
    # EM, (0, 64) the rejection from the enumerated domain, (10**6, 0) pure rejection from the superset.
    monkeypatch.setattr(F, "_prop", list(prop))
    _assert_fits(make(TP, epsilon=10.0), city(6), [0, 3, 5])
    _assert_fits(make(ATP, epsilon=10.0, sw_buckets=8), city(6), [1, 4])


def test_mutant_is_rejected_with_power():
    # ε×1.25 in every stage (TESTING S4): precondition λ >= 3·critical value, then the sample must fail.
    P = city(6)
    x = [0, 3, 5]
    good = make(TP, epsilon=40.0)
    bad = make(TP, epsilon=50.0)
    p_good = _exact_pmf(good, P, x)
    p_bad = _exact_pmf(bad, P, x)
    _, crit, _ = chi_square({}, p_good, N)
    assert noncentrality(p_bad, p_good, N) >= 3 * crit
    x2, crit, _ = chi_square(_sample_counts(bad, P, x), p_good, N)
    assert x2 >= crit


def test_floor_convention_mutant_is_rejected():
    # a fast path that used the wrong sector convention
    P = city(6)
    x = [0, 3, 5]
    good = make(TP, epsilon=40.0)
    bad = make(TP, epsilon=40.0, sector_convention="floor")
    p_good = _exact_pmf(good, P, x)
    lam = noncentrality(_exact_pmf(bad, P, x), p_good, N)
    _, crit, _ = chi_square({}, p_good, N)
    assert lam >= 3 * crit
    x2, crit, _ = chi_square(_sample_counts(bad, P, x), p_good, N)
    assert x2 >= crit


# ------------------------------------------------------------------------------------------------------
# layout, determinism, chunk invariance (R5)
# ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def town():
    lon, lat, flat, offsets, _ = synthetic_city_arrays(3000, 400, min_len=2, max_len=9, seed=11)
    # add trajectories of length 1 (one EM with the whole budget)
    flat = np.concatenate([flat, [17, 2999, 0]])
    offsets = np.concatenate([offsets, offsets[-1] + np.arange(1, 4)])
    return PointSet(lon, lat), flat, offsets


@pytest.mark.parametrize(
    "mech",
    [
        TP(epsilon=4.0),
        ATP(epsilon=4.0),
        PointEM(epsilon=4.0),
        ATP(epsilon=1.0),
        ATP(epsilon=4.0, sw_output="continuous"),
    ],
    ids=["tp", "atp", "pointem", "atp-eps1", "atp-continuous-sw"],
)
def test_chunk_invariance_and_layout(town, mech):
    P, flat, offsets = town
    whole = F.perturb_fast(flat, offsets, P, mech, KEY, 7)
    assert whole.dtype == np.int64 and whole.shape == flat.shape
    assert whole.min() >= 0 and whole.max() < len(P)
    cuts = [0, 1, 57, 58, 200, len(offsets) - 1]
    parts = []
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        sub_off = offsets[a : b + 1] - offsets[a]
        parts.append(F.perturb_fast(flat[offsets[a] : offsets[b]], sub_off, P, mech, KEY, 7 + a))
    assert np.array_equal(np.concatenate(parts), whole)
    again = F.perturb_fast(flat, offsets, P, mech, KEY, 7)
    assert np.array_equal(again, whole)
    other = F.perturb_fast(flat, offsets, P, mech, KEY[::-1].copy(), 7)
    assert not np.array_equal(other, whole)


def test_single_point_and_empty_inputs(town):
    P, _, _ = town
    flat, offsets = _layout([[5], [6, 7]])
    out = F.perturb_fast(flat, offsets, P, ATP(epsilon=2.0), KEY, 0)
    assert out.shape == (3,)
    no_traj = (np.empty(0, dtype=np.int64), np.zeros(1, dtype=np.int64))
    empty = F.perturb_fast(*no_traj, P, TP(epsilon=1.0), KEY, 0)
    assert empty.shape == (0,)


# ------------------------------------------------------------------------------------------------------
# exact components against the reference helpers
# ------------------------------------------------------------------------------------------------------


def test_chacha_stream_matches_random_module():
    rng = np.random.default_rng(3)
    for _ in range(20):
        key = rng.integers(0, 2**32, 8, dtype=np.uint32)
        stream = int(rng.integers(0, 2**40))
        b1, s1 = R.stream_state(stream)
        b2 = np.zeros(16, dtype=np.uint32)
        s2 = np.zeros(3, dtype=np.int64)
        R.stream_reset(s2, stream)
        for i in range(60):
            if i % 3 == 0:
                assert R.stream_uniform(key, b1, s1) == R.stream_uniform(key, b2, s2)
            elif i % 3 == 1:
                k = int(rng.integers(1, 10**9))
                assert R.stream_integers(key, b1, s1, k) == R.stream_integers(key, b2, s2, k)
            else:
                cdf = np.cumsum(rng.random(9))
                cdf /= cdf[-1]
                want = R.stream_categorical_cdf(key, b1, s1, cdf, 9)
                assert R.stream_categorical_cdf(key, b2, s2, cdf, 9) == want


@pytest.mark.parametrize("prop", [(48, 64), (0, 64), (0, 0), (2, 1)], ids=["default", "enum", "cdf", "mixed"])
def test_em_over_all_points_equals_em_over_an_empty_domain(town, prop):
    # em_full (PointEM, single points, ATP's anchor) must draw exactly what em draws with no constraint
    P, _, _ = town
    for small in (False, True):
        sub = PointSet(P.lon[:20], P.lat[:20]) if small else P  # |P| <= 24: the enumeration branch at once
        index = F.get_index(sub)
        ix = F.kernel_index(index)
        mm = len(sub)
        cp = _copy_plan(0.0, True)  # g = 2, centred: unused without sectors
        for x, eps, stream in ((0, 0.05, 1), (17, 2.0, 2), (mm - 1, 8.0, 3)):
            states = []
            draws = []
            for full in (False, True):
                w = F.new_work(mm, max(int(index.gi[1]), 1), 2)
                R.stream_reset(w.state, stream)
                got = []
                for _ in range(30):
                    if full:
                        y = FS.em_full(ix.lam[x], ix.phi[x], eps, ix, w, KEY, *prop)
                    else:
                        y = FS.em(
                            ix.lam[x], ix.phi[x], eps, ix, cp, w, True, 0, 0, mm, None, None, KEY, *prop
                        )
                    got.append(int(y))
                draws.append(got)
                states.append((w.state.copy(), w.stats.copy()))
            assert draws[0] == draws[1]
            assert np.array_equal(states[0][0], states[1][0]) and np.array_equal(states[0][1], states[1][1])


def test_np_mean_replica_is_bit_identical():
    rng = np.random.default_rng(4)
    for n in list(range(1, 40)) + [127, 128, 129, 255, 256, 257, 1000, 4099]:
        a = rng.normal(size=n) * rng.uniform(0.1, 3)
        assert FA.np_mean(a, n) == np.mean(a)


@pytest.mark.parametrize("route", ["tree", "scan"])
def test_anchor_rule_matches_reference(town, route, monkeypatch):
    P, flat, offsets = town
    idx = F.get_index(P)
    # the KD-tree route for large calls, the scan for small ones: the same rule
    monkeypatch.setattr(FA, "SCAN_PAIRS", 0 if route == "tree" else len(P) * len(offsets))
    for vector in (False, True):
        got = FA.nearest_anchors(flat, offsets, idx, vector)
        d = np.empty(len(P))
        for t in range(0, len(offsets) - 1, 7):
            lam_a, phi_a = _reference_anchor_location(P, flat[offsets[t] : offsets[t + 1]], vector)
            K.haversine_from_one(lam_a, phi_a, P.lam, P.phi, d)
            assert got[t] == int(np.argmin(d))


def _reference_anchor_location(P, traj, vector):
    from geoldp.trajectory._reference import anchor_location

    return anchor_location(np.ascontiguousarray(P.lam[traj]), np.ascontiguousarray(P.phi[traj]), vector)


def test_merge_matches_reference_including_ties():
    # a city plus points placed exactly on meridians and on the equator-parallel great circle (ties)
    lon, lat, *_ = synthetic_city_arrays(2000, 0, seed=5)
    rows = np.linspace(41.80, 41.95, 16)
    lon = np.concatenate([lon, np.full(16, -87.6), np.full(16, -87.7)])
    lat = np.concatenate([lat, rows, rows[::-1]])
    P = PointSet(lon, lat)
    idx = F.get_index(P)
    assert idx.use_grid
    m = len(P)
    rng = np.random.default_rng(9)
    pairs = [(int(a), int(b)) for a, b in rng.integers(0, m, (400, 2))]
    meridian = np.arange(2000, m)
    pairs += [(int(a), int(b)) for a, b in rng.choice(meridian, (200, 2))]
    tau = TAU_FACTOR * P.diameter_m
    ix = F.kernel_index(idx)
    w = F.new_work(m, int(idx.gi[1]), 2)
    da = np.empty(m)
    db = np.empty(m)
    for balanced in (True, False):
        cp = _copy_plan(tau, balanced)
        for a, b in pairs:
            ref = merge_index(a, b, P.lam, P.phi, tau, balanced, da, db)
            got = FM.merge_position(a, b, ix, cp, w)
            assert got == ref, (a, b, balanced)


def test_merge_slab_holds_every_point_of_the_ellipse():
    # the merge keeps only points with |p·n| <= slab; every p with d(p, a) + d(p, b) <= dab + gap must pass,
    # the worst being the ellipse's co-vertex (above the arc's midpoint); arcs from 1 mm to 0.44πR; the
    # geometry in 40-digit arithmetic, n and |a × b| from the float64 vectors as in the kernel
    import mpmath

    mp = mpmath.mp.clone() if hasattr(mpmath.mp, "clone") else mpmath.mp
    mp.dps = 40
    rng = np.random.default_rng(21)
    R = mp.mpf(K.EARTH_RADIUS_M)

    def unit(v):
        return v / mp.norm(v)

    def cross(u, v):
        return mp.matrix([u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]])

    def dist(u, v):  # stable: 2·asin(chord/2)
        return 2 * mp.asin(mp.norm(u - v) / 2)

    for dab_m in (1e-3, 0.5, 30.0, 2e3, 2e4, 3e5, 3e6, 0.44 * math.pi * K.EARTH_RADIUS_M):
        for _ in range(6):
            a = unit(mp.matrix(rng.normal(size=3).tolist()))
            t = unit(cross(a, mp.matrix(rng.normal(size=3).tolist())))
            b = a * mp.cos(dab_m / R) + t * mp.sin(dab_m / R)
            a64 = np.array([float(x) for x in a])
            b64 = np.array([float(x) for x in b])
            c64 = np.array([a64[1] * b64[2] - a64[2] * b64[1], a64[2] * b64[0] - a64[0] * b64[2],
                            a64[0] * b64[1] - a64[1] * b64[0]])  # fmt: skip
            nn = float(np.sqrt(c64 @ c64))
            n64 = c64 / nn
            n = unit(cross(a, b))
            d_ab = dist(a, b)
            for gap in (1e-9, 1e-7, 1e-5):
                big_b, big_a = d_ab / 2, (d_ab + gap / R) / 2
                h = mp.acos(mp.cos(big_a) / mp.cos(big_b))  # the co-vertex's height
                mid = unit(a + b)
                side = cross(n, mid)
                for frac in (1, mp.mpf("0.999"), mp.mpf("0.5")):
                    for along in (0, mp.mpf(rng.uniform(-0.4, 0.4)) * d_ab):
                        foot = mid * mp.cos(along) + side * mp.sin(along)
                        p = foot * mp.cos(frac * h) + n * mp.sin(frac * h)
                        if (dist(p, a) + dist(p, b)) * R <= float(d_ab * R) + gap:
                            p64 = np.array([float(x) for x in p])
                            assert abs(p64 @ n64) <= FM._slab(float(d_ab * R), gap, nn)
            # not vacuous: a centimetre-wide strip for a 20 km arc at gap 1e−7 m
            if dab_m == 2e4:
                assert FM._slab(float(d_ab * R), 1e-7, nn) * K.EARTH_RADIUS_M < 0.05


def _copy_plan(tau, balanced):
    """A CopyPlan with merge tolerance ``tau`` and rule ``balanced`` (the other fields are not read)."""
    none = np.zeros((1, 2))
    return F.CopyPlan(float(tau), 2, True, bool(balanced), True, none, none, none)


def test_global_point_set_uses_full_scans():
    rng = np.random.default_rng(2)
    lon = rng.uniform(-180, 180, 300)
    lat = np.degrees(np.arcsin(rng.uniform(-1, 1, 300)))
    P = PointSet(lon, lat)
    idx = F.get_index(P)
    assert not idx.use_grid
    tau = TAU_FACTOR * P.diameter_m
    ix = F.kernel_index(idx)
    w = F.new_work(len(P), int(idx.gi[1]), 2)
    cp = _copy_plan(tau, True)
    da = np.empty(len(P))
    db = np.empty(len(P))
    for a, b in rng.integers(0, len(P), (50, 2)):
        ref = merge_index(int(a), int(b), P.lam, P.phi, tau, True, da, db)
        got = FM.merge_position(int(a), int(b), ix, cp, w)
        assert got == ref
    flat, offsets = _layout([rng.integers(0, 300, int(k)) for k in rng.integers(1, 6, 50)])
    for mech in (TP(epsilon=4.0), ATP(epsilon=4.0)):
        out = F.perturb_fast(flat, offsets, P, mech, KEY, 0)
        assert out.min() >= 0 and out.max() < len(P)


def _copy_region(r_hat, b, eps_r, dr, input_mapping):
    # the radius budget doubles as the decay budget here
    return AR.CopyRegion(float(r_hat), float(b), float(eps_r), float(eps_r), float(dr), bool(input_mapping))


@pytest.mark.parametrize("input_mapping", [False, True])
def test_certified_region_matches_reference(town, input_mapping):
    """ΔR exact; the certified η and R̃ intervals contain the reference's values; the resolved Ω is the
    reference's Ω — on many anchors, budgets and released values r̂."""
    P, _, _ = town
    idx = F.get_index(P)
    ri = AR.region_index(idx)
    assert ri.has_tree
    m = len(P)
    stack = np.zeros(AR.STACK, dtype=np.int64)
    work = np.zeros(8)
    reg = np.zeros(AR.N_REGION)
    rng = np.random.default_rng(1)
    row = np.empty(m)
    widths = []
    for b, eps_r in ((0.358155424611167, 0.5), (0.0304, 4.0), (float(sw_half_width(0.375)), 0.375)):
        for a in rng.integers(0, m, 25):
            a = int(a)
            K.haversine_from_one(idx.lam[a], idx.phi[a], idx.lam, idx.phi, row)
            dr = AR.farthest(a, ri, stack)
            assert dr == row.max()
            assert AR.farthest_scan(a, idx.lam, idx.phi, idx.xyz) == dr
            for r_hat in np.linspace(-b, 1 + b, 23):
                eta_ref, _ = C.calibration_centre(row, r_hat, b, eps_r, dr, input_mapping)
                cr = _copy_region(r_hat, b, eps_r, dr, input_mapping)
                r_est = C.sw_estimate(r_hat, b, dr)
                r_ref = C.calibrate(r_est, eta_ref, dr, eps_r)
                for tol in (0.05, 2.0, 200.0):
                    AR.region_setup(a, ri, cr, tol, False, stack, work, reg)
                    assert reg[AR.F_RES] == 0.0
                    assert reg[AR.F_LO] <= r_ref <= reg[AR.F_HI]
                    assert reg[AR.F_SUPER] == reg[AR.F_HI]
                    widths.append(reg[AR.F_HI] - reg[AR.F_LO])
                AR.resolve(a, idx.lam, idx.phi, idx.xyz, reg)
                assert reg[AR.F_RES] == 1.0 and reg[AR.F_LO] == reg[AR.F_HI]
                assert reg[AR.F_LO] == pytest.approx(r_ref, rel=1e-10)
                assert np.array_equal(row <= r_ref, row <= reg[AR.F_LO])
                # without a tree the region is exact at once
                AR.region_setup(a, ri._replace(has_tree=False), cr, 2.0, False, stack, work, reg)
                assert reg[AR.F_RES] == 1.0
                assert np.array_equal(row <= r_ref, row <= reg[AR.F_LO])
    # the intervals are tight enough to matter (metres on a ~10 km city)
    assert np.median(widths) < 5.0


@pytest.mark.parametrize("input_mapping", [False, True])
def test_straddling_groups_keep_the_eta_interval_exact(town, input_mapping):
    """Straddling nodes carried as uncertain groups (distances bounded, weights q or 1): the padded η
    interval contains the exact η (both the fast exact pass and ``calibration_centre``) and the R̃ interval
    the reference R̃, for many anchors × r̂ × budgets × group limits × Taylor tolerances. Power: the same
    check catches a wrong bound that fixes the groups' weights at q."""
    P, _, _ = town
    idx = F.get_index(P)
    ri = AR.region_index(idx)
    assert ri.has_tree
    m = len(P)
    stack = np.zeros(AR.STACK, dtype=np.int64)
    work = np.zeros(8)
    reg = np.zeros(AR.N_REGION)
    rng = np.random.default_rng(5 + input_mapping)
    row = np.empty(m)
    cases = carried = tried = caught = 0
    for b, eps_r in ((0.358155424611167, 0.5), (0.0304, 4.0), (float(sw_half_width(0.375)), 0.375)):
        for a in rng.integers(0, m, 20):
            a = int(a)
            K.haversine_from_one(idx.lam[a], idx.phi[a], idx.lam, idx.phi, row)
            dr = float(row.max())
            for r_hat in np.linspace(-b, 1 + b, 15):
                has_k, d_lo, d_hi = C.candidate_band(r_hat, b, dr, input_mapping)
                eta_fast = AR.eta_exact(a, idx.lam, idx.phi, idx.xyz, has_k, d_lo, d_hi, eps_r)
                eta_ref, _ = C.calibration_centre(row, r_hat, b, eps_r, dr, input_mapping)
                assert eta_fast == pytest.approx(eta_ref, rel=1e-10)
                r_ref = C.calibrate(C.sw_estimate(r_hat, b, dr), eta_ref, dr, eps_r)
                cr = _copy_region(r_hat, b, eps_r, dr, input_mapping)
                for straddle in (0.01, 0.1, 1.0, 10.0, 1e9):
                    for tol in (0.05, 2.0, 200.0):
                        AR.region_setup_tol(a, ri, cr, tol, straddle, False, stack, work, reg)
                        cases += 1
                        carried += work[7] > 0
                        lo, hi = reg[AR._F_ETA_LO], reg[AR._F_ETA_HI]
                        assert lo <= eta_fast <= hi and lo <= eta_ref <= hi
                        assert reg[AR.F_LO] <= r_ref <= reg[AR.F_HI]
                        if work[7] > 0 and tol == 2.0:
                            # the wrong bound, padded as region_setup pads
                            AR.eta_interval(
                                a, ri, has_k, d_lo, d_hi, tol, straddle, eps_r, stack, work, False
                            )
                            pad = 1e-9 * abs(work[1]) + 1e-6
                            tried += 1
                            caught += not (work[0] - pad <= eta_fast <= work[1] + pad)
    # the groups are really exercised, and the wrong bound misses the exact η in many cases (17 % here)
    assert carried > 0.3 * cases
    assert caught > 0.05 * tried


def _region_plan(ri, tol_pt):
    """The driver's ``RegionPlan`` with the two fields :func:`FG.member` reads (the rest unused). Its type is
    the package's, so numba's on-disk cache never refers to this test module (a process that cannot import
    it would fail to load the cache index)."""
    z = np.zeros((1, 2))
    anchors = np.zeros(0, dtype=np.int64)
    return F.RegionPlan(anchors, ri, tol_pt, False, z, z, z, z, 1024, False, False, *AT._NONE)


@numba.njit(cache=False)
def _members(out, lam, phi, xyz, dq, dint, reg, rp, w):
    """``FG.member`` of every point in order (g = 2, centred), as the loop ``[FG.member(p, ...) for p]``
    does from Python, without a boxed call per point. Not cached: numba's on-disk cache never refers to
    this test module."""
    for p in range(out.size):
        out[p] = FG.member(p, lam, phi, xyz, dq, dint, reg, rp, w, 2, True)


@pytest.mark.parametrize("input_mapping", [False, True])
def test_refine_narrows_a_grouped_region_and_keeps_every_decision(town, input_mapping):
    """A region whose η interval came from a traversal that carried straddling groups is narrowed by
    ``refine`` (a coarser traversal where its limit is below the first's, then one without groups) before
    any exact pass: the narrowed R̃ interval still holds
    the exact R̃, the superset radius stays, membership is d ≤ R̃ for every point, and most copies with a
    point inside the first interval are then settled without the exact pass. Without carried groups
    ``refine`` leaves the record as it is."""
    P, _, _ = town
    idx = F.get_index(P)
    ri = AR.region_index(idx)
    m = len(P)
    stack = np.zeros(AR.STACK, dtype=np.int64)
    work = np.zeros(8)
    reg = np.zeros(AR.N_REGION)
    w = F.new_work(m, max(int(idx.gi[1]), 1), 2)
    dq = np.zeros((8, 3))
    dint = np.zeros(8, dtype=np.int64)
    rng = np.random.default_rng(7 + input_mapping)
    row = np.empty(m)
    ambiguous = refined_only = 0
    for b, eps_r in ((0.358155424611167, 0.5), (0.0304, 4.0)):
        for a in rng.integers(0, m, 12):
            a = int(a)
            K.haversine_from_one(idx.lam[a], idx.phi[a], idx.lam, idx.phi, row)
            dr = float(row.max())
            for r_hat in np.linspace(-b, 1 + b, 9):
                cr = _copy_region(r_hat, b, eps_r, dr, input_mapping)
                AR.region_setup_tol(a, ri, cr, 200.0, 1e9, True, stack, work, reg)  # eager: the exact R̃
                r_exact = reg[AR.F_LO]
                tol_pt = float(rng.choice([2.0, 200.0]))
                AR.region_setup_tol(a, ri, cr, tol_pt, 1e9, False, stack, work, reg)
                lo, hi, sup = reg[AR.F_LO], reg[AR.F_HI], reg[AR.F_SUPER]
                inside = (row >= lo) & (row <= hi)
                FG.dom_reset(dint)
                FG.dom_region(dint, a)
                rp = _region_plan(ri, tol_pt)
                got = np.zeros(m, dtype=np.bool_)
                _members(got, idx.lam, idx.phi, idx.xyz, dq, dint, reg, rp, w)
                assert np.array_equal(got, row <= r_exact)
                assert reg[AR.F_SUPER] == sup
                assert lo <= reg[AR.F_LO] <= r_exact <= reg[AR.F_HI] <= hi
                if inside.any():
                    ambiguous += 1
                    refined_only += reg[AR.F_RES] == 0.0
                # no carried groups: refine does nothing
                AR.region_setup_tol(a, ri, cr, tol_pt, 0.0, False, stack, work, reg)
                before = reg.copy()
                AR.refine(a, ri, tol_pt, w.rstack, w.rwork, reg)
                assert np.array_equal(reg, before)
    # the refinement really runs, and it settles most of those copies without the exact pass
    assert ambiguous >= 10
    assert refined_only > 0.5 * ambiguous


def test_calibrate_is_monotone_in_eta():
    # the certified R̃ interval relies on it (ALGORITHM §8.5)
    rng = np.random.default_rng(3)
    for _ in range(400):
        dr = float(rng.uniform(1.0, 5e4))
        r_est = float(rng.uniform(0, dr))
        eps = float(rng.uniform(0.01, 5))
        etas = np.sort(rng.uniform(0, dr, 50))
        vals = [C.calibrate(r_est, float(e), dr, eps) for e in etas]
        assert np.all(np.diff(vals) >= -1e-9 * dr)


def _lazy_and_eager(P, flat, offsets, mech, monkeypatch):
    """The fast path's output with regions settled lazily (default) and at once; the lazy run's counters."""
    F.COLLECT_STATS = True
    try:
        lazy = F.perturb_fast(flat, offsets, P, mech, KEY, 3)
        stats = F.last_stats()
        monkeypatch.setattr(F, "_EAGER_REGION", [True])
        eager = F.perturb_fast(flat, offsets, P, mech, KEY, 3)
        monkeypatch.setattr(F, "_EAGER_REGION", [False])
    finally:
        F.COLLECT_STATS = False
    return lazy, eager, stats


@pytest.mark.parametrize("eps", [1.0, 4.0, 10.0])
def test_lazy_region_gives_the_output_of_the_exact_region(town, eps, monkeypatch):
    """Settling Ω lazily (default) and exactly at once give bit-identical output for a key; and the lazy
    path does resolve some regions exactly on this city (with a coarse tolerance), so both branches run."""
    P, flat, offsets = town
    mech = ATP(epsilon=eps)
    monkeypatch.setattr(AT, "ENABLED", [False])  # the quadtree route (test_atp_table covers the table's)
    for tol in (2.0, 500.0):
        monkeypatch.setattr(F, "_REGION_TOL_PT", tol)
        lazy, eager, stats = _lazy_and_eager(P, flat, offsets, mech, monkeypatch)
        assert np.array_equal(lazy, eager)
        assert stats["atp_regions"] > 0
        if tol == 500.0:
            assert 0 < stats["exact_eta_passes"] < stats["atp_regions"]


def test_refined_regions_give_the_output_of_the_exact_region(monkeypatch):
    """At the size where the region's traversal carries straddling groups, the copies that meet a point in
    their interval are refined before any exact pass, and the output for a key is the one of regions
    settled exactly at once."""
    m = AR.STRADDLE_MIN_POINTS
    lon, lat, flat, offsets, _ = synthetic_city_arrays(m, 300, min_len=2, max_len=8, seed=4)
    P = PointSet(lon, lat)
    mech = ATP(epsilon=4.0)
    monkeypatch.setattr(AT, "ENABLED", [False])  # the quadtree route
    lazy, eager, stats = _lazy_and_eager(P, flat, offsets, mech, monkeypatch)
    assert np.array_equal(lazy, eager)
    # some copies were refined, and fewer of them needed the exact pass; at this size the coarse level's
    # limit (scaled to |P|) is above the first traversal's, so refine goes straight to the one without groups
    assert 0 < stats["exact_eta_passes"] < stats["refinements_without_groups"]
    assert stats["refinements_coarse"] == 0


@pytest.mark.parametrize("g", [2, 4, 6, 12])
@pytest.mark.parametrize("centred", [True, False])
def test_domain_supersets_and_membership_are_exact(town, g, centred):
    P, _, _ = town
    idx = F.get_index(P)
    m = len(P)
    rng = np.random.default_rng(g + 100 * centred)
    dq = np.zeros((8, 3))
    hp = np.zeros((40, 3))
    dint = np.zeros(8, dtype=np.int64)
    dflt = np.zeros(AR.N_REGION)
    nr = int(idx.gi[1])
    lo, hi, cum = (np.zeros(nr, dtype=np.int64) for _ in range(3))
    theta = np.empty(m)
    dist = np.empty(m)
    for _ in range(12):
        FG.dom_reset(dint)
        apexes = [int(a) for a in rng.integers(0, m, int(rng.integers(1, 3)))]
        truth = np.ones(m, dtype=bool)
        for apex in apexes:
            d = int(rng.integers(0, g))
            FG.dom_sector(dq, hp, dint, apex, d, g, centred, idx.lam, idx.phi, idx.basis)
            K.bearing_from_one(idx.lam[apex], idx.phi[apex], idx.lam, idx.phi, theta)
            truth &= K.sector_many(theta, g, centred, np.empty(m, dtype=np.int64)) == d
        has_reg = bool(rng.integers(0, 2))
        du = dv = dl = 0.0
        if has_reg:
            c = int(rng.integers(0, m))
            K.haversine_from_one(idx.lam[c], idx.phi[c], idx.lam, idx.phi, dist)
            r = float(np.quantile(dist, rng.uniform(0.05, 0.9)))  # a radius equal to a point's distance
            FG.dom_region(dint, c)
            AR._set_radius(dflt, r, r)  # an exact (resolved) region of radius r
            dflt[AR.F_RES] = 1.0
            truth &= dist <= r
            du, dv = FG.gnomonic(idx.xyz[c, 0], idx.xyz[c, 1], idx.xyz[c, 2], idx.gf, idx.basis)
            dl = idx.gf[4] * (r / K.EARTH_RADIUS_M) * (1.0 + 1e-9) + 1e-12
        n_runs, total = FG.ranges(
            idx.gf, idx.gi, idx.cell_start, hp, int(dint[0]), has_reg, du, dv, dl, lo, hi, cum
        )
        covered = np.zeros(m, dtype=bool)
        for k in range(n_runs):
            covered[idx.order[lo[k] : hi[k]]] = True
        assert covered.sum() == total
        assert not np.any(truth & ~covered), "superset misses a member"
        member = np.array(
            [
                FG.member(p, idx.lam, idx.phi, idx.xyz, dq, dint, dflt, None, None, g, centred)
                for p in range(m)
            ]
        )
        assert np.array_equal(member, truth)


def test_sw_bucket_sampler_matches_masses():
    from geoldp.mechanisms import sw_bucket_masses, sw_half_width

    eps, M = 0.75, 16
    b = float(sw_half_width(eps))
    buf = np.zeros(16, dtype=np.uint32)
    state = np.zeros(3, dtype=np.int64)
    for v in (0.0, 0.3, 1.0):
        R.stream_reset(state, 5)
        draws = np.array([FS.sw_bucket(v, eps, b, M, KEY, buf, state) for _ in range(40_000)])
        pmf = np.asarray(sw_bucket_masses(v, eps, M), dtype=float)
        expected = {j: float(p) for j, p in enumerate(pmf)}
        counts = dict(zip(*np.unique(draws, return_counts=True), strict=True))
        x2, crit, _ = chi_square({int(k): int(c) for k, c in counts.items()}, expected, 40_000)
        assert x2 < crit
        # and the closed-form CDF equals the cumulative masses
        w = (1 + 2 * b) / M
        t = math.exp(-eps)
        cdf = [FS.sw_cdf(j + 1, v, b, 1 / (2 * b + t), t / (2 * b + t), w) for j in range(M)]
        assert np.allclose(cdf, np.cumsum(pmf), atol=1e-12)


def test_duplicate_public_points_fit_exact_pmf():
    # duplicates are accepted with a warning (issue 2); identical coordinates have bearing 0 and distance 0,
    # which the dot-product filters must leave to the kernels (sector 0, exact ties in the merge)
    from trajectory_support import CITY_LAT, CITY_LON

    from geoldp._core.errors import GeoLDPWarning

    with pytest.warns(GeoLDPWarning, match="duplicate"):
        P = PointSet(np.r_[CITY_LON[:5], CITY_LON[1]], np.r_[CITY_LAT[:5], CITY_LAT[1]])
    _assert_fits(make(TP, epsilon=10.0, tie_break="index"), P, [5, 1, 2])
    _assert_fits(make(ATP, epsilon=40.0, sw_buckets=8), P, [1, 5])


@pytest.mark.parametrize(
    "mech", [TP(epsilon=4.0), ATP(epsilon=4.0), PointEM(epsilon=4.0)], ids=["tp", "atp", "pem"]
)
def test_threads_give_identical_output(town, mech):
    P, flat, offsets = town
    one = F.perturb_fast(flat, offsets, P, mech, KEY, 5)
    for n_jobs in (2, 3, 64):
        assert np.array_equal(F.perturb_fast(flat, offsets, P, mech, KEY, 5, n_jobs=n_jobs), one)
    # threads and chunking together: a chunk starting at trajectory 100, run with 2 threads
    sub = offsets[100:] - offsets[100]
    part = F.perturb_fast(flat[offsets[100] :], sub, P, mech, KEY, 105, n_jobs=2)
    assert np.array_equal(part, one[offsets[100] :])


def test_engine_n_jobs(town):
    import geoldp

    P, flat, offsets = town
    trajs = [flat[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
    a = geoldp.perturb_trajectories(trajs, P, mechanism="atp", epsilon=4.0, rng=3)
    b = geoldp.perturb_trajectories(trajs, P, mechanism="atp", epsilon=4.0, rng=3, n_jobs=2)
    c = geoldp.perturb_trajectories(trajs, P, mechanism="atp", epsilon=4.0, rng=3, n_jobs=-1)
    assert all(np.array_equal(x, y) and np.array_equal(x, z) for x, y, z in zip(a, b, c, strict=True))
    with pytest.raises(ValueError, match="n_jobs"):
        geoldp.perturb_trajectories(trajs, P, mechanism="tp", epsilon=4.0, rng=3, n_jobs=0)
    with pytest.raises(TypeError, match="n_jobs"):
        geoldp.perturb_trajectories(trajs, P, mechanism="tp", epsilon=4.0, rng=3, n_jobs=1.5)
