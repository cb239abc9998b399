"""Points per second of TraCS-D and TraCS-C, one thread: the compiled kernel, the array entry point and
the frame path (``gdf.ldp.perturb``, lon/lat input, continuous output and snapped to public points).

Plain script, synthetic planar data (uniform in a 40 km box; trajectories of 4 locations; ε = 4 per
trajectory). Each figure is the best of ``--repeat`` runs after a warm-up (compilation excluded), in CPU
time of the process (``time.process_time``: the machine is shared, so wall time depends on the load; the
kernels run on one thread). The target is
at least 10⁶ points per second for the kernel (Θ(1) work per location).

Usage::

    python benchmarks/bench_tracs.py
    python benchmarks/bench_tracs.py --points 2000000 --repeat 5
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

BOX_M = 40_000.0
LENGTH = 4


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1_000_000, help="locations released per run")
    ap.add_argument("--frame-points", type=int, default=200_000, help="locations of the frame-path runs")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import geopandas as gpd
    import shapely

    import geoldp
    from geoldp._core.box import planar_box
    from geoldp.trajectory import TraCSC, TraCSD, perturb_coordinates

    rng = np.random.default_rng(1)
    n = args.points - args.points % LENGTH
    xy = rng.uniform(0.0, BOX_M, (n, 2))
    offsets = np.arange(0, n + 1, LENGTH)
    key = np.arange(8, dtype=np.uint32)
    box = (0.0, 0.0, BOX_M, BOX_M)
    rows = []
    for mech in (TraCSD(epsilon=4.0, bounds=box), TraCSC(epsilon=4.0, bounds=box)):
        mech.perturb_xy(xy[:8, 0], xy[:8, 1], offsets[:3], key=key)  # compile or load
        t = best(lambda m=mech: m.perturb_xy(xy[:, 0], xy[:, 1], offsets, key=key), args.repeat)
        rows.append((mech.name, "kernel (perturb_xy)", n, n / t))
        trajs = np.split(xy, offsets[1:-1])
        t = best(lambda m=mech, tr=trajs: perturb_coordinates(tr, mechanism=m, rng=0), args.repeat)
        rows.append((mech.name, "perturb_coordinates (list of arrays)", n, n / t))

    # the frame path: lon/lat LineStrings in a public box around Chicago, a local plane derived from it
    lonlat_box = (-88.0, 41.6, -87.5, 42.0)
    pb = planar_box(lonlat_box, "EPSG:4326", caller="bench")
    m = args.frame_points - args.frame_points % LENGTH
    px = rng.uniform(pb.planar_bounds[0], pb.planar_bounds[2], m)
    py = rng.uniform(pb.planar_bounds[1], pb.planar_bounds[3], m)
    lon, lat = pb.to_wgs84(px, py)
    inside = (lon > lonlat_box[0]) & (lon < lonlat_box[2]) & (lat > lonlat_box[1]) & (lat < lonlat_box[3])
    lon, lat = np.where(inside, lon, -87.75), np.where(inside, lat, 41.8)
    lines = shapely.linestrings(
        np.column_stack([lon, lat]), indices=np.repeat(np.arange(m // LENGTH), LENGTH)
    )
    trips = gpd.GeoDataFrame(geometry=lines, crs="EPSG:4326")
    public = geoldp.points.grid(lonlat_box, 500.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("tracs-d", "tracs-c"):
            trips.head(2).ldp.perturb(mechanism=name, epsilon=4.0, bounds=lonlat_box, rng=0)
            t = best(
                lambda nm=name: trips.ldp.perturb(mechanism=nm, epsilon=4.0, bounds=lonlat_box, rng=0),
                args.repeat,
            )
            rows.append((name, "gdf.ldp.perturb, continuous", m, m / t))
            t = best(
                lambda nm=name: trips.ldp.perturb(
                    public, mechanism=nm, epsilon=4.0, bounds=lonlat_box, rng=0
                ),
                args.repeat,
            )
            rows.append((name, f"gdf.ldp.perturb, snapped to {len(public):,} public points", m, m / t))

    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print("| mechanism | path | locations | points per second |")
    print("|---|---|---|---|")
    for name, path, count, rate in rows:
        print(f"| {name} | {path} | {count:,} | {rate:,.0f} |")


if __name__ == "__main__":
    main()
