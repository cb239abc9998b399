"""CPU time of one ``geoldp.plan`` call at |P| = 10^4 public points and n = 10^4 users (target: under 20 s).

Plain script. A synthetic city of 10,000 public points (``geoldp.datasets.synthetic_city_arrays``), a
public 10 x 10 grid of zones over it, ε = 4, and one question (default ``zone_visits``), planned three
ways: with public lengths (2 .. 8), from a private pilot (400 seeded pilot reports of synthetic trips at
ε = 4, ``geoldp.designs.Pilot``), and with ``population="robust"``. Reports the CPU seconds of each
(``time.process_time``: the machine is shared), after one warm-up call on a small set.

Usage::

    python benchmarks/bench_plan.py
    python benchmarks/bench_plan.py --question od_flows
"""

from __future__ import annotations

import argparse
import time
import warnings


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--question", default="zone_visits")
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--n", type=int, default=10_000)
    args = ap.parse_args()
    import geoldp
    from geoldp import zone_grid
    from geoldp.datasets import synthetic_city

    warnings.simplefilter("ignore")
    pts, trips = synthetic_city(n_points=args.points, n_trips=400, seed=1)
    zones = zone_grid(tuple(pts.total_bounds), cells=10)
    small = zone_grid(tuple(pts.total_bounds), cells=3)
    geoldp.plan(
        pts.iloc[:300], small, epsilon=4.0, n=100, lengths=3, rng=0, question=args.question
    )  # warm-up
    pilot = geoldp.designs.Pilot()
    est = pilot.estimate(pilot.release(trips, epsilon=4.0, zones=zones, rng=0), zones)
    runs = {
        "public lengths 2..8": {"lengths": list(range(2, 9))},
        "pilot": {"pilot": est, "max_length": 8},
        "robust": {"lengths": list(range(2, 9)), "population": "robust"},
    }
    for label, kw in runs.items():
        t0 = time.process_time()
        table = geoldp.plan(pts, zones, epsilon=4.0, n=args.n, question=args.question, rng=0, **kw)
        cpu = time.process_time() - t0
        print(
            f"plan {args.question} |P|={len(pts)} n={args.n} {label}: {cpu:.1f} s CPU "
            f"(recommends {table.attrs['recommended']})"
        )


if __name__ == "__main__":
    main()
