"""The per-user client: its import time and one report's latency on a campaign over a 10⁴-point P.

Plain script. Writes a campaign of ``--design`` (default ATP; ε = 4) over ``--points`` random public points
in a 0.3° box (and a 4 × 4 zone grid over it, for report and hybrid designs), then,
in a fresh process (pin it to one core with ``taskset -c N`` to measure one core), times
``import numpy``, ``import geoldp.client`` beyond numpy (bytecode cached, as installed), reading and
preparing the campaign, and
``--reports`` reports of trajectories of 2, 20 and 64 points with the operating system's randomness
(median and 95th percentile). Also lists the heavy modules the import loaded (there must be none).

Usage::

    taskset -c 0 python benchmarks/bench_client.py --points 10000
    taskset -c 0 python benchmarks/bench_client.py --points 10000 --design tracs-d
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DEVICE = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import geoldp.client as gc
t2 = time.perf_counter()
heavy = sorted({m.split('.')[0] for m in sys.modules} & {'geopandas', 'shapely', 'pyproj', 'sklearn', 'numba',
                                                       'pandas', 'scipy'})
device = gc.Client(sys.argv[1])
t3 = time.perf_counter()
rng = np.random.default_rng(5)
out = {"numpy_s": t1 - t0, "client_import_s": t2 - t1, "prepare_s": t3 - t2, "heavy": heavy}
for n in (2, 20, 64):
    times = []
    for _ in range(int(sys.argv[2])):
        trip = np.column_stack([116.3 + rng.random(n) * 0.3, 39.9 + rng.random(n) * 0.3])
        a = time.perf_counter()
        device.respond(trip, user="u")
        times.append(time.perf_counter() - a)
    out[str(n)] = [float(np.median(times)), float(np.percentile(times, 95))]
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--reports", type=int, default=40)
    parser.add_argument("--design", default="atp", help="the campaign's design (default atp)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    import geopandas as gpd
    import numpy as np

    from geoldp import zone_grid
    from geoldp.field.campaign import Campaign

    rng = np.random.default_rng(1)
    lon, lat = 116.3 + rng.random(args.points) * 0.3, 39.9 + rng.random(args.points) * 0.3
    points = gpd.GeoDataFrame(geometry=gpd.points_from_xy(lon, lat), crs="EPSG:4326")
    with tempfile.TemporaryDirectory() as tmp:
        zones = zone_grid((116.3, 39.9, 116.6, 40.2), cells=4)
        campaign = Campaign.create(args.design, epsilon=4.0, points=points, zones=zones)
        path = campaign.write(Path(tmp) / "campaign.json")
        size = path.stat().st_size
        # bytecode cached, as for an installed package (a session may run with PYTHONDONTWRITEBYTECODE)
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pyc")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([sys.executable, "-c", "import geoldp.client"], env=env, check=True)  # the cache
        run = subprocess.run(
            [sys.executable, "-c", DEVICE, str(path), str(args.reports)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    r = json.loads(run.stdout)
    heavy = r["heavy"] or "none"
    print(f"design {args.design}, |P| = {args.points}, campaign file {size / 1e3:.0f} kB")
    print(f"heavy modules imported: {heavy}")
    print(
        f"import numpy {r['numpy_s']:.3f} s, import geoldp.client (beyond numpy) "
        f"{r['client_import_s']:.3f} s, "
        f"read and prepare the campaign {r['prepare_s']:.3f} s"
    )
    print("| trajectory points | median ms | 95th percentile ms |")
    print("|---:|---:|---:|")
    for n in ("2", "20", "64"):
        print(f"| {n} | {r[n][0] * 1e3:.1f} | {r[n][1] * 1e3:.1f} |")


if __name__ == "__main__":
    main()
