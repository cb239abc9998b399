"""Throughput and peak memory of geoldp's engine (TP, ATP, PointEM) on a synthetic city.

Plain script (no pytest-benchmark). For every |P| it builds ``geoldp.datasets.synthetic_city`` data (clustered
public points, trip-like trajectories of lengths 2–8), warms the numba code up on a few trips (so compile
time is excluded), then times ``geoldp.perturb_trajectories`` for each mechanism and ε and prints a table of
trajectory points per second and peak memory.

Columns:

* ``path`` — ``api``: the public ``geoldp.perturb_trajectories`` (validation, list conversion, then the fast
  path); ``kernel``: ``geoldp.trajectory._fast.perturb_fast`` on the flat index arrays only;
* ``peak RSS MiB`` — the process's peak resident set size so far (``resource.getrusage``): interpreter,
  NumPy/numba/GeoPandas, the input data and everything the runs allocated. Each |P| runs in a fresh
  subprocess, so the value is the high-water mark of that |P|'s runs up to that row.

Times are CPU seconds of this process (``time.process_time``): the machine is shared, and CPU time is far
less sensitive to other users' load than wall time. Nothing computed from the trajectories outlives a call
(in particular no ATP calibration cache), so every row starts from the same state: a fresh PointSet whose
public spatial index was built by the warm-up.

Usage::

    python benchmarks/bench_engine.py             # |P| = 1e3, 1e4, 1e5; 20,000 trips; ε = 1, 4, 10
    python benchmarks/bench_engine.py --quick     # |P| = 1e3, 1e4; 2,000 trips
    python benchmarks/bench_engine.py --sizes 100000 --mechanisms atp --epsilons 4 --trips 100000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time


def _one_size(m: int, n_trips: int, mechanisms, epsilons, warm: bool, seed: int) -> list[dict]:

    import geoldp
    from geoldp.datasets import synthetic_city_arrays
    from geoldp.trajectory import _fast

    _fast.COLLECT_STATS = True  # the calibration-pass counters below (off by default: private aggregates)

    lon, lat, flat, offsets, _ = synthetic_city_arrays(m, n_trips, min_len=2, max_len=8, seed=seed)
    trajs = [flat[offsets[i] : offsets[i + 1]] for i in range(n_trips)]
    n_points = int(flat.shape[0])
    from geoldp._random import resolve_rng

    key = resolve_rng(2).stream_key()  # the key perturb_trajectories(..., rng=2) draws: same streams
    rows = []
    for name in mechanisms:
        for eps in epsilons:
            points = geoldp.PointSet(lon, lat)  # a fresh PointSet: no cached index, no calibration cache
            _ = points.diameter_m  # the exact diameter is computed once per PointSet (not timed)
            mech = {"tp": geoldp.TP, "atp": geoldp.ATP, "pointem": geoldp.PointEM}[name](epsilon=eps)
            # warm-up: compiles (or loads) the numba code and builds the spatial index
            geoldp.perturb_trajectories(trajs[:20], points, mechanism=mech, rng=1)
            runs = [("-", "api"), ("-", "kernel")]
            for label, path in runs:
                t0 = time.process_time()
                if path == "api":
                    geoldp.perturb_trajectories(trajs, points, mechanism=mech, rng=2)
                else:
                    _fast.perturb_fast(flat, offsets, points, mech, key, 0)
                dt = time.process_time() - t0
                stats = _fast.last_stats()
                rows.append(
                    {
                        "m": m,
                        "mechanism": name,
                        "epsilon": eps,
                        "cache": label if name == "atp" else "-",
                        "path": path,
                        "trips": n_trips,
                        "points": n_points,
                        "seconds": dt,
                        "points_per_s": n_points / dt,
                        "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                        "calibration_passes": stats.get("calibration_passes", 0),
                        "enumerations": stats.get("enumerations", 0),
                        "merge_candidates_per_point": stats.get("merge_candidates", 0) / n_points,
                    }
                )
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def _table(rows: list[dict]) -> str:
    head = (
        "|P|",
        "mech",
        "ε",
        "path",
        "ATP cache",
        "trips",
        "points",
        "s",
        "points/s",
        "peak RSS MiB",
        "calib. passes",
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append(
            "| "
            + " | ".join(
                [
                    f"{r['m']:,}",
                    r["mechanism"].upper() if r["mechanism"] != "pointem" else "PointEM",
                    f"{r['epsilon']:g}",
                    r["path"],
                    r["cache"],
                    f"{r['trips']:,}",
                    f"{r['points']:,}",
                    f"{r['seconds']:.2f}",
                    f"{r['points_per_s']:,.0f}",
                    f"{r['rss_mib']:.0f}",
                    f"{r['calibration_passes']:,}",
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="|P| values (default 1e3 1e4 1e5)")
    parser.add_argument(
        "--trips", type=int, default=None, help="number of trips (default 20000; --quick 2000)"
    )
    parser.add_argument("--mechanisms", nargs="+", default=["tp", "atp", "pointem"])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0, 10.0])
    parser.add_argument("--quick", action="store_true", help="|P| = 1e3, 1e4 and 2,000 trips")
    parser.add_argument("--no-warm", action="store_true", help="skip the warm-cache ATP rows")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic city")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    parser.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = args.sizes or ([1000, 10000] if args.quick else [1000, 10000, 100000])
    trips = args.trips or (2000 if args.quick else 20000)
    if args._child:
        rows = _one_size(sizes[0], trips, args.mechanisms, args.epsilons, not args.no_warm, args.seed)
        print(json.dumps(rows))
        return 0
    rows = []
    for m in sizes:
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--_child",
            "--sizes",
            str(m),
            "--trips",
            str(trips),
            "--seed",
            str(args.seed),
            "--mechanisms",
            *args.mechanisms,
            "--epsilons",
            *[str(e) for e in args.epsilons],
        ] + (["--no-warm"] if args.no_warm else [])
        res = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
        rows.extend(json.loads(res.stdout.strip().splitlines()[-1]))
    print(_table(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
