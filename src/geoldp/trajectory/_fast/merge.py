"""The merge of the two perturbed copies on the fast path (ALGORITHM §5.6).

Bit-identical to :func:`geoldp.trajectory.merge.merge_choice`: only the grid runs that meet the strip
around the arc y_A–y_B are scanned (the argument is in :mod:`geoldp.trajectory._fast.driver`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from geoldp._core.kernels import EARTH_RADIUS_M, haversine_rad
from geoldp._core.kernels import jit as _jit  # the one kernel decorator
from geoldp._core.kernels import jit_inline as _jit_inline  # leaf kernels on records
from geoldp.trajectory._atp_region import asin_dist
from geoldp.trajectory._fast.grid import ST_MERGE_CAND, ST_MERGE_EXACT, ST_MERGE_FULL, gnomonic, ranges

if TYPE_CHECKING:
    from geoldp._core.kernels import KernelInt

__all__ = ["merge_position"]


@_jit
def _chord_dist(ax: float, ay: float, az: float, bx: float, by: float, bz: float) -> float:
    """Great-circle distance from the chord of two unit vectors (accurate, not the reference kernel)."""
    dx = ax - bx
    dy = ay - by
    dz = az - bz
    return asin_dist(0.5 * math.sqrt(dx * dx + dy * dy + dz * dz))


@_jit
def _slab(dab: float, gap: float, nn: float) -> float:
    """Bound on |p·n| for every p near the arc y_A–y_B.

    Every p with d(p, y_A) + d(p, y_B) <= dab + ``gap`` (metres), n the computed
    unit normal of the great circle through y_A, y_B (``nn`` = |y_A × y_B| before normalising), for
    dab < 0.45πR.

    With h the angle from p to the great circle and x_A, x_B the arcs from its foot to y_A, y_B,
    cos d(p, y) = cos h · cos x_y (right spherical triangles). g(x) = arccos(cos h · cos x) is increasing
    on [0, π] and convex on [0, π/2], so the sum is at least 2·g(B) with B = dab/2R (a foot beyond π/2
    from either end puts that end πR/2 > dab + gap away). Hence cos h >= cos A / cos B with A = B +
    gap/2R, i.e. 1 − cos h <= q = 2·sin((A + B)/2)·sin(gap/4R)/cos B, and |p·n| = sin h <= 2·sin(h/2) =
    2·sqrt(q/2). For an arc of 20 km that is a few centimetres (the former bound, 1 − cos h <= gap/R, is
    about a metre whatever the arc). The margins: 1e−6 relative, 1e−13 absolute, and 1e−14/nn for the
    rounding of the cross product, which cancels when y_A and y_B are close.
    """
    b = 0.5 * dab / EARTH_RADIUS_M
    g = 0.5 * gap / EARTH_RADIUS_M
    q = 2.0 * math.sin(b + 0.5 * g) * math.sin(0.5 * g) / math.cos(b)
    return 2.0 * math.sqrt(0.5 * q) * (1.0 + 1e-6) + 1e-13 + 1e-14 / nn


@_jit_inline
def _score(
    p: KernelInt,
    ya: KernelInt,
    yb: KernelInt,
    lam: np.ndarray,
    phi: np.ndarray,
    n: KernelInt,
    sc_idx: np.ndarray,
    sc_cdf: np.ndarray,
    sc_aux: np.ndarray,
) -> None:
    """Candidate ``p`` in slot ``n``: s(p) = d(p, y_A) + d(p, y_B) and u(p) = |d(p, y_A) − d(p, y_B)|."""
    sc_idx[n] = p
    da = haversine_rad(lam[ya], phi[ya], lam[p], phi[p])
    db = haversine_rad(lam[yb], phi[yb], lam[p], phi[p])
    sc_cdf[n] = da + db
    sc_aux[n] = abs(da - db)


# A numba kernel: exempt from C901, as splitting it into calls changes what numba compiles.
@_jit_inline
def merge_position(ya: KernelInt, yb: KernelInt, ix: Any, cp: Any, w: Any) -> KernelInt:  # noqa: C901
    """Merged output of one position (ALGORITHM §5.6), bit-identical to ``merge_choice``.

    ``ya``, ``yb`` are the two copies' outputs; ``ix`` (P's arrays and grid, ``KernelIndex``), ``cp``
    (the merge tolerance and rule, ``CopyPlan``) and ``w`` (the thread's scratch arrays and counters,
    ``Work``; the runs go to ``w.rows[3:6]``) are the driver's records
    (:mod:`geoldp.trajectory._fast.driver`).
    """
    lam = ix.lam
    phi = ix.phi
    xyz = ix.xyz
    sxyz = ix.sxyz
    gf = ix.gf
    basis = ix.basis
    tau = cp.tau
    lo = w.rows[3]
    hi = w.rows[4]
    cum = w.rows[5]
    hp = w.hp
    sc_idx = w.iwork[0]
    sc_cdf = w.fwork[0]
    sc_aux = w.fwork[1]
    stats = w.stats
    if ya == yb:
        return ya
    m = lam.shape[0]
    dab = haversine_rad(lam[ya], phi[ya], lam[yb], phi[yb])
    err = 1e-9 + 1e-12 * dab + tau
    use_grid = ix.gi[2] == 1 and dab < 0.45 * math.pi * EARTH_RADIUS_M
    n = 0
    if use_grid:
        ax, ay, az = xyz[ya, 0], xyz[ya, 1], xyz[ya, 2]
        bx, by, bz = xyz[yb, 0], xyz[yb, 1], xyz[yb, 2]
        mx, my, mz = ax + bx, ay + by, az + bz
        mn = math.sqrt(mx * mx + my * my + mz * mz)
        mx /= mn
        my /= mn
        mz /= mn
        # ball: every tied point is within (s* + τ)/2 of the midpoint, s* <= dab
        rho = 0.5 * (dab + tau + 2.0 * err) / EARTH_RADIUS_M
        du, dv = gnomonic(mx, my, mz, gf, basis)
        dl = gf[4] * rho * (1.0 + 1e-9) + 1e-12
        # slab around the great circle: see _slab
        nx = ay * bz - az * by
        ny = az * bx - ax * bz
        nz = ax * by - ay * bx
        nn = math.sqrt(nx * nx + ny * ny + nz * nz)
        nh = np.int64(0)  # not a literal: one specialisation of ranges
        slab = -1.0
        if nn > 1e-9:
            nx /= nn
            ny /= nn
            nz /= nn
            slab = _slab(dab, tau + 3.0 * err, nn)  # τ + 2·err as before, one more for dab's own rounding
            wide = slab / gf[5]
            for s in range(2):
                sg = 1.0 if s == 0 else -1.0
                hp[nh, 0] = sg * (nx * basis[1, 0] + ny * basis[1, 1] + nz * basis[1, 2])
                hp[nh, 1] = sg * (nx * basis[2, 0] + ny * basis[2, 1] + nz * basis[2, 2])
                hp[nh, 2] = sg * (nx * basis[0, 0] + ny * basis[0, 1] + nz * basis[0, 2]) + wide
                nh += 1
        n_runs, total = ranges(gf, ix.gi, ix.cell_start, hp, nh, np.bool_(True), du, dv, dl, lo, hi, cum)
        stats[ST_MERGE_CAND] += total
        for r in range(n_runs):
            for pos in range(lo[r], hi[r]):
                # (interleaved xyz: one cache-line stream per run; the runs are short and cold)
                if slab >= 0.0:
                    dot = sxyz[pos, 0] * nx + sxyz[pos, 1] * ny + sxyz[pos, 2] * nz
                    if abs(dot) > slab:
                        continue
                p = ix.order[pos]
                if p == ya or p == yb:
                    continue  # added below without kernel calls
                # cheap chord distances (error ~1e−9 m) rule out points clearly off the arc
                x = sxyz[pos, 0]
                y = sxyz[pos, 1]
                z = sxyz[pos, 2]
                sc = _chord_dist(ax, ay, az, x, y, z) + _chord_dist(bx, by, bz, x, y, z)
                if sc > dab + tau + 1e-6 + 1e-12 * dab:
                    continue
                _score(p, ya, yb, lam, phi, n, sc_idx, sc_cdf, sc_aux)
                n += 1
        # y_A and y_B: d(y, y) = 0 exactly and d is symmetric, so s = d(y_A, y_B) and u = d(y_A, y_B)
        sc_idx[n] = ya
        sc_cdf[n] = 0.0 + dab
        sc_aux[n] = abs(0.0 - dab)
        n += 1
        sc_idx[n] = yb
        sc_cdf[n] = dab + 0.0
        sc_aux[n] = abs(dab - 0.0)
        n += 1
    else:
        stats[ST_MERGE_FULL] += 1
        for p in range(m):
            _score(p, ya, yb, lam, phi, n, sc_idx, sc_cdf, sc_aux)
            n += 1
    stats[ST_MERGE_EXACT] += n
    s_min = np.inf
    for i in range(n):
        if sc_cdf[i] < s_min:
            s_min = sc_cdf[i]
    limit = s_min + tau
    best = m
    if not cp.balanced:
        for i in range(n):
            if sc_cdf[i] <= limit and sc_idx[i] < best:
                best = sc_idx[i]
        return best
    u_min = np.inf
    for i in range(n):
        if sc_cdf[i] <= limit and sc_aux[i] < u_min:
            u_min = sc_aux[i]
    u_limit = u_min + tau
    for i in range(n):
        if sc_cdf[i] <= limit and sc_aux[i] <= u_limit and sc_idx[i] < best:
            best = sc_idx[i]
    return best
