"""CPU time and peak memory of the aggregate-report estimators at 10^6 reports over 10^3 zones.

Plain script (not a test). For every case a fresh subprocess builds ``--n`` one-point trajectories over
a public grid of 40 × 25 = 1,000 zones (a skewed, seeded population), releases one report per
trajectory with :func:`geoldp.report` (ε = 4) and estimates every zone's count with its interval
(:func:`geoldp.reports.estimate_counts`). CPU time (user + system, ``resource.getrusage``) is measured
for the release and for the estimate separately; the peak resident set size (``ru_maxrss``) after each
step is that of the whole process (so the estimate's figure includes the release held in memory). The
target is the estimate under 10 min of CPU and the process under 4 GiB.

Cases: the visited zone with each oracle (domain 1,001 values) and the OD pair with k-RR (domain
1,001² ≈ 10^6 values; OUE and OLH reports of a 10^6-value domain cost O(n·d) to count and are out of
reach at this size, see docs/performance.md).

Usage::

    python benchmarks/bench_report_scale.py                 # 10^6 reports, every case
    python benchmarks/bench_report_scale.py --n 100000 --case visited_zone-oue
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ("visited_zone-krr", "visited_zone-oue", "visited_zone-olh", "od-krr")

CHILD = r"""
import json, resource, sys, warnings
import numpy as np
import geopandas as gpd
import geoldp
from geoldp.reports import estimate_counts
from geoldp import zone_grid

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB

n = int(sys.argv[1])
statistic, oracle = sys.argv[2].split("-")
zones = zone_grid((0.0, 0.0, 4.0, 2.5), cells=(40, 25))
rng = np.random.default_rng(7)
w = rng.pareto(1.2, size=len(zones)) + 0.05  # a skewed population over the zones
cell = rng.choice(len(zones), size=n, p=w / w.sum())
x = (cell % 40 + rng.uniform(0.05, 0.95, n)) * 0.1
y = (cell // 40 + rng.uniform(0.05, 0.95, n)) * 0.1
trips = gpd.GeoDataFrame(geometry=gpd.points_from_xy(x, y), crs="EPSG:4326")
del x, y, cell
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    small = geoldp.report(trips.iloc[:50], zones, statistic=statistic, epsilon=4.0, oracle=oracle, rng=0)
    estimate_counts(small, zones)  # compile the kernels outside the timed steps
base_cpu, base_peak = cpu(), peak_mib()
t0 = cpu()
rep = geoldp.report(trips, zones, statistic=statistic, epsilon=4.0, oracle=oracle, rng=1)
t_release, peak_release = cpu() - t0, peak_mib()
del trips
t0 = cpu()
est = estimate_counts(rep, zones)
t_estimate, peak_estimate = cpu() - t0, peak_mib()
assert len(est) == (len(zones) if statistic == "visited_zone" else len(zones) ** 2)
print(json.dumps({
    "n": n, "statistic": statistic, "oracle": oracle,
    "domain": geoldp.ledger_of(rep).settings["domain"]["size"],
    "release_cpu_s": t_release, "estimate_cpu_s": t_estimate, "setup_peak_mib": base_peak,
    "release_peak_mib": peak_release, "estimate_peak_mib": peak_estimate,
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="reports per case (default 10^6)")
    parser.add_argument("--case", action="append", choices=CASES, default=None, help="repeatable")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    rows = []
    for case in args.case or CASES:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(args.n), case], env=env, capture_output=True, text=True
        )
        if done.returncode:
            sys.exit(f"{case} failed:\n{done.stderr[-2000:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(
            f"{case:18s} n={r['n']:>9,} d={r['domain']:>9,}  release {r['release_cpu_s']:7.1f} s CPU  "
            f"estimate {r['estimate_cpu_s']:7.2f} s CPU  peak RSS {r['release_peak_mib']:7.0f} MiB "
            f"(after release) {r['estimate_peak_mib']:7.0f} MiB (after estimate)",
            flush=True,
        )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
