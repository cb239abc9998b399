"""Exponential mechanism: exact checks (E2), float margin (N7), goodness of fit (S2), mutants.

Mutants: M3, M5a, M5b, M13.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import pickle

import mpmath
import numpy as np
import pytest
from mech_stats import chi2_gof, counts_of, noncentrality, passes

from geoldp._core import kernels as _kernels
from geoldp._core.geo import haversine_m
from geoldp._core.pointset import PointSet
from geoldp._core.randomness import RandomSource
from geoldp.mechanisms import ExponentialMechanism, check_em_epsilon, em_epsilon_limit, exponential
from geoldp.testing import EnumeratingSource, assert_ldp, exact_distribution

mpmath.mp.dps = 50
em_mod = importlib.import_module("geoldp.mechanisms.exponential")  # the package attribute is the function
ORIG = em_mod.em_log_weights


def _sets():
    rng = np.random.default_rng(10)
    city = (rng.uniform(116.30, 116.50, 8), rng.uniform(39.85, 40.00, 8))
    # 1 isolated point + a cluster of 7 about 55 km away
    iso = (
        np.r_[116.0, 116.65 + rng.uniform(-0.01, 0.01, 7)],
        np.r_[39.9, 39.9 + rng.uniform(-0.01, 0.01, 7)],
    )
    meridian = (np.full(5, 10.0), np.array([40.0, 40.1, 40.25, 40.3, 40.6]))
    antimeridian = (np.array([179.8, 179.95, -179.9, -179.7]), np.array([0.0, 0.1, -0.1, 0.05]))
    polar = (np.array([0.0, 90.0, 180.0, -45.0]), np.full(4, 89.9))
    two = (np.array([2.35, 2.40]), np.array([48.85, 48.80]))
    return {
        "city": city,
        "isolated+cluster": iso,
        "meridian": meridian,
        "antimeridian": antimeridian,
        "polar": polar,
        "two": two,
    }


SETS = {k: PointSet(*v) for k, v in _sets().items()}
OTHER = (np.array([-74.0, 151.2, 18.4]), np.array([40.7, -33.9, -33.9]))  # points on other continents


def _inputs(ps):
    alon = ps.lon[0] - 180 if ps.lon[0] > 0 else ps.lon[0] + 180
    return np.r_[ps.lon, OTHER[0], alon], np.r_[ps.lat, OTHER[1], -ps.lat[0]]


def _domains(ps, seed=0):
    rng = np.random.default_rng(seed)
    doms = [None]
    for _ in range(5):
        size = int(rng.integers(1, ps.size + 1))
        doms.append(np.sort(rng.choice(ps.size, size, replace=False)))
    return doms


def _eps_grid(ps):
    return [0.01, 0.5, 2.0, 10.0, em_epsilon_limit(ps.size) - 1e-9]


def _brute_diameter(ps):
    return float(haversine_m(ps.lon[:, None], ps.lat[:, None], ps.lon[None, :], ps.lat[None, :]).max())


def _mp_reference(mech, lon, lat):
    """50-digit pmf of the specified formula (global Δ by brute force, float haversine distances)."""
    dom = mech.support
    delta = mpmath.mpf(_brute_diameter(mech.points))
    out = []
    for x, y in zip(lon, lat, strict=True):
        d = haversine_m(x, y, mech.points.lon[dom], mech.points.lat[dom])
        lw = [-(mpmath.mpf(mech.epsilon) * mpmath.mpf(float(v))) / (2 * delta) for v in d]
        z = sum(mpmath.exp(v) for v in lw)
        out.append([mpmath.exp(v) / z for v in lw])
    return out


def e2_check(mech, lon, lat, n_ref=3):
    """TESTING E2 criteria (a)(b)(c) on all inputs and (d) on the first ``n_ref`` inputs.

    Raises AssertionError.
    """
    P = mech.probabilities(lon, lat)
    if not np.all(P > 0):
        raise AssertionError("(b) not full support")
    ratio = assert_ldp(P, mech.epsilon)
    for row, ref_row in zip(P[:n_ref], _mp_reference(mech, lon[:n_ref], lat[:n_ref]), strict=True):
        for v, r in zip(row, ref_row, strict=True):
            if not abs(mpmath.mpf(float(v)) / r - 1) <= 1e-12:
                raise AssertionError(f"(d) pmf {float(v)!r} differs from the 50-digit reference {float(r)!r}")
    return P, ratio


# ---- E2 ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(SETS))
def test_e2_exact(name):
    ps = SETS[name]
    lon, lat = _inputs(ps)
    for dom in _domains(ps):
        for eps in _eps_grid(ps):
            mech = ExponentialMechanism(epsilon=eps, points=ps, domain=dom)
            P, ratio = e2_check(mech, lon, lat, n_ref=3 if eps in (0.5, _eps_grid(ps)[-1]) else 0)
            assert ratio <= eps
            logp = mech.log_probabilities(lon, lat)
            assert np.allclose(np.exp(logp), P, rtol=1e-12, atol=0)


def test_e2_full_domain_is_close_to_eps_on_isolated_cluster():
    ps = SETS["isolated+cluster"]
    lon, lat = _inputs(ps)
    # worst ratio ≈ ε/2 + ln(7 + e^{−ε/2}) − ln(1 + 7e^{−ε/2}) (isolated point vs the cluster of 7)
    for eps in (0.5, 2.0):
        ratio = assert_ldp(ExponentialMechanism(epsilon=eps, points=ps).probabilities(lon, lat), eps)
        assert ratio > 0.8 * eps


def test_e2_sampler_equals_pmf():
    ps = SETS["city"]
    lon, lat = _inputs(ps)
    for dom in _domains(ps)[:3]:
        mech = ExponentialMechanism(epsilon=2.0, points=ps, domain=dom)
        P = mech.probabilities(lon, lat)
        for i in range(lon.size):
            dist = exact_distribution(
                lambda v, rng, mech=mech: mech.perturb(v[0], v[1], rng=rng).item(), (lon[i], lat[i])
            )
            row = np.array([dist.get(int(r), 0.0) for r in mech.support])
            assert math.isclose(sum(dist.values()), 1.0, abs_tol=1e-12)
            assert np.allclose(row, P[i], rtol=1e-12, atol=0)


# ---- mutants (monkeypatched log-weights: the real sampler then draws from the broken pmf) -----------------
def _deg_diameter(points):
    lon, lat = points.lon, points.lat
    return float(np.max(np.hypot(lon[:, None] - lon[None, :], lat[:, None] - lat[None, :])))


def mut_eps125(x_lam, x_phi, points, domain, epsilon, **kw):
    return ORIG(x_lam, x_phi, points, domain, 1.25 * epsilon, **kw)


def mut_half_delta(x_lam, x_phi, points, domain, epsilon, **kw):
    return 2.0 * ORIG(x_lam, x_phi, points, domain, epsilon, **kw)


def mut_degrees(x_lam, x_phi, points, domain, epsilon, **kw):
    return ORIG(x_lam, x_phi, points, domain, epsilon, **kw) * points.diameter_m / _deg_diameter(points)


def mut_score_range(x_lam, x_phi, points, domain, epsilon, **kw):
    lw = ORIG(x_lam, x_phi, points, domain, epsilon, **kw)
    d = -lw * 2.0 * points.diameter_m / epsilon
    rng_ = np.ptp(d, axis=-1, keepdims=True)
    return -(epsilon * d) / (2.0 * np.where(rng_ > 0, rng_, 1.0))


MUTANTS = {
    "eps x1.25": mut_eps125,
    "delta/2": mut_half_delta,
    "delta in degrees": mut_degrees,
    "score range": mut_score_range,
}


@contextlib.contextmanager
def mutated(monkeypatch, fn):
    with monkeypatch.context() as m:
        m.setattr(em_mod, "em_log_weights", fn)
        yield


@pytest.mark.parametrize("mutant", list(MUTANTS))
@pytest.mark.parametrize("name", ["city", "isolated+cluster"])
def test_e2_mutants_fail(monkeypatch, mutant, name):
    ps = SETS[name]
    lon, lat = _inputs(ps)
    failures = []
    with mutated(monkeypatch, MUTANTS[mutant]):
        for eps in (0.5, 2.0, 10.0):
            try:
                e2_check(ExponentialMechanism(epsilon=eps, points=ps), lon, lat)
            except AssertionError as exc:
                failures.append(str(exc)[:3])
    assert failures, f"mutant {mutant} passed E2 on {name}"
    if name == "isolated+cluster" and mutant in ("eps x1.25", "delta/2", "delta in degrees"):
        assert "(c)" in failures or "(b)" in failures  # caught by the privacy bound itself, not only by (d)


class TruthAtLargeEps(ExponentialMechanism):  # M13
    __slots__ = ()

    def perturb(self, lon, lat, *, rng=None):
        if self.epsilon > 40:
            return np.atleast_1d(self.points.nearest(lon, lat)[0])
        return super().perturb(lon, lat, rng=rng)


def test_e2_m13_truth_at_margin_limit_fails():
    ps = SETS["city"]
    eps = em_epsilon_limit(ps.size) - 1e-9
    lon, lat = ps.lon[:4], ps.lat[:4]

    def matrix(cls):
        mech = cls(epsilon=eps, points=ps)
        rows = []
        for i in range(lon.size):
            dist = exact_distribution(
                lambda v, rng, mech=mech: mech.perturb(v[0], v[1], rng=rng).item(), (lon[i], lat[i])
            )
            rows.append([dist.get(r, 0.0) for r in range(ps.size)])
        return np.array(rows)

    assert_ldp(matrix(ExponentialMechanism), eps)
    with pytest.raises(AssertionError, match="supports"):
        assert_ldp(matrix(TruthAtLargeEps), eps)


# ---- N7 ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m", [2, 262, 10_000, 1_000_000])
def test_n7_float_margin(m):
    limit = em_epsilon_limit(m)
    assert limit == pytest.approx(2 * (52 * math.log(2) - math.log(10) - 2 * math.log(m)))
    assert check_em_epsilon(limit - 1e-9, m, caller="ATP", stage="point EM") == limit - 1e-9
    with pytest.raises(
        ValueError, match=rf"The point EM budget of ATP \(.*\) exceeds the float-margin limit .* {m} points"
    ):
        check_em_epsilon(limit + 1e-9, m, caller="ATP", stage="point EM")


@pytest.mark.parametrize("m", [2, 262, 10_000])
def test_n7_accepted_configurations_are_sound(m):
    rng = np.random.default_rng(m)
    ps = PointSet(rng.uniform(116.0, 116.6, m), rng.uniform(39.6, 40.1, m), deduplicate=True)
    m = ps.size
    limit = em_epsilon_limit(m)
    with pytest.raises(ValueError, match="exceeds the float-margin limit"):
        ExponentialMechanism(epsilon=limit + 1e-9, points=ps)
    far = int(np.argmax(ps.distances_m(0)))
    for eps in (1e-9, 1.0, limit / 2, limit - 1e-9):
        mech = ExponentialMechanism(epsilon=eps, points=ps)
        P = mech.probabilities(ps.lon[[0, far]], ps.lat[[0, far]])
        assert np.all(np.isfinite(P)) and np.all(P > 0)
        assert P.min() >= 10 * m * 2.0**-52
        assert np.allclose(P.sum(axis=1), 1.0, atol=1e-12)


# ---- S2 ----------------------------------------------------------------------------------------------------
N = 100_000
BOX = PointSet(*(np.random.default_rng(20).uniform([116.30, 39.85], [116.53, 40.03], (8, 2)).T))


@pytest.mark.parametrize("eps", [2.0, 4.0])
def test_s2_goodness_of_fit(monkeypatch, eps):
    inputs = [
        (BOX.lon[0], BOX.lat[0]),
        (BOX.lon[1], BOX.lat[1]),
        (116.41, 39.93),
    ]  # all mutants have power here
    for x, y in inputs:
        mech = ExponentialMechanism(epsilon=eps, points=BOX)
        p = np.r_[mech.probabilities(x, y), 0.0]
        crit = chi2_gof(p * N, p)[2]
        mutant_pmfs = {}
        for name, fn in MUTANTS.items():
            with mutated(monkeypatch, fn):
                mutant_pmfs[name] = np.r_[mech.probabilities(x, y), 0.0]
            lam = noncentrality(p, mutant_pmfs[name], N)
            assert lam >= 3 * crit, (
                f"{name}: power precondition failed at eps={eps}, input={(x, y)}: {lam:.1f}"
            )
        for seed in (1, 2, 3):
            draws = mech.perturb(np.full(N, x), np.full(N, y), rng=seed)
            assert passes(counts_of(draws, 8), p), f"EM eps={eps} |S|=8 input={(x, y)} seed={seed}"
            for name, fn in MUTANTS.items():
                with mutated(monkeypatch, fn):
                    md = mech.perturb(np.full(N, x), np.full(N, y), rng=seed)
                assert not passes(counts_of(md, 8), p), f"mutant {name} not rejected (eps={eps}, seed={seed})"


# ---- API ---------------------------------------------------------------------------------------------------
class NoDraws(RandomSource):
    policy = "test"

    def uniform(self, size=None):
        raise AssertionError("drew randomness")

    def integers(self, k, size=None):
        raise AssertionError("drew randomness")


def test_api():
    ps = SETS["city"]
    mech = ExponentialMechanism(epsilon=1.0, points=ps, domain=[5, 1, 1, 3])
    assert mech.support.tolist() == [1, 3, 5]
    assert not mech.domain.flags.writeable
    out = mech.perturb(ps.lon, ps.lat, rng=0)
    assert out.shape == (8,) and out.dtype == np.int64 and set(out.tolist()) <= {1, 3, 5}
    assert exponential(ps.lon[:2], ps.lat[:2], points=ps, epsilon=1.0, rng=1).shape == (2,)
    assert np.ndim(exponential(ps.lon[0], ps.lat[0], points=ps, epsilon=1.0, rng=1)) == 0
    # |S| = 1: returned without consuming randomness
    single = ExponentialMechanism(epsilon=1.0, points=ps, domain=[4])
    assert single.perturb([0.0, 1.0], [0.0, 1.0], rng=NoDraws()).tolist() == [4, 4]
    src = EnumeratingSource([])
    single.perturb(0.0, 0.0, rng=src)
    assert src.pos == 0
    assert pickle.loads(pickle.dumps(mech)) == mech
    assert "ExponentialMechanism(epsilon=1.0" in repr(mech)
    with pytest.raises(AttributeError, match="immutable"):
        mech.epsilon = 3.0
    a = pickle.dumps(mech)
    mech.perturb(ps.lon, ps.lat, rng=0)
    assert pickle.dumps(mech) == a


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"epsilon": 0}, ValueError, "'epsilon' parameter of ExponentialMechanism"),
        ({"epsilon": True}, TypeError, "'epsilon' parameter of ExponentialMechanism"),
        ({"epsilon": 100.0}, ValueError, "float-margin limit"),
        ({"epsilon": 1.0, "domain": []}, ValueError, "must not be empty"),
        ({"epsilon": 1.0, "domain": [0, 8]}, ValueError, r"indices in \[0, 7\]"),
        ({"epsilon": 1.0, "domain": [0.0]}, TypeError, "integer array"),
    ],
)
def test_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ExponentialMechanism(points=SETS["city"], **kwargs)


def test_input_validation_and_points_type():
    mech = ExponentialMechanism(epsilon=1.0, points=SETS["city"])
    with pytest.raises(ValueError, match="finite"):
        mech.perturb([np.nan], [0.0], rng=0)
    with pytest.raises(ValueError, match=r"\[-90, 90\]"):
        mech.probabilities(0.0, 91.0)
    with pytest.raises(TypeError, match="must be a PointSet"):
        ExponentialMechanism(epsilon=1.0, points=np.zeros((3, 2)))
    assert np.array_equal(_kernels.em_log_weight(2.0, np.float64(3.0), 4.0), -(2.0 * 3.0) / (2.0 * 4.0))
