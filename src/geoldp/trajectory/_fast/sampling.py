"""Exact samplers of the fast path: EM over a domain, k-RR and SW, drawing on the ChaCha20 streams.

The draws come from :mod:`geoldp._core.randomness`'s ``stream_*`` functions (one stream per trajectory). The
exactness of the phased EM sampler is argued in :mod:`geoldp.trajectory._fast.driver`; domains and
membership are :mod:`geoldp.trajectory._fast.grid`'s.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from geoldp._core.kernels import em_log_weight, haversine_rad
from geoldp._core.kernels import jit as _jit  # the one kernel decorator
from geoldp._core.kernels import jit_inline as _jit_inline  # leaf kernels on records
from geoldp._core.randomness import stream_categorical_cdf, stream_integers, stream_uniform
from geoldp.trajectory._fast.grid import ST_EM_CALLS, ST_EMPTY, ST_ENUMERATIONS, ST_PROPOSALS, member, pos_of

if TYPE_CHECKING:
    from geoldp._core.kernels import KernelInt

__all__ = ["MAX_PROPOSALS", "MAX_PROPOSALS_D", "em", "em_full", "krr", "sw_bucket", "sw_cdf", "sw_continuous"]

MAX_PROPOSALS = 48  # phase-1 proposals (uniform over the superset) before enumerating the domain
MAX_PROPOSALS_D = 64  # phase-3 proposals (uniform over the enumerated domain) before the inverse CDF
_SMALL_DOMAIN = 24  # |U| at or below this: enumerate directly


# A numba kernel: exempt from C901, as splitting it into calls changes what numba compiles.
@_jit_inline
def em(  # noqa: C901
    xl: float,
    xp: float,
    eps: float,
    ix: Any,
    cp: Any,
    w: Any,
    full: bool,
    n_runs: KernelInt,
    row0: KernelInt,
    total: KernelInt,
    dflt: np.ndarray,
    rp: Any,
    key: np.ndarray,
    prop1: KernelInt,
    prop2: KernelInt,
) -> KernelInt:
    """Exact EM draw over D = (U ∩ domain); U = P if ``full`` else the runs. Returns −1 iff D is empty.

    The inputs are the driver's records (:mod:`geoldp.trajectory._fast.driver`): ``ix`` (P's arrays,
    ``KernelIndex``), ``cp`` (the sectors, ``CopyPlan``) and ``w`` (the thread's scratch arrays,
    counters and stream, ``Work``). The domain is ``w.dint``/``w.dq`` (with ``dflt``, the copy's region
    record, and ``rp``, ATP's ``RegionPlan`` whose tree can narrow it, or both None); U is the ``n_runs``
    grid runs of ``w.rows[row0:row0 + 3]`` (starts, ends, cumulative sizes) holding ``total`` points.

    Phase 1: ``prop1`` proposals uniform over U, accepted iff p ∈ D and u < w_p. Phase 2: enumerate D
    (membership only). Phase 3: ``prop2`` proposals uniform over D, accepted iff u < w_p. Phase 4: inverse
    CDF over the max-subtracted weights of D. Every phase draws from w restricted to D, so the mixture is
    exact.
    """
    delta = ix.delta
    lam = ix.lam
    phi = ix.phi
    xyz = ix.xyz
    order = ix.order
    lo = w.rows[row0]
    hi = w.rows[row0 + 1]
    cum = w.rows[row0 + 2]
    dq = w.dq
    dint = w.dint
    g = cp.g
    centred = cp.centred
    buf = w.buf
    state = w.state
    sc_idx = w.iwork[0]
    sc_cdf = w.fwork[0]
    stats = w.stats
    stats[ST_EM_CALLS] += 1
    if total == 0:
        return -1
    if total > _SMALL_DOMAIN:
        for _ in range(prop1):
            stats[ST_PROPOSALS] += 1
            k = stream_integers(key, buf, state, total)
            if full:
                p = k
            else:
                p = order[pos_of(k, n_runs, lo, hi, cum)]
            if not member(p, lam, phi, xyz, dq, dint, dflt, rp, w, g, centred):
                continue
            weight = math.exp(em_log_weight(eps, haversine_rad(xl, xp, lam[p], phi[p]), delta))
            if stream_uniform(key, buf, state) < weight:
                return p
    stats[ST_ENUMERATIONS] += 1
    n = np.int64(0)  # not a literal: one specialisation of the stream draws
    if full:
        for p in range(total):
            if member(p, lam, phi, xyz, dq, dint, dflt, rp, w, g, centred):
                sc_idx[n] = p
                n += 1
    else:
        for r in range(n_runs):
            for pos in range(lo[r], hi[r]):
                p = order[pos]
                if member(p, lam, phi, xyz, dq, dint, dflt, rp, w, g, centred):
                    sc_idx[n] = p
                    n += 1
    if n == 0:
        stats[ST_EMPTY] += 1
        return -1
    if n == 1:
        return sc_idx[0]  # |D| = 1: no draw consumed
    for _ in range(prop2):
        stats[ST_PROPOSALS] += 1
        p = sc_idx[stream_integers(key, buf, state, n)]
        weight = math.exp(em_log_weight(eps, haversine_rad(xl, xp, lam[p], phi[p]), delta))
        if stream_uniform(key, buf, state) < weight:
            return p
    # the reference pmf: log-weights, max-subtracted, normalised, inverse CDF (in the order of sc_idx)
    top = -np.inf
    for i in range(n):
        p = sc_idx[i]
        ell = em_log_weight(eps, haversine_rad(xl, xp, lam[p], phi[p]), delta)
        sc_cdf[i] = ell
        if ell > top:
            top = ell
    return sc_idx[_draw_log_weights(sc_cdf, n, top, key, buf, state)]


@_jit_inline
def em_full(
    xl: float,
    xp: float,
    eps: float,
    ix: Any,
    w: Any,
    key: np.ndarray,
    prop1: KernelInt,
    prop2: KernelInt,
) -> KernelInt:
    """Exact EM draw over all of P: :func:`em` with an empty domain (same draws, same output, tested).

    PointEM, single-point trajectories and ATP's anchor need nothing else, so their kernels compile
    neither the membership tests nor the ATP region. Positions are the points themselves (no index list).
    ``ix`` and ``w`` are the driver's records, as for :func:`em`.
    """
    delta = ix.delta
    lam = ix.lam
    phi = ix.phi
    buf = w.buf
    state = w.state
    sc_cdf = w.fwork[0]
    stats = w.stats
    stats[ST_EM_CALLS] += 1
    m = lam.shape[0]
    if m > _SMALL_DOMAIN:
        for _ in range(prop1):
            stats[ST_PROPOSALS] += 1
            p = stream_integers(key, buf, state, m)
            weight = math.exp(em_log_weight(eps, haversine_rad(xl, xp, lam[p], phi[p]), delta))
            if stream_uniform(key, buf, state) < weight:
                return p
    stats[ST_ENUMERATIONS] += 1
    if m == 1:
        return 0  # |D| = 1: no draw consumed
    for _ in range(prop2):
        stats[ST_PROPOSALS] += 1
        p = stream_integers(key, buf, state, m)
        weight = math.exp(em_log_weight(eps, haversine_rad(xl, xp, lam[p], phi[p]), delta))
        if stream_uniform(key, buf, state) < weight:
            return p
    top = -np.inf
    for p in range(m):
        ell = em_log_weight(eps, haversine_rad(xl, xp, lam[p], phi[p]), delta)
        sc_cdf[p] = ell
        if ell > top:
            top = ell
    return _draw_log_weights(sc_cdf, m, top, key, buf, state)


@_jit_inline
def _draw_log_weights(
    sc_cdf: np.ndarray, n: KernelInt, top: float, key: np.ndarray, buf: np.ndarray, state: np.ndarray
) -> KernelInt:
    # inverse-CDF draw of a slot of sc_cdf[:n] (log-weights, maximum top), the reference's pmf:
    # max-subtracted, normalised; sc_cdf is overwritten with the CDF
    s = 0.0
    for i in range(n):
        s += math.exp(sc_cdf[i] - top)
        sc_cdf[i] = s
    for i in range(n):
        sc_cdf[i] = sc_cdf[i] / s
    return stream_categorical_cdf(key, buf, state, sc_cdf, n)


@_jit
def krr(
    x: KernelInt, g: KernelInt, lie: float, key: np.ndarray, buf: np.ndarray, state: np.ndarray
) -> KernelInt:
    """k-RR (ALGORITHM §3.1): lie with probability L, then uniform over the g − 1 other values."""
    if stream_uniform(key, buf, state) < lie:
        j = stream_integers(key, buf, state, g - 1)
        if j >= x:
            j += 1
        return j
    return x


@_jit
def sw_cdf(j: KernelInt, v: float, b: float, pw: float, qw: float, w: float) -> float:
    """Closed-form cumulative mass of buckets 0…j−1 (ALGORITHM §3.3)."""
    ov = j * w - v
    if ov < 0.0:
        ov = 0.0
    if ov > 2.0 * b:
        ov = 2.0 * b
    return qw * j * w + (pw - qw) * ov


@_jit
def sw_bucket(
    v: float, eps: float, b: float, buckets: int, key: np.ndarray, buf: np.ndarray, state: np.ndarray
) -> int:
    """Bucketed SW: inverse of the exact bucket-mass CDF (first j with u < F(j+1))."""
    t = math.exp(-eps)
    p = 1.0 / (2.0 * b + t)
    q = t / (2.0 * b + t)
    w = (1.0 + 2.0 * b) / buckets
    u = stream_uniform(key, buf, state)
    a = 0
    c = buckets  # answer in [a, c)
    while a < c:
        mid = (a + c) // 2
        if sw_cdf(mid + 1, v, b, p, q, w) > u:
            c = mid
        else:
            a = mid + 1
    if a >= buckets:
        a = buckets - 1
    return a


@_jit
def sw_continuous(
    v: float, eps: float, b: float, key: np.ndarray, buf: np.ndarray, state: np.ndarray
) -> float:
    """Continuous SW (option C8), the reference's sampler."""
    t = math.exp(-eps)
    if stream_uniform(key, buf, state) < 2.0 * b / (2.0 * b + t):
        return v - b + 2.0 * b * stream_uniform(key, buf, state)
    u = stream_uniform(key, buf, state)
    if u < v:
        return u - b
    return u + b
