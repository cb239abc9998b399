"""Piecewise mechanisms (linear on [0, 1], circular on [0, 2π)): exact checks, goodness of fit, RNG.

Exact (E-style, as k-RR/EM/SW): the bucket masses over M equal buckets of the output range satisfy
(a) rows sum to 1, (b) equal supports, (c) max log-ratio ≤ ε, for every ε up to the limit (50) and inputs at
the ends, next to the window's turning points C and 1 − C, and across the wrap of the circle; the density
levels are checked against a 60-digit mpmath evaluation of the paper's formulas (d) and are tight (their
ratio is exactly e^ε). Goodness of fit: the sampler against the exact CDF (Kolmogorov–Smirnov, α = 1e−6)
and against the exact bucket masses (χ², with the power precondition of TESTING.md §3 for the ε×1.25 mutant).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import scipy.stats
from mech_stats import chi2_gof, counts_of, noncentrality

from geoldp._core import randomness as _random
from geoldp.mechanisms import PIECEWISE_EPS_MAX, PiecewiseCircular, PiecewiseLinear
from geoldp.testing import assert_ldp, ldp_tolerance, max_log_ratio

mpmath.mp.dps = 60
TWO_PI = 2 * math.pi
EPS = [1e-9, 1e-6, 0.1, 0.5, 1.0, 2.0, 4.0, 10.0, 20.0, 40.0, PIECEWISE_EPS_MAX]


def linear_inputs(eps: float) -> np.ndarray:
    c = PiecewiseLinear(epsilon=eps).half_width
    turning = [
        c,
        np.nextafter(c, 0),
        np.nextafter(c, 1),
        1 - c,
        np.nextafter(1 - c, 0),
        np.nextafter(1 - c, 1),
    ]
    return np.r_[
        0.0, 5e-324, 1e-12, 0.5, 1 - 1e-12, np.nextafter(1.0, 0), 1.0, turning, np.linspace(0, 1, 33)
    ]


def circular_inputs(eps: float) -> np.ndarray:
    a = PiecewiseCircular(epsilon=eps).half_width
    near_wrap = [a, np.nextafter(a, 0), TWO_PI - a, np.nextafter(TWO_PI - a, 0)]
    ends = [0.0, 5e-324, math.pi, np.nextafter(TWO_PI, 0)]
    return np.r_[ends, [v for v in near_wrap if 0 <= v < TWO_PI], np.linspace(0, TWO_PI, 33, endpoint=False)]


# ---- (d) the formulas ------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", EPS)
def test_parameters_against_mpmath(eps):
    e = mpmath.mpf(eps)
    ee = mpmath.exp(e)
    c_paper = (mpmath.exp(e / 2) - 1) / (2 * ee - 2)  # Definition 3.2
    a_paper = mpmath.pi * (mpmath.exp(e / 2) - 1) / (ee - 1)  # Definition 3.1
    lin, circ = PiecewiseLinear(epsilon=eps), PiecewiseCircular(epsilon=eps)
    assert abs(lin.half_width - c_paper) <= 1e-12 * c_paper
    assert abs(circ.half_width - a_paper) <= 1e-12 * a_paper
    high = mpmath.exp(e / 2) / (1 + mpmath.exp(e / 2))
    assert abs(lin.high_mass - high) <= 1e-12 * high
    # the two density levels integrate to one, and their ratio is e^ε
    assert (
        abs(2 * c_paper * mpmath.exp(e / 2) + (1 - 2 * c_paper) * mpmath.exp(-e / 2) - 1)
        < mpmath.mpf(10) ** -50
    )
    assert abs(
        2 * a_paper * mpmath.exp(e / 2) + (2 * mpmath.pi - 2 * a_paper) * mpmath.exp(-e / 2) - 2 * mpmath.pi
    ) < (mpmath.mpf(10) ** -50)


# ---- (a)(b)(c) exact bucket masses ---------------------------------------------------------------------
@pytest.mark.parametrize("M", [8, 64, 1024])
@pytest.mark.parametrize("eps", EPS)
def test_exact_linear(eps, M):
    pw = PiecewiseLinear(epsilon=eps)
    P = pw.probabilities(linear_inputs(eps), M)
    assert np.all(P > 0)
    assert assert_ldp(P, eps) <= eps + ldp_tolerance(eps)
    w = 1.0 / M
    assert np.all(P >= w * math.exp(-eps / 2) * (1 - 1e-12)) and np.all(
        P <= w * math.exp(eps / 2) * (1 + 1e-12)
    )


@pytest.mark.parametrize("M", [8, 64, 1024])
@pytest.mark.parametrize("eps", EPS)
def test_exact_circular(eps, M):
    pc = PiecewiseCircular(epsilon=eps)
    P = pc.probabilities(circular_inputs(eps), M)
    assert np.all(P > 0)
    assert assert_ldp(P, eps) <= eps + ldp_tolerance(eps)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_exact_tightness(eps):
    # with buckets narrower than the window, inputs at both ends reach the bound: the mechanism spends ε
    assert max_log_ratio(PiecewiseLinear(epsilon=eps).probabilities([0.0, 1.0], 1024)) >= eps * (1 - 1e-9)
    assert max_log_ratio(PiecewiseCircular(epsilon=eps).probabilities([0.0, math.pi], 1024)) >= eps * (
        1 - 1e-9
    )


@pytest.mark.parametrize("eps", EPS)
def test_density_ratio_on_boundaries(eps):
    """Densities at the window edges (and one float either side) for every pair of inputs: ratio ≤ e^ε."""
    pw = PiecewiseLinear(epsilon=eps)
    v = linear_inputs(eps)
    lo, hi = pw.window(v)
    ys = np.unique(np.r_[lo, hi, np.nextafter(lo, -1), np.nextafter(hi, 2), 0.0, 1.0, np.linspace(0, 1, 101)])
    ys = ys[(ys >= 0) & (ys <= 1)]
    D = pw.density(ys[None, :], v[:, None])
    assert np.all(D > 0)
    ratio = np.log(D.max(axis=0)) - np.log(D.min(axis=0))
    assert ratio.max() <= eps + ldp_tolerance(eps)
    assert ratio.max() >= eps * (1 - 1e-9)  # tight: one input's window, another's outside
    pc = PiecewiseCircular(epsilon=eps)
    th = circular_inputs(eps)
    a = pc.half_width
    edges = np.r_[th - a, th + a] % TWO_PI
    phis = np.unique(
        np.r_[edges, np.nextafter(edges, 0), np.nextafter(edges, 7), 0.0, np.linspace(0, TWO_PI, 101)]
    )
    phis = phis[(phis >= 0) & (phis < TWO_PI)]
    D = pc.density(phis[None, :], th[:, None])
    assert np.all(D > 0)
    ratio = np.log(D.max(axis=0)) - np.log(D.min(axis=0))
    assert eps * (1 - 1e-9) <= ratio.max() <= eps + ldp_tolerance(eps)


def test_mutant_eps125_is_caught():
    eps = 1.0
    wrong = PiecewiseLinear(epsilon=1.25 * eps).probabilities(linear_inputs(eps), 64)
    with pytest.raises(AssertionError, match="exceeds epsilon"):
        assert_ldp(wrong, eps)
    wrong = PiecewiseCircular(epsilon=1.25 * eps).probabilities(circular_inputs(eps), 64)
    with pytest.raises(AssertionError, match="exceeds epsilon"):
        assert_ldp(wrong, eps)


def test_cdf_matches_bucket_masses():
    for eps in (0.5, 3.0):
        pw, pc = PiecewiseLinear(epsilon=eps), PiecewiseCircular(epsilon=eps)
        for v in (0.0, 0.1, 0.5, 1.0):
            edges = np.linspace(0, 1, 17)
            assert np.allclose(np.diff(pw.cdf(edges, v)), pw.probabilities(v, 16), atol=1e-14)
        for t in (0.0, 0.2, 3.0, TWO_PI - 0.1):
            edges = np.linspace(0, TWO_PI, 17)
            assert np.allclose(np.diff(pc.cdf(edges, t)), pc.probabilities(t, 16), atol=1e-14)


# ---- goodness of fit -------------------------------------------------------------------------------------
N = 100_000


@pytest.mark.parametrize("eps", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("v", [0.0, 0.05, 0.5, 1.0])
def test_linear_sampler_ks(eps, v):
    pw = PiecewiseLinear(epsilon=eps)
    y = pw.perturb(np.full(N, v), rng=11)
    assert np.all((y >= 0) & (y <= 1))
    assert scipy.stats.kstest(y, lambda t: pw.cdf(t, v)).pvalue > 1e-6, f"linear eps={eps} v={v}"
    ym = PiecewiseLinear(epsilon=1.25 * eps).perturb(np.full(N, v), rng=11)
    assert scipy.stats.kstest(ym, lambda t: pw.cdf(t, v)).pvalue <= 1e-6, "mutant eps x1.25 not rejected"


@pytest.mark.parametrize("eps", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("theta", [0.0, 0.1, math.pi, TWO_PI - 0.05])
def test_circular_sampler_ks(eps, theta):
    pc = PiecewiseCircular(epsilon=eps)
    y = pc.perturb(np.full(N, theta), rng=12)
    assert np.all((y >= 0) & (y < TWO_PI))
    assert scipy.stats.kstest(y, lambda t: pc.cdf(t, theta)).pvalue > 1e-6, f"circular eps={eps} θ={theta}"
    ym = PiecewiseCircular(epsilon=1.25 * eps).perturb(np.full(N, theta), rng=12)
    assert scipy.stats.kstest(ym, lambda t: pc.cdf(t, theta)).pvalue <= 1e-6, "mutant eps x1.25 not rejected"


@pytest.mark.parametrize("cls", [PiecewiseLinear, PiecewiseCircular])
def test_chi2_with_power_precondition(cls):
    eps, M = 1.0, 32
    x = 0.3
    mech = cls(epsilon=eps)
    p = mech.probabilities(x, M)
    p_mut = cls(epsilon=1.25 * eps).probabilities(x, M)
    crit = scipy.stats.chi2.isf(1e-6, M - 1)
    assert noncentrality(p, p_mut, N) >= 3 * crit
    width = 1.0 if cls is PiecewiseLinear else TWO_PI
    for seed in (1, 2, 3):
        y = mech.perturb(np.full(N, x), rng=seed)
        x2, _, _, outside = chi2_gof(
            counts_of(np.minimum((y / width * M).astype(np.int64), M - 1), M), np.r_[p, 0]
        )
        assert outside == 0 and x2 < crit, f"{cls.__name__} seed={seed}"
    ym = cls(epsilon=1.25 * eps).perturb(np.full(N, x), rng=1)
    x2, _, _, _ = chi2_gof(counts_of(np.minimum((ym / width * M).astype(np.int64), M - 1), M), np.r_[p, 0])
    assert x2 >= crit


# ---- every ε adds noise --------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [10.0, 11.0, 30.0, PIECEWISE_EPS_MAX])
def test_large_epsilon_still_adds_noise(eps):
    """Above ε = 10 the published circular mechanism returns its input; here every output is noisy."""
    theta = np.full(10_000, 1.0)
    y = PiecewiseCircular(epsilon=eps).perturb(theta, rng=3)
    assert np.mean(y == theta) < 0.01 and np.unique(y).size > 9_000
    assert np.all(np.abs(y - theta) <= PiecewiseCircular(epsilon=eps).half_width) or eps < 20
    v = np.full(10_000, 0.25)
    z = PiecewiseLinear(epsilon=eps).perturb(v, rng=3)
    assert np.mean(z == v) < 0.01 and np.unique(z).size > 9_000


# ---- validation and randomness -------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [PiecewiseLinear, PiecewiseCircular])
def test_validation_names_the_parameter(cls):
    for bad in (0.0, -1.0, math.nan, math.inf, PIECEWISE_EPS_MAX * 1.01):
        with pytest.raises(ValueError, match="epsilon"):
            cls(epsilon=bad)
    for bad in ("1", None, True):
        with pytest.raises(TypeError, match="epsilon"):
            cls(epsilon=bad)
    mech = cls(epsilon=1.0)
    name = "v" if cls is PiecewiseLinear else "theta"
    for bad in (-0.1, 7.0, math.nan):
        with pytest.raises(ValueError, match=name):
            mech.perturb([bad], rng=0)
    with pytest.raises(TypeError, match=name):
        mech.perturb(["a"], rng=0)
    with pytest.raises(ValueError, match="buckets"):
        mech.probabilities(0.5, 0)


@pytest.mark.parametrize("cls", [PiecewiseLinear, PiecewiseCircular])
def test_seeded_is_reproducible_and_unseeded_draws_from_the_os(cls, monkeypatch):
    mech = cls(epsilon=2.0)
    x = np.full(100, 0.4)
    assert np.array_equal(mech.perturb(x, rng=5), mech.perturb(x, rng=5))
    assert not np.array_equal(mech.perturb(x, rng=5), mech.perturb(x, rng=6))
    calls = []
    real = _random.os.urandom

    def counting(n):
        calls.append(n)
        return real(n)

    monkeypatch.setattr(_random.os, "urandom", counting)
    a, b = mech.perturb(x), mech.perturb(x)
    assert calls, "rng=None must read the operating system's CSPRNG"
    assert not np.array_equal(a, b)
