"""Merge of the two perturbed copies, position by position (ALGORITHM §5.6, option C5).

The merge is post-processing of the two released copies: it costs no privacy. It runs over the **full**
public set P (also for ATP). :func:`merge_choice` is a ``numba.njit(cache=True)`` function over the two
distance rows, callable from Python and from the fast path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numba
import numpy as np

from geoldp._core import kernels as _kernels

if TYPE_CHECKING:
    from geoldp._core.kernels import KernelInt

#: τ = TAU_FACTOR · Δ: the tolerance under which two sums (or imbalances) count as tied.
TAU_FACTOR = 1e-12


@numba.njit(cache=True)
def merge_choice(
    y_a: KernelInt, y_b: KernelInt, d_a: np.ndarray, d_b: np.ndarray, tau: float, balanced: bool
) -> KernelInt:
    """Merged output index for one position (ALGORITHM §5.6).

    Parameters
    ----------
    y_a, y_b : int
        The two copies' outputs (indices into P).
    d_a, d_b : float64[:]
        Distances from P_{y_a} (resp. P_{y_b}) to every point of P.
    tau : float
        Tie tolerance τ = 1e−12·Δ.
    balanced : bool
        True → ``"balanced"`` (most central tied point), False → ``"index"`` (lowest tied index).

    Returns
    -------
    int
        y_a if y_a == y_b; otherwise the tie-broken minimiser of d(p, y_a) + d(p, y_b) over P.
    """
    if y_a == y_b:
        return y_a
    m = d_a.shape[0]
    s_min = np.inf
    for p in range(m):
        s = d_a[p] + d_b[p]
        if s < s_min:
            s_min = s
    limit = s_min + tau
    if not balanced:
        for p in range(m):
            if d_a[p] + d_b[p] <= limit:
                return p
        return y_a  # unreachable: the minimiser itself satisfies the test
    u_min = np.inf
    for p in range(m):
        if d_a[p] + d_b[p] <= limit:
            u = abs(d_a[p] - d_b[p])
            if u < u_min:
                u_min = u
    u_limit = u_min + tau
    for p in range(m):
        if d_a[p] + d_b[p] <= limit and abs(d_a[p] - d_b[p]) <= u_limit:
            return p
    return y_a  # unreachable


@numba.njit(cache=True)
def merge_index(
    y_a: KernelInt,
    y_b: KernelInt,
    lam: np.ndarray,
    phi: np.ndarray,
    tau: float,
    balanced: bool,
    d_a: np.ndarray,
    d_b: np.ndarray,
) -> KernelInt:
    """Merge one position given P's coordinates (radians); ``d_a``/``d_b`` are scratch rows of length m."""
    if y_a == y_b:
        return y_a
    _kernels.haversine_from_one(lam[y_a], phi[y_a], lam, phi, d_a)
    _kernels.haversine_from_one(lam[y_b], phi[y_b], lam, phi, d_b)
    return merge_choice(y_a, y_b, d_a, d_b, tau, balanced)
