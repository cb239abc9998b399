"""ATP's region Ω for the fast path: exact, without an O(|P|) pass per perturbed anchor in the common case.

ALGORITHM §8.4–8.6 define Ω = {p : d(â, p) ≤ R̃} with R̃ = calibrate(R̂, η, ΔR) and η a weighted mean of
the distances from the perturbed anchor â to **every** public point. Computing η exactly costs O(|P|) per
copy. This module certifies an interval instead and settles Ω lazily:

1. **ΔR** (exact) by branch and bound over a quadtree of the gnomonic grid (node bounding balls), the
   near-maximal points by the reference kernel.
2. **η ∈ [η_lo, η_hi]** by one traversal of the quadtree. A node that lies entirely inside or outside the
   candidate annulus C = {D_lo ≤ d ≤ D_hi}, and is far enough from â, contributes its count exactly and its
   distance sum by a second-order Taylor expansion of d(â, ·) = 2R·asin(|· − â|/2) about its centroid
   (count, centroid, second-moment matrix), with the rigorous remainder (T/6)·Σ|p − c|³ where T bounds the
   third derivative on the node's ball. Every other node is opened; at the leaves (grid cells) the
   distances are evaluated point by point, and the membership of C of every point closer to a threshold
   than the error bound is decided by the reference kernel. So |C| is exact and Σ_C d, Σ_P d are certified
   intervals, hence so is η (η increases in both sums). At |P| ≥ ``STRADDLE_MIN_POINTS``, a small node
   that straddles D_lo or D_hi is instead carried as a group of uncertain weights (q or 1) and bounded
   distances; η's extremes over those choices are exact weighted-mean bounds (:func:`eta_interval`).
3. **R̃ ∈ [R̃_lo, R̃_hi]**: ``calibrate`` is non-decreasing in η (tested), so the interval maps through.
4. **Lazy Ω.** A membership test of p settles "in" when d(â, p) < R̃_lo and "out" when d(â, p) > R̃_hi, with
   the dot-product margins of the fast path. Only a point inside [R̃_lo, R̃_hi] triggers the exact pass
   (:func:`resolve`), after which the region is the exact one. Supersets of Ω (grid runs) always use R̃_hi.
   Every decision therefore equals the decision with the exact R̃, so the sampled distribution is exactly
   the spec's; the output for a key is the same whether the region was resolved early or lazily (tested).

Everything here is a function of public values (P, â, the released r̂) only. Nothing outlives a call.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numba
import numpy as np

from geoldp._core.aot import Entry, array
from geoldp._core.kernels import EARTH_RADIUS_M, haversine_rad, jit_inline
from geoldp._core.kernels import jit as _jit  # the one kernel decorator
from geoldp.trajectory import calibration as _cal

if TYPE_CHECKING:
    from geoldp._core.kernels import KernelInt

__all__ = [
    "F_RES",
    "F_SUPER",
    "N_REGION",
    "REGION_INDEX_TYPE",
    "STACK",
    "CopyRegion",
    "RegionIndex",
    "Tree",
    "asin_dist",
    "build_tree",
    "eta_exact",
    "eta_interval",
    "eta_intervals",
    "ACC_WIDTH",
    "MAX_BANDS",
    "farthest",
    "farthest_scan",
    "region_exact",
    "region_from_eta",
    "region_header",
    "region_index",
    "region_setup",
    "region_setup_tol",
    "refine",
    "resolve",
    "straddle_limit",
]

# node record columns
_N, _CX, _CY, _CZ, _RHO, _Q00, _Q01, _Q02, _Q11, _Q12, _Q22, _M3 = range(12)
_NF = 12
_TOP = 8  # the traversal starts at the first level with at most _TOP × _TOP nodes
#: the most bands one η traversal carries (a bit mask per stack entry); more take several passes
MAX_BANDS = 62
# acc columns of eta_intervals: a band's sums (Σ_P d, its error, Σ_C d, its error, |C|, carried points, their
# Σ n·l and Σ n·u), then its point tolerance and chord thresholds
_A_S, _A_SE, _A_A, _A_AE, _A_NC, _A_NU, _A_ULO, _A_UHI, _A_TOL, _A_HLO, _A_HHI = range(11)
ACC_WIDTH = 11
STACK = 4096  # length of the traversal stack (int64 scratch): the stack, then the carried groups
_GROUPS = 1024  # stack[_GROUPS:] holds the carried straddling groups, 3 int64 each (count, l mm, u mm)
# eta_interval's one band in its stack: [0] the number of groups, [1] has_k, [2:_HEAD] (as float64) d_lo,
# d_hi and the band's acc row; then the traversal, up to _GROUPS
_HEAD = 4 + ACC_WIDTH
# A node whose distance range crosses D_lo or D_hi ("straddling") is carried as an uncertain group by the
# η traversal instead of being opened when its weights alone could move η by at most about STRADDLE metres
# (n·(1 − q)·u/(q·|P|), see eta_interval; 0: open every one). A cost knob only: every decision stays exact.
# Public configuration, chosen by benchmarks/profile_atp.py; tests pass other values to region_setup_tol.
STRADDLE = 2.0
# ... only for |P| ≥ STRADDLE_MIN_POINTS: below, the exact pass is cheap and carrying lost in the benchmark
# (|P| = 1e4: 37k → 28k points/s, the exact passes rising from 0.1 % to 4 % of copies).
STRADDLE_MIN_POINTS = 50_000
# refine's coarse level: a traversal with groups up to REFINE_COARSE_M metres at 10⁶ points, a limit that
# scales like 1/|P| as a node's sway does, so it runs only where it is below STRADDLE (above 150,000
# points); below, refine goes straight to the traversal without groups. At 10⁶ points the coarse traversal
# costs about a seventh of the one without groups and leaves about 10 m instead of 30: about 11 % of an ATP
# copy saved there (benchmarks/profile_atp.py --m 1000000).
REFINE_COARSE_M = 0.3

# region record (float64[N_REGION]) shared with the samplers:
#   [R̃_lo, cos(R̃_lo/R), R̃_hi, cos(R̃_hi/R), resolved, superset radius, r̂, b, ε_R, ε_decay, R̂, ΔR,
#    input mapping, η_lo, η_hi, group limit of the last traversal]
F_LO, F_COS_LO, F_HI, F_COS_HI, F_RES, F_SUPER = 0, 1, 2, 3, 4, 5
_F_RHAT, _F_B, _F_EPSR, _F_EPSD, _F_REST, _F_DR, _F_INP, _F_ETA_LO, _F_ETA_HI = 6, 7, 8, 9, 10, 11, 12, 13, 14
_F_REFINED = 15  # the group limit of the copy's last η traversal (0: refine has nothing more to do)
N_REGION = 16


class Tree:
    """Quadtree over the gnomonic grid of a FastIndex (public: depends on P only).

    ``nodes`` float64[n_nodes, 12] (count, centroid, bounding radius, second-moment matrix, Σ|p − c|³);
    ``levels`` int64[n_levels, 3] (offset, n_cols, n_rows); level 0 is the grid's cells.
    """

    def __init__(self, nodes: np.ndarray, levels: np.ndarray) -> None:
        self.nodes = nodes
        self.levels = levels


class RegionIndex(NamedTuple):
    """What the region kernels read of P: the arrays of its FastIndex and of its quadtree.

    Numba types it as a named tuple (read-only in the kernels); ``has_tree`` False: a placeholder quadtree.
    """

    lam: np.ndarray
    phi: np.ndarray
    xyz: np.ndarray
    sxyz: np.ndarray
    order: np.ndarray
    cell_start: np.ndarray
    nodes: np.ndarray
    levels: np.ndarray
    has_tree: bool


#: the numba type of the :class:`RegionIndex` the kernels are called with (for the compiled exports)
REGION_INDEX_TYPE = numba.types.NamedTuple(
    [
        array(numba.float64, 1, readonly=True), array(numba.float64, 1, readonly=True),
        array(numba.float64, 2, readonly=True), array(numba.float64, 2), array(numba.int64, 1),
        array(numba.int64, 1), array(numba.float64, 2), array(numba.int64, 2), numba.boolean,
    ],
    RegionIndex,
)  # fmt: skip


class CopyRegion(NamedTuple):
    """A copy's region parameters: r̂, SW half-width, radius and decay budgets, ΔR, input mapping."""

    r_hat: float
    b: float
    eps_r: float
    eps_dec: float
    dr: float
    inp: bool


@numba.njit(cache=True)
def _node_moments(
    sxyz: np.ndarray,
    cell_start: np.ndarray,
    nu: KernelInt,
    r0: KernelInt,
    r1: KernelInt,
    c0: KernelInt,
    c1: KernelInt,
    out: np.ndarray,
) -> None:
    n = 0
    sx = 0.0
    sy = 0.0
    sz = 0.0
    for r in range(r0, r1):
        a = cell_start[r * nu + c0]
        b = cell_start[r * nu + c1]
        for pos in range(a, b):
            sx += sxyz[pos, 0]
            sy += sxyz[pos, 1]
            sz += sxyz[pos, 2]
            n += 1
    out[_N] = n
    if n == 0:
        return
    cx = sx / n
    cy = sy / n
    cz = sz / n
    out[_CX] = cx
    out[_CY] = cy
    out[_CZ] = cz
    rho = 0.0
    q00 = q01 = q02 = q11 = q12 = q22 = m3 = 0.0
    for r in range(r0, r1):
        a = cell_start[r * nu + c0]
        b = cell_start[r * nu + c1]
        for pos in range(a, b):
            dx = sxyz[pos, 0] - cx
            dy = sxyz[pos, 1] - cy
            dz = sxyz[pos, 2] - cz
            q00 += dx * dx
            q01 += dx * dy
            q02 += dx * dz
            q11 += dy * dy
            q12 += dy * dz
            q22 += dz * dz
            d = math.sqrt(dx * dx + dy * dy + dz * dz)
            m3 += d * d * d
            if d > rho:
                rho = d
    out[_RHO] = rho * (1.0 + 1e-12) + 1e-15
    out[_Q00] = q00
    out[_Q01] = q01
    out[_Q02] = q02
    out[_Q11] = q11
    out[_Q12] = q12
    out[_Q22] = q22
    out[_M3] = m3 * (1.0 + 1e-9)


@numba.njit(cache=True)
def _build(
    sxyz: np.ndarray,
    cell_start: np.ndarray,
    nu: KernelInt,
    nv: KernelInt,
    levels: np.ndarray,
    nodes: np.ndarray,
) -> None:
    for lv in range(levels.shape[0]):
        off = levels[lv, 0]
        cols = levels[lv, 1]
        rows = levels[lv, 2]
        span = 1 << lv
        for r in range(rows):
            for c in range(cols):
                r0 = r * span
                c0 = c * span
                r1 = min(nv, r0 + span)
                c1 = min(nu, c0 + span)
                _node_moments(sxyz, cell_start, nu, r0, r1, c0, c1, nodes[off + r * cols + c])


# called from Python: its compiled export when installed
_BUILD = Entry(
    _build,
    {
        "region_tree": numba.void(
            array(numba.float64, 2), array(numba.int64, 1), numba.int64, numba.int64,
            array(numba.int64, 2), array(numba.float64, 2),
        )
    },
)  # fmt: skip


def build_tree(index: Any) -> Tree:
    """The quadtree of ``index`` (a FastIndex with a grid): O(|P| log |P|) time, O(|P|) memory."""
    nu, nv = int(index.gi[0]), int(index.gi[1])
    levels = []
    off = 0
    lv = 0
    while True:
        span = 1 << lv
        cols = (nu + span - 1) // span
        rows = (nv + span - 1) // span
        levels.append((off, cols, rows))
        off += cols * rows
        if cols <= _TOP and rows <= _TOP:
            break
        lv += 1
    lev = np.array(levels, dtype=np.int64)
    nodes = np.zeros((off, _NF))
    _BUILD(index.sxyz, index.cell_start, nu, nv, lev, nodes)
    return Tree(nodes, lev)


def region_index(index: Any) -> RegionIndex:
    """The :class:`RegionIndex` of ``index`` (a FastIndex): its arrays and quadtree, or a placeholder tree."""
    tree = index.tree()
    if tree is None:
        nodes = np.zeros((1, _NF))
        levels = np.zeros((1, 3), dtype=np.int64)
    else:
        nodes, levels = tree.nodes, tree.levels
    return RegionIndex(
        index.lam, index.phi, index.xyz, index.sxyz, index.order, index.cell_start, nodes, levels,
        tree is not None,
    )  # fmt: skip


@jit_inline  # inlined, as _classify: the η traversal's cost per point
def asin_dist(h: float) -> float:
    """2R·asin(h) for a half-chord h ∈ [0, 1] (the fast path's chord distance)."""
    if h < 0.01:
        h2 = h * h
        s = h * (1.0 + h2 * (1.0 / 6.0 + h2 * (3.0 / 40.0 + h2 * (5.0 / 112.0 + h2 * (35.0 / 1152.0)))))
    else:
        if h > 1.0:
            h = 1.0
        s = math.asin(h)
    return 2.0 * EARTH_RADIUS_M * s


@jit_inline
def _chord(pts: np.ndarray, p: KernelInt, ax: float, ay: float, az: float) -> float:
    # the chord from (ax, ay, az) to row p of pts (unit sphere)
    ex = pts[p, 0] - ax
    ey = pts[p, 1] - ay
    ez = pts[p, 2] - az
    return math.sqrt(ex * ex + ey * ey + ez * ez)


@jit_inline
def _push_roots(levels: np.ndarray, stack: np.ndarray, width: int, mask: KernelInt) -> KernelInt:
    # a traversal starts from the top level's nodes; an entry is (node, level) or (node, level, band mask)
    top = levels.shape[0] - 1
    sp = 0
    for k in range(levels[top, 1] * levels[top, 2]):
        stack[sp] = levels[top, 0] + k
        stack[sp + 1] = top
        if width == 3:
            stack[sp + 2] = mask
        sp += width
    return sp


@jit_inline
def _push_children(
    levels: np.ndarray,
    lv: KernelInt,
    k: KernelInt,
    stack: np.ndarray,
    sp: KernelInt,
    width: int,
    mask: KernelInt,
) -> KernelInt:
    # push the (up to four) children of node k of level lv > 0, as _push_roots
    r = k // levels[lv, 1]
    c = k - r * levels[lv, 1]
    ccols = levels[lv - 1, 1]
    for rr in range(2 * r, min(2 * r + 2, levels[lv - 1, 2])):
        for cc in range(2 * c, min(2 * c + 2, ccols)):
            stack[sp] = levels[lv - 1, 0] + rr * ccols + cc
            stack[sp + 1] = lv - 1
            if width == 3:
                stack[sp + 2] = mask
            sp += width
    return sp


@_jit
def farthest(a: KernelInt, ri: RegionIndex, stack: np.ndarray) -> float:
    """ΔR = max_p haversine(P_a, P_p) of anchor ``a``, exactly.

    Branch and bound on the node balls (chord), then the reference kernel on every point whose chord is
    within the rounding bound of the maximum; without a tree, :func:`farthest_scan` (the same value).
    """
    if not ri.has_tree:
        return farthest_scan(a, ri.lam, ri.phi, ri.xyz)
    levels = ri.levels
    ax = ri.xyz[a, 0]
    ay = ri.xyz[a, 1]
    az = ri.xyz[a, 2]
    best = 0.0
    for sweep in range(2):
        thr = best * (1.0 - 1e-9) - 1e-15
        dr = 0.0
        sp = _push_roots(levels, stack, 2, 0)
        while sp > 0:
            sp -= 2
            node = stack[sp]
            lv = stack[sp + 1]
            rec = ri.nodes[node]
            if rec[_N] == 0.0:
                continue
            dx = rec[_CX] - ax
            dy = rec[_CY] - ay
            dz = rec[_CZ] - az
            ub = math.sqrt(dx * dx + dy * dy + dz * dz) + rec[_RHO]
            if ub < (best if sweep == 0 else thr):
                continue
            k = node - levels[lv, 0]
            if lv == 0:
                for pos in range(ri.cell_start[k], ri.cell_start[k + 1]):
                    h = _chord(ri.sxyz, pos, ax, ay, az)
                    if sweep == 0:
                        if h > best:
                            best = h
                    elif h >= thr:
                        q = ri.order[pos]
                        d = haversine_rad(ri.lam[a], ri.phi[a], ri.lam[q], ri.phi[q])
                        if d > dr:
                            dr = d
                continue
            sp = _push_children(levels, lv, k, stack, sp, 2, 0)
        if sweep == 1:
            return dr
    return 0.0


@_jit
def farthest_scan(a: KernelInt, lam: np.ndarray, phi: np.ndarray, xyz: np.ndarray) -> float:
    """ΔR by a full scan (no grid): chord maximum, then the kernel on the near-maximal points."""
    m = lam.shape[0]
    best = 0.0
    for p in range(m):
        h = _chord(xyz, p, xyz[a, 0], xyz[a, 1], xyz[a, 2])
        if h > best:
            best = h
    thr = best * (1.0 - 1e-9) - 1e-15
    dr = 0.0
    for p in range(m):
        if _chord(xyz, p, xyz[a, 0], xyz[a, 1], xyz[a, 2]) >= thr:
            d = haversine_rad(lam[a], phi[a], lam[p], phi[p])
            if d > dr:
                dr = d
    return dr


@_jit
def _third_bound(s: float) -> float:
    """Bound of |d³/dt³ 2R·asin(|x + t·u|/2)| for |x| ≥ s, |x| ≤ 1 (unit sphere chord units)."""
    return EARTH_RADIUS_M * (1.25 + 1.34 / (s * s))


@jit_inline
def _band_sides(has_k: bool, lo: float, hi: float, h_lo: float, h_hi: float, mg: float) -> tuple[Any, ...]:
    # whether a node with chords in [lo, hi] is wholly inside the candidate band (chords h_lo..h_hi,
    # margin mg), and whether it is wholly outside (always, without a band)
    if not has_k:
        return False, True
    return lo > h_lo + mg and hi < h_hi - mg, hi < h_lo - mg or lo > h_hi + mg


@jit_inline
def _node_sum(rec: np.ndarray, cnt: float, dx: float, dy: float, dz: float, r: float) -> tuple[Any, ...]:
    # a node's distance sum to the anchor by its second-order Taylor expansion (cnt points, centroid
    # offset (dx, dy, dz), chord r), and the allowance for its own rounding
    # n·ψ(r) + ½ tr(H Q), H = ψ''·ûûᵀ + (ψ'/r)(I − ûûᵀ), ψ(r) = 2R·asin(r/2)
    ux = dx / r
    uy = dy / r
    uz = dz / r
    quu = (
        rec[_Q00] * ux * ux
        + rec[_Q11] * uy * uy
        + rec[_Q22] * uz * uz
        + 2.0 * (rec[_Q01] * ux * uy + rec[_Q02] * ux * uz + rec[_Q12] * uy * uz)
    )
    trq = rec[_Q00] + rec[_Q11] + rec[_Q22]
    w = 1.0 - 0.25 * r * r
    d1 = EARTH_RADIUS_M / math.sqrt(w)
    d2 = EARTH_RADIUS_M * 0.25 * r / (w * math.sqrt(w))
    val = cnt * asin_dist(0.5 * r) + 0.5 * (d2 * quu + d1 / r * (trq - quu))
    return val, 1e-12 * abs(val)


@jit_inline
def _group_bounds_mm(lo: float, hi: float) -> tuple[Any, ...]:
    # whole-millimetre bounds [l, u] of the distances of a node with chords in [lo, hi], rounded
    # outwards (the margins cover the chord formula's and the kernel's rounding)
    dl = asin_dist(0.5 * max(lo, 0.0)) * (1.0 - 1e-12) - 1e-6
    du = asin_dist(0.5 * min(hi, 2.0)) * (1.0 + 1e-12) + 1e-6
    return int(math.floor(dl * 1e3)) - 1, int(math.ceil(du * 1e3)) + 1


@jit_inline
def _classify(
    d: float,
    d_lo: float,
    d_hi: float,
    tol: float,
    a: KernelInt,
    q: KernelInt,
    lam: np.ndarray,
    phi: np.ndarray,
) -> tuple[Any, ...]:
    """Membership of C for a point at chord-formula distance d; kernel near a threshold."""
    if abs(d - d_lo) <= tol or abs(d - d_hi) <= tol:
        de = haversine_rad(lam[a], phi[a], lam[q], phi[q])
        return d_lo <= de and de <= d_hi, de
    return d_lo <= d and d <= d_hi, d


@_jit
def _dinkelbach(
    n0: float, w0: float, stack: np.ndarray, n_groups: KernelInt, q: float, upper: bool, free: bool
) -> float:
    """Extreme of η = (n0 + Σ_j w_j n_j d_j)/(w0 + Σ_j w_j n_j) over w_j ∈ {q, 1} (see :func:`eta_interval`).

    ``upper``: the maximum with d_j = u_j (group column 2), else the minimum with d_j = l_j (column 1).
    ``free=False`` fixes every w_j = q (a deliberately wrong bound: the tests' power check).
    Returns −1.0 if the iteration did not settle (the caller then uses a trivial bound: 0 or ΔR).
    """
    col = 2 if upper else 1
    num = n0
    den = w0
    for j in range(n_groups):
        base = _GROUPS + 3 * j
        num += q * stack[base] * (stack[base + col] * 1e-3)
        den += q * stack[base]
    eta = num / den  # all uncertain weights q: a feasible choice, the iteration's start
    if not free:
        return eta
    for _ in range(64):
        num = n0
        den = w0
        for j in range(n_groups):
            base = _GROUPS + 3 * j
            cnt = float(stack[base])
            d = stack[base + col] * 1e-3
            # the choice maximising (minimising) Σ w (d − η) at the current η
            w = 1.0 if ((d > eta) if upper else (d < eta)) else q
            num += w * cnt * d
            den += w * cnt
        new = num / den
        if (new <= eta) if upper else (new >= eta):
            return eta
        eta = new
    return -1.0


@_jit
def eta_interval(
    a: KernelInt,
    ri: RegionIndex,
    has_k: bool,
    d_lo: float,
    d_hi: float,
    tol_pt: float,
    straddle: float,
    eps_r: float,
    stack: np.ndarray,
    out: np.ndarray,
    free: bool = True,
) -> None:
    """Certified η interval for anchor ``a`` over ``ri`` (with a tree), before :func:`region_setup`'s pad.

    :func:`eta_intervals` with this one band, its scratch in ``stack`` (see ``_HEAD``). ``out`` = [η_lo,
    η_hi, Σ_P d lower, Σ_P d upper, |C| of the settled points, nodes visited, points evaluated, straddling
    nodes carried]; the last three are per-call counters. ``tol_pt`` is the accepted Taylor remainder per
    point (metres); a node whose distance range crosses D_lo or D_hi ("straddling") is carried as an
    uncertain group instead of being opened when n·(1 − q)·u/(q·|P|) ≤ ``straddle`` (metres; n its points,
    u ≈ their largest distance): about the most its unknown weights can move η, since every weight is ≥ q.
    This only trades traversal nodes against a wider interval (more exact passes).

    **The bound with uncertain groups.** Write η = Σ_p w_p d_p / Σ_p w_p with w_p = 1 for p ∈ C and
    w_p = q = e^{−ε_R} otherwise (ALGORITHM §8.4 step 4 when |C| > 0). The settled points give
    N₀ = Σ w_p d_p ∈ [N₀⁻, N₀⁺] and W₀ = Σ w_p exactly. A carried group j holds n_j points whose distances
    lie in [l_j, u_j] and whose weights are unknown. Relax: every point of group j may take any distance in
    [l_j, u_j] and any weight in {q, 1}, independently. The true configuration is one of these, so the
    extremes over the relaxation enclose η. η increases in every d_p (w_p > 0), so the maximum takes
    d_p = u_j and N₀⁺. For the weights, let η* be the maximum and N, W its numerator and denominator
    without point p; then (N + w u)/(W + w) increases in w iff u > N/W, and at the optimum N/W lies on
    the same side of u as η*, so the optimum gives weight 1 to every point with u_j > η* and q to every
    point with u_j < η* (ties do not matter). Dinkelbach's iteration finds it: from any choice c with
    value η_c, F(η) = N₀⁺ − W₀η + Σ_j n_j·max(u_j − η, q(u_j − η)) is decreasing with F(η*) = 0, and the
    choice maximising F at η_c has value η' with F(η_c) = W'(η' − η_c) ≥ 0; so η' ≥ η_c, and η' ≤ η_c
    means F(η_c) ≤ 0, i.e. η* ≤ η_c — the iteration stops there with η_c = η*. The minimum is symmetric
    (d_p = l_j, N₀⁻, weight 1 iff l_j < η). Rounding is covered by :func:`region_setup`'s pad.
    ``free=False`` (tests only) fixes the groups' weights at q instead: a wrong bound the tests must catch.

    If no settled point is in C but some groups are uncertain, |C| may be 0, where η = Σ_P d/(|P| − 1)
    instead; the interval is then the union with that case's interval. Distances of the groups are kept
    in whole millimetres rounded outwards (int64 in ``stack[_GROUPS:]``).
    """
    fl = stack.view(np.float64)
    stack[1] = has_k
    fl[2] = d_lo
    fl[3] = d_hi
    _eta_core(
        1, a, ri, stack[1:2], fl[2:3], fl[3:4], tol_pt, straddle, eps_r, stack[_HEAD:_GROUPS],
        stack.reshape((1, stack.shape[0])), fl[4:_HEAD].reshape((1, ACC_WIDTH)), out, out[:2].reshape((1, 2)),
        free,
    )  # fmt: skip


@_jit
def _eta_finish(
    s_val: float,
    s_err: float,
    a_val: float,
    a_err: float,
    n_c: KernelInt,
    n_unc: KernelInt,
    u_lo: float,
    u_hi: float,
    n_groups: KernelInt,
    has_k: bool,
    m: KernelInt,
    q: float,
    free: bool,
    stack: np.ndarray,
    out: np.ndarray,
) -> None:
    """The η interval of a band's finished traversal from its sums.

    ``out`` as :func:`eta_interval`'s; the carried groups in ``stack[_GROUPS:]``.
    """
    # the chord formula's own error (~1e−9 m per point) and the summation's rounding
    s_err += 1e-8 * m + 1e-12 * abs(s_val)
    a_err += 1e-8 * m + 1e-12 * abs(a_val)
    s_lo = s_val - s_err
    s_hi = s_val + s_err
    a_lo = a_val - a_err
    a_hi = a_val + a_err
    out[2] = s_lo + u_lo
    out[3] = s_hi + u_hi
    out[4] = n_c
    out[7] = n_groups
    if has_k and (n_c > 0.0 or n_groups > 0):
        w0 = n_c + q * (m - n_unc - n_c)
        # η = ((1 − q)·A + q·S)/W₀ on the settled points increases in A and in S: bound each term
        if n_groups == 0:
            out[0] = ((1.0 - q) * a_lo + q * s_lo) / w0
            out[1] = ((1.0 - q) * a_hi + q * s_hi) / w0
            return
        e_lo = _dinkelbach((1.0 - q) * a_lo + q * s_lo, w0, stack, n_groups, q, False, free)
        e_hi = _dinkelbach((1.0 - q) * a_hi + q * s_hi, w0, stack, n_groups, q, True, free)
        if e_lo < 0.0:
            e_lo = 0.0
        if n_c == 0.0:
            # |C| may be 0: then η = Σ_P d/(|P| − 1)
            e_lo = min(e_lo, out[2] / (m - 1))
            if e_hi >= 0.0:
                e_hi = max(e_hi, out[3] / (m - 1))
        out[0] = e_lo
        out[1] = e_hi
        return
    out[0] = out[2] / (m - 1)
    out[1] = out[3] / (m - 1)


# A numba kernel: exempt from C901, as splitting it into calls changes what numba compiles.
@jit_inline
def _eta_core(  # noqa: C901
    nb: KernelInt,
    a: KernelInt,
    ri: RegionIndex,
    has_k: np.ndarray,
    d_lo: np.ndarray,
    d_hi: np.ndarray,
    tol_pt: float,
    straddle: float,
    eps_r: float,
    stack: np.ndarray,
    groups: np.ndarray,
    acc: np.ndarray,
    work: np.ndarray,
    out: np.ndarray,
    free: bool,
) -> None:
    # eta_intervals of nb bands, inlined in both callers: eta_interval's constant nb = 1 leaves a one-band
    # traversal (entries without a mask, the sums at fixed places), as fast as one written for one band
    levels = ri.levels
    ax = ri.xyz[a, 0]
    ay = ri.xyz[a, 1]
    az = ri.xyz[a, 2]
    mg = 1e-12
    g_max = (groups.shape[1] - _GROUPS) // 3
    m = ri.sxyz.shape[0]
    q = math.exp(-eps_r)
    sway = (1.0 - q) * EARTH_RADIUS_M / (q * m) if q > 0.0 else math.inf
    for j in range(nb):
        for c in range(ACC_WIDTH):
            acc[j, c] = 0.0
        acc[j, _A_TOL] = 1e-6 + 1e-10 * d_hi[j]
        acc[j, _A_HLO] = 2.0 * math.sin(0.5 * d_lo[j] / EARTH_RADIUS_M)
        acc[j, _A_HHI] = 2.0 * math.sin(0.5 * d_hi[j] / EARTH_RADIUS_M)
        groups[j, 0] = 0  # the band's number of carried groups
    n_nodes = 0.0
    n_pts = 0.0
    width = 2 if nb == 1 else 3  # a stack entry: (node, level), then the bands' mask if several
    sp = _push_roots(levels, stack, width, (np.int64(1) << nb) - 1)
    while sp > 0:
        sp -= width
        node = stack[sp]
        lv = stack[sp + 1]
        mask = stack[sp + 2] if width == 3 else np.int64(1)
        rec = ri.nodes[node]
        cnt = rec[_N]
        if cnt == 0.0:
            continue
        n_nodes += 1.0
        dx = rec[_CX] - ax
        dy = rec[_CY] - ay
        dz = rec[_CZ] - az
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        rho = rec[_RHO]
        lo = r - rho
        hi = r + rho
        geo = lo > 0.0 and hi < 1.0 and r > 0.0
        taylor = 0  # 0: not computed, 1: accepted (val, err), −1: remainder too large
        val = 0.0
        err = 0.0
        grouped = False
        gl = 0
        gu = 0
        opened = np.int64(0)
        for j in range(nb):
            bit = np.int64(1) << j
            if (mask & bit) == 0:
                continue
            inside, outside = _band_sides(has_k[j], lo, hi, acc[j, _A_HLO], acc[j, _A_HHI], mg)
            if (inside or outside) and geo:
                if taylor == 0:
                    err = _third_bound(lo) / 6.0 * rec[_M3]
                    taylor = -1
                    if err <= tol_pt * cnt:
                        taylor = 1
                        val, rounding = _node_sum(rec, cnt, dx, dy, dz, r)
                        err += rounding
                if taylor == 1:
                    acc[j, _A_S] += val
                    acc[j, _A_SE] += err
                    if inside:
                        acc[j, _A_A] += val
                        acc[j, _A_AE] += err
                        acc[j, _A_NC] += cnt
                    continue
            elif not (inside or outside) and cnt * hi * sway <= straddle and groups[j, 0] < g_max:
                if not grouped:
                    grouped = True
                    gl, gu = _group_bounds_mm(lo, hi)
                base = _GROUPS + 3 * groups[j, 0]
                groups[j, base] = int(cnt)
                groups[j, base + 1] = gl
                groups[j, base + 2] = gu
                acc[j, _A_ULO] += cnt * (gl * 1e-3)
                acc[j, _A_UHI] += cnt * (gu * 1e-3)
                acc[j, _A_NU] += cnt
                groups[j, 0] += 1
                continue
            opened |= bit
        if opened == 0:
            continue
        k = node - levels[lv, 0]
        if lv == 0:
            n_pts += cnt
            for pos in range(ri.cell_start[k], ri.cell_start[k + 1]):
                d0 = asin_dist(0.5 * _chord(ri.sxyz, pos, ax, ay, az))
                for j in range(nb):
                    if (opened & (np.int64(1) << j)) == 0:
                        continue
                    d = d0
                    if has_k[j]:
                        inc, d = _classify(
                            d0, d_lo[j], d_hi[j], acc[j, _A_TOL], a, ri.order[pos], ri.lam, ri.phi
                        )
                        if inc:
                            acc[j, _A_A] += d
                            acc[j, _A_NC] += 1.0
                    acc[j, _A_S] += d
            continue
        sp = _push_children(levels, lv, k, stack, sp, width, opened)
    for j in range(nb):
        _eta_finish(
            acc[j, _A_S], acc[j, _A_SE], acc[j, _A_A], acc[j, _A_AE], acc[j, _A_NC], acc[j, _A_NU],
            acc[j, _A_ULO], acc[j, _A_UHI], groups[j, 0], has_k[j], m, q, free, groups[j], work,
        )  # fmt: skip
        out[j, 0] = work[0]
        out[j, 1] = work[1]
    work[5] = n_nodes
    work[6] = n_pts


@_jit
def eta_intervals(
    a: KernelInt,
    ri: RegionIndex,
    has_k: np.ndarray,
    d_lo: np.ndarray,
    d_hi: np.ndarray,
    tol_pt: float,
    straddle: float,
    eps_r: float,
    stack: np.ndarray,
    groups: np.ndarray,
    acc: np.ndarray,
    work: np.ndarray,
    out: np.ndarray,
    free: bool = True,
) -> None:
    """Certified η intervals of anchor ``a`` for every band, in one traversal.

    :func:`eta_interval` of anchor ``a`` for every band ``j`` (``has_k[j]``, ``d_lo[j]``, ``d_hi[j]``;
    at most ``MAX_BANDS``) in one traversal: ``out[j] = (η_lo, η_hi)``, bit for bit :func:`eta_interval`'s
    of band ``j`` alone, which is this traversal with one band.

    A node is opened when some band would open it, and a stack entry carries the bands still descending
    (a bit mask). Each band's sums see exactly the nodes and points of its own traversal, in the same
    (depth-first, same child order) sequence and by the same expressions, so they round alike; the node's
    Taylor value and the point distances are computed once for all bands. Scratch: ``stack`` int64 (3 per
    entry; 2 for one band), ``groups`` int64[bands, STACK] (each band's carried groups, at ``_GROUPS`` as
    in ``stack`` of :func:`eta_interval`; their number at 0), ``acc`` float64[bands, ACC_WIDTH], ``work``
    float64[8]. ``free``: as :func:`eta_interval`'s.
    """
    nb = has_k.shape[0]
    _eta_core(nb, a, ri, has_k, d_lo, d_hi, tol_pt, straddle, eps_r, stack, groups, acc, work, out, free)


@_jit
def eta_exact(
    a: KernelInt,
    lam: np.ndarray,
    phi: np.ndarray,
    xyz: np.ndarray,
    has_k: bool,
    d_lo: float,
    d_hi: float,
    eps_r: float,
) -> float:
    """η of ALGORITHM §8.4 by one O(|P|) pass (chord distances, kernel near a threshold)."""
    m = lam.shape[0]
    ax = xyz[a, 0]
    ay = xyz[a, 1]
    az = xyz[a, 2]
    tol = 1e-6 + 1e-10 * d_hi
    total = 0.0
    s_c = 0.0
    n_c = 0.0
    for p in range(m):
        d = asin_dist(0.5 * _chord(xyz, p, ax, ay, az))
        if has_k:
            inc, d = _classify(d, d_lo, d_hi, tol, a, p, lam, phi)
            if inc:
                s_c += d
                n_c += 1.0
        total += d
    if has_k and n_c > 0.0:
        low = math.exp(-eps_r)
        return (s_c + low * (total - s_c)) / (n_c + low * (m - n_c))
    return total / (m - 1)


@_jit
def _set_radius(reg: np.ndarray, lo: float, hi: float) -> None:
    reg[F_LO] = lo
    reg[F_COS_LO] = math.cos(lo / EARTH_RADIUS_M)
    reg[F_HI] = hi
    reg[F_COS_HI] = math.cos(hi / EARTH_RADIUS_M)


@_jit
def region_setup(
    a: KernelInt,
    ri: RegionIndex,
    cr: CopyRegion,
    tol_pt: float,
    eager: bool,
    stack: np.ndarray,
    work: np.ndarray,
    reg: np.ndarray,
) -> None:
    """Fill the region record ``reg`` for anchor ``a`` of ``ri`` and the copy's :class:`CopyRegion` ``cr``.

    The certified R̃ interval, or the exact R̃ when ``eager`` or without a tree (groups: ``STRADDLE``).
    """
    region_setup_tol(a, ri, cr, tol_pt, straddle_limit(ri.lam.shape[0]), eager, stack, work, reg)


@_jit
def straddle_limit(m: KernelInt) -> float:
    """The straddling-group limit (metres) of the η traversal over ``m`` points (0: open every node)."""
    return STRADDLE if m >= STRADDLE_MIN_POINTS else 0.0


@_jit
def region_setup_tol(
    a: KernelInt,
    ri: RegionIndex,
    cr: CopyRegion,
    tol_pt: float,
    straddle: float,
    eager: bool,
    stack: np.ndarray,
    work: np.ndarray,
    reg: np.ndarray,
) -> None:
    """:func:`region_setup` with the straddling-group limit ``straddle`` (metres) given (tests, benches)."""
    r_est = region_header(cr, reg, straddle)
    has_k, d_lo, d_hi = _cal.candidate_band(cr.r_hat, cr.b, cr.dr, cr.inp)
    if ri.has_tree:
        eta_interval(a, ri, has_k, d_lo, d_hi, tol_pt, straddle, cr.eps_r, stack, work)
        e_lo = work[0]
        e_hi = work[1]
        if e_hi < 0.0:
            # the iteration did not settle (never seen): η ≤ max d = ΔR (forces the exact pass)
            e_hi = cr.dr * (1.0 + 1e-9) + 1e-6
        region_from_eta(a, ri, e_lo, e_hi, eager, reg)
        return
    eta = eta_exact(a, ri.lam, ri.phi, ri.xyz, has_k, d_lo, d_hi, cr.eps_r)
    region_exact(reg, _cal.calibrate(r_est, eta, cr.dr, cr.eps_dec))


@_jit
def region_exact(reg: np.ndarray, rt: float) -> None:
    """Set the region record ``reg`` (filled by :func:`region_header`) to the exact R̃ = ``rt``."""
    _set_radius(reg, rt, rt)
    reg[F_RES] = 1.0
    reg[F_SUPER] = rt


@_jit
def region_header(cr: CopyRegion, reg: np.ndarray, straddle: float) -> float:
    """Fill the parameter fields of the region record ``reg`` from ``cr`` (not yet resolved); return R̂.

    ``straddle``: the group limit of the traversal its η interval will come from (:func:`refine` may
    narrow it when positive).
    """
    r_est = _cal.sw_estimate(cr.r_hat, cr.b, cr.dr)
    reg[_F_RHAT] = cr.r_hat
    reg[_F_B] = cr.b
    reg[_F_EPSR] = cr.eps_r
    reg[_F_EPSD] = cr.eps_dec
    reg[_F_REST] = r_est
    reg[_F_DR] = cr.dr
    reg[_F_INP] = 1.0 if cr.inp else 0.0
    reg[F_RES] = 0.0
    reg[_F_REFINED] = straddle
    return r_est


@_jit
def region_from_eta(
    a: KernelInt, ri: RegionIndex, e_lo: float, e_hi: float, eager: bool, reg: np.ndarray
) -> None:
    """The R̃ interval of ``reg`` (filled by :func:`region_header`) from a certified η interval.

    [``e_lo``, ``e_hi``] before the pad for the exact pass's own rounding; resolved at once if ``eager``.
    """
    lo, hi = _radius_interval(e_lo, e_hi, reg)
    _set_radius(reg, lo, hi)
    reg[F_SUPER] = hi
    if eager:
        resolve(a, ri.lam, ri.phi, ri.xyz, reg)


@_jit
def _radius_interval(e_lo: float, e_hi: float, reg: np.ndarray) -> tuple[Any, ...]:
    # the certified R̃ interval of a certified η interval [e_lo, e_hi], padded for the exact pass's own
    # rounding (the padded η interval is noted in reg)
    pad = 1e-9 * abs(e_hi) + 1e-6
    e_lo -= pad
    e_hi += pad
    if e_lo < 0.0:
        e_lo = 0.0
    reg[_F_ETA_LO] = e_lo
    reg[_F_ETA_HI] = e_hi
    r_est = reg[_F_REST]
    dr = reg[_F_DR]
    eps_dec = reg[_F_EPSD]
    lo = _cal.calibrate(r_est, e_lo, dr, eps_dec)
    hi = _cal.calibrate(r_est, e_hi, dr, eps_dec)
    lo = lo * (1.0 - 1e-12) - 1e-9
    hi = hi * (1.0 + 1e-12) + 1e-9
    if lo < 0.0:
        lo = 0.0
    return lo, hi


@_jit
def refine(
    a: KernelInt, ri: RegionIndex, tol_pt: float, stack: np.ndarray, work: np.ndarray, reg: np.ndarray
) -> KernelInt:
    """Narrow the R̃ interval of the unresolved region record ``reg`` (anchor ``a``) by one more traversal.

    With a finer group limit: the coarse level (``REFINE_COARSE_M``, scaled to |P|) if it is below the
    copy's last limit, else none; a no-op once a traversal carried no straddling group (see
    :func:`region_header`). Returns the level it ran (0 coarse, 1 without groups) or −1.

    At 10⁵ points the grouped traversal of :func:`region_setup` leaves an interval of about 30 m, so about
    one copy in fifteen meets a point inside it, which would cost the exact O(|P|) pass. The traversal
    without groups costs about a quarter of that pass and leaves about half a metre, so the pass is rarely
    needed; at 10⁶ points the coarse one first settles most such copies at a seventh of that cost. Each
    interval is certified like the first and all contain the exact R̃, so their intersection does. The
    superset radius stays the first interval's: the samplers draw from the same candidates and every
    decision is the exact one, so the output for a key is unchanged.
    """
    last = reg[_F_REFINED]
    if last <= 0.0 or reg[F_RES] == 1.0 or not ri.has_tree:
        return -1
    coarse = REFINE_COARSE_M * 1e6 / ri.lam.shape[0]
    level = 0 if coarse < last else 1
    limit = coarse if level == 0 else 0.0
    reg[_F_REFINED] = limit
    has_k, d_lo, d_hi = _cal.candidate_band(reg[_F_RHAT], reg[_F_B], reg[_F_DR], reg[_F_INP] == 1.0)
    eta_interval(a, ri, has_k, d_lo, d_hi, tol_pt, limit, reg[_F_EPSR], stack, work)
    if work[1] >= 0.0:  # else it did not settle: a finer traversal or the exact pass decides
        lo, hi = _radius_interval(work[0], work[1], reg)
        _set_radius(reg, max(lo, reg[F_LO]), min(hi, reg[F_HI]))
    return level


@_jit
def resolve(a: KernelInt, lam: np.ndarray, phi: np.ndarray, xyz: np.ndarray, reg: np.ndarray) -> None:
    """Replace the R̃ interval of ``reg`` by the exact R̃ (one O(|P|) pass)."""
    has_k, d_lo, d_hi = _cal.candidate_band(reg[_F_RHAT], reg[_F_B], reg[_F_DR], reg[_F_INP] == 1.0)
    eta = eta_exact(a, lam, phi, xyz, has_k, d_lo, d_hi, reg[_F_EPSR])
    rt = _cal.calibrate(reg[_F_REST], eta, reg[_F_DR], reg[_F_EPSD])
    _set_radius(reg, rt, rt)
    reg[F_RES] = 1.0
