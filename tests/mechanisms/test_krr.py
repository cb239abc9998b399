"""k-RR: exact enumeration (E1, E1r), constants (N6), goodness of fit (S1), mutants M1–M4, M13."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from mech_stats import counts_of, noncentrality, passes

from geoldp._core.randomness import resolve_rng
from geoldp.mechanisms import KRR, krr, krr_constants, krr_lie_probability
from geoldp.testing import assert_ldp, exact_distribution, max_log_ratio

KS = [2, 3, 6, 10, 100, 1000]
EPS = [1e-9, 1e-6, 0.1, math.log(3), 1.0, 5.0, 20.0, 700.0]
mpmath.mp.dps = 50


# ---- mutants (test code only; TESTING §10) -----------------------------------------------------------------
class LieFromAllK(KRR):  # M1: the lie is drawn from all k values, so the truth can be redrawn
    def perturb(self, x, *, rng=None):
        x = np.asarray(x, dtype=np.int64).reshape(-1)
        src = resolve_rng(rng)
        lie = src.bernoulli(self.lie_probability, size=x.size)
        out = x.copy()
        if lie.any():
            out[lie] = src.integers(self.k, size=int(lie.sum()))
        return out


class InclusiveBound(KRR):  # M2a: integers over k values shifted past x -> k itself can appear
    def perturb(self, x, *, rng=None):
        x = np.asarray(x, dtype=np.int64).reshape(-1)
        src = resolve_rng(rng)
        lie = src.bernoulli(self.lie_probability, size=x.size)
        out = x.copy()
        if lie.any():
            j = src.integers(self.k, size=int(lie.sum()))
            out[lie] = j + (j >= x[lie])
        return out


class PerValueQ(KRR):  # M2b: the per-value q is used as the total lie probability
    def perturb(self, x, *, rng=None):
        x = np.asarray(x, dtype=np.int64).reshape(-1)
        src = resolve_rng(rng)
        lie = src.bernoulli(krr_constants(self.k, self.epsilon)[1], size=x.size)
        out = x.copy()
        if lie.any():
            j = src.integers(self.k - 1, size=int(lie.sum()))
            out[lie] = j + (j >= x[lie])
        return out


class TruthWhenLarge(KRR):  # M13: the true value is returned when ε is large
    def perturb(self, x, *, rng=None):
        if self.epsilon >= 100:
            return np.asarray(x, dtype=np.int64).copy()
        return super().perturb(x, rng=rng)


def scaled(factor):
    class Scaled(KRR):  # M3 (factor 1.25) / M4 (factor 0.5): wrong ε inside the primitive
        def perturb(self, x, *, rng=None):
            return KRR(epsilon=self.epsilon * factor, k=self.k).perturb(x, rng=rng)

    return Scaled


def sampler_matrix(mech):
    """Exact matrix of the *sampler* by enumeration.

    Rows: x; columns: outputs 0…k, the last = out of domain.
    """
    k = mech.k
    out = np.zeros((k, k + 1))
    for x in range(k):
        dist = exact_distribution(lambda v, rng: mech.perturb(np.array([v]), rng=rng)[0], x)
        for y, p in dist.items():
            out[x, y if 0 <= y < k else k] += p
    return out


# ---- E1 ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("eps", EPS)
def test_e1_matrix(k, eps):
    mech = KRR(epsilon=eps, k=k)
    P = mech.probabilities(np.arange(k))
    ratio = assert_ldp(P, eps)
    assert ratio >= eps * (1 - 1e-9) - 1e-14  # tight
    # (d) against 50-digit mpmath
    e = mpmath.mpf(eps)
    den = 1 + (k - 1) * mpmath.exp(-e)
    p_ref, q_ref = 1 / den, mpmath.exp(-e) / den
    p, q, lie = krr_constants(k, eps)
    assert abs(mpmath.mpf(p) / p_ref - 1) <= 1e-12
    assert abs(mpmath.mpf(q) / q_ref - 1) <= 1e-12
    assert abs(mpmath.mpf(lie) / ((k - 1) * q_ref) - 1) <= 1e-12
    assert np.allclose(
        np.exp(mech.log_probabilities(np.arange(min(k, 5)))), P[: min(k, 5)], rtol=1e-13, atol=0
    )


@pytest.mark.parametrize("k", [2, 3, 6, 10])
@pytest.mark.parametrize("eps", [1e-6, math.log(3), 1.0, 5.0, 700.0])
def test_e1_sampler_equals_pmf(k, eps):
    mech = KRR(epsilon=eps, k=k)
    S = sampler_matrix(mech)
    assert np.all(S[:, k] == 0)
    assert np.allclose(S[:, :k], mech.probabilities(np.arange(k)), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("eps", [0.5, 1.0, 5.0])
def test_e1_mutants_fail(eps):
    k = 6
    with pytest.raises(AssertionError, match="exceeds epsilon"):
        assert_ldp(sampler_matrix(scaled(1.25)(epsilon=eps, k=k))[:, :k], eps)
    # M1: truth can be redrawn -> each other value gets L/k < q, ratio k/(k-1)·e^eps + 1 > e^eps
    with pytest.raises(AssertionError, match="exceeds epsilon"):
        assert_ldp(sampler_matrix(LieFromAllK(epsilon=eps, k=k))[:, :k], eps)
    # M2a: the out-of-domain value k appears, so the in-domain rows do not sum to 1
    m2a = sampler_matrix(InclusiveBound(epsilon=eps, k=k))
    assert np.all(m2a[:, k] > 0)
    with pytest.raises(AssertionError, match=r"\(a\) a probability row"):
        assert_ldp(m2a[:, :k], eps)
    # M2b: per-value q as total lie prob -> ratio exceeds eps
    with pytest.raises(AssertionError, match="exceeds epsilon"):
        assert_ldp(sampler_matrix(PerValueQ(epsilon=eps, k=k))[:, :k], eps)
    # M4: eps/2 -> fails tightness
    assert max_log_ratio(sampler_matrix(scaled(0.5)(epsilon=eps, k=k))[:, :k]) < eps * (1 - 1e-9) - 1e-14


def test_e1_m13_truth_at_large_eps_fails():
    with pytest.raises(AssertionError, match="supports"):
        assert_ldp(sampler_matrix(TruthWhenLarge(epsilon=700.0, k=3))[:, :3], 700.0)
    assert_ldp(sampler_matrix(KRR(epsilon=700.0, k=3))[:, :3], 700.0)


# ---- E1r: realised probabilities of bernoulli(L) on the 2^-53 grid -----------------------------------------
@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("eps", EPS)
def test_e1r_realised(k, eps):
    lie = krr_lie_probability(k, eps)
    realised = Fraction(math.ceil(Fraction(lie) * 2**53), 2**53)
    assert realised >= Fraction(lie)
    keep = 1 - realised
    other = realised / (k - 1)
    ratio = mpmath.mpf(keep.numerator) / keep.denominator / (mpmath.mpf(other.numerator) / other.denominator)
    assert ratio <= mpmath.exp(mpmath.mpf(eps)) * (1 + mpmath.mpf("1e-9"))


# ---- N6 ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 10, 10**3, 10**6])
@pytest.mark.parametrize("eps", [1e-12, 1e-3, 1.0, 30.0, 700.0])
def test_n6_constants(k, eps):
    p, q, lie = krr_constants(k, eps)
    assert all(math.isfinite(v) and v >= 0 for v in (p, q, lie))
    assert abs(p + lie - 1) <= 1e-15
    assert p >= q


# ---- S1 ----------------------------------------------------------------------------------------------------
N = 100_000
MUTANTS = {
    "eps x1.25": scaled(1.25),
    "lie from all k": LieFromAllK,
    "inclusive bound": InclusiveBound,
    "per-value q": PerValueQ,
}


def _mutant_pmf(cls, eps, k, x):
    return sampler_matrix(cls(epsilon=eps, k=k))[x]


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("x", [0, 5])
def test_s1_goodness_of_fit(eps, x):
    k = 6
    mech = KRR(epsilon=eps, k=k)
    p = np.r_[mech.probabilities(x), 0.0]
    from mech_stats import chi2_gof

    crit = chi2_gof(np.ones(k + 1) * N / k, p)[2]
    for name, cls in MUTANTS.items():  # power precondition, from the exact pmfs
        lam = noncentrality(p, _mutant_pmf(cls, eps, k, x), N)
        assert lam >= 3 * crit, f"{name}: power precondition failed (lambda={lam:.1f}, crit={crit:.1f})"
    for seed in (1, 2, 3):
        y = mech.perturb(np.full(N, x), rng=seed)
        assert passes(counts_of(y, k), p), f"KRR eps={eps} k={k} x={x} seed={seed}"
        for name, cls in MUTANTS.items():
            ym = cls(epsilon=eps, k=k).perturb(np.full(N, x), rng=seed)
            assert not passes(counts_of(ym, k), p), (
                f"mutant {name} not rejected (eps={eps}, x={x}, seed={seed})"
            )


# ---- API ---------------------------------------------------------------------------------------------------
def test_api_and_validation():
    mech = KRR(epsilon=1.0, k=6)
    assert repr(mech) == "KRR(epsilon=1.0, k=6)"
    assert eval(repr(mech)) == mech  # noqa: S307
    assert mech.probabilities(2).round(6).tolist() == [
        0.129563,
        0.129563,
        0.352187,
        0.129563,
        0.129563,
        0.129563,
    ]
    assert mech.lie_probability == pytest.approx(0.647813, abs=1e-6)
    y = krr(np.array([[0, 1], [2, 3]]), k=6, epsilon=1.0, rng=0)
    assert y.shape == (2, 2) and y.dtype == np.int64
    assert krr(np.array([], dtype=np.int64), k=6, epsilon=1.0, rng=0).shape == (0,)
    with pytest.raises(ValueError, match=r"'x' parameter of KRR must hold values in \[0, 5\]"):
        mech.perturb([6])
    with pytest.raises(ValueError, match="'x' parameter of KRR"):
        mech.perturb([-1], rng=0)
    with pytest.raises(TypeError, match="'x' parameter of KRR must be an integer array"):
        mech.perturb([1.0])
    with pytest.raises(TypeError, match="'x' parameter of KRR must be an integer array"):
        mech.perturb([True])
    with pytest.raises(
        ValueError, match=r"'epsilon' parameter of KRR must be a float in the range \(0, 700\]"
    ):
        KRR(epsilon=701, k=6)
    with pytest.raises(ValueError, match="'k' parameter of KRR"):
        KRR(epsilon=1, k=1)
    with pytest.raises(TypeError, match="positional"):
        KRR(1.0, 6)
    with pytest.raises(AttributeError, match="cannot assign"):
        mech.epsilon = 2.0
