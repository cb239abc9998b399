"""The fast path's spatial index and sampling domains (public: they depend on P and released values only).

Part of the fast path (:mod:`geoldp.trajectory._fast.driver`, whose docstring states the exactness argument):

* :class:`FastIndex` — the uniform grid over the gnomonic projection of P (CSR, cell-sorted), cached per
  PointSet by :func:`get_index`;
* the domain record of the samplers (``dq``, ``hp``, ``dint``, ``dflt``): :func:`dom_reset`,
  :func:`dom_region`, :func:`dom_sector`;
* :func:`ranges` — the grid runs of a superset U ⊇ D; :func:`pos_of` — the k-th element of those runs;
* :func:`member` — exact membership of D (the reference's kernels decide every point near a boundary);
* the counter slots (``ST_*``) every fast kernel adds to.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from geoldp._core.kernels import bearing_rad, haversine_rad, sector
from geoldp._core.kernels import jit as _jit  # the one kernel decorator
from geoldp.trajectory import _atp_region as _reg
from geoldp.trajectory._table_store import DemandCounts, points_digest

if TYPE_CHECKING:
    from geoldp._core.kernels import KernelInt
    from geoldp._core.pointset import PointSet

__all__ = [
    "DI_AP",
    "DI_NQ",
    "DI_NS",
    "DI_RC",
    "DI_REG",
    "N_STATS",
    "STAT_NAMES",
    "FastIndex",
    "dom_region",
    "dom_reset",
    "dom_sector",
    "get_index",
    "gnomonic",
    "member",
    "pos_of",
    "ranges",
]

# margins (see geoldp.trajectory._fast.driver)
_MG = 1e-11  # half-plane forms (dimensionless, ~ unit-vector components)
_MG_DOT = 1e-12  # region test p·a against cos(R̃/R)
_U_PAD = 1e-12  # gnomonic coordinate padding before flooring to columns
_MAX_CAP_COS = 0.5  # grid only when every point is within 60° of the centre direction
_POINTS_PER_CELL = 3.0

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
ST_REFINED = 12  # one slot per level of _reg.refine: coarse, without groups
N_STATS = 14
STAT_NAMES = (
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
    "refinements_coarse",  # refine's traversals at the coarse level
    "refinements_without_groups",  # ... and without groups
)


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

    def __init__(self, points: PointSet) -> None:
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
        self._kdtree: Any = points.tree  # P's own cKDTree over these unit vectors (built with its diameter)
        self._tree: _reg.Tree | None = None
        # ATP's public tables over P, by their public options: see _atp_table
        self._atp_tables: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._atp_demand = DemandCounts()  # copies asked for per table key (release sizes only)
        self._digest: str | None = None

    def tree(self) -> Any:
        """The quadtree of the ATP region (lazy; public: P only), or None without a grid."""
        if self._tree is None and self.use_grid:
            self._tree = _reg.build_tree(self)
        return self._tree

    def atp_table(self, key: tuple, make: Callable[..., Any] | None = None) -> Any:
        """ATP's public table, its key and band slots under ``key`` (P and public options only), or None.

        Built by ``make()`` if not cached. At most ``_ATP_TABLES`` are kept (the oldest is dropped).
        """
        tab = self._atp_tables.get(key)
        if tab is None and make is not None:
            with _ATP_TABLE_LOCK:  # concurrent calls on one P (threads, Dask) build it once
                tab = self._atp_tables.get(key)
                if tab is None:
                    tab = make()
                    if tab is not None:  # None: not built (the calls so far do not repay it)
                        while len(self._atp_tables) >= _ATP_TABLES:
                            self._atp_tables.pop(next(iter(self._atp_tables)))
                        self._atp_tables[key] = tab
        return tab

    def atp_demand(self, key: tuple, copies: int) -> int:
        """Count ATP copies asked for under ``key``; return the total.

        Add ``copies`` ATP copies asked for under ``key`` to this process's count; return the total (a
        count of released trajectories, which every release shows; see _atp_table.plan_tables).
        """
        total = self._atp_demand.get(key, 0) + int(copies)
        self._atp_demand[key] = total
        return total

    def digest(self) -> str:
        """SHA-256 of P's coordinates (names P's tables kept on disk; computed once)."""
        if self._digest is None:
            self._digest = points_digest(self.lam, self.phi)
        return self._digest

    def kdtree(self) -> Any:
        """The cKDTree over the unit vectors of P (:attr:`geoldp.PointSet.tree`; for the ATP anchor p_α)."""
        return self._kdtree


_INDEX_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_ATP_TABLES = 4  # ATP tables kept per index (one per budget ε and mapping in use)
_ATP_TABLE_LOCK = threading.Lock()


def get_index(points: PointSet) -> FastIndex:
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


# Random draws come from geoldp._core.randomness's ChaCha20 ``stream_*`` functions (imported above).


@_jit
def gnomonic(x: float, y: float, z: float, gf: np.ndarray, basis: np.ndarray) -> tuple[Any, ...]:
    w = x * basis[0, 0] + y * basis[0, 1] + z * basis[0, 2]
    u = (x * basis[1, 0] + y * basis[1, 1] + z * basis[1, 2]) / w
    v = (x * basis[2, 0] + y * basis[2, 1] + z * basis[2, 2]) / w
    return u, v


# Domain description shared by the samplers (filled by the driver; no allocation per stage):
#   dq   float64[8, 3]  3-D normals q of the sector half-spaces p·q ≥ 0
#   hp   float64[8, 3]  the same half-spaces as gnomonic forms a·u + b·v + c ≥ 0
#   dint int64[8]       [n_planes, n_sectors, has_region, region_centre, apex_0, dir_0, apex_1, dir_1]
#   dflt float64[N_REGION] the copy's region record (geoldp.trajectory._atp_region)
DI_NQ = 0
DI_NS = 1
DI_REG = 2
DI_RC = 3
DI_AP = 4


@_jit
def dom_reset(dint: np.ndarray) -> None:
    dint[DI_NQ] = 0
    dint[DI_NS] = 0
    dint[DI_REG] = 0


@_jit
def dom_region(dint: np.ndarray, centre: KernelInt) -> None:
    """Add Ω around ``centre``; its radius (an interval until resolved) is the copy's region record."""
    dint[DI_REG] = 1
    dint[DI_RC] = centre


@_jit
def dom_sector(
    dq: np.ndarray,
    hp: np.ndarray,
    dint: np.ndarray,
    apex: KernelInt,
    d: KernelInt,
    g: KernelInt,
    centred: bool,
    lam: np.ndarray,
    phi: np.ndarray,
    basis: np.ndarray,
) -> None:
    """Add GetPointSet(apex, d): exact test (apex, d) and its two bounding half-spaces."""
    k = dint[DI_NS]
    dint[DI_AP + 2 * k] = apex
    dint[DI_AP + 2 * k + 1] = d
    dint[DI_NS] = k + 1
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
    nh = dint[DI_NQ]
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
    dint[DI_NQ] = nh


# A numba kernel: exempt from C901, as splitting it into calls changes what numba compiles.
@_jit
def ranges(  # noqa: C901
    gf: np.ndarray,
    gi: np.ndarray,
    cell_start: np.ndarray,
    hp: np.ndarray,
    nh: KernelInt,
    has_disk: bool,
    du: float,
    dv: float,
    dl: float,
    lo: np.ndarray,
    hi: np.ndarray,
    cum: np.ndarray,
) -> tuple[Any, ...]:
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
def pos_of(k: int, n_runs: int, lo: np.ndarray, hi: np.ndarray, cum: np.ndarray) -> int:
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


# A numba kernel: exempt from C901, as splitting it into calls changes what numba compiles.
@_jit
def member(  # noqa: C901
    p: KernelInt,
    lam: np.ndarray,
    phi: np.ndarray,
    xyz: np.ndarray,
    dq: np.ndarray,
    dint: np.ndarray,
    dflt: np.ndarray,
    rp: Any,
    w: Any,
    g: KernelInt,
    centred: bool,
) -> bool:
    """Exact membership of P_p in Ω ∩ ⋂ GetPointSet(apex_k, dir_k) (the reference's kernels, argument order).

    Dot-product tests with margins decide the clear cases; only points within the margins of a
    boundary are decided by the kernels. ``dflt`` is the copy's region record, ``rp`` ATP's
    ``RegionPlan`` (both None for TP) and ``w`` the thread's ``Work`` (its traversal scratch).
    """
    x = xyz[p, 0]
    y = xyz[p, 1]
    z = xyz[p, 2]
    exact_reg = False
    # dflt is None without a region (TP): numba prunes both region branches, so TP compiles no ATP code
    if dflt is not None and dint[DI_REG] == 1:
        c = dint[DI_RC]
        dot = x * xyz[c, 0] + y * xyz[c, 1] + z * xyz[c, 2]
        # dflt is the region record of _atp_region: d(c, p) > R̃_hi → out, d(c, p) < R̃_lo → in
        if dot < dflt[_reg.F_COS_HI] - _MG_DOT:
            return False
        if dot <= dflt[_reg.F_COS_LO] + _MG_DOT and dflt[_reg.F_RES] == 0.0 and rp is not None:
            # p lies in the certified interval of R̃: first narrow it (coarse to fine, see _reg.refine)
            while True:
                level = _reg.refine(c, rp.region, rp.tol_pt, w.rstack, w.rwork, dflt)
                if level < 0:
                    break
                w.stats[ST_REFINED + level] += 1
                if dot < dflt[_reg.F_COS_HI] - _MG_DOT:
                    return False
                if dot > dflt[_reg.F_COS_LO] + _MG_DOT:
                    break
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
    for k in range(dint[DI_NQ]):
        v = x * dq[k, 0] + y * dq[k, 1] + z * dq[k, 2]
        if v < -_MG:
            return False
        if v <= _MG:
            exact_sec = True
    if dflt is not None and exact_reg:
        c = dint[DI_RC]
        if not (haversine_rad(lam[c], phi[c], lam[p], phi[p]) <= dflt[_reg.F_LO]):
            return False
    if exact_sec:
        for k in range(dint[DI_NS]):
            o = dint[DI_AP + 2 * k]
            if sector(bearing_rad(lam[o], phi[o], lam[p], phi[p]), g, centred) != dint[DI_AP + 2 * k + 1]:
                return False
    return True
