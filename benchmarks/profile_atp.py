"""CPU time per ATP stage per copy (|P| = 10⁵ by default): where the fast path's ATP time goes.

Plain script. On ``geoldp.datasets.synthetic_city_arrays(m, trips, min_len=2, max_len=8, seed=0)`` it

1. runs the whole ATP kernel (``_fast.driver.perturb_fast``, ε = 4, one core) on every trip and
   counts the copies (regions) and the exact η passes (the opt-in ``COLLECT_STATS`` counters);
2. re-creates the public inputs of a sample of copies — the anchor, the perturbed anchor â drawn from the
   exact EM pmf (``_reference.em_pmf_rows``), the radius input and a Square-Wave release r̂ drawn from its
   exact distribution, the copy's budgets — and times each numba stage of the region module on them in a
   compiled loop (no Python call overhead): ΔR (``farthest``), the η traversal (``eta_interval``, with its
   node / point / straddle counters), the whole ``region_setup`` (traversal + R̃ interval), the refinement (the
   traversals of each refinement level, charged at the kernel's measured fraction of copies that took
   it), the exact pass (``resolve``, charged per copy at the kernel's measured exact-pass fraction);
3. times the anchor EM as the PointEM kernel on one-point trajectories at the copy's anchor budget (the
   same EM over all of P), and the TP kernel on the same trips as a reference for the shared parts
   (pivots, non-pivots, merge);
4. prints a table in µs per copy; "rest" is the kernel total minus the measured stages, i.e. the per-point
   sampling over Ω and the non-pivot domains, r_max, the SW draw and the merge.

Usage::

    python benchmarks/profile_atp.py                       # |P| = 1e5, 20,000 trips, 2,000 sampled copies
    python benchmarks/profile_atp.py --m 10000 --trips 5000 --copies 1000
    python benchmarks/profile_atp.py --tol-straddle 0      # region tolerance override (see _atp_region)
    python benchmarks/profile_atp.py --table 300 1000 5000 # build cost of the public table over P and the
                                                           # kernel's µs per copy with and without it

Times are ``time.process_time()`` (CPU of this process), so other users' load matters less than for wall
time but still matters (shared caches): compare runs made at the same moment.
"""

from __future__ import annotations

import argparse
import math
import time

import numba
import numpy as np


def _compiled(AR, CAL):
    """Compiled loops over the sampled copies, one per stage (built here so they bind the modules given);
    ``ri`` is P's region index (``AR.RegionIndex``)."""

    @numba.njit
    def loop_farthest(ahat, ri, stack, out):
        for i in range(ahat.shape[0]):
            out[i] = AR.farthest(ahat[i], ri, stack)

    @numba.njit
    def loop_eta(ahat, ri, r_hat, b, eps_r, dr, inp, tol, straddle, stack, work, cnt):
        for i in range(ahat.shape[0]):
            has_k, d_lo, d_hi = CAL.candidate_band(r_hat[i], b[i], dr[i], inp)
            AR.eta_interval(ahat[i], ri, has_k, d_lo, d_hi, tol, straddle, eps_r[i], stack, work)
            for j in range(3):
                cnt[i, j] = work[5 + j]

    @numba.njit
    def loop_setup(ahat, ri, r_hat, b, eps_r, eps_d, dr, inp, tol, straddle, stack, work, regs):
        for i in range(ahat.shape[0]):
            cr = AR.CopyRegion(r_hat[i], b[i], eps_r[i], eps_d[i], dr[i], inp)
            AR.region_setup_tol(ahat[i], ri, cr, tol, straddle, False, stack, work, regs[i])

    @numba.njit
    def loop_resolve(ahat, lam, phi, xyz, regs):
        for i in range(ahat.shape[0]):
            AR.resolve(ahat[i], lam, phi, xyz, regs[i])

    return loop_farthest, loop_eta, loop_setup, loop_resolve


def _sw_release(r, eps, b, buckets, continuous, rng):
    """One exact Square-Wave release of r ∈ [0, 1] (bucketed: the bucket midpoint of a continuous draw)."""
    e = math.exp(eps)
    p_in = 2.0 * b * e / (2.0 * b * e + 1.0)
    if rng.random() < p_in:
        v = r - b + 2.0 * b * rng.random()
    else:
        u = rng.random()  # uniform over [−b, 1 + b] minus [r − b, r + b] (total length 1)
        v = -b + u if u < r else r + b + (u - r)
    if continuous:
        return v
    w = (1.0 + 2.0 * b) / buckets
    j = min(buckets - 1, max(0, int((v + b) / w)))
    return -b + (j + 0.5) * w


def _table_rows(sizes, trips: int, eps: float) -> int:
    """Build cost of ATP's public table over P and the kernel's CPU µs per copy without and with it."""
    import geoldp
    from geoldp._core.randomness import resolve_rng
    from geoldp.datasets import synthetic_city_arrays
    from geoldp.mechanisms import sw_half_width
    from geoldp.trajectory import _atp_table as AT
    from geoldp.trajectory._fast import driver as _fast

    mech = geoldp.ATP(epsilon=eps)
    key = resolve_rng(2).stream_key()
    print("| \\|P\\| | band slots | build s | µs per slot | µs/copy, no table | with table | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for m in sizes:
        lon, lat, flat, offsets, _ = synthetic_city_arrays(m, trips, min_len=2, max_len=8, seed=0)
        points = geoldp.PointSet(lon, lat)
        index = _fast.get_index(points)
        index.tree()
        AT.ENABLED[0] = False
        _fast.perturb_fast(flat[: offsets[20]], offsets[:21], points, mech, key, 0)  # load / compile
        t0 = time.process_time()
        no_table = _fast.perturb_fast(flat, offsets, points, mech, key, 0)
        t_no = time.process_time() - t0
        AT.ENABLED[0] = True
        radius = float(mech.copy_budgets(2, "A").radius)
        b = float(sw_half_width(radius))
        pairs = AT.band_pairs(b, int(mech.sampler_plan.sw_buckets), False)
        t0 = time.process_time()
        AT._make(index, (b, radius, False, float(_fast._REGION_TOL_PT), 1024, False))
        t_build = time.process_time() - t0
        saved = AT._FREE_S, AT.TABLE_MAX_POINTS
        AT._FREE_S, AT.TABLE_MAX_POINTS = 1e9, m  # use (and cache) the table for the timed call
        try:
            _fast.perturb_fast(flat[: offsets[20]], offsets[:21], points, mech, key, 0)  # builds it once
            t0 = time.process_time()
            with_table = _fast.perturb_fast(flat, offsets, points, mech, key, 0)
            t_with = time.process_time() - t0
        finally:
            AT._FREE_S, AT.TABLE_MAX_POINTS = saved
        assert np.array_equal(no_table, with_table)
        copies = 2 * trips
        print(
            f"| {m:,} | {len(pairs)} | {t_build:.2f} | {t_build / (m * len(pairs)) * 1e6:.1f} "
            f"| {t_no / copies * 1e6:.1f} | {t_with / copies * 1e6:.1f} | {t_no / t_with:.2f}× |",
            flush=True,
        )
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--m", type=int, default=100_000)
    ap.add_argument("--trips", type=int, default=20_000)
    ap.add_argument("--copies", type=int, default=2_000, help="sampled copies for the stage timings")
    ap.add_argument("--epsilon", type=float, default=4.0)
    ap.add_argument(
        "--straddle",
        type=float,
        nargs="*",
        default=None,
        help="straddling-group limits (metres) for the region rows (default: the module's STRADDLE); the "
        "kernel rows always use the compiled STRADDLE",
    )
    ap.add_argument(
        "--tol-pt", type=float, default=None, help="Taylor remainder per point for the region rows"
    )
    ap.add_argument(
        "--table", type=int, nargs="+", default=None, help="|P| values: the public table's build cost instead"
    )
    args = ap.parse_args(argv)
    if args.table:
        return _table_rows(args.table, args.trips, args.epsilon)

    import geoldp
    from geoldp._core import kernels as K
    from geoldp._core.randomness import resolve_rng
    from geoldp.datasets import synthetic_city_arrays
    from geoldp.mechanisms import sw_half_width
    from geoldp.trajectory import _atp_region as AR
    from geoldp.trajectory import _reference as REF
    from geoldp.trajectory import calibration as CAL
    from geoldp.trajectory._fast import driver as _fast

    lon, lat, flat, offsets, _ = synthetic_city_arrays(args.m, args.trips, min_len=2, max_len=8, seed=0)
    points = geoldp.PointSet(lon, lat)
    mech = geoldp.ATP(epsilon=args.epsilon)
    plan = mech.sampler_plan
    key = resolve_rng(2).stream_key()
    n_pts = int(flat.shape[0])
    lengths = np.diff(offsets)
    n_copies_all = 2 * int(np.sum(lengths >= 2))

    # warm up (compile / load every numba function) on 20 trips, which also builds the index and tree
    t0 = time.process_time()
    _fast.perturb_fast(flat[: offsets[20]], offsets[:21], points, mech, key, 0)
    t_warm = time.process_time() - t0
    idx = _fast.get_index(points)
    t0 = time.process_time()
    AR.build_tree(idx)
    t_tree = time.process_time() - t0

    _fast.COLLECT_STATS = True
    t0 = time.process_time()
    _fast.perturb_fast(flat, offsets, points, mech, key, 0)
    t_atp = time.process_time() - t0
    st = _fast.last_stats()
    tp = geoldp.TP(epsilon=args.epsilon)
    _fast.perturb_fast(flat[: offsets[20]], offsets[:21], points, tp, key, 0)  # TP's kernel: compile or load
    t0 = time.process_time()
    _fast.perturb_fast(flat, offsets, points, tp, key, 0)
    t_tp = time.process_time() - t0
    _fast.COLLECT_STATS = False
    frac_exact = st["exact_eta_passes"] / max(1, st["atp_regions"])
    # refine's levels (coarse, without groups): the share of copies that took each
    frac_levels = [
        st[name] / max(1, st["atp_regions"]) for name in ("refinements_coarse", "refinements_without_groups")
    ]

    # the public inputs of a sample of copies
    rng = np.random.default_rng(0)
    lam, phi = idx.lam, idx.phi
    trips = np.flatnonzero(lengths >= 2)
    pick = rng.choice(trips, size=min(len(trips), (args.copies + 1) // 2), replace=False)
    row = np.empty(idx.m)
    anchors, ahat, r_hat, b, eps_r, eps_d, eps_a = [], [], [], [], [], [], []
    delta = np.array([points.diameter_m])
    for t in pick:
        x = flat[offsets[t] : offsets[t + 1]]
        n = len(x)
        alam, aphi = REF.anchor_location(points.lam[x], points.phi[x], plan.vector_mean)
        K.haversine_from_one(alam, aphi, lam, phi, row)
        pa = int(np.argmin(row))  # ties: lowest index (as the fast path)
        K.haversine_from_one(lam[pa], phi[pa], lam, phi, row)
        for copy in ("A", "B"):
            bud = mech.copy_budgets(n, copy)
            pmf = REF.em_pmf_rows(bud.anchor, row[None], np.ones((1, idx.m), bool), delta)[0]
            ah = int(rng.choice(idx.m, p=pmf))
            dr_row = np.empty(idx.m)
            K.haversine_from_one(lam[ah], phi[ah], lam, phi, dr_row)
            dr = float(dr_row.max())
            r = CAL.atp_radius_input(float(dr_row[x].max()), dr)
            bb = float(sw_half_width(bud.radius))
            anchors.append(pa)
            ahat.append(ah)
            r_hat.append(_sw_release(r, bud.radius, bb, int(plan.sw_buckets), plan.continuous_sw, rng))
            b.append(bb)
            eps_r.append(bud.radius)
            eps_d.append(mech.decay_budget(n, copy))
            eps_a.append(bud.anchor)
    ahat = np.array(ahat, dtype=np.int64)
    r_hat, b, eps_r, eps_d = (np.array(v) for v in (r_hat, b, eps_r, eps_d))
    k = len(ahat)
    inp = bool(plan.input_mapping)
    tol = float(_fast._REGION_TOL_PT) if args.tol_pt is None else args.tol_pt
    args_t = (AR.region_index(idx),)
    stack = np.zeros(AR.STACK, dtype=np.int64)
    work = np.zeros(8)
    loop_farthest, loop_eta, loop_setup, loop_resolve = _compiled(AR, CAL)
    drs = np.zeros(k)
    cnt = np.zeros((k, 3))
    regs = np.zeros((k, AR.N_REGION))
    loop_farthest(ahat[:1], *args_t, stack, drs)  # compile on one copy, then time
    t0 = time.process_time()
    loop_farthest(ahat, *args_t, stack, drs)
    t_far = time.process_time() - t0

    def region_rows(straddle: int):
        loop_eta(ahat[:1], *args_t, r_hat, b, eps_r, drs, inp, tol, straddle, stack, work, cnt)
        loop_setup(ahat[:1], *args_t, r_hat, b, eps_r, eps_d, drs, inp, tol, straddle, stack, work, regs)
        loop_resolve(ahat[:1], idx.lam, idx.phi, idx.xyz, regs)
        t0 = time.process_time()
        loop_eta(ahat, *args_t, r_hat, b, eps_r, drs, inp, tol, straddle, stack, work, cnt)
        t_eta = time.process_time() - t0
        t0 = time.process_time()
        loop_setup(ahat, *args_t, r_hat, b, eps_r, eps_d, drs, inp, tol, straddle, stack, work, regs)
        t_setup = time.process_time() - t0
        lo, hi = regs[:, AR.F_LO].copy(), regs[:, AR.F_HI].copy()
        t0 = time.process_time()
        loop_resolve(ahat, idx.lam, idx.phi, idx.xyz, regs)
        t_res = time.process_time() - t0
        exact = regs[:, AR.F_LO]
        assert np.all((lo <= exact) & (exact <= hi)), "an R̃ interval misses the exact R̃"
        band = np.zeros(k, dtype=np.int64)  # points of P whose membership the interval leaves open
        for i in range(k):
            K.haversine_from_one(lam[ahat[i]], phi[ahat[i]], lam, phi, row)
            band[i] = np.count_nonzero((row >= lo[i]) & (row <= hi[i]))
        return t_eta, t_setup, t_res, hi - lo, band, cnt.mean(axis=0)

    straddles = args.straddle if args.straddle else [AR.STRADDLE]
    us = 1e6 / k
    per_copy_total = t_atp / n_copies_all * 1e6
    print(
        f"|P| = {idx.m:,}, {args.trips:,} trips, {n_pts:,} points, ε = {args.epsilon:g}, one core (CPU time)"
    )
    print(f"warm-up {t_warm:.2f} s (index, tree, numba load); quadtree build alone {t_tree:.3f} s")
    print(
        f"ATP kernel {t_atp:.2f} s = {n_pts / t_atp:,.0f} points/s; "
        f"TP kernel {t_tp:.2f} s = {n_pts / t_tp:,.0f}"
    )
    print(
        f"kernel regions / refinements (coarse, without groups) / exact η: {st['atp_regions']:,} / "
        f"{st['refinements_coarse']:,}, {st['refinements_without_groups']:,} / {st['exact_eta_passes']:,} "
        f"(compiled STRADDLE = {AR.STRADDLE}); sampled copies {k:,}; Taylor tolerance {tol:g} m per point"
    )
    print()
    print("| straddle | traversal µs | setup µs | nodes | points | groups | R̃ width median / p90 m "
          "| copies with a P point in [R̃_lo, R̃_hi] |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    rows = {}
    for sd in straddles:
        t_eta, t_setup, t_res, width, band, c = rows[sd] = region_rows(sd)
        print(
            f"| {sd} | {t_eta * us:,.1f} | {(t_setup - t_eta) * us:,.1f} | {c[0]:,.0f} | {c[1]:,.0f} "
            f"| {c[2]:,.0f} | {np.median(width):.3g} / {np.quantile(width, 0.9):.3g} "
            f"| {100 * np.mean(band > 0):.2f} % |"
        )
    t_eta, t_setup, t_res, width, band, c = rows[AR.STRADDLE] if AR.STRADDLE in rows else rows[straddles[0]]

    # anchor EM: PointEM on one-point trajectories at each copy's anchor budget (one EM over all of P)
    t_em = 0.0
    anchors = np.array(anchors, dtype=np.int64)
    eps_a = np.array(eps_a)
    for e in np.unique(eps_a):
        sel = anchors[eps_a == e]
        pm = geoldp.PointEM(epsilon=float(e))
        one = np.arange(len(sel) + 1, dtype=np.int64)
        _fast.perturb_fast(sel[:1], one[:2], points, pm, key, 0)
        t0 = time.process_time()
        _fast.perturb_fast(sel, one, points, pm, key, 0)
        t_em += time.process_time() - t0

    # the refinement: one traversal per level, on the copies that still meet a point in their interval
    t_ref = []
    limits = (AR.REFINE_COARSE_M * 1e6 / idx.m, 0.0)
    for limit in limits:
        t0 = time.process_time()
        loop_eta(ahat, *args_t, r_hat, b, eps_r, drs, inp, tol, limit, stack, work, cnt)
        t_ref.append(time.process_time() - t0)

    stages = [
        ("anchor EM (PointEM kernel, ε_anchor, over P)", t_em * us),
        ("ΔR (farthest)", t_far * us),
        ("η traversal (eta_interval)", t_eta * us),
        ("region setup other (R̃ interval, calibrate)", (t_setup - t_eta) * us),
        *(
            (
                f"refinement (traversal, groups up to {limit:g} m, {t * us:,.0f} µs) × {frac:.4f} of copies",
                t * us * frac,
            )
            for limit, t, frac in zip(limits, t_ref, frac_levels, strict=True)
        ),
        (f"exact pass (resolve, {t_res * us:,.0f} µs) × {frac_exact:.4f} of copies", t_res * us * frac_exact),
    ]
    rest = per_copy_total - sum(v for _, v in stages)
    print()
    print(f"stages (straddle = {AR.STRADDLE if AR.STRADDLE in rows else straddles[0]}):")
    print()
    print("| stage | µs per copy | share |")
    print("|---|---|---|")
    for name, v in stages + [("rest: pivots and non-pivots over Ω, merge, r_max, SW", rest)]:
        print(f"| {name} | {v:,.1f} | {100 * v / per_copy_total:.0f} % |")
    print(f"| **ATP kernel total** | {per_copy_total:,.1f} | 100 % |")
    print(f"| (TP kernel on the same trips, for reference) | {t_tp / n_copies_all * 1e6:,.1f} | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
