"""Numba kernels: the one implementation of the geometric formulas (ALGORITHM §2).

Every piece of geoldp that computes a distance, a bearing or a sector index calls these functions
(directly from numba code, or through the broadcasting wrappers of :mod:`geoldp._core.geo`), so the true
sector fed to k-RR and the domain built by GetPointSet use bit-identical arithmetic (ALGORITHM §2.4).

All angles are in radians. Use :func:`geoldp._core.geo.to_radians` to convert degrees.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypeAlias

import numba
from numba.extending import typeof_impl

from geoldp._core.aot import Entry, array

if TYPE_CHECKING:
    import numpy as np

#: A kernel's integer argument: a Python int or an int64 (numba types both as a machine integer).
KernelInt: TypeAlias = "int | np.int64"

__all__ = [
    "EARTH_RADIUS_M",
    "TWO_PI",
    "bearing_rad",
    "bearing_rad_many",
    "em_log_weight",
    "haversine_rad",
    "haversine_rad_many",
    "jit",
    "jit_inline",
    "sector",
    "sector_many",
]

#: Mean Earth radius in metres (ALGORITHM §2.1).
EARTH_RADIUS_M = 6_371_000.0
#: 2π as the float used by every sector computation.
TWO_PI = 2.0 * math.pi

#: The decorator of geoldp's allocation-free numba kernels (the compiled fast paths). Without NRT
#: reference counting: with it, every call that passes arrays costs atomic increments/decrements, which
#: dominated the run time (~4x slower). nogil: the drivers run in threads (``n_jobs``, Dask's threaded
#: scheduler) without holding the GIL. ``cache=True`` caches each kernel next to its own module's cache
#: entry (in the cache directory geoldp._core.numba_cache chooses).
jit = numba.njit(cache=True, _nrt=False, nogil=True)  # type: ignore[call-overload]
#: :data:`jit` for a leaf kernel that takes records (named tuples of arrays) and runs once per point:
#: inlined into its callers, so a call does not pass every field of every record (TP and PointEM were
#: 5-30 % slower with plain calls; the same code otherwise).
jit_inline = numba.njit(cache=True, _nrt=False, nogil=True, inline="always")  # type: ignore[call-overload]


@numba.njit(cache=True)
def haversine_rad(lam1: float, phi1: float, lam2: float, phi2: float) -> float:
    """Haversine distance in metres between (lam1, phi1) and (lam2, phi2), radians (ALGORITHM §2.1).

    ``h`` is clamped to [0, 1]. The expression is symmetric in its two points, bitwise:
    ``haversine_rad(a, b) == haversine_rad(b, a)``.
    """
    s_phi = math.sin((phi2 - phi1) * 0.5)
    s_lam = math.sin((lam2 - lam1) * 0.5)
    # Products are ordered so that swapping the two points gives the same operations on the same values.
    h = s_phi * s_phi + (math.cos(phi1) * math.cos(phi2)) * (s_lam * s_lam)
    if h < 0.0:
        h = 0.0
    elif h > 1.0:
        h = 1.0
    return 2.0 * EARTH_RADIUS_M * math.asin(math.sqrt(h))


@numba.njit(cache=True)
def bearing_rad(lam1: float, phi1: float, lam2: float, phi2: float) -> float:
    """Initial great-circle bearing from point 1 to point 2, clockwise from north, in [0, 2π).

    Identical coordinates give 0 (ALGORITHM §2.2).
    """
    if lam1 == lam2 and phi1 == phi2:
        return 0.0
    dlam = lam2 - lam1
    y = math.sin(dlam) * math.cos(phi2)
    x = math.cos(phi1) * math.sin(phi2) - math.sin(phi1) * math.cos(phi2) * math.cos(dlam)
    theta = math.atan2(y, x)
    if theta < 0.0:
        theta = theta + TWO_PI
    if theta >= TWO_PI:
        theta = 0.0
    return theta


@numba.njit(cache=True)
def sector(theta: float, g: KernelInt, centred: bool) -> KernelInt:
    """Sector index of bearing ``theta`` (radians, [0, 2π)) for granularity ``g`` (ALGORITHM §2.4).

    ``centred=True``: sector d = [(2d−1)π/g, (2d+1)π/g), i.e. ``floor(θ·g/(2π) + 1/2) mod g``.
    ``centred=False`` ("floor"): sector d = [2dπ/g, 2(d+1)π/g), i.e. ``floor(θ·g/(2π)) mod g``.
    """
    t = theta * g / TWO_PI
    if centred:
        t = t + 0.5
    s = int(math.floor(t)) % g
    if s < 0:
        s += g
    return s


@numba.njit(cache=True)
def em_log_weight(epsilon: float, d: float, delta: float) -> float:
    """Log-weight of the exponential mechanism: ``-(ε′·d) / (2Δ)`` (ALGORITHM §3.2)."""
    return -(epsilon * d) / (2.0 * delta)


@numba.njit(cache=True)
def haversine_rad_many(
    lam1: np.ndarray, phi1: np.ndarray, lam2: np.ndarray, phi2: np.ndarray, out: np.ndarray
) -> np.ndarray:
    """Element-wise :func:`haversine_rad` over equal-length 1-D arrays, written into ``out``."""
    for i in range(out.shape[0]):
        out[i] = haversine_rad(lam1[i], phi1[i], lam2[i], phi2[i])
    return out


@numba.njit(cache=True)
def bearing_rad_many(
    lam1: np.ndarray, phi1: np.ndarray, lam2: np.ndarray, phi2: np.ndarray, out: np.ndarray
) -> np.ndarray:
    """Element-wise :func:`bearing_rad` over equal-length 1-D arrays, written into ``out``."""
    for i in range(out.shape[0]):
        out[i] = bearing_rad(lam1[i], phi1[i], lam2[i], phi2[i])
    return out


@numba.njit(cache=True)
def sector_many(theta: np.ndarray, g: KernelInt, centred: bool, out: np.ndarray) -> np.ndarray:
    """Element-wise :func:`sector` over a 1-D array, written into ``out`` (int64)."""
    for i in range(out.shape[0]):
        out[i] = sector(theta[i], g, centred)
    return out


@numba.njit(cache=True)
def haversine_cross(
    lam1: np.ndarray, phi1: np.ndarray, lam2: np.ndarray, phi2: np.ndarray, out: np.ndarray
) -> np.ndarray:
    """Distances in metres between every point of (lam1, phi1) (rows) and of (lam2, phi2) (columns)."""
    for i in range(lam1.shape[0]):
        for j in range(lam2.shape[0]):
            out[i, j] = haversine_rad(lam1[i], phi1[i], lam2[j], phi2[j])
    return out


@numba.njit(cache=True)
def haversine_from_one(
    lam0: float, phi0: float, lam: np.ndarray, phi: np.ndarray, out: np.ndarray
) -> np.ndarray:
    """Distances in metres from one point to every point of (lam, phi)."""
    for i in range(out.shape[0]):
        out[i] = haversine_rad(lam0, phi0, lam[i], phi[i])
    return out


@numba.njit(cache=True)
def bearing_from_one(
    lam0: float, phi0: float, lam: np.ndarray, phi: np.ndarray, out: np.ndarray
) -> np.ndarray:
    """Bearings from one point to every point of (lam, phi)."""
    for i in range(out.shape[0]):
        out[i] = bearing_rad(lam0, phi0, lam[i], phi[i])
    return out


@numba.njit(cache=True)
def max_pairwise_brute(lam: np.ndarray, phi: np.ndarray) -> float:
    """Exact maximum pairwise :func:`haversine_rad` by brute force, O(m²) time, O(1) memory."""
    m = lam.shape[0]
    best = 0.0
    for i in range(m):
        li = lam[i]
        pi = phi[i]
        for j in range(i + 1, m):
            d = haversine_rad(li, pi, lam[j], phi[j])
            if d > best:
                best = d
    return best


@numba.njit(cache=True)
def max_over_pairs(lam: np.ndarray, phi: np.ndarray, left: np.ndarray, right: np.ndarray) -> float:
    """Maximum of :func:`haversine_rad` over the index pairs (left[k], right[k])."""
    best = 0.0
    for k in range(left.shape[0]):
        i = left[k]
        j = right[k]
        d = haversine_rad(lam[i], phi[i], lam[j], phi[j])
        if d > best:
            best = d
    return best


@numba.njit(cache=True)
def max_pairwise_sorted(
    lam: np.ndarray,
    phi: np.ndarray,
    order: np.ndarray,
    r: np.ndarray,
    best: float,
    rel_margin: float,
    abs_margin: float,
) -> float:
    """Exact max pairwise haversine by triangle-inequality pruning around a centre c.

    ``order`` sorts the points by ``r = d(c, p)`` descending, ``best`` is a lower bound (an actual pair
    distance). A pair can beat ``best`` only if r_i + r_j ≥ best, so both loops stop at the first pair below
    ``best·(1 − rel_margin) − abs_margin`` (the margin covers the rounding of the computed distances).
    """
    m = order.shape[0]
    thr = best * (1.0 - rel_margin) - abs_margin
    for a in range(m - 1):
        i = order[a]
        ri = r[i]
        if ri + r[order[a + 1]] < thr:
            break
        li = lam[i]
        pi = phi[i]
        for b in range(a + 1, m):
            j = order[b]
            if ri + r[j] < thr:
                break
            d = haversine_rad(li, pi, lam[j], phi[j])
            if d > best:
                best = d
                thr = best * (1.0 - rel_margin) - abs_margin
    return best


@numba.njit(cache=True)
def farthest_from(lam: np.ndarray, phi: np.ndarray, i: KernelInt) -> tuple[int, float]:
    """Index and distance of the point farthest from point ``i`` (first one on ties)."""
    best = -1.0
    arg = 0
    for j in range(lam.shape[0]):
        d = haversine_rad(lam[i], phi[i], lam[j], phi[j])
        if d > best:
            best = d
            arg = j
    return arg, best


# Kernels that Python code calls (the point set's diameter): through their compiled exports when geoldp was
# installed with them (geoldp._core.aot), otherwise these very numba functions; numba code calls the latter.
@typeof_impl.register(Entry)
def _typeof_entry(entry: Entry, context: Any) -> Any:
    # numba code that names an entry calls its numba function (the compiled exports serve Python callers)
    return typeof_impl(entry._jit, context)


_f8, _i8 = numba.float64, numba.int64
_F1 = array(_f8, 1)
_RF1 = array(_f8, 1, readonly=True)  # P's coordinates (read-only arrays of the PointSet)
_I1 = array(_i8, 1)
# (mypy: each name turns from a numba dispatcher into an Entry, which calls like one)
farthest_from = Entry(  # type: ignore[assignment]
    farthest_from, {"farthest_from": numba.types.Tuple([_i8, _f8])(_RF1, _RF1, _i8)}
)
haversine_from_one = Entry(  # type: ignore[assignment]
    haversine_from_one, {"haversine_from_one": _F1(_f8, _f8, _RF1, _RF1, _F1)}
)
max_pairwise_brute = Entry(max_pairwise_brute, {"max_pairwise_brute": _f8(_RF1, _RF1)})  # type: ignore[assignment]
max_pairwise_sorted = Entry(  # type: ignore[assignment]
    max_pairwise_sorted, {"max_pairwise_sorted": _f8(_RF1, _RF1, _I1, _F1, _f8, _f8, _f8)}
)
