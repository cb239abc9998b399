"""ATP's anchor p_α on the fast path, exactly as the reference's ``anchor_location`` and nearest-point rule.

The exact-kernel nearest public point to each trajectory's mean location (ties → lowest index). The mean
replicates numpy's pairwise summation bit for bit; a KD-tree proposes candidates and the exact kernel
decides (full scan when the candidates may miss a tie).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numba
import numpy as np

from geoldp._core.aot import Entry, array
from geoldp._core.kernels import haversine_rad
from geoldp._core.kernels import jit as _jit  # the one kernel decorator
from geoldp.trajectory._fast.grid import FastIndex

if TYPE_CHECKING:
    from geoldp._core.kernels import KernelInt

__all__ = ["nearest_anchors", "np_mean"]


@numba.njit(cache=True)
def np_mean(a: np.ndarray, n: KernelInt) -> float:
    """NumPy's pairwise sum of a[:n] divided by n (bit-identical to ``np.mean`` of a contiguous array)."""
    return _pairwise(a, np.int64(0), n) / n  # np.int64: no literal specialisation


@numba.njit(cache=True)
def _pairwise_leaf(a: np.ndarray, start: KernelInt, n: KernelInt) -> float:
    """NumPy's ``pairwise_sum`` for n <= 128 (8 accumulators, then the tail)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[start + i]
        return res
    r0 = a[start]
    r1 = a[start + 1]
    r2 = a[start + 2]
    r3 = a[start + 3]
    r4 = a[start + 4]
    r5 = a[start + 5]
    r6 = a[start + 6]
    r7 = a[start + 7]
    i = 8
    stop = n - (n % 8)
    while i < stop:
        r0 += a[start + i]
        r1 += a[start + i + 1]
        r2 += a[start + i + 2]
        r3 += a[start + i + 3]
        r4 += a[start + i + 4]
        r5 += a[start + i + 5]
        r6 += a[start + i + 6]
        r7 += a[start + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[start + i]
        i += 1
    return res


@numba.njit(cache=True)
def _pairwise(a: np.ndarray, start: KernelInt, n: KernelInt) -> float:
    """NumPy's recursive pairwise summation of a[start:start+n] (halves cut at a multiple of 8)."""
    if n <= 128:
        return _pairwise_leaf(a, start, n)
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise(a, start, n2) + _pairwise(a, start + n2, n - n2)


@numba.njit(cache=True)
def _anchor_points(
    flat: np.ndarray,
    offsets: np.ndarray,
    lam: np.ndarray,
    phi: np.ndarray,
    vector: bool,
    out_lam: np.ndarray,
    out_phi: np.ndarray,
) -> None:
    """Mean location α of every trajectory (radians), exactly as the reference's ``anchor_location``."""
    n_traj = offsets.shape[0] - 1
    bl = np.empty(64)
    bp = np.empty(64)
    for t in range(n_traj):
        s = offsets[t]
        n = offsets[t + 1] - s
        if bl.shape[0] < n:
            bl = np.empty(n)
            bp = np.empty(n)
        done = False
        if vector:
            bz = np.empty(n)
            for i in range(n):
                p = flat[s + i]
                cphi = math.cos(phi[p])
                bl[i] = cphi * math.cos(lam[p])
                bp[i] = cphi * math.sin(lam[p])
                bz[i] = math.sin(phi[p])
            x = np_mean(bl, n)
            y = np_mean(bp, n)
            z = np_mean(bz, n)
            if math.sqrt(x * x + y * y + z * z) >= 1e-12:
                out_lam[t] = math.atan2(y, x)
                out_phi[t] = math.atan2(z, math.hypot(x, y))
                done = True
        if not done:
            for i in range(n):
                p = flat[s + i]
                bl[i] = lam[p]
                bp[i] = phi[p]
            out_lam[t] = np_mean(bl, n)
            out_phi[t] = np_mean(bp, n)


@_jit
def _nearest_exact(
    alam: np.ndarray, aphi: np.ndarray, cand: np.ndarray, lam: np.ndarray, phi: np.ndarray, out: np.ndarray
) -> None:
    """Among candidates ``cand[t, :]`` (−1 = none), the exact-kernel nearest P point; ties → lowest index.

    Returns the number of rows whose candidate list may be incomplete (all k candidates within the tie
    tolerance of the minimum): those are recomputed by a full scan.
    """
    n_traj = cand.shape[0]
    k = cand.shape[1]
    for t in range(n_traj):
        best = np.inf
        bi = -1
        for j in range(k):
            p = cand[t, j]
            if p < 0:
                continue
            d = haversine_rad(alam[t], aphi[t], lam[p], phi[p])
            if d < best or (d == best and p < bi):
                best = d
                bi = p
        out[t] = bi


@_jit
def _nearest_scan(alam: float, aphi: float, lam: np.ndarray, phi: np.ndarray) -> KernelInt:
    """Exact ``argmin_p haversine(α, P_p)`` (first minimum) by a full scan: the reference's rule."""
    best = np.inf
    bi = 0
    for p in range(lam.shape[0]):
        d = haversine_rad(alam, aphi, lam[p], phi[p])
        if d < best:
            best = d
            bi = p
    return bi


@_jit
def _nearest_scan_rows(
    alam: np.ndarray, aphi: np.ndarray, lam: np.ndarray, phi: np.ndarray, out: np.ndarray
) -> None:
    """:func:`_nearest_scan` of every row (small calls: cheaper than querying the KD-tree)."""
    for t in range(alam.shape[0]):
        out[t] = _nearest_scan(alam[t], aphi[t], lam, phi)


#: a call with at most this many (trajectory, point) pairs scans P instead of querying the KD-tree (the
#: same answer: the tree route is exact, and its near ties are settled by the same scan)
SCAN_PAIRS = 4096

# called from Python: through their compiled exports when installed (geoldp._core.aot)
_F1 = array(numba.float64, 1)
_RF1 = array(numba.float64, 1, readonly=True)  # P's coordinates
_I1 = array(numba.int64, 1)
_ANCHOR_POINTS = Entry(
    _anchor_points, {"anchor_points": numba.void(_I1, _I1, _RF1, _RF1, numba.boolean, _F1, _F1)}
)
_NEAREST_EXACT = Entry(
    _nearest_exact, {"nearest_exact": numba.void(_F1, _F1, array(numba.int64, 2), _RF1, _RF1, _I1)}
)
_NEAREST_SCAN = Entry(_nearest_scan, {"nearest_scan": numba.int64(numba.float64, numba.float64, _RF1, _RF1)})
_NEAREST_SCAN_ROWS = Entry(_nearest_scan_rows, {"nearest_scan_rows": numba.void(_F1, _F1, _RF1, _RF1, _I1)})


def nearest_anchors(flat: np.ndarray, offsets: np.ndarray, index: FastIndex, vector: bool) -> np.ndarray:
    """p_α of every trajectory: the exact-kernel nearest P point to the mean location; ties → lowest index."""
    n_traj = offsets.shape[0] - 1
    alam = np.empty(n_traj)
    aphi = np.empty(n_traj)
    _ANCHOR_POINTS(flat, offsets, index.lam, index.phi, bool(vector), alam, aphi)
    if n_traj * index.m <= SCAN_PAIRS:
        out = np.empty(n_traj, dtype=np.int64)
        _NEAREST_SCAN_ROWS(alam, aphi, index.lam, index.phi, out)
        return out
    cphi = np.cos(aphi)
    q = np.column_stack([cphi * np.cos(alam), cphi * np.sin(alam), np.sin(aphi)])
    k = min(4, index.m)
    dist, cand = index.kdtree().query(q, k=k)
    dist = np.asarray(dist).reshape(n_traj, k)
    cand = np.asarray(cand, dtype=np.int64).reshape(n_traj, k)
    out = np.empty(n_traj, dtype=np.int64)
    _NEAREST_EXACT(alam, aphi, cand, index.lam, index.phi, out)
    # rows whose k-th candidate is (nearly) as close as the first may have more tied points: full scan
    if k < index.m:
        unsure = np.flatnonzero(dist[:, -1] <= dist[:, 0] * (1 + 1e-9) + 1e-12)
        for t in unsure:
            out[t] = _NEAREST_SCAN(alam[t], aphi[t], index.lam, index.phi)
    return out
