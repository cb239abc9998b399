"""Answers as GIS layers: CPU time of ``geoldp.layers.estimate_layers`` on a synthetic city.

Builds ``geoldp.datasets.synthetic_city`` (|P| = ``--points``, ``--trips`` trips of 2–8 points), releases
it with ATP at ε = 4 (not timed), then times ``estimate_layers(released, P, rng=0)`` with its defaults
(zone visits, OD flows and hotspots over 1.5 km zones; 3,000 candidates, 30 bootstrap replicates) in CPU
seconds of this process, one BLAS thread. Run it twice with the same ``GEOLDP_CACHE_DIR`` to see the
effect of ATP's public table kept on disk (the estimator's simulations are ATP calls over P).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_layers.py --points 10000 --trips 3950
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--trips", type=int, default=3_950)
    args = parser.parse_args()
    import geoldp
    from geoldp import layers
    from geoldp.datasets import synthetic_city

    pts, trips = synthetic_city(args.points, args.trips, seed=3)
    points = geoldp.PointSet.from_geodataframe(pts)
    released = trips.ldp.perturb(points, mechanism="atp", epsilon=4.0, rng=1)
    t0, w0 = time.process_time(), time.perf_counter()
    out = layers.estimate_layers(released, points, rng=0)
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    sizes = ", ".join(f"{name} {len(layer)}" for name, layer in out.items())
    print(f"|P| = {args.points:,}, {args.trips:,} trips: {cpu:.1f} s CPU ({wall:.1f} s wall); {sizes}")


if __name__ == "__main__":
    main()
