"""Throughput and peak memory of geoldp's engine (TP, ATP, PointEM) and frame path on a synthetic city.

Plain script (no pytest-benchmark). For every |P| it runs a fresh subprocess that builds
``geoldp.datasets.synthetic_city`` data (clustered public points, trip-like trajectories of lengths 2–8)
and a fresh ``PointSet``, then per mechanism and ε:

* ``precompute`` — the one-off public work: the fast path's spatial index and, for ATP, the quadtree of
  the certified region (built by a warm-up on 20 trips, which also loads or compiles the numba code);
* ``api`` — ``geoldp.perturb_trajectories(trips, points, rng=2)`` (validation, list handling, fast path);
* ``kernel`` — ``geoldp.trajectory._fast.driver.perturb_fast`` on the flat index arrays only;
* ``frame`` (with ``--frame``) — ``trips_gdf.ldp.perturb(points)``: LineStrings in, snapping included,
  perturbed GeoDataFrame out;
* ``threads`` (with ``--n-jobs 2``) — the kernel with ``n_jobs`` threads; its speed-up is *wall* time
  against a one-thread wall time measured next to it (CPU time cannot show a parallel speed-up);
* ``frame n_jobs`` and ``dask threads`` (with ``--frame --n-jobs 2``) — ``ldp.perturb(..., n_jobs=)`` and
  ``geoldp.dask.perturb`` computed with the threaded scheduler (4 partitions per core), each in wall time
  against its own one-core run (``n_jobs=1``, the synchronous scheduler) and checked identical to it.

Times are CPU seconds of this process (``time.process_time``) unless marked wall: the machine is shared, and
CPU time is much less sensitive to other users' load than wall time. ``peak RSS MiB`` is the subprocess's
high-water mark so far (``resource.getrusage``), interpreter and libraries included. Nothing computed
from the trajectories outlives a call (there is no ATP calibration cache), so rows do not depend on order.

``--source DIR`` (repeatable) runs every size's subprocess once per checkout, interleaved round by round
(``--rounds``), with ``PYTHONPATH=DIR``: before/after comparisons measured in one run on the same load. With
``--no-atp-table`` the ATP rows are also measured with the public table over P turned off (``atp-notable``);
with ``--precompute`` also with the table built ahead by ``geoldp.trajectory.precompute``
(``atp-precomputed``, last: its ``precompute`` row includes the build).

``--first-call`` instead measures the CPU time of the first ``perturb_trajectories`` call per mechanism
in a fresh process with an empty numba cache directory (``NUMBA_CACHE_DIR`` set to a new temporary
directory): the compile cost a new installation pays once.

Usage::

    python benchmarks/bench_engine.py --sizes 100000 1000000 --trips 100000 --epsilons 4 --frame --n-jobs 2
    python benchmarks/bench_engine.py --quick     # |P| = 1e3, 1e4; 2,000 trips
    python benchmarks/bench_engine.py --first-call
    python benchmarks/bench_engine.py --mechanisms atp --source /path/to/old --source . --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def _rss() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _one_size(m: int, n_trips: int, mechanisms, epsilons, seed: int, frame: bool, n_jobs: int) -> list[dict]:
    import geoldp
    from geoldp._core.randomness import resolve_rng
    from geoldp.datasets import synthetic_city, synthetic_city_arrays
    from geoldp.trajectory._fast import driver as _fast

    _fast.COLLECT_STATS = True  # region counters below (off by default: aggregates of private runs)
    lon, lat, flat, offsets, _ = synthetic_city_arrays(m, n_trips, min_len=2, max_len=8, seed=seed)
    trajs = [flat[offsets[i] : offsets[i + 1]] for i in range(n_trips)]
    n_points = int(flat.shape[0])
    gdf_pts = gdf_trips = None
    if frame:
        gdf_pts, gdf_trips = synthetic_city(m, n_trips, min_len=2, max_len=8, seed=seed)
    key = resolve_rng(2).stream_key()  # the key perturb_trajectories(..., rng=2) draws: same streams
    rows = []

    def row(name, eps, path, seconds, n, stats=None, wall=False, extra=None):
        r = {
            "m": m,
            "mechanism": name,
            "epsilon": eps,
            "path": path,
            "trips": n_trips,
            "points": n,
            "seconds": seconds,
            "clock": "wall" if wall else "cpu",
            "points_per_s": n / seconds if seconds > 0 and n else float("nan"),
            "rss_mib": _rss(),
            "atp_regions": (stats or {}).get("atp_regions", 0),
            "exact_eta_passes": (stats or {}).get("exact_eta_passes", 0),
            # refine's traversals (older versions: one per refined copy, "refined_regions")
            "refinements": sum(
                (stats or {}).get(k, 0)
                for k in ("refinements_coarse", "refinements_without_groups", "refined_regions")
            ),
        }
        r.update(extra or {})
        rows.append(r)
        print(json.dumps(r), file=sys.stderr, flush=True)

    for name in mechanisms:
        try:  # "atp-notable": ATP without the public table over P (where this checkout has one)
            from geoldp.trajectory import _atp_table

            _atp_table.ENABLED[0] = name != "atp-notable"
        except ImportError:
            pass
        for eps in epsilons:
            points = geoldp.PointSet(lon, lat)  # fresh: no spatial index yet
            _ = points.diameter_m  # the exact diameter (part of every PointSet's construction; not timed)
            cls = {"tp": geoldp.TP, "pointem": geoldp.PointEM}
            cls.update(dict.fromkeys(("atp", "atp-notable", "atp-precomputed"), geoldp.ATP))
            mech = cls[name](epsilon=eps)
            # compile/load the numba code on a tiny point set, so the precompute row below is index only
            tiny = geoldp.PointSet(lon[:50], lat[:50])
            geoldp.perturb_trajectories([[0, 1, 2]], tiny, mechanism=mech, rng=1)
            t0 = time.process_time()
            geoldp.perturb_trajectories(trajs[:20], points, mechanism=mech, rng=1)
            if name == "atp-precomputed":
                from geoldp.trajectory import precompute

                assert precompute(points, mechanism=mech), "no table at this size"
            row(name, eps, "precompute", time.process_time() - t0, 0)
            t0 = time.process_time()
            geoldp.perturb_trajectories(trajs, points, mechanism=mech, rng=2)
            row(name, eps, "api", time.process_time() - t0, n_points, _fast.last_stats())
            t0 = time.process_time()
            _fast.perturb_fast(flat, offsets, points, mech, key, 0)
            row(name, eps, "kernel", time.process_time() - t0, n_points, _fast.last_stats())
            if n_jobs > 1:
                t0 = time.perf_counter()
                one = _fast.perturb_fast(flat, offsets, points, mech, key, 0)
                w1 = time.perf_counter() - t0
                t0 = time.perf_counter()
                many = _fast.perturb_fast(flat, offsets, points, mech, key, 0, n_jobs=n_jobs)
                wn = time.perf_counter() - t0
                assert (one == many).all()
                row(name, eps, f"threads={n_jobs}", wn, n_points, wall=True, extra={"speedup": w1 / wn})
            if frame:
                pts_frame = geoldp.PointSet.from_geodataframe(gdf_pts)
                gdf_trips.head(20).ldp.perturb(pts_frame, mechanism=mech, rng=1)  # index, tree, snapper
                t0 = time.process_time()
                gdf_trips.ldp.perturb(pts_frame, mechanism=mech, rng=2)
                row(name, eps, "frame", time.process_time() - t0, n_points)
                if n_jobs > 1:
                    _parallel_frame_rows(row, name, eps, gdf_trips, pts_frame, mech, n_points, n_jobs)
    return rows


def _wall(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _parallel_frame_rows(row, name, eps, gdf_trips, points, mech, n_points: int, n_jobs: int) -> None:
    """Frame path on ``n_jobs`` cores: ``ldp.perturb(n_jobs=)`` and the Dask path (threaded scheduler).

    Each is timed in wall seconds next to its own one-core run (``n_jobs=1`` / the synchronous scheduler),
    and its output is checked to be identical to that run's.
    """
    import dask_geopandas

    from geoldp import dask as ldp_dask

    one, w1 = _wall(lambda: gdf_trips.ldp.perturb(points, mechanism=mech, rng=2))
    many, wn = _wall(lambda: gdf_trips.ldp.perturb(points, mechanism=mech, rng=2, n_jobs=n_jobs))
    assert one.geometry.geom_equals_exact(many.geometry, 0.0).all()
    row(name, eps, f"frame n_jobs={n_jobs}", wn, n_points, wall=True, extra={"speedup": w1 / wn})
    # 4 partitions per core: enough for the threaded scheduler to balance, few enough to keep overheads low
    ddf = dask_geopandas.from_geopandas(gdf_trips, npartitions=4 * n_jobs)
    lazy = ldp_dask.perturb(ddf, points, mechanism=mech, rng=2)
    seq, w1 = _wall(lambda: lazy.compute(scheduler="synchronous"))
    par, wn = _wall(lambda: lazy.compute(scheduler="threads", num_workers=n_jobs))
    assert seq.geometry.geom_equals_exact(par.geometry, 0.0).all()
    assert seq.geometry.geom_equals_exact(one.geometry, 0.0).all()
    row(name, eps, f"dask threads={n_jobs}", wn, n_points, wall=True, extra={"speedup": w1 / wn})


def _first_call(mechanisms) -> list[dict]:
    """CPU seconds of the first call per mechanism, each in a fresh process with an empty numba cache."""
    code = (
        "import time, resource\n"
        "t0 = time.process_time()\n"
        "import numpy as np, geoldp\n"
        "t1 = time.process_time()\n"
        "P = geoldp.PointSet(np.linspace(0, 0.1, 40), np.linspace(0, 0.1, 40) ** 2)\n"
        "geoldp.perturb_trajectories([np.arange(5)], P, mechanism='{mech}', epsilon=4.0, rng=0)\n"
        "print(t1 - t0, time.process_time() - t1)\n"
    )
    rows = []
    for mech in mechanisms:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            times = []
            for _ in range(2):  # empty cache, then the cache the first run wrote (a later session)
                res = subprocess.run(
                    [sys.executable, "-c", code.format(mech=mech)],
                    env=env,
                    check=True,
                    stdout=subprocess.PIPE,
                    text=True,
                    cwd=cache,  # not the checkout: `python -c` puts the working directory first on sys.path
                )
                times.append([float(x) for x in res.stdout.split()])
            (imp, first), (_, cached) = times
            rows.append(
                {"mechanism": mech, "import_cpu_s": imp, "first_call_cpu_s": first, "cached_cpu_s": cached}
            )
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def _table(rows: list[dict]) -> str:
    head = (
        "checkout",
        "|P|",
        "mech",
        "ε",
        "path",
        "points",
        "s",
        "clock",
        "points/s",
        "peak RSS MiB",
        "regions / refinements / exact η",
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        name = r["mechanism"].upper() if r["mechanism"] != "pointem" else "PointEM"
        name = name.replace("-NOTABLE", " (no table)").replace("-PRECOMPUTED", " (precomputed)")
        pps = f"{r['points_per_s']:,.0f}" if r["points"] else "-"
        if "speedup" in r:
            pps += f" ({r['speedup']:.2f}×)"
        refined = r.get("refinements", r.get("refined_regions", 0))  # absent from the JSON of older versions
        reg = f"{r['atp_regions']:,} / {refined:,} / {r['exact_eta_passes']:,}" if r["atp_regions"] else "-"
        cells = [r.get("checkout", "."), f"{r['m']:,}", name, f"{r['epsilon']:g}", r["path"]]
        cells += [f"{r['points']:,}"]
        cells += [f"{r['seconds']:.2f}", r["clock"], pps, f"{r['rss_mib']:.0f}", reg]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="|P| values (default 1e3 1e4 1e5)")
    parser.add_argument(
        "--trips", type=int, default=None, help="number of trips (default 20000; --quick 2000)"
    )
    parser.add_argument("--mechanisms", nargs="+", default=["tp", "atp", "pointem"])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[4.0])
    parser.add_argument("--quick", action="store_true", help="|P| = 1e3, 1e4 and 2,000 trips")
    parser.add_argument("--frame", action="store_true", help="also time the GeoDataFrame path (snapping)")
    parser.add_argument("--n-jobs", type=int, default=1, help="also time the kernel with this many threads")
    parser.add_argument("--first-call", action="store_true", help="first-call CPU time, empty numba cache")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic city")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    parser.add_argument("--source", action="append", help="checkout to time (repeatable; default: this one)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds over the checkouts (interleaved)")
    parser.add_argument("--no-atp-table", action="store_true", help="also ATP with the table turned off")
    parser.add_argument("--precompute", action="store_true", help="also ATP with its table built ahead")
    parser.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.first_call:
        rows = _first_call(args.mechanisms)
        print("| mechanism | import CPU s | first call, empty cache, CPU s | first call, cached, CPU s |")
        print("|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['mechanism']} | {r['import_cpu_s']:.2f} | {r['first_call_cpu_s']:.2f} "
                f"| {r['cached_cpu_s']:.2f} |"
            )
        return 0
    sizes = args.sizes or ([1000, 10000] if args.quick else [1000, 10000, 100000])
    trips = args.trips or (2000 if args.quick else 20000)
    if args._child:
        rows = _one_size(sizes[0], trips, args.mechanisms, args.epsilons, args.seed, args.frame, args.n_jobs)
        print(json.dumps(rows))
        return 0
    rows = []
    sources = args.source or [None]
    mechanisms = list(args.mechanisms)
    if args.no_atp_table and "atp" in mechanisms:
        mechanisms.insert(mechanisms.index("atp") + 1, "atp-notable")
    if args.precompute and "atp" in mechanisms:
        mechanisms.append("atp-precomputed")
    for m in sizes:
        for _ in range(args.rounds):
            for src in sources:
                cmd = [
                    sys.executable,
                    os.path.abspath(__file__),
                    "--_child",
                    "--sizes",
                    str(m),
                    "--trips",
                    str(trips),
                ]
                cmd += ["--seed", str(args.seed), "--n-jobs", str(args.n_jobs), "--mechanisms", *mechanisms]
                cmd += ["--epsilons", *[str(e) for e in args.epsilons]] + (["--frame"] if args.frame else [])
                env = dict(os.environ)
                if src is not None:
                    env["PYTHONPATH"] = os.path.abspath(src)
                res = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env=env)
                for r in json.loads(res.stdout.strip().splitlines()[-1]):
                    r["checkout"] = os.path.basename(os.path.abspath(src)) if src else "."
                    rows.append(r)
    print(_table(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
