"""CPU time per point of TP's and ATP's fast path split into the two copies (samplers) and the merge.

Plain script. On ``geoldp.datasets.synthetic_city_arrays(m, trips, min_len=2, max_len=8, seed=0)``, for
every |P| given and each mechanism, it

1. runs the whole kernel (``_fast.driver.perturb_fast``, one core) with the opt-in ``COLLECT_STATS``
   counters (EM calls, proposals, enumerations, merge candidates and exact evaluations);
2. runs the same trajectories through two compiled loops with the kernel's own records: the copies only
   (``driver._copies``, which writes both copies of a trajectory), then the merge only
   (``merge.merge_position`` over the stored pairs), and times each;
3. prints CPU µs per point for the kernel, the copies and the merge, and the counters per point.

The merge loop's output is checked against the kernel's (same key, same streams).

Usage::

    python benchmarks/profile_merge.py --sizes 10000 100000 1000000 --trips 20000
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np


def _loops(D, M):
    """Compiled loops over trajectories: the copies of each into ``yy_out``, then the merge of each pair."""

    @numba.njit
    def copies(flat, offsets, key, prop1, prop2, ix, cp, rp, w, dflt, yy_out):
        for t in range(offsets.shape[0] - 1):
            s0 = offsets[t]
            n = offsets[t + 1] - s0
            if n < 2:
                continue
            D.stream_reset(w.state, t)
            D._copies(flat, s0, n, t, key, prop1, prop2, ix, cp, rp, w, dflt)
            for i in range(n):
                yy_out[0, s0 + i] = w.yy[0, i]
                yy_out[1, s0 + i] = w.yy[1, i]

    @numba.njit
    def merge(yy_in, ix, cp, w, out):
        for j in range(yy_in.shape[1]):
            out[j] = M.merge_position(yy_in[0, j], yy_in[1, j], ix, cp, w)

    return copies, merge


def _records(D, points, mech, flat, offsets):
    """The kernel's records, built as ``perturb_fast`` builds them."""
    from geoldp.trajectory import _atp_region as AR
    from geoldp.trajectory import _atp_table as AT
    from geoldp.trajectory.merge import TAU_FACTOR

    index = D.get_index(points)
    lengths = np.diff(offsets)
    plan = mech.sampler_plan
    g, eps_single, eps_piv, eps_np, lie, eps_anc, eps_rad, sw_b, eps_dec = D._tables(mech, lengths, index.m)
    ix = D.kernel_index(index)
    cp = D.CopyPlan(
        TAU_FACTOR * index.delta, g, bool(plan.centred), bool(plan.balanced), bool(plan.neighbour_fallback),
        eps_piv, eps_np, lie,
    )  # fmt: skip
    rp = dflt = None
    if plan.kernel_kind == 2:
        index.tree()
        budgets = AT.half_widths(mech, sw_b, eps_rad, lengths)
        tables = AT.plan_tables(index, budgets, len(lengths), plan, float(D._REGION_TOL_PT))
        rp = D.RegionPlan(
            D.nearest_anchors(flat, offsets, index, plan.vector_mean), AR.region_index(index),
            float(D._REGION_TOL_PT), False, eps_anc, eps_rad, sw_b, eps_dec, int(plan.sw_buckets),
            bool(plan.continuous_sw), bool(plan.input_mapping), *tables,
        )  # fmt: skip
        dflt = np.zeros(AR.N_REGION)
    w = D.new_work(index.m, int(index.gi[1]), int(lengths.max()))
    return ix, cp, rp, w, dflt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--trips", type=int, default=20_000)
    ap.add_argument("--mechanisms", nargs="+", default=["tp", "atp"])
    ap.add_argument("--epsilon", type=float, default=4.0)
    args = ap.parse_args(argv)

    import geoldp
    from geoldp._core.randomness import resolve_rng
    from geoldp.datasets import synthetic_city_arrays
    from geoldp.trajectory._fast import driver as D
    from geoldp.trajectory._fast import merge as M

    copies, merge = _loops(D, M)
    key = resolve_rng(2).stream_key()
    print(
        "| \\|P\\| | mech | kernel µs/pt | copies µs/pt | merge µs/pt | merge share | EM calls/pt "
        "| proposals/pt | enumerations/pt | merge cand./merge | exact evals/merge |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for m in args.sizes:
        lon, lat, flat, offsets, _ = synthetic_city_arrays(m, args.trips, min_len=2, max_len=8, seed=0)
        points = geoldp.PointSet(lon, lat)
        _ = points.diameter_m
        n_pts = int(flat.shape[0])
        for name in args.mechanisms:
            mech = {"tp": geoldp.TP, "atp": geoldp.ATP}[name](epsilon=args.epsilon)
            D.perturb_fast(flat[: offsets[20]], offsets[:21], points, mech, key, 0)  # index, tree, code
            D.COLLECT_STATS = True
            t0 = time.process_time()
            ref = D.perturb_fast(flat, offsets, points, mech, key, 0)
            t_kernel = time.process_time() - t0
            st = D.last_stats()
            D.COLLECT_STATS = False
            ix, cp, rp, w, dflt = _records(D, points, mech, flat, offsets)
            yy = np.zeros((2, n_pts), dtype=np.int64)
            out = np.zeros(n_pts, dtype=np.int64)
            prop = np.int64(D._prop[0]), np.int64(D._prop[1])
            copies(flat, offsets[:3], key, *prop, ix, cp, rp, w, dflt, yy)  # compile both loops first
            merge(np.ascontiguousarray(yy[:, :2]), ix, cp, w, out)
            t0 = time.process_time()
            copies(flat, offsets, key, *prop, ix, cp, rp, w, dflt, yy)
            t_copies = time.process_time() - t0
            multi = np.repeat(np.diff(offsets) >= 2, np.diff(offsets))
            pairs = np.ascontiguousarray(yy[:, multi])
            t0 = time.process_time()
            merge(pairs, ix, cp, w, out[: pairs.shape[1]])
            t_merge = time.process_time() - t0
            assert np.array_equal(out[: pairs.shape[1]], ref[multi]), "merge loop differs from the kernel"
            merges = max(1, int(np.sum(pairs[0] != pairs[1])))
            us = 1e6 / n_pts
            print(
                f"| {m:,} | {name.upper()} | {t_kernel * us:.2f} | {t_copies * us:.2f} | {t_merge * us:.2f} "
                f"| {100 * t_merge / max(t_kernel, 1e-9):.0f} % | {st['em_calls'] / n_pts:.2f} "
                f"| {st['proposals'] / n_pts:.1f} | {st['enumerations'] / n_pts:.3f} "
                f"| {st['merge_candidates'] / merges:,.0f} | {st['merge_exact_evals'] / merges:.1f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
