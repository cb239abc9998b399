"""Repeated ATP calls on one point set: how soon they run at the speed of a table built ahead.

A campaign often releases over one public point set P in many calls of a few thousand trajectories (one
per day, per upload, per CLI run). ATP's public table over P (``geoldp.trajectory._atp_table``) makes its
region stage several times faster; it is built once the calls over P repay it, counted across calls, and
kept on disk for later processes. This script measures, on ``geoldp.datasets.synthetic_city_arrays``
(|P| = ``--points``, ``--trips`` trajectories of 2–8 points, ATP at ``--epsilon``), the CPU time of each of
``--calls`` calls of ``geoldp.perturb_trajectories`` on the same trajectories with ``rng=call``:

* ``precomputed`` — one process: ``geoldp.trajectory.precompute`` first (not timed), then the calls;
* ``one process`` — one process, an empty table cache: the calls as a campaign makes them;
* ``precomputed, new process per call`` — every call in a fresh process (as CLI runs), each after its
  own ``precompute``;
* ``new process per call`` — every call in a fresh process, all sharing one table cache folder
  (``GEOLDP_CACHE_DIR``, empty at the start).

Every process first makes one call of one trajectory over another point set of the same size, so that
loading the compiled kernels is not counted, then builds what every process builds for P whether or not a
table is used (P's diameter, spatial index, quadtree and k-d tree; with ``precomputed``, ``precompute``,
which also builds the table): the ``setup`` column, not counted in the calls. Speed is input points per
CPU second of the call, with its ratio to the median speed of the precomputed calls of the same kind (one
process, or a new process per call: the first call in a process also does once-per-process work, the
stage budgets of each length among others). It also checks that call ``k`` releases the same output on
every route.

Usage::

    python benchmarks/bench_repeated_calls.py                  # |P| = 1,000, 2,794 trips, 5 calls
    python benchmarks/bench_repeated_calls.py --points 10000 --trips 20000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile


def _calls(m: int, n_trips: int, eps: float, calls: list[int], precompute: bool) -> list[dict]:
    """Run the given calls in this process; one JSON row per call."""
    import time

    import numpy as np

    import geoldp
    from geoldp.datasets import synthetic_city_arrays

    lon, lat, flat, offsets, _ = synthetic_city_arrays(m, n_trips, min_len=2, max_len=8, seed=7)
    trajs = [flat[offsets[i] : offsets[i + 1]] for i in range(n_trips)]
    from geoldp.trajectory._fast.grid import get_index

    # load the compiled kernels: one call over another point set of the same size (P moved by 0.01°)
    other = geoldp.PointSet(lon + 0.01, lat)
    geoldp.perturb_trajectories(trajs[:1], other, mechanism="atp", epsilon=eps, rng=0)
    points = geoldp.PointSet(lon, lat)
    t0 = time.process_time()
    if precompute:
        from geoldp.trajectory import precompute as build

        build(points, mechanism="atp", epsilon=eps)
    else:  # what every process builds for P, table or not: its diameter, spatial index, quadtree, k-d tree
        index = get_index(points)
        index.tree()
        index.kdtree()
    setup = time.process_time() - t0
    rows = []
    for k in calls:
        t0 = time.process_time()
        out = geoldp.perturb_trajectories(trajs, points, mechanism="atp", epsilon=eps, rng=k)
        seconds = time.process_time() - t0
        digest = hashlib.sha256(np.concatenate(out).tobytes()).hexdigest()[:16]
        speed = flat.shape[0] / seconds
        rows.append({"call": k, "setup": setup, "seconds": seconds, "speed": speed, "digest": digest})
    return rows


def _subprocess(args: list[str], cache: str) -> list[dict]:
    env = dict(os.environ, GEOLDP_CACHE_DIR=cache)
    out = subprocess.run(
        [sys.executable, __file__, *args, "--worker"], env=env, check=True, capture_output=True, text=True
    )
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1_000)
    parser.add_argument("--trips", type=int, default=2_794)
    parser.add_argument("--epsilon", type=float, default=4.0)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--precompute", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--only", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        calls = [args.only] if args.only is not None else list(range(1, args.calls + 1))
        for row in _calls(args.points, args.trips, args.epsilon, calls, args.precompute):
            print(json.dumps(row))
        return
    base = ["--points", str(args.points), "--trips", str(args.trips), "--epsilon", str(args.epsilon)]
    base += ["--calls", str(args.calls)]
    routes = {}
    with tempfile.TemporaryDirectory() as cache:
        routes["precomputed"] = _subprocess([*base, "--precompute"], cache)
    with tempfile.TemporaryDirectory() as cache:
        routes["one process"] = _subprocess(base, cache)
    with tempfile.TemporaryDirectory() as cache:
        routes["precomputed, new process per call"] = [
            _subprocess([*base, "--precompute", "--only", str(k)], cache)[0] for k in range(1, args.calls + 1)
        ]
    with tempfile.TemporaryDirectory() as cache:
        routes["new process per call"] = [
            _subprocess([*base, "--only", str(k)], cache)[0] for k in range(1, args.calls + 1)
        ]
    in_process = statistics.median(r["speed"] for r in routes["precomputed"])
    per_process = statistics.median(r["speed"] for r in routes["precomputed, new process per call"])
    print(
        f"ATP, |P| = {args.points:,}, {args.trips:,} trajectories per call, epsilon = {args.epsilon:g} "
        "(CPU seconds of each call; speed in input points per CPU second)\n"
    )
    print("| route | setup s | " + " | ".join(f"call {k}" for k in range(1, args.calls + 1)) + " |")
    print("|---|---|" + "---|" * args.calls)
    for name, rows in routes.items():
        reference = per_process if "new process" in name else in_process
        cells = [f"{r['speed'] / 1e3:.0f}k/s ({r['speed'] / reference:.0%})" for r in rows]
        setup = f"{min(r['setup'] for r in rows):.2f}–{max(r['setup'] for r in rows):.2f}"
        print(f"| {name} | {setup} | " + " | ".join(cells) + " |")
    same = all(len({routes[name][k]["digest"] for name in routes}) == 1 for k in range(args.calls))
    print(f"\nseeded outputs identical on every route: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
