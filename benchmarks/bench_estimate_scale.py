"""How ``geoldp.estimate`` scales with the number of releases: CPU time and peak memory of one fit + query.

Each size runs in its own child process on one BLAS thread (so the CPU time is that of one core and the peak
resident memory is that of the fit alone): a synthetic city with |P| public points, N trajectories of 2-8
points released by the mechanism at ε = 4 (not timed), then ``estimate.fit(...).visit_counts(zones)`` with
intervals (30 bootstrap replicates) over a grid of about 10^3 square zones. The child's address space is
capped (``--max-gib``) so that a size that would not fit fails instead of swapping. ``--fit-rows`` is the
estimator's ``fit_rows`` (default: the estimator's own): a length with more releases is fitted on a uniform
sample of that many. The peak memory includes the synthetic population and its release (the perturbation
itself is not timed); the setup column is its CPU time.

Usage::

    python benchmarks/bench_estimate_scale.py                       # N = 10^4 and 3·10^4, |P| = 10^4
    python benchmarks/bench_estimate_scale.py --n 10000 100000 --points 10000 --mechanism atp
    python benchmarks/bench_estimate_scale.py --n 1000000 --fit-rows 5000
    python benchmarks/bench_estimate_scale.py --n 10000 100000 1000000 --denoise   # estimate.denoise instead

With ``--denoise`` the timed call is ``estimate.denoise(...)`` (the fit without intervals, then every
release's denoised trajectory; the zones are not used).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = """
import json, resource, sys, time
import numpy as np
import geopandas as gpd, shapely
resource.setrlimit(resource.RLIMIT_AS, (int(MAX_GIB * 2**30), int(MAX_GIB * 2**30)))
from geoldp import PointSet, estimate, perturb_trajectories
from geoldp.datasets import synthetic_city_arrays

s0 = time.process_time()
lon, lat, flat, off, _ = synthetic_city_arrays(M, N, seed=0)
ps = PointSet(lon, lat)
trajs = np.split(flat, off[1:-1])
rel = perturb_trajectories(trajs, ps, mechanism=MECH, epsilon=4.0, rng=1)
side = 32  # about 10^3 zones
xs = np.linspace(lon.min() - 1e-9, lon.max() + 1e-9, side + 1)
ys = np.linspace(lat.min() - 1e-9, lat.max() + 1e-9, side + 1)
zones = gpd.GeoDataFrame(
    geometry=[shapely.box(xs[i], ys[j], xs[i + 1], ys[j + 1]) for i in range(side) for j in range(side)],
    crs="EPSG:4326",
)
estimate.visit_counts(rel[:20], ps, mechanism=MECH, epsilon=4.0, rng=0, n_candidates=50)  # compile
if DENOISE:  # compile both denoise paths (every row fitted, and a length fitted on a sample)
    estimate.denoise(rel[:300], ps, mechanism=MECH, epsilon=4.0, rng=0, n_candidates=50, fit_rows=20)
c0 = time.process_time()
if DENOISE:
    out = estimate.denoise(rel, ps, mechanism=MECH, epsilon=4.0, rng=2, **FIT_KW)
    assert [len(o) for o in out] == [len(r) for r in rel]
else:
    pop = estimate.fit(rel, ps, mechanism=MECH, epsilon=4.0, rng=2, **FIT_KW)
    vz = pop.visit_counts(zones)
    assert len(vz) == len(zones) and vz[["estimate", "lower", "upper"]].notna().all().all()
cpu = time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
row = {"n": N, "points": M, "zones": len(zones), "cpu_s": cpu, "peak_gib": peak / 2**30, "setup_s": c0 - s0}
print(json.dumps(row))
"""


def run(
    n: int, m: int, mech: str, max_gib: float, fit_rows: int | None = None, denoise: bool = False
) -> dict:
    one = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    env = dict(os.environ, **one, PYTHONPATH=str(REPO))
    code = (
        _CHILD.replace("MAX_GIB", repr(max_gib))
        .replace("DENOISE", repr(denoise))
        .replace("MECH", repr(mech))
        .replace("FIT_KW", repr({} if fit_rows is None else {"fit_rows": fit_rows}))
        .replace("M, N", f"{m}, {n}")
        .replace('"n": N', f'"n": {n}')
        .replace('"points": M', f'"points": {m}')
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        return {"n": n, "points": m, "error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 30_000])
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--mechanism", default="atp")
    ap.add_argument("--max-gib", type=float, default=8.0)
    ap.add_argument("--fit-rows", type=int, default=None, help="the estimator's fit_rows (default: its own)")
    ap.add_argument(
        "--denoise", action="store_true", help="time estimate.denoise (fit without intervals + denoise)"
    )
    args = ap.parse_args(argv)
    timed = "denoise" if args.denoise else "fit + visit_counts"
    print(
        f"| releases | points | zones | CPU s ({timed}, one core) | peak memory GiB "
        "| setup CPU s (population + release, not timed) |"
    )
    print("|---|---|---|---|---|---|")
    for n in args.n:
        r = run(n, args.points, args.mechanism, args.max_gib, args.fit_rows, args.denoise)
        if "error" in r:
            print(f"| {n} | {args.points} | – | failed: {r['error']} | – | – |", flush=True)
        else:
            row = f"| {n} | {r['points']} | {r['zones']} | {r['cpu_s']:.0f} | {r['peak_gib']:.2f} "
            print(row + f"| {r['setup_s']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
