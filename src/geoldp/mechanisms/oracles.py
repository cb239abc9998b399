"""Frequency oracles: k-RR, OUE and OLH over a public domain {0, …, d−1}, with their exact pmfs.

The one owner of the oracles: the aggregate reports, LDPTrace, the combination and the planner read them here.

Each oracle releases one value ``x`` of a public domain of size ``d`` under ε-LDP. The collector counts,
for every domain value ``v``, how many reports *support* it (k-RR: the report equals v; OUE: bit v is
set; OLH: the report's hash of v equals its value) and debiases the count:

    ĉ(v) = (C(v) − n·q*) / (p* − q*),

where p* is the probability that a report supports the user's own value and q* the probability that it
supports another one (Wang et al. 2017). The three oracles:

=======  ===============================================  ======================  =================
oracle   report                                           p*                      q*
=======  ===============================================  ======================  =================
k-RR     one value: x with prob. e^ε/(e^ε+d−1)            e^ε/(e^ε+d−1)           1/(e^ε+d−1)
OUE      d bits: bit x set w.p. 1/2, every other bit      1/2                     1/(e^ε+1)
         w.p. 1/(e^ε+1), independently
OLH      a hash seed s (uniform 32 bits) and k-RR over    e^ε/(e^ε+g−1)           1/g
         g = round(e^ε) + 1 values of H_s(x)
=======  ===============================================  ======================  =================

Every pmf here is the one the sampler draws from (one source of truth): :func:`krr_pmf`,
:func:`oue_probabilities` and :func:`olh_pmf` are what the tests enumerate. k-RR and OUE are
tightly ε-LDP (the largest pmf ratio between two inputs is exactly e^ε). For OLH the ratio is that of
k-RR on g values for every seed, so it is ε-LDP for *any* hash function; the hash only matters for
utility (q* = 1/g needs Pr_s[H_s(v) = H_s(x)] = 1/g for v ≠ x, which the 64-bit mixer here meets to
within 2⁻³²).

References
----------
T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols for Frequency Estimation",
USENIX Security 2017.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from geoldp._core.kernels import KernelInt
from geoldp._core.kernels import jit as _jit  # the one kernel decorator
from geoldp._core.randomness import (
    RandomSource,
    resolve_rng,
    stream_bernoulli,
    stream_integers,
    stream_next_u32,
    stream_reset,
)
from geoldp._core.validation import check_epsilon, check_int_min, check_int_range
from geoldp.mechanisms.krr import krr_constants

__all__ = ["oue_counts", "oue_estimate", "oue_perturb", "oue_pmf", "oue_probabilities"]

#: The oracle names accepted by ``oracle=`` (besides ``"auto"``).
ORACLES = ("krr", "oue", "olh")

#: ``"auto"`` does not pick OUE above this domain size: an OUE report holds d bits.
OUE_MAX_DOMAIN = 4096

#: Centres uniforms on the 2⁻⁵³ grid inside (0, 1) for inverse CDFs.
_HALF_ULP = 2.0**-54

#: OLH hashes into at most this many values (a g beyond it gains nothing measurable).
_OLH_G_MAX = 1 << 30


# --------------------------------------------------------------------------------------------------
# exact pmfs (the numbers the samplers draw with)
# --------------------------------------------------------------------------------------------------


def krr_pmf(x: int, d: int, epsilon: float) -> np.ndarray:
    """Exact pmf of a k-RR report of ``x`` over {0, …, d−1}.

    Examples
    --------
    >>> krr_pmf(1, 3, math.log(2.0)).round(6).tolist()
    [0.25, 0.5, 0.25]
    """
    p, q, _ = krr_constants(int(d), float(epsilon))
    out = np.full(int(d), q)
    out[int(x)] = p
    return out


def oue_probabilities(epsilon: float) -> tuple[float, float]:
    """``(p, q)`` of OUE: bit x is set with probability p = 1/2, every other bit with q = 1/(e^ε + 1).

    The one definition, read by every OUE sampler (the reports' and LDPTrace's) and by :func:`oue_pmf`.

    Examples
    --------
    >>> oue_probabilities(math.log(3.0))
    (0.5, 0.25)
    """
    t = math.exp(-float(epsilon))
    return 0.5, t / (1.0 + t)  # q = e^−ε/(1 + e^−ε): no overflow for large ε


def oue_pmf(x: int, bits: np.ndarray, epsilon: float) -> float:
    """Exact probability that an OUE report of ``x`` (or -1: an empty report) is the bit vector ``bits``."""
    p, q = oue_probabilities(epsilon)
    bits = np.asarray(bits, dtype=bool).reshape(-1)
    probs = np.where(bits, q, 1.0 - q)
    if int(x) >= 0:
        probs[int(x)] = p if bits[int(x)] else 1.0 - p
    return float(np.prod(probs))


def olh_range(epsilon: float) -> int:
    """The OLH hash range g = round(e^ε) + 1 (Wang et al.'s optimum), at least 2.

    Examples
    --------
    >>> olh_range(2.0)
    8
    """
    if float(epsilon) > math.log(_OLH_G_MAX):
        return _OLH_G_MAX
    return max(2, int(round(math.exp(float(epsilon)))) + 1)


@_jit
def _mix64(z: np.uint64) -> np.uint64:
    # splitmix64's finaliser: a bijection on 64-bit words with good avalanche
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@_jit
def _hash(seed: KernelInt, v: KernelInt, g: KernelInt) -> np.int64:
    z = (np.uint64(seed) << np.uint64(32)) ^ np.uint64(v)
    return np.int64(_mix64(z * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)) % np.uint64(g))


@numba.njit(cache=True)
def _hash_many(seeds: np.ndarray, values: np.ndarray, g: KernelInt, out: np.ndarray) -> np.ndarray:
    for i in range(seeds.shape[0]):
        out[i] = _hash(seeds[i], values[i], g)
    return out


def olh_hash(seed: npt.ArrayLike, value: npt.ArrayLike, g: int) -> np.ndarray:
    """The OLH hash H_seed(value) in {0, …, g−1} (public; broadcast over arrays of seeds and values)."""
    s, v = np.broadcast_arrays(np.asarray(seed, dtype=np.int64), np.asarray(value, dtype=np.int64))
    out = np.empty(s.size, dtype=np.int64)
    _hash_many(np.ascontiguousarray(s.reshape(-1)), np.ascontiguousarray(v.reshape(-1)), np.int64(g), out)
    return out.reshape(s.shape)


def olh_pmf(x: int, seed: int, epsilon: float) -> np.ndarray:
    """Exact pmf of the OLH value for input ``x`` given the seed (the seed itself is uniform on 32 bits)."""
    g = olh_range(epsilon)
    return krr_pmf(int(olh_hash(seed, x, g)), g, epsilon)


# --------------------------------------------------------------------------------------------------
# the oracle objects: parameters, variance, choice
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Oracle:
    """A frequency oracle configured for a public domain size ``d`` and budget ``epsilon``.

    Attributes
    ----------
    name : {"krr", "oue", "olh"}
    d : int
        Domain size.
    epsilon : float
    p_star, q_star : float
        Probability that a report supports the reported value / any other given value.
    g : int
        OLH hash range (0 for the others).
    """

    name: str
    d: int
    epsilon: float
    p_star: float
    q_star: float
    g: int = 0

    def count_variance(self, n: float, count: float | np.ndarray = 0.0) -> float | np.ndarray:
        """Variance of the debiased count of a value held by ``count`` of ``n`` users (exact, Wang et al.).

        ``n q*(1−q*)/(p*−q*)² + count·(1−p*−q*)/(p*−q*)``; with ``count = 0`` it is the
        data-independent part used to choose an oracle.
        """
        p, q = self.p_star, self.q_star
        return n * q * (1.0 - q) / (p - q) ** 2 + np.asarray(count) * (1.0 - p - q) / (p - q)

    def parameters(self) -> dict[str, float | int]:
        """Public parameters for the ledger."""
        out: dict[str, float | int] = {"p_star": self.p_star, "q_star": self.q_star}
        if self.name == "olh":
            out["g"] = self.g
        return out


def oracle(name: str, d: int, epsilon: float) -> Oracle:
    """The :class:`Oracle` ``name`` for domain size ``d`` at ``epsilon``.

    Examples
    --------
    >>> o = oracle("oue", 10, math.log(3.0))
    >>> o.p_star, o.q_star
    (0.5, 0.25)
    """
    if name == "krr":
        p, q, _ = krr_constants(int(d), float(epsilon))
        return Oracle("krr", int(d), float(epsilon), p, q)
    if name == "oue":
        p, q = oue_probabilities(epsilon)
        return Oracle("oue", int(d), float(epsilon), p, q)
    if name == "olh":
        g = olh_range(epsilon)
        p, _, _ = krr_constants(g, float(epsilon))
        return Oracle("olh", int(d), float(epsilon), p, 1.0 / g, g)
    raise ValueError(f"Unknown oracle {name!r}; use one of {ORACLES}.")


def choose_oracle(d: int, epsilon: float) -> str:
    """The oracle with the smallest count variance for domain size ``d`` at ``epsilon`` (public inputs).

    k-RR wins for small domains (d < 3e^ε + 2, Wang et al.); otherwise OUE (smallest variance, d-bit
    reports) up to :data:`OUE_MAX_DOMAIN` values, and OLH beyond.

    Examples
    --------
    >>> choose_oracle(5, 2.0), choose_oracle(500, 2.0), choose_oracle(10_000, 2.0)
    ('krr', 'oue', 'olh')
    """
    d = check_int_range(d, "d", minimum=1, caller="choose_oracle")
    epsilon = check_epsilon(epsilon, caller="choose_oracle")
    return split_oracle(d, [(epsilon, 1)])


def split_oracle(d: int, parts: list[tuple[float, int]]) -> str:
    """The one oracle of reports made at several budgets: the smallest summed count variance over the parts.

    ``parts`` holds each part's public ``(epsilon, rows)`` (a ``user_budget="split"`` table: the budgets
    and row counts its ``epsilon`` column shows); a part of ``rows`` reports at ``epsilon`` adds ``rows``
    times the oracle's count variance per report at that budget. No OUE beyond :data:`OUE_MAX_DOMAIN`
    values; ties go to the cheaper report. One part is :func:`choose_oracle`.

    Examples
    --------
    >>> split_oracle(5, [(2.0, 10)]) == choose_oracle(5, 2.0)
    True
    """
    names = [n for n in ORACLES if not (n == "oue" and int(d) > OUE_MAX_DOMAIN)]
    total = {
        n: sum(rows * float(oracle(n, d, eps).count_variance(1.0)) for eps, rows in parts) for n in names
    }
    # ties go to the cheaper report (k-RR, then OLH): the order of ORACLES is krr, oue, olh
    best = min(total.values())
    for name in ("krr", "olh", "oue"):
        if name in total and total[name] <= best * (1.0 + 1e-12):
            return name
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------------------------------
# samplers: one ChaCha20 stream per report (stream = global row position), numba
# --------------------------------------------------------------------------------------------------


@_jit
def _pick(
    key: np.ndarray,
    buf: np.ndarray,
    state: np.ndarray,
    items: np.ndarray,
    lo: KernelInt,
    hi: KernelInt,
    pad: KernelInt,
    base: KernelInt,
) -> int:
    """Padding-and-sampling: one item of ``items[lo:hi]`` padded with dummies base, base+1, … to ``pad``."""
    size = hi - lo
    m = size if size > pad else pad
    j = stream_integers(key, buf, state, m)
    if j < size:
        return items[lo + j]
    return base + (j - size)


@_jit
def _krr_value(
    key: np.ndarray, buf: np.ndarray, state: np.ndarray, x: KernelInt, k: KernelInt, lie: float
) -> KernelInt:
    if stream_bernoulli(key, buf, state, lie):
        j = stream_integers(key, buf, state, k - 1)
        return j + 1 if j >= x else j
    return x


@numba.njit(cache=True)
def sample_krr(
    key: np.ndarray,
    offset: KernelInt,
    offsets: np.ndarray,
    items: np.ndarray,
    pad: KernelInt,
    base: KernelInt,
    d: KernelInt,
    lie: float,
    out: np.ndarray,
) -> np.ndarray:
    """k-RR reports; ``out[i]`` is the report of set ``items[offsets[i]:offsets[i+1]]``."""
    buf = np.zeros(16, dtype=np.uint32)
    state = np.zeros(3, dtype=np.int64)
    for i in range(out.shape[0]):
        stream_reset(state, offset + i)
        x = _pick(key, buf, state, items, offsets[i], offsets[i + 1], pad, base)
        out[i] = _krr_value(key, buf, state, x, d, lie)
    return out


@numba.njit(cache=True)
def sample_oue(
    key: np.ndarray,
    offset: KernelInt,
    offsets: np.ndarray,
    items: np.ndarray,
    pad: KernelInt,
    base: KernelInt,
    d: KernelInt,
    p: float,
    q: float,
    out: np.ndarray,
) -> np.ndarray:
    """OUE reports as packed bits (``np.packbits`` order: bit v is ``out[i, v // 8] >> (7 − v % 8)``)."""
    buf = np.zeros(16, dtype=np.uint32)
    state = np.zeros(3, dtype=np.int64)
    for i in range(out.shape[0]):
        stream_reset(state, offset + i)
        x = _pick(key, buf, state, items, offsets[i], offsets[i + 1], pad, base)
        for v in range(d):
            if stream_bernoulli(key, buf, state, p if v == x else q):
                out[i, v >> 3] |= np.uint8(1 << (7 - (v & 7)))
    return out


@numba.njit(cache=True)
def sample_olh(
    key: np.ndarray,
    offset: KernelInt,
    offsets: np.ndarray,
    items: np.ndarray,
    pad: KernelInt,
    base: KernelInt,
    g: KernelInt,
    lie: float,
    seeds: np.ndarray,
    out: np.ndarray,
) -> np.ndarray:
    """OLH reports: a uniform 32-bit seed, then k-RR over g values of the seed's hash of the item."""
    buf = np.zeros(16, dtype=np.uint32)
    state = np.zeros(3, dtype=np.int64)
    for i in range(out.shape[0]):
        stream_reset(state, offset + i)
        x = _pick(key, buf, state, items, offsets[i], offsets[i + 1], pad, base)
        s = np.int64(stream_next_u32(key, buf, state))
        seeds[i] = s
        out[i] = _krr_value(key, buf, state, _hash(s, x, g), g, lie)
    return out


@numba.njit(cache=True)
def olh_support(
    seeds: np.ndarray, values: np.ndarray, d: KernelInt, g: KernelInt, counts: np.ndarray
) -> np.ndarray:
    """``counts[v]`` += number of reports whose hash of v equals their value (O(n·d))."""
    for i in range(seeds.shape[0]):
        s, y = seeds[i], values[i]
        for v in range(d):
            if _hash(s, v, g) == y:
                counts[v] += 1
    return counts


# --------------------------------------------------------------------------------------------------
# OUE, one report per user and the sum of many (LDPTrace draws the sum directly)
# --------------------------------------------------------------------------------------------------


def oue_perturb(values: Any, d: int, epsilon: float, *, rng: Any = None) -> np.ndarray:
    """The user-side OUE randomiser: one perturbed bit vector per value (vectorised over users).

    Parameters
    ----------
    values : array_like of int, shape (m,)
        The true value of each report, in ``{0, …, d − 1}``, or ``-1`` for an empty report (no true bit).
    d : int
        Domain size (public).
    epsilon : float
        Budget of one report.
    rng : optional
        See :func:`geoldp._core.randomness.resolve_rng` (``None``: the OS CSPRNG).

    Returns
    -------
    ndarray of bool, shape (m, d)

    Examples
    --------
    >>> oue_perturb([0, 2, -1], 4, 1.0, rng=0).shape
    (3, 4)
    """
    caller = "oue_perturb"
    d = check_int_min(d, "d", minimum=1, caller=caller)
    values = np.asarray(values, dtype=np.int64).reshape(-1)
    if values.size and (values.min() < -1 or values.max() >= d):
        raise ValueError(f"The 'values' of {caller} must be in {{-1, 0, …, d − 1}} (d = {d}).")
    p, q = oue_probabilities(epsilon)
    source = resolve_rng(rng)
    bits = source.uniform((values.size, d)) < q
    rows = np.flatnonzero(values >= 0)
    bits[rows, values[rows]] = source.uniform(rows.size) < p
    return bits


def _binomial(n: np.ndarray, prob: float, source: RandomSource) -> np.ndarray:
    """Binomial(n_j, prob) draws by inverse CDF of one uniform each (exact up to float rounding)."""
    from scipy.stats import binom

    n = np.asarray(n, dtype=np.int64)
    u = source.uniform(n.shape) + _HALF_ULP
    return np.asarray(binom.ppf(u, n, prob), dtype=np.int64)


def oue_counts(true_counts: Any, n_reports: int, epsilon: float, *, rng: Any = None) -> np.ndarray:
    """The sum of ``n_reports`` OUE reports, drawn from its exact distribution without per-user vectors.

    Bit j of the sum is ``Binomial(c_j, 1/2) + Binomial(n_reports − c_j, q)`` with c_j = ``true_counts[j]``
    (reports whose true value is j; the other reports, empty ones included, have bit j at q). This is the
    distribution of ``oue_perturb(values, d, ε).sum(axis=0)`` for any ``values`` with these counts.

    Parameters
    ----------
    true_counts : array_like of int, shape (d,)
    n_reports : int
        Number of reports, ≥ ``sum(true_counts)``.
    epsilon : float
        Budget of one report.
    rng : optional
        ``None``: the OS CSPRNG; an int seeds NumPy (experiments and tests only).

    Returns
    -------
    ndarray of int64, shape (d,)
    """
    c = np.asarray(true_counts, dtype=np.int64)
    n_reports = int(n_reports)
    if c.size and (c.min() < 0 or c.sum() > n_reports):
        raise ValueError("oue_counts needs 0 ≤ true_counts and sum(true_counts) ≤ n_reports.")
    p, q = oue_probabilities(epsilon)
    source = resolve_rng(rng)
    return _binomial(c, p, source) + _binomial(n_reports - c, q, source)


def oue_estimate(counts: Any, n_reports: int, epsilon: float) -> np.ndarray:
    """Unbiased estimate of the true counts from the summed OUE reports: (C − m q) / (p − q)."""
    p, q = oue_probabilities(epsilon)
    return (np.asarray(counts, dtype=np.float64) - n_reports * q) / (p - q)
