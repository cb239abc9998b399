"""A public table over P for ATP's region: ΔR and the certified η interval of every anchor and band.

ATP's region of a copy (ALGORITHM §8.4–8.6) depends on the released anchor â, the released SW value r̂
and public options only. r̂ enters the calibration centre η only through the candidate band: the
smallest and largest test value v_k = k/10 within b of r̂ (k_lo, k_hi), whose distances D(v_k) scale with
ΔR(â). So for one (P, b, ε_R, mapping) the fast path's whole η stage is a function of (â, k_lo, k_hi),
of which only a few pairs occur (about 20 for the default 1,024 SW buckets): the table holds, per point a,

``[ΔR(a), then per band slot: the η interval the quadtree traversal certifies (η_lo, η_hi)]``

(or the exact η where P has no grid, when the fast path computes η exactly). The kernel reads them instead
of computing them, and builds the region record from them with the same code
(:func:`geoldp.trajectory._atp_region.region_from_eta`), so the record, every membership decision and the
superset the samplers draw proposals from are bit for bit today's: releases are identical with and without
the table. A band the table has no slot for (possible with continuous SW output) takes the traversal.

The table is public like the grid index (it depends on P and public options only) and is cached with
P's fast index, and on disk for later processes (:mod:`geoldp.trajectory._table_store`). Building it costs
one traversal per point and band slot, so it is built only once the calls over P repay it, counted across
calls (:func:`wants_table`, :func:`plan_tables`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numba
import numpy as np

from geoldp._core.aot import Entry, array
from geoldp._core.kernels import jit as _jit  # the one kernel decorator
from geoldp.trajectory import _atp_region as _reg
from geoldp.trajectory import _table_store as _store
from geoldp.trajectory import calibration as _cal

if TYPE_CHECKING:
    from geoldp._core.kernels import KernelInt
    from geoldp.trajectory._atp_region import CopyRegion, RegionIndex
    from geoldp.trajectory._fast.grid import FastIndex

__all__ = [
    "ENABLED",
    "anchor_radius",
    "band_pairs",
    "build_table",
    "find",
    "half_widths",
    "plan_tables",
    "region_setup",
    "wants_table",
]

#: [False] turns the tables off (tests and benchmarks compare both routes: the output is the same)
ENABLED = [True]
# Where the table pays: its build costs about |P| × slots × _SLOT_US·√|P| µs (one traversal per anchor
# shared by every band), and it saves a copy about _SAVED_US·√|P| µs (its traversal and ΔR search), both
# measured by benchmarks/profile_atp.py --table on one core (|P| = 1,000 to 60,000; above 50,000 points the
# straddling groups make both smaller, the ratio smaller still). It is built when the estimated build is
# at most _FREE_S seconds or the copies of the calls so far repay it, and never above TABLE_MAX_POINTS
# points (34 MiB at 10⁵; the build grows like |P|^1.5).
TABLE_MAX_POINTS = 100_000
_FREE_S = 0.05
_SLOT_US = 0.16
_SAVED_US = 0.45
# a thread of the build fills at least this many rows (fewer: the threads cost more than they save)
_MIN_ROWS_PER_JOB = 2_000


def _estimated_build_s(m: int, n_slots: int) -> float:
    return m * n_slots * _SLOT_US * math.sqrt(m) * 1e-6


def wants_table(m: int, n_copies: int | None, n_slots: int = 24) -> bool:
    """Whether building the table for |P| = ``m`` pays for calls with ``n_copies`` ATP copies in all.

    ``None``: asked for ahead of the calls, by :func:`geoldp.trajectory.precompute`: wherever one is kept.
    """
    if m > TABLE_MAX_POINTS:
        return False
    if n_copies is None:
        return True
    return _estimated_build_s(m, n_slots) <= _FREE_S or n_copies * _SAVED_US >= m * n_slots * _SLOT_US


def band_pairs(b: float, buckets: int, continuous: bool) -> np.ndarray:
    """The (k_lo, k_hi) bands the released values r̂ can select: int64[n, 2] ((−1, −1): no test value).

    Bucketed SW output: exactly those of the ``buckets`` midpoints. Continuous output: those of a fine grid
    of r̂ and of every band edge's neighbours (a band missed here just takes the traversal).
    """
    # the kernels' own arithmetic run as Python (IEEE doubles alike; nothing to compile at first use)
    midpoint = _cal.sw_bucket_midpoint.py_func
    band = _cal.candidate_range.py_func
    if continuous:
        edges = np.array([k / 10.0 + s * b for k in range(11) for s in (-1.0, 1.0)])
        near = np.concatenate([np.nextafter(edges, -np.inf), edges, np.nextafter(edges, np.inf)])
        values = np.concatenate([np.linspace(-b, 1.0 + b, 8193), near])
    else:
        values = np.array([midpoint(j, b, buckets) for j in range(buckets)])
    pairs = {band(float(r), b) for r in values}
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)


class TableWork(NamedTuple):
    """Scratch arrays of the table's build (numba types it as a named tuple)."""

    stack: np.ndarray  # int64[_reg.STACK] traversal stack
    work: np.ndarray  # float64[8]
    has_k: np.ndarray  # bool[slots] each band slot's test-value flag and distances
    d_lo: np.ndarray  # float64[slots]
    d_hi: np.ndarray  # float64[slots]
    groups: np.ndarray  # int64[bands, _reg.STACK] carried groups (see _reg.eta_intervals)
    acc: np.ndarray  # float64[bands, _reg.ACC_WIDTH]
    eta: np.ndarray  # float64[slots, 2] the η intervals of one anchor


def _table_work(n_slots: int) -> TableWork:
    nb = min(n_slots, _reg.MAX_BANDS)
    return TableWork(
        np.zeros(_reg.STACK, dtype=np.int64), np.zeros(8), np.zeros(n_slots, dtype=np.bool_),
        np.zeros(n_slots), np.zeros(n_slots), np.zeros((nb, _reg.STACK), dtype=np.int64),
        np.zeros((nb, _reg.ACC_WIDTH)), np.zeros((n_slots, 2)),
    )  # fmt: skip


@numba.njit(cache=True, nogil=True)  # nogil: the build runs in threads (n_jobs)
def _build(
    ri: RegionIndex,
    b: float,
    eps_r: float,
    inp: bool,
    tol_pt: float,
    straddle: float,
    pairs: np.ndarray,
    a0: KernelInt,
    a1: KernelInt,
    tw: TableWork,
    out: np.ndarray,
) -> None:
    """Fill rows ``a0`` to ``a1 - 1`` of the table ``out`` over P's region index ``ri`` (bands ``pairs``)."""
    has_k = tw.has_k
    d_lo = tw.d_lo
    d_hi = tw.d_hi
    eta = tw.eta
    n_slots = pairs.shape[0]
    for a in range(a0, a1):
        dr = _reg.farthest(a, ri, tw.stack)
        out[a, 0] = dr
        for s in range(n_slots):
            k_lo = pairs[s, 0]
            has_k[s] = k_lo >= 0
            d_lo[s] = 0.0
            d_hi[s] = 0.0
            if has_k[s]:  # as candidate_band
                d_lo[s] = _cal.band_distance(k_lo, b, dr, inp)
                d_hi[s] = _cal.band_distance(pairs[s, 1], b, dr, inp)
        if not ri.has_tree:
            for s in range(n_slots):
                out[a, 1 + 2 * s] = _reg.eta_exact(
                    a, ri.lam, ri.phi, ri.xyz, has_k[s], d_lo[s], d_hi[s], eps_r
                )
            continue
        # every band's η interval in one traversal (at most MAX_BANDS at a time), as region_setup_tol's
        for s0 in range(0, n_slots, _reg.MAX_BANDS):
            s1 = min(n_slots, s0 + _reg.MAX_BANDS)
            _reg.eta_intervals(
                a, ri, has_k[s0:s1], d_lo[s0:s1], d_hi[s0:s1], tol_pt, straddle, eps_r, tw.stack, tw.groups,
                tw.acc, tw.work, eta[s0:s1],
            )  # fmt: skip
        for s in range(n_slots):
            e_hi = eta[s, 1]
            if e_hi < 0.0:
                e_hi = dr * (1.0 + 1e-9) + 1e-6
            out[a, 1 + 2 * s] = eta[s, 0]
            out[a, 2 + 2 * s] = e_hi


# called from Python: its compiled export when installed
_F1 = array(numba.float64, 1)
_F2 = array(numba.float64, 2)
_I1 = array(numba.int64, 1)
_I2 = array(numba.int64, 2)
_TABLE_WORK = numba.types.NamedTuple([_I1, _F1, array(numba.boolean, 1), _F1, _F1, _I2, _F2, _F2], TableWork)
_BUILD = Entry(
    _build,
    {
        "atp_table": numba.void(
            _reg.REGION_INDEX_TYPE, numba.float64, numba.float64, numba.boolean, numba.float64, numba.float64,
            _I2, numba.int64, numba.int64, _TABLE_WORK, _F2,
        )
    },
)  # fmt: skip


def build_table(
    index: FastIndex,
    b: float,
    eps_r: float,
    input_mapping: bool,
    tol_pt: float,
    pairs: np.ndarray,
    n_jobs: int = 1,
) -> np.ndarray:
    """The table of ``index`` (a FastIndex) for the bands ``pairs``: float64[m, 1 + 2·len(pairs)].

    A function of P and public options only (SW half-width ``b``, radius budget ``eps_r``, the mapping,
    the traversal's tolerance ``tol_pt``). ``n_jobs`` threads fill contiguous blocks of rows (each row is
    computed alone: the table is the same for any ``n_jobs``).
    """
    straddle = _reg.straddle_limit.py_func(index.m)  # as region_setup (the Python function: no compile)
    n_slots = pairs.shape[0]
    m = index.m
    out = np.zeros((m, 1 + 2 * n_slots))
    ri = _reg.region_index(index)
    pairs = np.ascontiguousarray(pairs, dtype=np.int64)

    def rows(a0: int, a1: int) -> None:
        _BUILD(
            ri, float(b), float(eps_r), bool(input_mapping), float(tol_pt), float(straddle), pairs,
            np.int64(a0), np.int64(a1), _table_work(n_slots), out,
        )  # fmt: skip

    n_jobs = max(1, min(int(n_jobs), m // _MIN_ROWS_PER_JOB))
    if n_jobs == 1:
        rows(0, m)
    else:
        from concurrent.futures import ThreadPoolExecutor

        cuts = np.linspace(0, m, 4 * n_jobs + 1).astype(np.int64).tolist()  # a few blocks per thread
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            list(pool.map(rows, cuts[:-1], cuts[1:]))
    out.setflags(write=False)
    return out


def half_widths(mechanism: Any, sw_b: np.ndarray, eps_rad: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The (b, ε_R) of an ATP call's tables: float64[n, 2].

    Those of the longest length (both copies), or of length 2 if no trajectory has two points.

    The radius budget is a fraction of the copy budget, the same for every length and copy under every
    budget split: so the same table is asked for whatever the lengths, and its presence does not tell them.
    (A length with another (b, ε_R) would just take the traversal.)
    """
    n = int(lengths.max()) if lengths.size else 0
    if n >= 2:
        first = (float(sw_b[n, 0]), float(eps_rad[n, 0]))
        second = (float(sw_b[n, 1]), float(eps_rad[n, 1]))
        return np.array([first] if first == second else [first, second])
    from geoldp import mechanisms as _mech

    radius = float(mechanism.copy_budgets(2, "A").radius)
    return np.array([[float(_mech.sw_half_width(radius)), radius]])


def plan_tables(
    index: FastIndex, budgets: np.ndarray, n_traj: int | None, plan: Any, tol_pt: float, n_jobs: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tables a call uses: ``(tables float64[n, m, w], keys float64[n, 2], slots int64[n, 12, 12])``.

    One table per (b, ε_R) in ``budgets`` (``keys``; one under every budget split, :func:`half_widths`);
    ``slots[j, k_lo + 1, k_hi + 1]`` is the band's slot in table j or −1. A table is taken from memory,
    else from the disk cache (:mod:`geoldp.trajectory._table_store`), else built (with ``n_jobs``
    threads) once the calls over P with these options repay it: this call's ``n_traj`` trajectories and
    every earlier call's, in this process and (with the disk cache) in earlier ones (:func:`wants_table`;
    ``None``: asked for ahead of the calls, built wherever one is kept). A table that costs more than a
    trifle to build is kept on disk. The tables hold public values only (P and options); the number of
    trajectories (visible in every release) only decides when one is built.
    """
    if not ENABLED[0]:
        return _NONE
    found = []
    for b, eps_r in budgets:
        key = (
            float(b),
            float(eps_r),
            bool(plan.input_mapping),
            float(tol_pt),
            int(plan.sw_buckets),
            bool(plan.continuous_sw),
        )
        cached = index.atp_table(key)
        if cached is None and index.m <= TABLE_MAX_POINTS:
            cached = index.atp_table(key, lambda key=key: _obtain(index, key, n_traj, n_jobs))
        if cached is not None:
            found.append(cached)
    if not found:
        return _NONE
    if len(found) == 1:
        return found[0]
    tables = np.zeros((len(found), index.m, max(f[0].shape[2] for f in found)))
    for j, f in enumerate(found):
        tables[j, :, : f[0].shape[2]] = f[0][0]
    return (
        _frozen(tables),
        _frozen(np.concatenate([f[1] for f in found])),
        _frozen(np.concatenate([f[2] for f in found])),
    )


def _obtain(
    index: FastIndex, key: tuple, n_traj: int | None, n_jobs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The plan entry of ``key``: kept on disk, or built if the calls so far repay it; else ``None``.

    Runs under the index's table lock (one thread decides and builds).
    """
    m = index.m
    if _estimated_build_s(m, 24) <= _FREE_S:  # built at once; not worth a file
        return _make(index, key, n_jobs)
    digest = index.digest()
    kept = _store.load(digest, key, m)
    if kept is not None:
        entry = _make(index, key, n_jobs, kept)
        if entry is not None:
            return entry
    if n_traj is not None:
        copies = 2 * int(n_traj)
        total = _store.add_demand(digest, key, copies)
        if total is None:  # no disk cache: the calls of this process
            total = index.atp_demand(key, copies)
        if not wants_table(m, total):
            return None
    entry = cast(
        tuple[np.ndarray, np.ndarray, np.ndarray], _make(index, key, n_jobs)
    )  # no kept table: not None
    _store.save(digest, key, entry[0][0])
    return entry


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)  # cached and shared: read-only (also the compiled signature's type)
    return a


# no table: (tables, keys, slots) of length 0
_NONE = (
    _frozen(np.zeros((0, 1, 1))),
    _frozen(np.zeros((0, 2))),
    _frozen(np.zeros((0, 12, 12), dtype=np.int64)),
)


def _make(
    index: FastIndex, key: tuple[Any, ...], n_jobs: int = 1, table: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The plan entry ``(table[np.newaxis], keys float64[1, 2], slots int64[1, 12, 12])`` of a cache key.

    Read-only arrays, ready for the kernel; built, or from a kept ``table`` (``None`` if its width does not
    fit the bands: a foreign file).
    """
    b, eps_r, input_mapping, tol_pt, buckets, continuous = key
    pairs = band_pairs(b, buckets, continuous)
    slots = np.full((1, 12, 12), -1, dtype=np.int64)
    for s, (k_lo, k_hi) in enumerate(pairs):
        slots[0, k_lo + 1, k_hi + 1] = s
    if table is None:
        table = build_table(index, b, eps_r, input_mapping, tol_pt, pairs, n_jobs)
    elif table.shape[1] != 1 + 2 * pairs.shape[0]:
        return None
    return table[np.newaxis], _frozen(np.array([[b, eps_r]])), _frozen(slots)


@_jit
def find(keys: np.ndarray, b: float, eps_r: float) -> KernelInt:
    """The table of half-width ``b`` and radius budget ``eps_r``, or −1."""
    for j in range(keys.shape[0]):
        if keys[j, 0] == b and keys[j, 1] == eps_r:
            return j
    return -1


@_jit
def anchor_radius(j: KernelInt, tab: np.ndarray, a: KernelInt, ri: RegionIndex, stack: np.ndarray) -> float:
    """ΔR of anchor ``a`` of P's region index ``ri``: from table ``j`` (≥ 0), else by :func:`farthest`."""
    if j >= 0:
        return tab[j, a, 0]
    return _reg.farthest(a, ri, stack)


@_jit
def region_setup(
    j: KernelInt,
    tab: np.ndarray,
    slots: np.ndarray,
    a: KernelInt,
    ri: RegionIndex,
    cr: CopyRegion,
    tol_pt: float,
    eager: bool,
    stack: np.ndarray,
    work: np.ndarray,
    reg: np.ndarray,
) -> None:
    """:func:`geoldp.trajectory._atp_region.region_setup` from table ``j`` (≥ 0) where it has the band.

    The same region record, bit for bit; else by the traversal.
    """
    if j >= 0:
        k_lo, k_hi = _cal.candidate_range(cr.r_hat, cr.b)
        s = slots[j, k_lo + 1, k_hi + 1]
        if s >= 0:
            r_est = _reg.region_header(cr, reg, _reg.straddle_limit(ri.lam.shape[0]))  # as built
            if ri.has_tree:
                _reg.region_from_eta(a, ri, tab[j, a, 1 + 2 * s], tab[j, a, 2 + 2 * s], eager, reg)
            else:
                _reg.region_exact(reg, _cal.calibrate(r_est, tab[j, a, 1 + 2 * s], cr.dr, cr.eps_dec))
            return
    _reg.region_setup(a, ri, cr, tol_pt, eager, stack, work, reg)
