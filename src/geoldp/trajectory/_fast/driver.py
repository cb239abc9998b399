"""The numba fast path of TP, ATP and PointEM: exact sampling, no |P|×|P| memory.

:func:`perturb_fast` runs whole trajectories inside one ``numba.njit`` loop. It releases the same
distribution as the reference path (:mod:`geoldp.trajectory._reference`) — every stage output, hence the
final output — and uses the same deterministic helpers (kernels, calibration, granularity, budgets), but it
never builds a length-|P| probability vector when it can avoid it.

Randomness
----------
Trajectory ``i`` (0-based within the call) draws from the ChaCha20 stream ``first_stream + i`` under
``key``
(:mod:`geoldp._core.randomness`). The output of a trajectory therefore depends only on the key, its global
index and its data: chunking the input differently gives identical output. Within a trajectory the draws
are consumed in transcript order (ALGORITHM §5.9): copy A then copy B; per copy the anchor EM and radius SW
(ATP), the pivot EMs in ascending position, then per non-pivot its k-RR(s), left first, and its EM. Each
primitive consumes a *variable* number of draws (rejection sampling); this order is stable within a minor
version.

Exact samplers
--------------
* **EM over a domain D ⊆ P** (ALGORITHM §3.2). Weights w_p = exp(−ε′·d(x, P_p)/(2Δ)) ≤ 1 (the reference's
  log-weight expression and kernel). Phase 1: proposals uniform over a public superset U ⊇ D, accepted iff
  p ∈ D and u < w_p. After ``MAX_PROPOSALS`` failures (or when |U| ≤ ``_SMALL_DOMAIN``), phase 2 enumerates
  D exactly — which also decides emptiness, driving the fallback chain of §5.5 — then phase 3 proposes
  uniformly over the enumerated D with the same acceptance, and phase 4 (after ``MAX_PROPOSALS_D``
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
  midpoint and within angular distance h of the great circle through y_A, y_B with cos h ≥ cos A / cos B,
  A = (d(y_A, y_B) + τ + 3·err)/2R, B = d(y_A, y_B)/2R (for d(y_A, y_B) < 0.45πR; the proof is in
  ``merge._slab``): a strip a few centimetres wide for an arc of tens of kilometres. Only grid runs
  meeting that strip are scanned; points passing the dot-product slab test and a chord-distance test are
  evaluated with the kernel; y_A, y_B enter with s = d(y_A, y_B) (d(y, y) = 0 and d is symmetric bitwise).
  The tie-break is the reference's. Longer arcs or no grid: full scan.
* **ATP region** (§8.4–8.6): :mod:`geoldp.trajectory._atp_region`. ΔR is exact (branch and bound on a
  quadtree of the grid, kernel on the near-maximal points); η is certified in an interval by one traversal
  of the quadtree (exact |C|, Taylor sums with a rigorous remainder), mapped to an interval of R̃ (calibrate
  is monotone in η), and Ω is settled lazily: a membership test inside the R̃ interval triggers the exact
  O(|P|) pass. Every decision equals the one with the exact R̃, so Ω is the reference's (up to the ~1e−8 m
  rounding of η's chord sums, as before); supersets of Ω use the upper end of the interval. Nothing about
  the anchors drawn outlives the call.

Modules
-------
This module is the driver (:func:`perturb_fast`, the per-length tables, the threads and the compiled loop
over trajectories); the kernels it calls live in one module per concern of the package:

* :mod:`geoldp.trajectory._fast.grid` — the spatial index (:class:`FastIndex`), domains, supersets,
  membership;
* :mod:`geoldp.trajectory._fast.sampling` — the EM, k-RR and SW samplers on the ChaCha20 streams;
* :mod:`geoldp.trajectory._fast.merge` — the merge of the two copies;
* :mod:`geoldp.trajectory._fast.anchor` — ATP's anchor p_α;
* :mod:`geoldp.trajectory._atp_region` — ATP's region Ω (ΔR, certified η, lazy resolution).

Implementation notes: the numba functions that do not allocate are compiled with ``_nrt=False`` (reference
counting of array arguments made every call pay atomic operations: ~4× slower), and the ChaCha20 block is
computed in registers (same words as :mod:`geoldp._core.randomness`, tested).

Memory is O(|P| + total points): the grid (CSR, a few length-|P| arrays), the ATP quadtree (12 float64 per
node, ~0.45 nodes per point) and six length-|P| work arrays per thread (allocated lazily by the OS: only
the part an enumeration touches is committed).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NamedTuple

import numba
import numpy as np

from geoldp._core.aot import COMPILER_ADVICE, Entry, array
from geoldp._core.aot import enabled as _aot_enabled
from geoldp._core.aot import installed as _aot_installed
from geoldp._core.kernels import EARTH_RADIUS_M, bearing_rad, haversine_rad, sector
from geoldp._core.kernels import jit as _jit  # the one kernel decorator
from geoldp._core.randomness import stream_reset
from geoldp.budget import ReleaseCache
from geoldp.trajectory import _atp_region as _reg
from geoldp.trajectory import _atp_table as _tab
from geoldp.trajectory import calibration as _cal
from geoldp.trajectory._fast.anchor import nearest_anchors
from geoldp.trajectory._fast.grid import (
    DI_NQ,
    N_STATS,
    ST_CAL_HIT,
    ST_CAL_MISS,
    ST_FB_LEFT,
    ST_FB_REGION,
    STAT_NAMES,
    FastIndex,
    dom_region,
    dom_reset,
    dom_sector,
    get_index,
    gnomonic,
    ranges,
)
from geoldp.trajectory._fast.merge import merge_position
from geoldp.trajectory._fast.sampling import (
    MAX_PROPOSALS,
    MAX_PROPOSALS_D,
    em,
    em_full,
    krr,
    sw_bucket,
    sw_continuous,
)
from geoldp.trajectory.merge import TAU_FACTOR
from geoldp.trajectory.split import is_pivot

if TYPE_CHECKING:
    from geoldp._core.kernels import KernelInt
    from geoldp._core.pointset import PointSet

__all__ = ["FastIndex", "get_index", "kernel_state", "last_stats", "perturb_fast", "precompute"]

# Counters of the last call, kept only when a benchmark opts in: some of them (proposals, fallbacks) are
# aggregates of the private inputs, so by default nothing is kept after a call.
COLLECT_STATS = False
_LAST_STATS: dict = {}
# Kernel kinds (PointEM 0, TP 1, ATP 2) that have run in this process: their compiled code is in memory.
_WARM: set[int] = set()
# (phase-1, phase-3) proposal limits; tests set them to force the exact branches.
_prop = [MAX_PROPOSALS, MAX_PROPOSALS_D]
# ATP region: the Taylor remainder accepted per point in the certified η interval (metres), and whether to
# settle every region exactly at once (tests compare it with the lazy default: same output)
_REGION_TOL_PT = 2.0
_EAGER_REGION = [False]


def last_stats() -> dict:
    """Counters of the last :func:`perturb_fast` call while ``COLLECT_STATS`` is set (benchmarks only)."""
    return dict(_LAST_STATS)


# ----------------------------------------------------------------------------------------------------
# kernel inputs (records; numba types each as a named tuple)
# ----------------------------------------------------------------------------------------------------


class KernelIndex(NamedTuple):
    """P's arrays in the layout of :class:`FastIndex` (read-only in the kernels)."""

    lam: np.ndarray
    phi: np.ndarray
    xyz: np.ndarray
    sxyz: np.ndarray
    order: np.ndarray
    gf: np.ndarray
    gi: np.ndarray
    basis: np.ndarray
    cell_start: np.ndarray
    delta: float


class CopyPlan(NamedTuple):
    """The two-copy stages of TP and ATP: merge tolerance, sectors, options and per-length budgets."""

    tau: float
    g: int
    centred: bool
    balanced: bool
    nb_fallback: bool
    eps_piv: np.ndarray  # float64[n_max + 1, 2] (length, copy)
    eps_np: np.ndarray
    lie: np.ndarray


class RegionPlan(NamedTuple):
    """ATP's anchor and region stages: anchors p_α, P's region index, options and per-length budgets."""

    anchors: np.ndarray
    region: _reg.RegionIndex  # P's arrays and quadtree, as the region kernels read them
    tol_pt: float
    eager: bool
    eps_anc: np.ndarray
    eps_rad: np.ndarray
    sw_b: np.ndarray
    eps_dec: np.ndarray
    buckets: int
    continuous: bool
    input_mapping: bool
    tables: np.ndarray  # float64[n, m, w] public tables over P (_atp_table), maybe none
    table_keys: np.ndarray  # float64[n, 2] their (SW half-width, radius budget)
    table_slots: np.ndarray  # int64[n, 12, 12] their band slots


class Work(NamedTuple):
    """One thread's scratch arrays and counters (no allocation inside the kernels)."""

    buf: np.ndarray  # uint32[16] ChaCha20 block
    state: np.ndarray  # int64[3] stream state
    iwork: np.ndarray  # int64[2, m]: index lists; the current sector apexes and directions
    fwork: np.ndarray  # float64[4, m + 64]: weights, merge scores
    rows: np.ndarray  # int64[6, n_rows]: grid runs of Ω and of the current domain
    dq: np.ndarray  # float64[8, 3] sector half-spaces
    hp: np.ndarray  # float64[40, 3] their gnomonic forms and polygon scratch
    dint: np.ndarray  # int64[8] domain description
    yy: np.ndarray  # int64[2, max length] the two copies
    rstack: np.ndarray  # int64[_reg.STACK] quadtree traversal stack
    rwork: np.ndarray  # float64[8]
    stats: np.ndarray  # int64[N_STATS]


def kernel_index(index: FastIndex) -> KernelIndex:
    """The :class:`KernelIndex` record of P's spatial index."""
    return KernelIndex(*(getattr(index, name) for name in KernelIndex._fields))


def new_work(m: int, n_rows: int, max_len: int) -> Work:
    """Fresh scratch arrays of one thread: |P| = ``m``, ``n_rows`` grid rows, lengths ≤ ``max_len``."""
    return Work(
        np.zeros(16, dtype=np.uint32),
        np.zeros(3, dtype=np.int64),
        np.zeros((2, max(m, 4)), dtype=np.int64),
        np.zeros((4, max(m, 64))),
        np.zeros((6, n_rows), dtype=np.int64),
        np.zeros((8, 3)),
        np.zeros((40, 3)),
        np.zeros(8, dtype=np.int64),
        np.zeros((2, max_len), dtype=np.int64),
        np.zeros(_reg.STACK, dtype=np.int64),
        np.zeros(8),
        np.zeros(N_STATS, dtype=np.int64),
    )


# ----------------------------------------------------------------------------------------------------
# the driver
# ----------------------------------------------------------------------------------------------------
#
# Compile time: numba specialises a function per argument *type*, and a constant argument in a call from
# compiled code is typed as a literal (``Literal[int](0)``), which would compile a callee once per constant.
# So constants passed to kernels go through ``np.int64(...)`` / ``np.bool_(...)`` (plain types). A record that
# a mechanism does not use is None: numba prunes the branches on ``x is None`` before typing, so PointEM
# compiles only the EM over P and TP none of ATP's anchor and region code.


@_jit
def _run(
    flat: np.ndarray,
    offsets: np.ndarray,
    key: np.ndarray,
    first_stream: KernelInt,
    eps_single: np.ndarray,
    prop1: KernelInt,
    prop2: KernelInt,
    out: np.ndarray,
    ix: KernelIndex,
    cp: CopyPlan,
    rp: RegionPlan,
    w: Work,
    dflt: np.ndarray,
) -> None:
    """Perturb every trajectory.

    ``cp`` (two copies) is None for PointEM, ``rp`` (ATP's anchor and region)
    and ``dflt`` (the copy's region record) are None for TP and PointEM. All arrays come from Python
    (this function runs without NRT).
    """
    lam = ix.lam
    phi = ix.phi
    for t in range(offsets.shape[0] - 1):
        s0 = offsets[t]
        n = offsets[t + 1] - s0
        stream_reset(w.state, first_stream + t)
        if cp is None or n == 1:
            eps = eps_single[n]
            for i in range(n):
                x = flat[s0 + i]
                out[s0 + i] = em_full(lam[x], phi[x], eps, ix, w, key, prop1, prop2)
            continue
        _copies(flat, s0, n, t, key, prop1, prop2, ix, cp, rp, w, dflt)
        for i in range(n):
            out[s0 + i] = merge_position(w.yy[0, i], w.yy[1, i], ix, cp, w)


# A numba kernel: exempt from C901, as splitting it into calls changes what numba compiles.
@_jit
def _copies(  # noqa: C901
    flat: np.ndarray,
    s0: KernelInt,
    n: KernelInt,
    t: KernelInt,
    key: np.ndarray,
    prop1: KernelInt,
    prop2: KernelInt,
    ix: KernelIndex,
    cp: CopyPlan,
    rp: RegionPlan,
    w: Work,
    dflt: np.ndarray,
) -> None:
    """Copies A and B of trajectory ``t`` (``flat[s0:s0 + n]``, n ≥ 2) into ``w.yy``, in transcript order."""
    lam = ix.lam
    phi = ix.phi
    xyz = ix.xyz
    m = lam.shape[0]
    g = cp.g
    centred = cp.centred
    buf = w.buf
    state = w.state
    stats = w.stats
    dint = w.dint
    yy = w.yy
    s_apex = w.iwork[1, 0:2]
    s_dir = w.iwork[1, 2:4]
    # runs for Ω (kept for a whole copy)
    o_lo = w.rows[0]
    o_hi = w.rows[1]
    o_cum = w.rows[2]
    for c in range(2):
        dom_reset(dint)
        has_reg: np.bool_ = np.bool_(False)
        reg_c = np.int64(0)
        o_runs = np.int64(0)
        o_total = np.int64(m)
        o_full: np.bool_ = np.bool_(True)
        if rp is not None:
            # anchor EM over P from P_{p_α}
            pa = rp.anchors[t]
            ahat = em_full(lam[pa], phi[pa], rp.eps_anc[n, c], ix, w, key, prop1, prop2)
            b = rp.sw_b[n, c]
            stats[ST_CAL_MISS] += 1
            jt = _tab.find(rp.table_keys, b, rp.eps_rad[n, c])
            dr = _tab.anchor_radius(jt, rp.tables, ahat, rp.region, w.rstack)
            r_max = 0.0
            for i in range(n):
                x = flat[s0 + i]
                d = haversine_rad(lam[ahat], phi[ahat], lam[x], phi[x])
                if d > r_max:
                    r_max = d
            r = _cal.atp_radius_input(r_max, dr)
            if rp.continuous:
                r_hat = sw_continuous(r, rp.eps_rad[n, c], b, key, buf, state)
            else:
                jb = sw_bucket(r, rp.eps_rad[n, c], b, rp.buckets, key, buf, state)
                r_hat = _cal.sw_bucket_midpoint(jb, b, rp.buckets)
            cr = _reg.CopyRegion(r_hat, b, rp.eps_rad[n, c], rp.eps_dec[n, c], dr, rp.input_mapping)
            _tab.region_setup(
                jt, rp.tables, rp.table_slots, ahat, rp.region, cr, rp.tol_pt, rp.eager, w.rstack, w.rwork,
                dflt,
            )  # fmt: skip
            has_reg = np.bool_(True)
            reg_c = ahat
            dom_region(dint, ahat)
            if ix.gi[2] == 1:
                du, dv = gnomonic(xyz[ahat, 0], xyz[ahat, 1], xyz[ahat, 2], ix.gf, ix.basis)
                dl = ix.gf[4] * (dflt[_reg.F_SUPER] / EARTH_RADIUS_M) * (1.0 + 1e-9) + 1e-12
                o_runs, o_total = ranges(
                    ix.gf,
                    ix.gi,
                    ix.cell_start,
                    w.hp,
                    np.int64(0),
                    np.bool_(True),
                    du,
                    dv,
                    dl,
                    o_lo,
                    o_hi,
                    o_cum,
                )
                o_full = np.bool_(False)
        # pivots (copy A = index 0: even 1-based positions; copy B: odd), EM over Ω
        for i in range(n):
            if not is_pivot(c, i + 1):
                continue
            x = flat[s0 + i]
            yy[c, i] = em(
                lam[x], phi[x], cp.eps_piv[n, c], ix, cp, w, o_full, o_runs, np.int64(0), o_total, dflt, rp,
                key, prop1, prop2,
            )  # fmt: skip
        # non-pivots: k-RR of the direction from each neighbouring perturbed pivot, then EM on the domain
        for i in range(n):
            if is_pivot(c, i + 1):
                continue
            x = flat[s0 + i]
            ns = np.int64(0)
            for side in range(2):
                k = i - 1 if side == 0 else i + 1
                if k < 0 or k >= n:
                    continue
                o = yy[c, k]
                true = sector(bearing_rad(lam[o], phi[o], lam[x], phi[x]), g, centred)
                s_apex[ns] = o
                s_dir[ns] = krr(true, g, cp.lie[n, c], key, buf, state)
                ns += 1
            eps = cp.eps_np[n, c]
            # 1) the intersection (Algorithm 1); then, if it is empty, 2) the left neighbour's set and 3) the
            # right neighbour's set
            tries = 3 if cp.nb_fallback and ns == 2 else 1
            y = np.int64(-1)
            for attempt in range(tries):
                n_sets = ns if attempt == 0 else np.int64(1)
                first = np.int64(max(attempt - 1, 0))
                y = _em_sectors(
                    lam[x], phi[x], eps, ix, cp, w, dflt, rp, n_sets, s_apex, s_dir, first, has_reg, reg_c,
                    key, prop1, prop2,
                )  # fmt: skip
                if y >= 0:
                    if attempt > 0:
                        stats[ST_FB_LEFT + attempt - 1] += 1
                    break
            if y < 0:
                # 4) the region Ω (P for TP)
                stats[ST_FB_REGION] += 1
                dom_reset(dint)
                if has_reg:
                    dom_region(dint, reg_c)
                y = em(
                    lam[x],
                    phi[x],
                    eps,
                    ix,
                    cp,
                    w,
                    o_full,
                    o_runs,
                    np.int64(0),
                    o_total,
                    dflt,
                    rp,
                    key,
                    prop1,
                    prop2,
                )
            yy[c, i] = y
        if dflt is not None:
            if has_reg and dflt[_reg.F_RES] == 1.0:
                stats[ST_CAL_HIT] += 1
        dom_reset(dint)


@_jit
def _em_sectors(
    xl: float,
    xp: float,
    eps: float,
    ix: KernelIndex,
    cp: CopyPlan,
    w: Work,
    dflt: np.ndarray,
    rp: RegionPlan,
    ns: KernelInt,
    s_apex: np.ndarray,
    s_dir: np.ndarray,
    first: KernelInt,
    has_reg: bool,
    reg_c: KernelInt,
    key: np.ndarray,
    prop1: KernelInt,
    prop2: KernelInt,
) -> KernelInt:
    """EM over Ω ∩ the ``ns`` sector sets starting at ``s_apex[first]`` (−1 iff that set is empty)."""
    m = ix.lam.shape[0]
    dint = w.dint
    dom_reset(dint)
    if has_reg:
        dom_region(dint, reg_c)
    for k in range(ns):
        dom_sector(
            w.dq, w.hp, dint, s_apex[first + k], s_dir[first + k], cp.g, cp.centred, ix.lam, ix.phi, ix.basis
        )
    use_grid = ix.gi[2] == 1
    n_runs = np.int64(0)
    total = np.int64(m)
    if use_grid:
        du = 0.0
        dv = 0.0
        dl = 0.0
        if dflt is not None:
            if has_reg:
                du, dv = gnomonic(ix.xyz[reg_c, 0], ix.xyz[reg_c, 1], ix.xyz[reg_c, 2], ix.gf, ix.basis)
                dl = ix.gf[4] * (dflt[_reg.F_SUPER] / EARTH_RADIUS_M) * (1.0 + 1e-9) + 1e-12
        n_runs, total = ranges(
            ix.gf,
            ix.gi,
            ix.cell_start,
            w.hp,
            dint[DI_NQ],
            has_reg,
            du,
            dv,
            dl,
            w.rows[3],
            w.rows[4],
            w.rows[5],
        )
    return em(xl, xp, eps, ix, cp, w, not use_grid, n_runs, np.int64(3), total, dflt, rp, key, prop1, prop2)


def _run_exports() -> dict:
    """The driver's exports, one per mechanism: the exact types :func:`perturb_fast` passes."""
    T = numba.types
    F1, F2 = array(T.float64, 1), array(T.float64, 2)
    I1, I2 = array(T.int64, 1), array(T.int64, 2)
    U1 = array(T.uint32, 1)
    RF1, RF2 = array(T.float64, 1, readonly=True), array(T.float64, 2, readonly=True)  # P's arrays
    f8, i8, b1 = T.float64, T.int64, T.boolean
    index = T.NamedTuple([RF1, RF1, RF2, F2, I1, F1, I1, F2, I1, f8], KernelIndex)
    copies = T.NamedTuple([f8, i8, b1, b1, b1, F2, F2, F2], CopyPlan)
    RF3 = array(T.float64, 3, readonly=True)  # the ATP tables (cached read-only)
    RF2b, RI3 = array(T.float64, 2, readonly=True), array(T.int64, 3, readonly=True)
    region = T.NamedTuple(
        [I1, _reg.REGION_INDEX_TYPE, f8, b1, F2, F2, F2, F2, i8, b1, b1, RF3, RF2b, RI3], RegionPlan
    )
    work = T.NamedTuple([U1, I1, I2, F2, I2, F2, F2, I1, I2, I1, F1, I1], Work)
    # _run(flat, offsets, key, first_stream, eps_single, prop1, prop2, out, ix, | cp, rp, w, dflt)
    head = (I1, I1, U1, i8, F1, i8, i8, I1, index)
    return {
        "run_pointem": T.void(*head, T.none, T.none, work, T.none),
        "run_tp": T.void(*head, copies, T.none, work, T.none),
        "run_atp": T.void(*head, copies, region, work, F1),
    }


# Python calls the driver through its compiled exports when installed, or numba's JIT
_RUN = Entry(_run, _run_exports())


# ----------------------------------------------------------------------------------------------------
# Python entry point
# ----------------------------------------------------------------------------------------------------


# Per (mechanism, length): a small call need not redo the exact budget arithmetic. A length stays here only
# once a release with it has been returned (see geoldp.budget.ReleaseCache).
_LENGTH_ROWS = ReleaseCache(maxsize=1024)


def _length_row(mechanism: Any, n: int) -> tuple[float, Any]:
    """One length's row of :func:`_tables`: ``(eps_single, None)`` or ``(0.0, (row of copy A, of copy B))``.

    A pure function of the mechanism's configuration (frozen, compared field by field) and the length.
    """
    from geoldp import mechanisms as _mech

    plan = mechanism.sampler_plan
    if plan.single(n):
        return float(mechanism.single_budget(n)), None
    g = int(plan.granularity)
    rows = []
    for copy in ("A", "B"):
        bud = mechanism.copy_budgets(n, copy)
        anc = rad = b = dec = 0.0
        if plan.anchor_region:
            anc, rad = bud.anchor, bud.radius
            b = float(_mech.sw_half_width(bud.radius))
            dec = mechanism.decay_budget(n, copy)
        rows.append(
            (
                bud.point_pivot,
                bud.point_nonpivot,
                _mech.krr_lie_probability(g, bud.direction),
                anc,
                rad,
                b,
                dec,
            )
        )
    return 0.0, tuple(rows)


def _tables(mechanism: Any, lengths: np.ndarray, m: int) -> tuple[Any, ...]:
    """Per-length stage budgets, k-RR lie probabilities and SW half-widths (the reference's helpers)."""
    n_max = int(lengths.max()) if lengths.size else 1
    eps_single = np.zeros(n_max + 1)
    # (eps_piv, eps_np, lie, eps_anc, eps_rad, sw_b, eps_dec)[n, copy]: the columns of _length_row
    per_copy = np.zeros((7, n_max + 1, 2))
    for n in np.unique(lengths):
        n = int(n)
        single, copies = _LENGTH_ROWS.get((mechanism, n), _length_row, mechanism, n)
        if copies is None:
            eps_single[n] = single
            continue
        for c, row in enumerate(copies):
            per_copy[:, n, c] = row
    return (int(mechanism.sampler_plan.granularity), eps_single, *per_copy)


def kernel_state(mechanism: Any) -> str:
    """What the first fast-path call of ``mechanism`` in this process waits for (for progress reports).

    Returns
    -------
    str
        ``"ready"`` (its kernel already ran in this process), ``"cached"`` (the kernels compiled at
        install time are in use, see :mod:`geoldp._core.aot`, or numba's on-disk cache has an index for the
        driver kernel: loading takes a fraction of a second to a second) or ``"compile"`` (no cache: numba
        compiles the kernels, which takes seconds to tens of seconds once per installation and version).
    """
    if mechanism.sampler_plan.kernel_kind in _WARM:
        return "ready"
    if _aot_enabled():  # compiled at install time: loading them takes a fraction of a second
        return "cached"
    try:  # numba's cache object of the driver; its layout is numba's, so any surprise means "unknown"
        index_path = _run._cache._cache_file._index_path
    except AttributeError:
        return "compile"
    return "cached" if os.path.exists(index_path) else "compile"


def warn_if_compiling(mechanism: Any) -> None:
    """Warn, once per process, that this first call compiles the kernels (never installed), with the fix.

    Silent where the user turned them off (``GEOLDP_AOT=0``) or where numba's cache already holds them.
    """
    if _COMPILE_WARNED or os.environ.get("GEOLDP_AOT", "1") == "0" or _aot_installed():
        return
    if kernel_state(mechanism) != "compile":
        return
    _COMPILE_WARNED.append(True)
    import warnings

    from geoldp._core.errors import GeoLDPWarning

    warnings.warn(
        "geoldp's compiled kernels are not installed (no C compiler when geoldp was installed?), so numba "
        "compiles them now: this first call waits about 10-40 s, once per installation (the result is "
        f"cached). To skip that wait: {COMPILER_ADVICE}.",
        GeoLDPWarning,
        stacklevel=5,
    )


_COMPILE_WARNED: list[bool] = []


def precompute(points: PointSet, mechanism: Any, n_jobs: int = 1) -> bool:
    """Build the public structures of ``points`` that ``mechanism``'s releases read.

    P's spatial index and, for ATP, its quadtree and public tables over P
    (:mod:`geoldp.trajectory._atp_table`; none above ``TABLE_MAX_POINTS`` points; built with ``n_jobs``
    threads). They are cached with the point set, as a release would cache them, and the tables on disk.
    Returns whether ATP's tables are ready. Reads P and the mechanism's public configuration only.
    """
    index = get_index(points)
    plan = mechanism.sampler_plan
    if plan.kernel_kind != 2:
        return False
    # the radius budget is the same share of a copy's budget for every length: length 2 gives every call's key
    lengths = np.array([2], dtype=np.int64)
    *_, eps_rad, sw_b, _ = _tables(mechanism, lengths, index.m)
    tables, n_wanted = _atp_structures(index, mechanism, sw_b, eps_rad, lengths, None, n_jobs)
    return tables[0].shape[0] == n_wanted


def _atp_structures(
    index: FastIndex,
    mechanism: Any,
    sw_b: np.ndarray,
    eps_rad: np.ndarray,
    lengths: np.ndarray,
    n_traj: int | None,
    n_jobs: int,
) -> tuple[Any, int]:
    """ATP's structures of P (quadtree, k-d tree) and its public tables.

    The tables (:func:`_atp_table.plan_tables`) for a call of ``n_traj`` trajectories (``None``: built
    wherever one is kept; ``n_jobs`` threads), and how many the call's budgets ask for. Built whatever the
    input: their presence says nothing of it.
    """
    index.tree()
    index.kdtree()
    budgets = _tab.half_widths(mechanism, sw_b, eps_rad, lengths)
    tables = _tab.plan_tables(
        index, budgets, n_traj, mechanism.sampler_plan, float(_REGION_TOL_PT), n_jobs=n_jobs
    )
    return tables, budgets.shape[0]


def perturb_fast(
    flat_idx: np.ndarray,
    offsets: np.ndarray,
    points: PointSet,
    mechanism: Any,
    key: np.ndarray,
    first_stream: int,
    n_jobs: int = 1,
) -> np.ndarray:
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
    stats = np.zeros(N_STATS, dtype=np.int64)
    if n_traj <= 0:
        return out
    lengths = np.diff(offsets)
    plan = mechanism.sampler_plan
    kind = plan.kernel_kind
    if kind not in _WARM:
        warn_if_compiling(mechanism)
    g, eps_single, eps_piv, eps_np, lie, eps_anc, eps_rad, sw_b, eps_dec = _tables(mechanism, lengths, m)
    ix = kernel_index(index)
    cp = None  # PointEM: no copies (its kernel compiles only the EM over P)
    if kind >= 1:
        cp = CopyPlan(
            TAU_FACTOR * index.delta,
            g,
            bool(plan.centred),
            bool(plan.balanced),
            bool(plan.neighbour_fallback),
            eps_piv,
            eps_np,
            lie,
        )
    if kind == 2:
        tables, _ = _atp_structures(index, mechanism, sw_b, eps_rad, lengths, n_traj, n_jobs)
    rp = None  # TP and PointEM (and ATP without a trajectory of length ≥ 2): no anchor, no region
    if kind == 2 and np.any(lengths >= 2):
        rp = RegionPlan(
            nearest_anchors(flat, offsets, index, plan.vector_mean),
            _reg.region_index(index),
            float(_REGION_TOL_PT),
            bool(_EAGER_REGION[0]),
            eps_anc,
            eps_rad,
            sw_b,
            eps_dec,
            int(plan.sw_buckets),
            bool(plan.continuous_sw),
            bool(plan.input_mapping),
            *tables,
        )
    n_rows = int(index.gi[1])
    max_len = int(lengths.max())
    prop1, prop2 = int(_prop[0]), int(_prop[1])

    def run_chunk(t0: int, t1: int) -> np.ndarray:
        """Trajectories t0..t1−1 into ``out`` (each thread has its own work arrays and counters)."""
        w = new_work(m, n_rows, max_len)
        a0, a1 = int(offsets[t0]), int(offsets[t1])
        _RUN(
            flat[a0:a1],
            offsets[t0 : t1 + 1] - offsets[t0],
            key,
            np.int64(first_stream + t0),
            eps_single,
            prop1,
            prop2,
            out[a0:a1],
            ix,
            cp,
            None if rp is None else rp._replace(anchors=rp.anchors[t0:t1]),
            w,
            None if rp is None else np.zeros(_reg.N_REGION),
        )
        return w.stats

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
    _WARM.add(kind)
    _LAST_STATS.clear()
    if COLLECT_STATS:
        _LAST_STATS.update({k: int(v) for k, v in zip(STAT_NAMES, stats, strict=True)})
    return out
