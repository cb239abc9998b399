"""The numba fast path of TP, ATP and PointEM: exact sampling, no |P|×|P| memory.

:func:`perturb_fast` runs whole trajectories inside one ``numba.njit`` loop. It releases the same
distribution as the reference path (:mod:`geoldp.trajectory._reference`) — every stage output, hence the
final output — and uses the same deterministic helpers (kernels, calibration, granularity, budgets), but it
never builds a length-|P| probability vector when it can avoid it.

Randomness
----------
Trajectory ``i`` (0-based within the call) draws from the ChaCha20 stream ``first_stream + i`` under
``key`` (:mod:`geoldp._random`). The output of a trajectory therefore depends only on the key, its global
index and its data: chunking the input differently gives identical output. Within a trajectory the draws
are consumed in transcript order (ALGORITHM §5.9): copy A then copy B; per copy the anchor EM and radius SW
(ATP), the pivot EMs in ascending position, then per non-pivot its k-RR(s), left first, and its EM. Each
primitive consumes a *variable* number of draws (rejection sampling); this order is stable within a minor
version.

Exact samplers
--------------
* **EM over a domain D ⊆ P** (ALGORITHM §3.2). Weights w_p = exp(−ε′·d(x, P_p)/(2Δ)) ≤ 1 (the reference's
  log-weight expression and kernel). Phase 1: proposals uniform over a public superset U ⊇ D, accepted iff
  p ∈ D and u < w_p. After ``_MAX_PROPOSALS`` failures (or when |U| ≤ ``_SMALL_DOMAIN``), phase 2 enumerates
  D exactly — which also decides emptiness, driving the fallback chain of §5.5 — then phase 3 proposes
  uniformly over the enumerated D with the same acceptance, and phase 4 (after ``_MAX_PROPOSALS_D``
  failures) draws by inverse CDF over the max-subtracted weights. Every phase draws from w restricted to D
  and the switch between phases does not depend on the would-be output, so the mixture is exact. The tests
  force each phase.
* **Membership** p ∈ Ω ∩ ⋂_k GetPointSet(o_k, δ̂_k): the bearing of p from o equals atan2(p·e_o, p·n_o) (e, n
  = east/north unit vectors at o), so a sector [θ₁, θ₂) (width ≤ π) is {p·c_θ₁ ≥ 0} ∩ {p·c_θ₂ < 0} with
  c_θ = cos θ·e − sin θ·n, and Ω is {p·P_â ≥ cos(R̃/R)}. Dot products decide every point farther than a
  margin (1e−11, resp. 1e−12) from a boundary — ~10⁴ times the rounding of the kernels — and the reference
  kernels (``haversine_rad``, ``bearing_rad``, ``sector``, same argument order) decide the rest. Membership
  is therefore exactly the reference's.
* **Supersets U** come from a uniform grid over the gnomonic projection of P (centred on P's mean direction,
  used when P fits in a 60° cap). Gnomonic maps great circles to straight lines, so the sector half-spaces
  are half-planes and Ω lies in a disc of radius sec²ψ·ρ. The grid box is clipped by the half-planes
  (an empty polygon proves D empty); per grid row the constraints give one interval of columns, i.e. one
  contiguous run of cell-sorted points. All bounds carry margins, so U ⊇ D. Without a grid, U = P.
* **k-RR** and **SW**: the samplers of ALGORITHM §3.1 / §3.3 with the reference's lie probability and b.
  Bucketed SW inverts the closed-form CDF of the exact bucket masses by bisection (same distribution as the
  categorical over the masses).
* **Merge** (§5.6): every tied minimiser of s(p) = d(p, y_A) + d(p, y_B) lies within (s* + τ)/2 of the arc
  midpoint and within angular distance h of the great circle through y_A, y_B with 2 sin²(h/2) ≤ (τ+err)/R
  (for s* ≤ πR/2). Only grid runs meeting that strip are scanned; points passing the dot-product slab test
  and a chord-distance test are evaluated with the kernel; y_A, y_B enter with s = d(y_A, y_B) (d(y, y) = 0
  and d is symmetric bitwise). The tie-break is the reference's. Longer arcs or no grid: full scan.
* **ATP region** (§8.4–8.6): :mod:`geoldp.trajectory._atp_region`. ΔR is exact (branch and bound on a
  quadtree of the grid, kernel on the near-maximal points); η is certified in an interval by one traversal
  of the quadtree (exact |C|, Taylor sums with a rigorous remainder), mapped to an interval of R̃ (calibrate
  is monotone in η), and Ω is settled lazily: a membership test inside the R̃ interval triggers the exact
  O(|P|) pass. Every decision equals the one with the exact R̃, so Ω is the reference's (up to the ~1e−8 m
  rounding of η's chord sums, as before); supersets of Ω use the upper end of the interval. Nothing about
  the anchors drawn outlives the call.

Implementation notes: the numba functions that do not allocate are compiled with ``_nrt=False`` (reference
counting of array arguments made every call pay atomic operations: ~4× slower), and the ChaCha20 block is
computed in registers (same words as :mod:`geoldp._random`, tested).

Memory is O(|P| + total points): the grid (CSR, a few length-|P| arrays), the ATP quadtree (12 float64 per
node, ~0.45 nodes per point) and six length-|P| work arrays per thread (allocated lazily by the OS: only
the part an enumeration touches is committed).
"""

from __future__ import annotations

import math
import weakref

import numba
import numpy as np

from geoldp._kernels import EARTH_RADIUS_M, bearing_rad, em_log_weight, haversine_rad, sector
from geoldp._random import stream_categorical_cdf, stream_integers, stream_reset, stream_uniform
from geoldp.trajectory import _atp_region as _reg
from geoldp.trajectory import calibration as _cal
from geoldp.trajectory.merge import TAU_FACTOR

__all__ = ["FastIndex", "last_stats", "perturb_fast"]

# margins (see the module docstring)
_MG = 1e-11  # half-plane forms (dimensionless, ~ unit-vector components)
_MG_DOT = 1e-12  # region test p·a against cos(R̃/R)
_U_PAD = 1e-12  # gnomonic coordinate padding before flooring to columns
_MAX_CAP_COS = 0.5  # grid only when every point is within 60° of the centre direction
_POINTS_PER_CELL = 3.0
_MAX_PROPOSALS = 48  # phase-1 proposals (uniform over the superset) before enumerating the domain
_MAX_PROPOSALS_D = 64  # phase-3 proposals (uniform over the enumerated domain) before the inverse CDF
_SMALL_DOMAIN = 24  # |U| at or below this: enumerate directly

# statistics slots
ST_PROPOSALS = 0
ST_ENUMERATIONS = 1
ST_EMPTY = 2
ST_FB_LEFT = 3
ST_FB_RIGHT = 4
ST_FB_REGION = 5
ST_CAL_MISS = 6
ST_CAL_HIT = 7
ST_MERGE_FULL = 8
ST_MERGE_CAND = 9
ST_MERGE_EXACT = 10
ST_EM_CALLS = 11
_N_STATS = 12
_STAT_NAMES = (
    "proposals",
    "enumerations",
    "empty_domains",
    "fallback_left",
    "fallback_right",
    "fallback_region",
    "atp_regions",
    "exact_eta_passes",
    "merge_full_scans",
    "merge_candidates",
    "merge_exact_evals",
    "em_calls",
)

# Counters of the last call, kept only when a benchmark opts in: some of them (proposals, fallbacks) are
# aggregates of the private inputs, so by default nothing is kept after a call.
COLLECT_STATS = False
_LAST_STATS: dict = {}
# (phase-1, phase-3) proposal limits; tests set them to force the exact branches.
_prop = [_MAX_PROPOSALS, _MAX_PROPOSALS_D]
# ATP region: the Taylor remainder accepted per point in the certified η interval (metres), and whether to
# settle every region exactly at once (tests compare it with the lazy default: same output)
_REGION_TOL_PT = 2.0
_EAGER_REGION = [False]


def last_stats() -> dict:
    """Counters of the last :func:`perturb_fast` call while ``COLLECT_STATS`` is set (benchmarks only)."""
    return dict(_LAST_STATS)


# ----------------------------------------------------------------------------------------------------
# Spatial index (public: depends on P only)
# ----------------------------------------------------------------------------------------------------


class FastIndex:
    """Gnomonic uniform grid over a PointSet (CSR, cell-sorted), built once per PointSet and cached.

    Attributes
    ----------
    use_grid : bool
        False when P does not fit in a 60° cap (then every superset is P and merges scan P).
    gf : float64[12]
        [u0, v0, cell_u, cell_v, sec²ψ_max, cos ψ_max, c0(3), unused...]
    gi : int64[3]
        [n_cols, n_rows, use_grid]
    basis : float64[3, 3]
        Rows c0, e1, e2 (centre direction and tangent basis).
    cell_start : int64[n_cols·n_rows + 1]
    order : int64[m]
        Original index of each cell-sorted position.
    sxyz : float64[m, 3]
        Unit vectors in cell-sorted order.
    """

    def __init__(self, points) -> None:
        xyz = np.ascontiguousarray(points.xyz, dtype=np.float64)
        m = xyz.shape[0]
        mean = xyz.mean(axis=0)
        norm = float(np.linalg.norm(mean))
        use_grid = norm > 1e-3
        gf = np.zeros(12)
        basis = np.eye(3)
        if use_grid:
            c0 = mean / norm
            cosp = xyz @ c0
            cmin = float(cosp.min())
            use_grid = cmin >= _MAX_CAP_COS
        if use_grid:
            ref = np.array([0.0, 0.0, 1.0]) if abs(c0[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
            e1 = np.cross(ref, c0)
            e1 /= np.linalg.norm(e1)
            e2 = np.cross(c0, e1)
            basis = np.vstack([c0, e1, e2])
            u = (xyz @ e1) / cosp
            v = (xyz @ e2) / cosp
            umin, umax = float(u.min()), float(u.max())
            vmin, vmax = float(v.min()), float(v.max())
            span_u = max(umax - umin, 1e-12)
            span_v = max(vmax - vmin, 1e-12)
            pad_u = 1e-9 * span_u + 1e-12
            pad_v = 1e-9 * span_v + 1e-12
            u0, v0 = umin - pad_u, vmin - pad_v
            span_u += 2 * pad_u
            span_v += 2 * pad_v
            n_cells = max(1.0, m / _POINTS_PER_CELL)
            nu = int(min(4096, max(1, round(math.sqrt(n_cells * span_u / span_v)))))
            nv = int(min(4096, max(1, round(n_cells / nu))))
            cu = span_u / nu
            cv = span_v / nv
            col = np.clip(np.floor((u - u0) / cu), 0, nu - 1).astype(np.int64)
            row = np.clip(np.floor((v - v0) / cv), 0, nv - 1).astype(np.int64)
            cell = row * nu + col
            gf[:] = [u0, v0, cu, cv, 1.0 / (cmin * cmin), cmin, c0[0], c0[1], c0[2], 0.0, 0.0, 0.0]
        else:
            nu = nv = 1
            cell = np.zeros(m, dtype=np.int64)
        order = np.argsort(cell, kind="stable").astype(np.int64)
        counts = np.bincount(cell, minlength=nu * nv)
        cell_start = np.zeros(nu * nv + 1, dtype=np.int64)
        np.cumsum(counts, out=cell_start[1:])
        self.use_grid = bool(use_grid)
        self.gf = gf
        self.gi = np.array([nu, nv, int(use_grid)], dtype=np.int64)
        self.basis = np.ascontiguousarray(basis)
        self.cell_start = cell_start
        self.order = order
        self.sxyz = np.ascontiguousarray(xyz[order])
        self.xyz = xyz
        self.lam = np.ascontiguousarray(points.lam, dtype=np.float64)
        self.phi = np.ascontiguousarray(points.phi, dtype=np.float64)
        self.m = m
        self.delta = float(points.diameter_m)
        self._kdtree = None
        self._tree = None

    def tree(self):
        """The quadtree of the ATP region (lazy; public: P only), or None without a grid."""
        if self._tree is None and self.use_grid:
            self._tree = _reg.build_tree(self)
        return self._tree

    def kdtree(self):
        """scipy cKDTree over the unit vectors (lazy; used for the ATP anchor p_α)."""
        if self._kdtree is None:
            from scipy.spatial import cKDTree

            self._kdtree = cKDTree(self.xyz)
        return self._kdtree


_INDEX_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def get_index(points) -> FastIndex:
    """The cached :class:`FastIndex` of ``points`` (built on first use)."""
    try:
        idx = _INDEX_CACHE.get(points)
    except TypeError:  # not weak-referenceable: no caching
        return FastIndex(points)
    if idx is None:
        idx = FastIndex(points)
        _INDEX_CACHE[points] = idx
    return idx


# ----------------------------------------------------------------------------------------------------
# numba helpers
# ----------------------------------------------------------------------------------------------------


# Random draws come from geoldp._random's ChaCha20 ``stream_*`` functions (imported above).


# Allocation-free numba functions are compiled without NRT reference counting: with it, every call that
# passes arrays costs atomic increments/decrements, which dominated the run time (~4× slower).
# nogil: the driver runs in threads (``n_jobs``, Dask's threaded scheduler) without holding the GIL
_jit = numba.njit(cache=True, _nrt=False, nogil=True)


@numba.njit(cache=True)
def _np_mean(a, n):
    """numpy's pairwise sum of a[:n] divided by n (bit-identical to ``np.mean`` of a contiguous array)."""
    return _pairwise(a, 0, n) / n


@numba.njit(cache=True)
def _pairwise_leaf(a, start, n):
    """numpy's ``pairwise_sum`` for n <= 128 (8 accumulators, then the tail)."""
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
def _pairwise(a, start, n):
    """numpy's recursive pairwise summation of a[start:start+n], evaluated with an explicit stack."""
    if n <= 128:
        return _pairwise_leaf(a, start, n)
    st_s = np.empty(128, dtype=np.int64)
    st_n = np.empty(128, dtype=np.int64)
    st_k = np.zeros(128, dtype=np.int64)
    vals = np.empty(128)
    top = 0
    nv = 0
    st_s[0] = start
    st_n[0] = n
    st_k[0] = 0
    while top >= 0:
        s0 = st_s[top]
        n0 = st_n[top]
        if n0 <= 128:
            vals[nv] = _pairwise_leaf(a, s0, n0)
            nv += 1
            top -= 1
            continue
        n2 = n0 // 2
        n2 -= n2 % 8
        if st_k[top] == 0:
            st_k[top] = 1
            top += 1
            st_s[top] = s0
            st_n[top] = n2
            st_k[top] = 0
        elif st_k[top] == 1:
            st_k[top] = 2
            top += 1
            st_s[top] = s0 + n2
            st_n[top] = n0 - n2
            st_k[top] = 0
        else:
            right = vals[nv - 1]
            left = vals[nv - 2]
            nv -= 2
            vals[nv] = left + right
            nv += 1
            top -= 1
    return vals[0]


@numba.njit(cache=True)
def _anchor_points(flat, offsets, lam, phi, vector, out_lam, out_phi):
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
            x = _np_mean(bl, n)
            y = _np_mean(bp, n)
            z = _np_mean(bz, n)
            if math.sqrt(x * x + y * y + z * z) >= 1e-12:
                out_lam[t] = math.atan2(y, x)
                out_phi[t] = math.atan2(z, math.hypot(x, y))
                done = True
        if not done:
            for i in range(n):
                p = flat[s + i]
                bl[i] = lam[p]
                bp[i] = phi[p]
            out_lam[t] = _np_mean(bl, n)
            out_phi[t] = _np_mean(bp, n)


@_jit
def _nearest_exact(alam, aphi, cand, lam, phi, out):
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
def _nearest_scan(alam, aphi, lam, phi):
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
def _gnomonic(x, y, z, gf, basis):
    w = x * basis[0, 0] + y * basis[0, 1] + z * basis[0, 2]
    u = (x * basis[1, 0] + y * basis[1, 1] + z * basis[1, 2]) / w
    v = (x * basis[2, 0] + y * basis[2, 1] + z * basis[2, 2]) / w
    return u, v


# Domain description shared by the samplers (filled by the driver; no allocation per stage):
#   dq   float64[8, 3]  3-D normals q of the sector half-spaces p·q ≥ 0
#   hp   float64[8, 3]  the same half-spaces as gnomonic forms a·u + b·v + c ≥ 0
#   dint int64[8]       [n_planes, n_sectors, has_region, region_centre, apex_0, dir_0, apex_1, dir_1]
#   dflt float64[N_REGION] the copy's region record (geoldp.trajectory._atp_region)
_DI_NQ = 0
_DI_NS = 1
_DI_REG = 2
_DI_RC = 3
_DI_AP = 4


@_jit
def _dom_reset(dint):
    dint[_DI_NQ] = 0
    dint[_DI_NS] = 0
    dint[_DI_REG] = 0


@_jit
def _dom_region(dint, centre):
    """Add Ω around ``centre``; its radius (an interval until resolved) is the copy's region record."""
    dint[_DI_REG] = 1
    dint[_DI_RC] = centre


@_jit
def _dom_sector(dq, hp, dint, apex, d, g, centred, lam, phi, basis):
    """Add GetPointSet(apex, d): exact test (apex, d) and its two bounding half-spaces."""
    k = dint[_DI_NS]
    dint[_DI_AP + 2 * k] = apex
    dint[_DI_AP + 2 * k + 1] = d
    dint[_DI_NS] = k + 1
    sl = math.sin(lam[apex])
    cl = math.cos(lam[apex])
    sp = math.sin(phi[apex])
    cp = math.cos(phi[apex])
    # east and north unit vectors at the apex: bearing(p) = atan2(p·e, p·n) (the kernel's formula)
    ex, ey, ez = -sl, cl, 0.0
    nx, ny, nz = -sp * cl, -sp * sl, cp
    if centred:
        t1 = (2 * d - 1) * math.pi / g
        t2 = (2 * d + 1) * math.pi / g
    else:
        t1 = 2 * d * math.pi / g
        t2 = 2 * (d + 1) * math.pi / g
    nh = dint[_DI_NQ]
    for s in range(2):
        t = t1 if s == 0 else t2
        sign = 1.0 if s == 0 else -1.0
        ct = math.cos(t)
        st = math.sin(t)
        # c_θ = cos θ·e − sin θ·n ; p·c_θ1 ≥ 0 and −p·c_θ2 > 0 bound the sector [θ1, θ2) (width ≤ π)
        qx = sign * (ct * ex - st * nx)
        qy = sign * (ct * ey - st * ny)
        qz = sign * (ct * ez - st * nz)
        dq[nh, 0] = qx
        dq[nh, 1] = qy
        dq[nh, 2] = qz
        hp[nh, 0] = qx * basis[1, 0] + qy * basis[1, 1] + qz * basis[1, 2]
        hp[nh, 1] = qx * basis[2, 0] + qy * basis[2, 1] + qz * basis[2, 2]
        hp[nh, 2] = qx * basis[0, 0] + qy * basis[0, 1] + qz * basis[0, 2]
        nh += 1
    dint[_DI_NQ] = nh


@_jit
def _ranges(gf, gi, cell_start, hp, nh, has_disk, du, dv, dl, lo, hi, cum):
    """Runs of cell-sorted positions whose cells may meet {half-planes} ∩ {disc}; returns (n_runs, total).

    Half-plane k < nh (≤ 8): hp[k,0]·u + hp[k,1]·v + hp[k,2] ≥ −_MG. Disc: (u−du)² + (v−dv)² ≤ dl².
    ``hp`` must have 40 rows (rows 8–39 are polygon scratch).
    """
    nu = gi[0]
    nv = gi[1]
    u0 = gf[0]
    v0 = gf[1]
    cu = gf[2]
    cv = gf[3]
    r0 = 0
    r1 = nv - 1
    # the rows to visit: v-extent of (grid box ∩ disc box) clipped by the half-planes (a convex polygon,
    # Sutherland–Hodgman in hp[8:24] / hp[24:40]); an empty polygon means an empty domain
    ua = u0
    ub = u0 + nu * cu
    va = v0
    vb = v0 + nv * cv
    if has_disk:
        ua = max(ua, du - dl)
        ub = min(ub, du + dl)
        va = max(va, dv - dl)
        vb = min(vb, dv + dl)
        if ua > ub or va > vb:
            return 0, 0
    if nh > 0:
        npoly = 4
        hp[8, 0] = ua
        hp[8, 1] = va
        hp[9, 0] = ub
        hp[9, 1] = va
        hp[10, 0] = ub
        hp[10, 1] = vb
        hp[11, 0] = ua
        hp[11, 1] = vb
        src = 8
        dst = 24
        for k in range(nh):
            ca = hp[k, 0]
            cb = hp[k, 1]
            cc = hp[k, 2] + _MG
            nout = 0
            for i in range(npoly):
                j = i + 1 if i + 1 < npoly else 0
                pu = hp[src + i, 0]
                pv = hp[src + i, 1]
                qu = hp[src + j, 0]
                qv = hp[src + j, 1]
                fi = ca * pu + cb * pv + cc
                fj = ca * qu + cb * qv + cc
                if fi >= 0.0:
                    hp[dst + nout, 0] = pu
                    hp[dst + nout, 1] = pv
                    nout += 1
                if (fi >= 0.0) != (fj >= 0.0):
                    t = fi / (fi - fj)
                    hp[dst + nout, 0] = pu + (qu - pu) * t
                    hp[dst + nout, 1] = pv + (qv - pv) * t
                    nout += 1
            npoly = nout
            if npoly == 0:
                return 0, 0
            src, dst = dst, src
        pmin = np.inf
        pmax = -np.inf
        for i in range(npoly):
            v = hp[src + i, 1]
            pmin = min(pmin, v)
            pmax = max(pmax, v)
        pad = 1e-12 * (1.0 + abs(pmin) + abs(pmax))
        va = max(va, pmin - pad)
        vb = min(vb, pmax + pad)
        if va > vb:
            return 0, 0
    a = (va - v0) / cv
    b = (vb - v0) / cv
    if b < 0.0 or a >= nv:
        return 0, 0
    if a > 0.0:
        r0 = int(a)
    if b < nv - 1:
        r1 = int(b)
    n_runs = 0
    total = 0
    for r in range(r0, r1 + 1):
        va = v0 + r * cv
        vb = va + cv
        ulo = -np.inf
        uhi = np.inf
        if has_disk:
            if dv < va:
                ddv = va - dv
            elif dv > vb:
                ddv = dv - vb
            else:
                ddv = 0.0
            if ddv > dl:
                continue
            half = math.sqrt(dl * dl - ddv * ddv)
            ulo = du - half
            uhi = du + half
        empty = False
        for k in range(nh):
            ca = hp[k, 0]
            cb = hp[k, 1]
            cc = hp[k, 2]
            bv = cb * va
            if cb * vb > bv:
                bv = cb * vb
            rhs = -_MG - cc - bv
            if ca > 0.0:
                x = rhs / ca
                if x > ulo:
                    ulo = x
            elif ca < 0.0:
                x = rhs / ca
                if x < uhi:
                    uhi = x
            elif rhs > 0.0:
                empty = True
                break
        if empty or ulo > uhi:
            continue
        x = (ulo - _U_PAD - u0) / cu
        y = (uhi + _U_PAD - u0) / cu
        if y < 0.0 or x >= nu:
            continue
        c0 = 0
        if x > 0.0:
            c0 = int(x)
        c1 = nu - 1
        if y < nu - 1:
            c1 = int(y)
        a_pos = cell_start[r * nu + c0]
        b_pos = cell_start[r * nu + c1 + 1]
        if b_pos > a_pos:
            lo[n_runs] = a_pos
            hi[n_runs] = b_pos
            total += b_pos - a_pos
            cum[n_runs] = total
            n_runs += 1
    return n_runs, total


@_jit
def _pos_of(k, n_runs, lo, hi, cum):
    """Cell-sorted position of the k-th element (0-based) of the runs."""
    a = 0
    b = n_runs - 1
    while a < b:
        mid = (a + b) // 2
        if cum[mid] > k:
            b = mid
        else:
            a = mid + 1
    before = cum[a] - (hi[a] - lo[a])
    return lo[a] + (k - before)


@_jit
def _member(p, lam, phi, xyz, dq, dint, dflt, g, centred):
    """Exact membership of P_p in Ω ∩ ⋂ GetPointSet(apex_k, dir_k) (the reference's kernels and argument
    order). Dot-product tests with margins decide the clear cases; only points within the margins of a
    boundary are decided by the kernels."""
    x = xyz[p, 0]
    y = xyz[p, 1]
    z = xyz[p, 2]
    exact_reg = False
    if dint[_DI_REG] == 1:
        c = dint[_DI_RC]
        dot = x * xyz[c, 0] + y * xyz[c, 1] + z * xyz[c, 2]
        # dflt is the region record of _atp_region: d(c, p) > R̃_hi → out, d(c, p) < R̃_lo → in
        if dot < dflt[_reg.F_COS_HI] - _MG_DOT:
            return False
        if dot <= dflt[_reg.F_COS_LO] + _MG_DOT:
            if dflt[_reg.F_RES] == 0.0:
                # p lies in the certified interval of R̃: compute the exact R̃ (one O(|P|) pass)
                _reg.resolve(c, lam, phi, xyz, dflt)
                if dot < dflt[_reg.F_COS_HI] - _MG_DOT:
                    return False
                exact_reg = dot <= dflt[_reg.F_COS_LO] + _MG_DOT
            else:
                exact_reg = True
    exact_sec = False
    for k in range(dint[_DI_NQ]):
        v = x * dq[k, 0] + y * dq[k, 1] + z * dq[k, 2]
        if v < -_MG:
            return False
        if v <= _MG:
            exact_sec = True
    if exact_reg:
        c = dint[_DI_RC]
        if not (haversine_rad(lam[c], phi[c], lam[p], phi[p]) <= dflt[_reg.F_LO]):
            return False
    if exact_sec:
        for k in range(dint[_DI_NS]):
            o = dint[_DI_AP + 2 * k]
            if sector(bearing_rad(lam[o], phi[o], lam[p], phi[p]), g, centred) != dint[_DI_AP + 2 * k + 1]:
                return False
    return True


@_jit
def _em(
    xl,
    xp,
    eps,
    delta,
    lam,
    phi,
    xyz,
    order,
    full,
    n_runs,
    lo,
    hi,
    cum,
    total,
    dq,
    dint,
    dflt,
    g,
    centred,
    key,
    buf,
    state,
    sc_idx,
    sc_cdf,
    stats,
    prop1,
    prop2,
):
    """Exact EM draw over D = (U ∩ domain); U = P if ``full`` else the runs. Returns −1 iff D is empty.

    Phase 1: ``prop1`` proposals uniform over U, accepted iff p ∈ D and u < w_p. Phase 2: enumerate D
    (membership only). Phase 3: ``prop2`` proposals uniform over D, accepted iff u < w_p. Phase 4: inverse
    CDF over the max-subtracted weights of D. Every phase draws from w restricted to D, so the mixture is
    exact.
    """
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
                p = order[_pos_of(k, n_runs, lo, hi, cum)]
            if not _member(p, lam, phi, xyz, dq, dint, dflt, g, centred):
                continue
            w = math.exp(em_log_weight(eps, haversine_rad(xl, xp, lam[p], phi[p]), delta))
            if stream_uniform(key, buf, state) < w:
                return p
    stats[ST_ENUMERATIONS] += 1
    n = 0
    if full:
        for p in range(total):
            if _member(p, lam, phi, xyz, dq, dint, dflt, g, centred):
                sc_idx[n] = p
                n += 1
    else:
        for r in range(n_runs):
            for pos in range(lo[r], hi[r]):
                p = order[pos]
                if _member(p, lam, phi, xyz, dq, dint, dflt, g, centred):
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
        w = math.exp(em_log_weight(eps, haversine_rad(xl, xp, lam[p], phi[p]), delta))
        if stream_uniform(key, buf, state) < w:
            return p
    # the reference pmf: log-weights, max-subtracted, normalised, inverse CDF (in the order of sc_idx)
    top = -np.inf
    for i in range(n):
        p = sc_idx[i]
        ell = em_log_weight(eps, haversine_rad(xl, xp, lam[p], phi[p]), delta)
        sc_cdf[i] = ell
        if ell > top:
            top = ell
    s = 0.0
    for i in range(n):
        s += math.exp(sc_cdf[i] - top)
        sc_cdf[i] = s
    for i in range(n):
        sc_cdf[i] = sc_cdf[i] / s
    j = stream_categorical_cdf(key, buf, state, sc_cdf, n)
    return sc_idx[j]


@_jit
def _krr(x, g, lie, key, buf, state):
    """k-RR (ALGORITHM §3.1): lie with probability L, then uniform over the g − 1 other values."""
    if stream_uniform(key, buf, state) < lie:
        j = stream_integers(key, buf, state, g - 1)
        if j >= x:
            j += 1
        return j
    return x


@_jit
def _sw_cdf(j, v, b, pw, qw, w):
    """Closed-form cumulative mass of buckets 0…j−1 (ALGORITHM §3.3)."""
    ov = j * w - v
    if ov < 0.0:
        ov = 0.0
    if ov > 2.0 * b:
        ov = 2.0 * b
    return qw * j * w + (pw - qw) * ov


@_jit
def _sw_bucket(v, eps, b, buckets, key, buf, state):
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
        if _sw_cdf(mid + 1, v, b, p, q, w) > u:
            c = mid
        else:
            a = mid + 1
    if a >= buckets:
        a = buckets - 1
    return a


@_jit
def _sw_continuous(v, eps, b, key, buf, state):
    """Continuous SW (option C8), the reference's sampler."""
    t = math.exp(-eps)
    if stream_uniform(key, buf, state) < 2.0 * b / (2.0 * b + t):
        return v - b + 2.0 * b * stream_uniform(key, buf, state)
    u = stream_uniform(key, buf, state)
    if u < v:
        return u - b
    return u + b


@_jit
def _chord_dist(ax, ay, az, bx, by, bz):
    """Great-circle distance from the chord of two unit vectors (accurate, not the reference kernel)."""
    dx = ax - bx
    dy = ay - by
    dz = az - bz
    h = 0.5 * math.sqrt(dx * dx + dy * dy + dz * dz)
    if h < 0.01:
        h2 = h * h
        s = h * (1.0 + h2 * (1.0 / 6.0 + h2 * (3.0 / 40.0 + h2 * (5.0 / 112.0 + h2 * (35.0 / 1152.0)))))
    else:
        if h > 1.0:
            h = 1.0
        s = math.asin(h)
    return 2.0 * EARTH_RADIUS_M * s


@_jit
def _merge(
    ya,
    yb,
    lam,
    phi,
    xyz,
    sxyz,
    order,
    gf,
    gi,
    basis,
    cell_start,
    tau,
    balanced,
    lo,
    hi,
    cum,
    hp,
    sc_idx,
    sc_cdf,
    sc_aux,
    stats,
):
    """Merged output of one position (ALGORITHM §5.6), bit-identical to ``merge_choice``."""
    if ya == yb:
        return ya
    m = lam.shape[0]
    dab = haversine_rad(lam[ya], phi[ya], lam[yb], phi[yb])
    err = 1e-9 + 1e-12 * dab + tau
    use_grid = gi[2] == 1 and dab < 0.45 * math.pi * EARTH_RADIUS_M
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
        du, dv = _gnomonic(mx, my, mz, gf, basis)
        dl = gf[4] * rho * (1.0 + 1e-9) + 1e-12
        # slab around the great circle: 1 − cos h <= (τ + 2·err)/R
        nx = ay * bz - az * by
        ny = az * bx - ax * bz
        nz = ax * by - ay * bx
        nn = math.sqrt(nx * nx + ny * ny + nz * nz)
        nh = 0
        slab = -1.0
        if nn > 1e-9:
            nx /= nn
            ny /= nn
            nz /= nn
            hmax = 2.0 * math.asin(math.sqrt(0.5 * (tau + 2.0 * err) / EARTH_RADIUS_M))
            slab = math.sin(hmax) * (1.0 + 1e-6) + 1e-13
            wide = slab / gf[5]
            for s in range(2):
                sg = 1.0 if s == 0 else -1.0
                hp[nh, 0] = sg * (nx * basis[1, 0] + ny * basis[1, 1] + nz * basis[1, 2])
                hp[nh, 1] = sg * (nx * basis[2, 0] + ny * basis[2, 1] + nz * basis[2, 2])
                hp[nh, 2] = sg * (nx * basis[0, 0] + ny * basis[0, 1] + nz * basis[0, 2]) + wide
                nh += 1
        n_runs, total = _ranges(gf, gi, cell_start, hp, nh, True, du, dv, dl, lo, hi, cum)
        stats[ST_MERGE_CAND] += total
        for r in range(n_runs):
            for pos in range(lo[r], hi[r]):
                # (interleaved xyz: one cache-line stream per run; the runs are short and cold)
                if slab >= 0.0:
                    dot = sxyz[pos, 0] * nx + sxyz[pos, 1] * ny + sxyz[pos, 2] * nz
                    if abs(dot) > slab:
                        continue
                p = order[pos]
                if p == ya or p == yb:
                    continue  # added below without kernel calls
                # cheap chord distances (error ~1e−9 m) rule out points clearly off the arc
                x = sxyz[pos, 0]
                y = sxyz[pos, 1]
                z = sxyz[pos, 2]
                sc = _chord_dist(ax, ay, az, x, y, z) + _chord_dist(bx, by, bz, x, y, z)
                if sc > dab + tau + 1e-6 + 1e-12 * dab:
                    continue
                sc_idx[n] = p
                da = haversine_rad(lam[ya], phi[ya], lam[p], phi[p])
                db = haversine_rad(lam[yb], phi[yb], lam[p], phi[p])
                sc_cdf[n] = da + db
                sc_aux[n] = abs(da - db)
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
            sc_idx[n] = p
            da = haversine_rad(lam[ya], phi[ya], lam[p], phi[p])
            db = haversine_rad(lam[yb], phi[yb], lam[p], phi[p])
            sc_cdf[n] = da + db
            sc_aux[n] = abs(da - db)
            n += 1
    stats[ST_MERGE_EXACT] += n
    s_min = np.inf
    for i in range(n):
        if sc_cdf[i] < s_min:
            s_min = sc_cdf[i]
    limit = s_min + tau
    best = m
    if not balanced:
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


# ----------------------------------------------------------------------------------------------------
# the driver
# ----------------------------------------------------------------------------------------------------


@_jit
def _run(
    flat,
    offsets,
    kind,
    key,
    first_stream,
    lam,
    phi,
    xyz,
    sxyz,
    order,
    gf,
    gi,
    basis,
    cell_start,
    delta,
    tau,
    g,
    centred,
    balanced,
    nb_fallback,
    eps_single,
    eps_piv,
    eps_np,
    lie,
    eps_anc,
    eps_rad,
    sw_b,
    eps_dec,
    buckets,
    continuous,
    input_mapping,
    anchors,
    nodes,
    levels,
    has_tree,
    tol_pt,
    eager,
    out,
    stats,
    prop1,
    prop2,
    buf,
    state,
    iwork,
    fwork,
    rows,
    dq,
    hp,
    dint,
    dflt,
    yy,
    rstack,
    rwork,
):
    """Perturb every trajectory; ``kind`` 0 = PointEM, 1 = TP, 2 = ATP. All work arrays come from Python
    (this function runs without NRT): iwork int64[3, m], fwork float64[3, m + 64], rows int64[6, n_rows],
    yy int64[2, max length]."""
    m = lam.shape[0]
    use_grid = gi[2] == 1
    sc_idx = iwork[0]
    s_apex = iwork[1, 0:2]
    s_dir = iwork[1, 2:4]
    sc_cdf = fwork[0]
    sc_aux = fwork[1]
    # runs for Ω (kept for a whole copy) and for the current domain
    o_lo = rows[0]
    o_hi = rows[1]
    o_cum = rows[2]
    d_lo = rows[3]
    d_hi = rows[4]
    d_cum = rows[5]
    for t in range(offsets.shape[0] - 1):
        s0 = offsets[t]
        n = offsets[t + 1] - s0
        stream_reset(state, first_stream + t)
        if kind == 0 or n == 1:
            eps = eps_single[n]
            _dom_reset(dint)
            for i in range(n):
                x = flat[s0 + i]
                out[s0 + i] = _em(
                    lam[x],
                    phi[x],
                    eps,
                    delta,
                    lam,
                    phi,
                    xyz,
                    order,
                    True,
                    0,
                    d_lo,
                    d_hi,
                    d_cum,
                    m,
                    dq,
                    dint,
                    dflt,
                    g,
                    centred,
                    key,
                    buf,
                    state,
                    sc_idx,
                    sc_cdf,
                    stats,
                    prop1,
                    prop2,
                )
            continue
        for c in range(2):
            _dom_reset(dint)
            has_reg = False
            reg_c = 0
            o_runs = 0
            o_total = m
            o_full = True
            if kind == 2:
                # anchor EM over P from P_{p_α}
                pa = anchors[t]
                ahat = _em(
                    lam[pa],
                    phi[pa],
                    eps_anc[n, c],
                    delta,
                    lam,
                    phi,
                    xyz,
                    order,
                    True,
                    0,
                    d_lo,
                    d_hi,
                    d_cum,
                    m,
                    dq,
                    dint,
                    dflt,
                    g,
                    centred,
                    key,
                    buf,
                    state,
                    sc_idx,
                    sc_cdf,
                    stats,
                    prop1,
                    prop2,
                )
                b = sw_b[n, c]
                stats[ST_CAL_MISS] += 1
                if has_tree:
                    dr = _reg.farthest(ahat, lam, phi, xyz, sxyz, order, cell_start, nodes, levels, rstack)
                else:
                    dr = _reg.farthest_scan(ahat, lam, phi, xyz)
                r_max = 0.0
                for i in range(n):
                    x = flat[s0 + i]
                    d = haversine_rad(lam[ahat], phi[ahat], lam[x], phi[x])
                    if d > r_max:
                        r_max = d
                r = _cal.atp_radius_input(r_max, dr)
                if continuous:
                    r_hat = _sw_continuous(r, eps_rad[n, c], b, key, buf, state)
                else:
                    jb = _sw_bucket(r, eps_rad[n, c], b, buckets, key, buf, state)
                    r_hat = _cal.sw_bucket_midpoint(jb, b, buckets)
                _reg.region_setup(
                    ahat,
                    lam,
                    phi,
                    xyz,
                    sxyz,
                    order,
                    cell_start,
                    nodes,
                    levels,
                    has_tree,
                    r_hat,
                    b,
                    eps_rad[n, c],
                    eps_dec[n, c],
                    dr,
                    input_mapping,
                    tol_pt,
                    eager,
                    rstack,
                    rwork,
                    dflt,
                )
                has_reg = True
                reg_c = ahat
                _dom_region(dint, ahat)
                if use_grid:
                    du, dv = _gnomonic(xyz[ahat, 0], xyz[ahat, 1], xyz[ahat, 2], gf, basis)
                    dl = gf[4] * (dflt[_reg.F_SUPER] / EARTH_RADIUS_M) * (1.0 + 1e-9) + 1e-12
                    o_runs, o_total = _ranges(gf, gi, cell_start, hp, 0, True, du, dv, dl, o_lo, o_hi, o_cum)
                    o_full = False
            # pivots (copy A = index 0: even 1-based positions; copy B: odd), EM over Ω
            for i in range(n):
                pos1 = i + 1
                piv = (pos1 % 2 == 0) if c == 0 else (pos1 % 2 == 1)
                if not piv:
                    continue
                x = flat[s0 + i]
                yy[c, i] = _em(
                    lam[x],
                    phi[x],
                    eps_piv[n, c],
                    delta,
                    lam,
                    phi,
                    xyz,
                    order,
                    o_full,
                    o_runs,
                    o_lo,
                    o_hi,
                    o_cum,
                    o_total,
                    dq,
                    dint,
                    dflt,
                    g,
                    centred,
                    key,
                    buf,
                    state,
                    sc_idx,
                    sc_cdf,
                    stats,
                    prop1,
                    prop2,
                )
            # non-pivots: k-RR of the direction from each neighbouring perturbed pivot, then EM on the domain
            for i in range(n):
                pos1 = i + 1
                piv = (pos1 % 2 == 0) if c == 0 else (pos1 % 2 == 1)
                if piv:
                    continue
                x = flat[s0 + i]
                ns = 0
                for side in range(2):
                    k = i - 1 if side == 0 else i + 1
                    if k < 0 or k >= n:
                        continue
                    o = yy[c, k]
                    true = sector(bearing_rad(lam[o], phi[o], lam[x], phi[x]), g, centred)
                    s_apex[ns] = o
                    s_dir[ns] = _krr(true, g, lie[n, c], key, buf, state)
                    ns += 1
                eps = eps_np[n, c]
                # 1) the intersection (Algorithm 1)
                y = _em_sectors(
                    lam[x],
                    phi[x],
                    eps,
                    delta,
                    lam,
                    phi,
                    xyz,
                    order,
                    use_grid,
                    gf,
                    gi,
                    basis,
                    cell_start,
                    dq,
                    hp,
                    dint,
                    dflt,
                    ns,
                    s_apex,
                    s_dir,
                    0,
                    has_reg,
                    reg_c,
                    g,
                    centred,
                    d_lo,
                    d_hi,
                    d_cum,
                    key,
                    buf,
                    state,
                    sc_idx,
                    sc_cdf,
                    stats,
                    prop1,
                    prop2,
                )
                if y < 0 and nb_fallback and ns == 2:
                    # 2) the left neighbour's set, 3) the right neighbour's set
                    for side in range(2):
                        y = _em_sectors(
                            lam[x],
                            phi[x],
                            eps,
                            delta,
                            lam,
                            phi,
                            xyz,
                            order,
                            use_grid,
                            gf,
                            gi,
                            basis,
                            cell_start,
                            dq,
                            hp,
                            dint,
                            dflt,
                            1,
                            s_apex,
                            s_dir,
                            side,
                            has_reg,
                            reg_c,
                            g,
                            centred,
                            d_lo,
                            d_hi,
                            d_cum,
                            key,
                            buf,
                            state,
                            sc_idx,
                            sc_cdf,
                            stats,
                            prop1,
                            prop2,
                        )
                        if y >= 0:
                            stats[ST_FB_LEFT + side] += 1
                            break
                if y < 0:
                    # 4) the region Ω (P for TP)
                    stats[ST_FB_REGION] += 1
                    _dom_reset(dint)
                    if has_reg:
                        _dom_region(dint, reg_c)
                    y = _em(
                        lam[x],
                        phi[x],
                        eps,
                        delta,
                        lam,
                        phi,
                        xyz,
                        order,
                        o_full,
                        o_runs,
                        o_lo,
                        o_hi,
                        o_cum,
                        o_total,
                        dq,
                        dint,
                        dflt,
                        g,
                        centred,
                        key,
                        buf,
                        state,
                        sc_idx,
                        sc_cdf,
                        stats,
                        prop1,
                        prop2,
                    )
                yy[c, i] = y
            if has_reg and dflt[_reg.F_RES] == 1.0:
                stats[ST_CAL_HIT] += 1
            _dom_reset(dint)
        for i in range(n):
            out[s0 + i] = _merge(
                yy[0, i],
                yy[1, i],
                lam,
                phi,
                xyz,
                sxyz,
                order,
                gf,
                gi,
                basis,
                cell_start,
                tau,
                balanced,
                d_lo,
                d_hi,
                d_cum,
                hp,
                sc_idx,
                sc_cdf,
                sc_aux,
                stats,
            )


@_jit
def _em_sectors(
    xl,
    xp,
    eps,
    delta,
    lam,
    phi,
    xyz,
    order,
    use_grid,
    gf,
    gi,
    basis,
    cell_start,
    dq,
    hp,
    dint,
    dflt,
    ns,
    s_apex,
    s_dir,
    first,
    has_reg,
    reg_c,
    g,
    centred,
    lo,
    hi,
    cum,
    key,
    buf,
    state,
    sc_idx,
    sc_cdf,
    stats,
    prop1,
    prop2,
):
    """EM over Ω ∩ the ``ns`` sector sets starting at ``s_apex[first]`` (−1 iff that set is empty)."""
    m = lam.shape[0]
    _dom_reset(dint)
    if has_reg:
        _dom_region(dint, reg_c)
    for k in range(ns):
        _dom_sector(dq, hp, dint, s_apex[first + k], s_dir[first + k], g, centred, lam, phi, basis)
    if not use_grid:
        return _em(
            xl,
            xp,
            eps,
            delta,
            lam,
            phi,
            xyz,
            order,
            True,
            0,
            lo,
            hi,
            cum,
            m,
            dq,
            dint,
            dflt,
            g,
            centred,
            key,
            buf,
            state,
            sc_idx,
            sc_cdf,
            stats,
            prop1,
            prop2,
        )
    du = 0.0
    dv = 0.0
    dl = 0.0
    if has_reg:
        du, dv = _gnomonic(xyz[reg_c, 0], xyz[reg_c, 1], xyz[reg_c, 2], gf, basis)
        dl = gf[4] * (dflt[_reg.F_SUPER] / EARTH_RADIUS_M) * (1.0 + 1e-9) + 1e-12
    n_runs, total = _ranges(gf, gi, cell_start, hp, dint[_DI_NQ], has_reg, du, dv, dl, lo, hi, cum)
    return _em(
        xl,
        xp,
        eps,
        delta,
        lam,
        phi,
        xyz,
        order,
        False,
        n_runs,
        lo,
        hi,
        cum,
        total,
        dq,
        dint,
        dflt,
        g,
        centred,
        key,
        buf,
        state,
        sc_idx,
        sc_cdf,
        stats,
        prop1,
        prop2,
    )


# ----------------------------------------------------------------------------------------------------
# Python entry point
# ----------------------------------------------------------------------------------------------------


def _anchors(flat, offsets, index: FastIndex, vector: bool) -> np.ndarray:
    """p_α of every trajectory: the exact-kernel nearest P point to the mean location; ties → lowest index."""
    n_traj = offsets.shape[0] - 1
    alam = np.empty(n_traj)
    aphi = np.empty(n_traj)
    _anchor_points(flat, offsets, index.lam, index.phi, bool(vector), alam, aphi)
    cphi = np.cos(aphi)
    q = np.column_stack([cphi * np.cos(alam), cphi * np.sin(alam), np.sin(aphi)])
    k = min(4, index.m)
    dist, cand = index.kdtree().query(q, k=k)
    dist = np.asarray(dist).reshape(n_traj, k)
    cand = np.asarray(cand, dtype=np.int64).reshape(n_traj, k)
    out = np.empty(n_traj, dtype=np.int64)
    _nearest_exact(alam, aphi, cand, index.lam, index.phi, out)
    # rows whose k-th candidate is (nearly) as close as the first may have more tied points: full scan
    if k < index.m:
        unsure = np.flatnonzero(dist[:, -1] <= dist[:, 0] * (1 + 1e-9) + 1e-12)
        for t in unsure:
            out[t] = _nearest_scan(alam[t], aphi[t], index.lam, index.phi)
    return out


def _tables(mechanism, lengths, m):
    """Per-length stage budgets, k-RR lie probabilities and SW half-widths (the reference's helpers)."""
    from geoldp import mechanisms as _mech

    n_max = int(lengths.max()) if lengths.size else 1
    shape2 = (n_max + 1, 2)
    eps_single = np.zeros(n_max + 1)
    eps_piv = np.zeros(shape2)
    eps_np = np.zeros(shape2)
    lie = np.zeros(shape2)
    eps_anc = np.zeros(shape2)
    eps_rad = np.zeros(shape2)
    sw_b = np.zeros(shape2)
    eps_dec = np.zeros(shape2)
    plan = mechanism.sampler_plan
    g = int(plan.granularity)
    for n in np.unique(lengths):
        n = int(n)
        if plan.single(n):
            eps_single[n] = mechanism.single_budget(n)
            continue
        for c, copy in enumerate(("A", "B")):
            bud = mechanism.copy_budgets(n, copy)
            eps_piv[n, c] = bud.point_pivot
            eps_np[n, c] = bud.point_nonpivot
            lie[n, c] = _mech.krr_lie_probability(g, bud.direction)
            if plan.anchor_region:
                eps_anc[n, c] = bud.anchor
                eps_rad[n, c] = bud.radius
                sw_b[n, c] = float(_mech.sw_half_width(bud.radius))
                eps_dec[n, c] = mechanism.decay_budget(n, copy)
    return g, eps_single, eps_piv, eps_np, lie, eps_anc, eps_rad, sw_b, eps_dec


def perturb_fast(flat_idx, offsets, points, mechanism, key, first_stream, n_jobs: int = 1) -> np.ndarray:
    """Perturb trajectories given as flat indices into ``points`` with the numba fast path.

    Parameters
    ----------
    flat_idx : int64[:]
        All trajectories' indices into ``points``, concatenated (already validated by the engine).
    offsets : int64[:]
        Trajectory i is ``flat_idx[offsets[i]:offsets[i + 1]]``; every length ≥ 1.
    points : PointSet
    mechanism : TP, ATP or PointEM
        A validated mechanism object (its stage budgets already checked by the engine).
    key : uint32[8]
        ChaCha20 key, drawn once per call from the caller's RandomSource.
    first_stream : int
        Global index of the first trajectory (stream id of trajectory i is ``first_stream + i``).
    n_jobs : int, default 1
        Threads over contiguous chunks of trajectories (the kernel releases the GIL). Every trajectory
        draws from its own stream, so the output is identical for any ``n_jobs``.

    Returns
    -------
    int64[:]
        Perturbed indices, same layout as ``flat_idx``.
    """
    flat = np.ascontiguousarray(flat_idx, dtype=np.int64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    key = np.ascontiguousarray(key, dtype=np.uint32)
    index = get_index(points)
    m = index.m
    n_traj = offsets.shape[0] - 1
    out = np.empty(flat.shape[0], dtype=np.int64)
    stats = np.zeros(_N_STATS, dtype=np.int64)
    if n_traj <= 0:
        return out
    lengths = np.diff(offsets)
    plan = mechanism.sampler_plan
    kind = plan.kernel_kind
    g, eps_single, eps_piv, eps_np, lie, eps_anc, eps_rad, sw_b, eps_dec = _tables(mechanism, lengths, m)
    centred, balanced, nb_fallback = plan.centred, plan.balanced, plan.neighbour_fallback
    buckets = 2
    continuous = False
    input_mapping = False
    anchors = np.zeros(1, dtype=np.int64)
    tree = None
    if plan.anchor_region and np.any(lengths >= 2):
        buckets = int(plan.sw_buckets)
        continuous = plan.continuous_sw
        input_mapping = plan.input_mapping
        anchors = _anchors(flat, offsets, index, plan.vector_mean)
        tree = index.tree()
    if tree is None:
        nodes = np.zeros((1, 12))
        levels = np.zeros((1, 3), dtype=np.int64)
    else:
        nodes, levels = tree.nodes, tree.levels
    n_rows = int(index.gi[1])
    max_len = int(lengths.max())
    consts = (
        index.lam,
        index.phi,
        index.xyz,
        index.sxyz,
        index.order,
        index.gf,
        index.gi,
        index.basis,
        index.cell_start,
        index.delta,
        TAU_FACTOR * index.delta,
        g,
        centred,
        balanced,
        nb_fallback,
        eps_single,
        eps_piv,
        eps_np,
        lie,
        eps_anc,
        eps_rad,
        sw_b,
        eps_dec,
        buckets,
        continuous,
        input_mapping,
    )
    region = (nodes, levels, tree is not None, float(_REGION_TOL_PT), bool(_EAGER_REGION[0]))
    prop = (int(_prop[0]), int(_prop[1]))

    def run_chunk(t0: int, t1: int) -> np.ndarray:
        """Trajectories t0..t1−1 into ``out`` (each thread has its own work arrays and counters)."""
        st = np.zeros(_N_STATS, dtype=np.int64)
        work = (
            np.zeros(16, dtype=np.uint32),
            np.zeros(3, dtype=np.int64),
            np.zeros((2, max(m, 4)), dtype=np.int64),
            np.zeros((4, max(m, 64))),
            np.zeros((6, n_rows), dtype=np.int64),
            np.zeros((8, 3)),
            np.zeros((40, 3)),
            np.zeros(8, dtype=np.int64),
            np.zeros(_reg.N_REGION),
            np.zeros((2, max_len), dtype=np.int64),
            np.zeros(_reg.STACK, dtype=np.int64),
            np.zeros(8),
        )
        a0, a1 = int(offsets[t0]), int(offsets[t1])
        _run(
            flat[a0:a1],
            offsets[t0 : t1 + 1] - offsets[t0],
            kind,
            key,
            np.int64(first_stream + t0),
            *consts,
            anchors[t0:t1] if anchors.shape[0] == n_traj else anchors,
            *region,
            out[a0:a1],
            st,
            *prop,
            *work,
        )
        return st

    n_jobs = max(1, min(int(n_jobs), n_traj))
    if n_jobs == 1:
        stats += run_chunk(0, n_traj)
    else:
        from concurrent.futures import ThreadPoolExecutor

        # contiguous chunks of about equal point counts, a few per thread for balance
        n_chunks = min(n_traj, 4 * n_jobs)
        cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], n_chunks + 1)).astype(np.int64)
        cuts[0], cuts[-1] = 0, n_traj
        cuts = np.unique(np.clip(cuts, 0, n_traj))
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            for st in pool.map(run_chunk, cuts[:-1].tolist(), cuts[1:].tolist()):
                stats += st
    _LAST_STATS.clear()
    if COLLECT_STATS:
        _LAST_STATS.update({k: int(v) for k, v in zip(_STAT_NAMES, stats, strict=True)})
    return out
