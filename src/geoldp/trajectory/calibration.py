"""ATP radius mapping, calibration centre η, calibrated radius R̃ and region Ω (ALGORITHM §3.3, §8.2–8.6).

Every function here is a deterministic function of *released or public* values only: the perturbed anchor's
distances to P, the released SW value r̂, the SW half-width b and the stage budgets. They are plain
``numba.njit(cache=True)`` functions over floats and 1-D float64 arrays, callable from Python (the reference
path) and from numba code (the fast path), so both paths compute bit-identical regions.

Distances are in metres (any common unit works: only ratios and comparisons matter).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numba
import numpy as np

if TYPE_CHECKING:
    from geoldp._core.kernels import KernelInt


#: η is the weighted mean over the candidates C (ALGORITHM §8.4 step 5).
BRANCH_WEIGHTED = 0
#: K was empty: η fell back to the mean distance to the other points (step 6).
BRANCH_K_EMPTY = 1
#: K was non-empty but C was empty: same fallback (step 6).
BRANCH_C_EMPTY = 2


@numba.njit(cache=True)
def atp_radius_input(r_max: float, delta_r: float) -> float:
    """SW input r = min(1, R_max/ΔR) (ALGORITHM §8.2); 0 when ΔR ≤ 0 (degenerate point set)."""
    if not (delta_r > 0.0):
        return 0.0
    r = r_max / delta_r
    if r > 1.0:
        r = 1.0
    if r < 0.0:
        r = 0.0
    return r


@numba.njit(cache=True)
def sw_bucket_midpoint(j: KernelInt, b: float, buckets: KernelInt) -> float:
    """Released value r̂ = −b + (j + ½)·w of SW bucket ``j``, w = (1 + 2b)/M (ALGORITHM §3.3)."""
    w = (1.0 + 2.0 * b) / buckets
    return -b + (j + 0.5) * w


@numba.njit(cache=True)
def sw_estimate(r_hat: float, b: float, delta_r: float) -> float:
    """Mapping back R̂ = (r̂ + b)·ΔR/(2b + 1) (ALGORITHM §3.3, the paper's formula)."""
    return (r_hat + b) * delta_r / (2.0 * b + 1.0)


@numba.njit(cache=True)
def candidate_range(r_hat: float, b: float) -> tuple[Any, ...]:
    """(k_lo, k_hi): the smallest and largest k with test value v = k/10 within ``b`` of ``r_hat``.

    ALGORITHM §8.4 step 2; (−1, −1) when K is empty.
    """
    k_lo = -1
    k_hi = -1
    for k in range(11):
        v = k / 10.0
        if v - b <= r_hat and r_hat <= v + b:
            if k_lo < 0:
                k_lo = k
            k_hi = k
    return k_lo, k_hi


@numba.njit(cache=True)
def band_distance(k: KernelInt, b: float, delta_r: float, input_mapping: bool) -> float:
    """D(v_k) of the test value v_k = k/10 (ALGORITHM §8.4 step 3; mapping as :func:`calibration_centre`)."""
    v = k / 10.0
    if input_mapping:
        return v * delta_r
    return (v + b) * delta_r / (2.0 * b + 1.0)


@numba.njit(cache=True)
def candidate_band(r_hat: float, b: float, delta_r: float, input_mapping: bool) -> tuple[Any, ...]:
    """(K non-empty, D_lo, D_hi) of ALGORITHM §8.4 steps 2–3: the distance band of the candidates C.

    K holds the test values v = k/10 (k = 0..10) within ``b`` of ``r_hat``; the band maps its smallest
    and largest through D(v) (:func:`band_distance`). Both the reference path and the fast path's
    certified region call this one scan.
    """
    k_lo, k_hi = candidate_range(r_hat, b)
    if k_lo < 0:
        return False, 0.0, 0.0
    return (
        True,
        band_distance(k_lo, b, delta_r, input_mapping),
        band_distance(k_hi, b, delta_r, input_mapping),
    )


@numba.njit(cache=True)
def calibration_centre(
    dist: np.ndarray, r_hat: float, b: float, eps_r: float, delta_r: float, input_mapping: bool
) -> tuple[Any, ...]:
    """Calibration centre η of Eq. 9 (ALGORITHM §8.4).

    Parameters
    ----------
    dist : float64[:]
        Distances from the perturbed anchor P_{â_α} to every point of P (including itself, 0).
    r_hat : float
        Released SW value in [−b, 1 + b].
    b : float
        SW half-width b(ε_R).
    eps_r : float
        The radius budget ε_R (weights 1 inside C and e^{−ε_R} outside).
    delta_r : float
        ΔR = max(dist).
    input_mapping : bool
        Option C6: False → "output" mapping D(v) = (v + b)·ΔR/(2b + 1) (default); True → "input" D(v) = v·ΔR.

    Returns
    -------
    eta : float
    branch : int
        :data:`BRANCH_WEIGHTED`, :data:`BRANCH_K_EMPTY` or :data:`BRANCH_C_EMPTY`.
    """
    m = dist.shape[0]
    has_k, d_lo, d_hi = candidate_band(r_hat, b, delta_r, input_mapping)
    branch = BRANCH_WEIGHTED
    if not has_k:
        branch = BRANCH_K_EMPTY
    else:
        low = math.exp(-eps_r)
        num = 0.0
        den = 0.0
        n_c = 0
        for p in range(m):
            d = dist[p]
            if d_lo <= d and d <= d_hi:
                num += d
                den += 1.0
                n_c += 1
            else:
                num += low * d
                den += low
        if n_c > 0:
            return num / den, branch
        branch = BRANCH_C_EMPTY
    total = 0.0
    for p in range(m):
        total += dist[p]
    return total / (m - 1), branch


@numba.njit(cache=True)
def calibrate(r_est: float, eta: float, delta_r: float, eps_decay: float) -> float:
    """Calibrated radius R̃ of Eqs. 10–12 (ALGORITHM §8.5).

    ``r_est`` is R̂; ``eps_decay`` is the ε of the decay factor (option C7: ε_R by default).
    """
    if r_est < eta:
        beta = (eta - r_est) / eta if eta > 0.0 else 0.0
    else:
        span = delta_r - eta
        beta = (r_est - eta) / span if span > 0.0 else 0.0
    if beta < 0.0:
        beta = 0.0
    if beta > 1.0:
        beta = 1.0
    xi = (eta - r_est) * (1.0 / (1.0 + math.exp(-beta / 2.0)))
    return r_est + math.exp(-eps_decay) * xi


@numba.njit(cache=True)
def region_mask(dist: np.ndarray, r_tilde: float, out: np.ndarray) -> np.ndarray:
    """Ω as a boolean mask: ``out[p] = dist[p] <= R̃`` (ALGORITHM §8.6). Returns ``out``."""
    for p in range(dist.shape[0]):
        out[p] = dist[p] <= r_tilde
    return out


def region_indices(dist: np.ndarray, r_tilde: float) -> np.ndarray:
    """Ω as sorted int64 indices (Python convenience over :func:`region_mask`)."""
    mask = region_mask(
        np.ascontiguousarray(dist, dtype=np.float64), float(r_tilde), np.empty(dist.shape[0], dtype=np.bool_)
    )
    return np.flatnonzero(mask).astype(np.int64)
