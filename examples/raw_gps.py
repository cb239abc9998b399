"""Raw GPS fixes -> short trajectories -> perturbed GeoJSON.

Run:  python examples/raw_gps.py [--n-trips N] [--out-dir DIR]

A GPS trace has one fix every few seconds, but the privacy budget ε covers the whole trajectory: with
hundreds of fixes, every point gets almost nothing and the output is close to uniform noise. This example
shows the pipeline that avoids it:

1. a CSV of raw fixes (trip id, timestamp, lon, lat) — simulated here from a synthetic city;
2. ``geoldp.io.read_trajectories`` reads it as Point rows;
3. ``geoldp.prepare.trajectories_from_points`` builds one LineString per trip (split at 10-minute gaps);
4. ``drop_consecutive_duplicates`` (stops at one public point count once) and ``resample`` shrink every
   trip to the length ``suggest_max_points`` recommends for the chosen ε;
5. ``gdf.ldp.perturb`` perturbs each trip with ATP, snapping every vertex to its nearest public point;
6. ``to_geojson`` writes RFC 7946 GeoJSON with the privacy ledger.
"""

from __future__ import annotations

import argparse
import itertools
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import shapely

import geoldp  # noqa: F401  (registers the .ldp accessor)
from geoldp import io, prepare
from geoldp.datasets import synthetic_city

EPSILON = 4.0


def simulate_fixes(trips, *, spacing_m: float = 60.0, noise_m: float = 8.0, seed: int = 0) -> pd.DataFrame:
    """Densify each synthetic trip into noisy GPS fixes every ``spacing_m`` metres, one every 5 s."""
    gen = np.random.default_rng(seed)  # simulation noise for the example data, not privacy noise
    deg = 6371000.0 * np.pi / 180.0
    rows = []
    start = pd.Timestamp("2026-05-04 08:00:00")
    for trip_id, line in zip(trips["trip_id"], trips.geometry, strict=True):
        xy = np.asarray(line.coords)
        for a, b in itertools.pairwise(xy):
            seg_m = np.hypot((b[0] - a[0]) * deg * np.cos(np.radians(a[1])), (b[1] - a[1]) * deg)
            k = max(1, int(seg_m // spacing_m))
            for t in np.arange(k) / k:
                rows.append((trip_id, a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])))
        rows.append((trip_id, xy[-1, 0], xy[-1, 1]))
    df = pd.DataFrame(rows, columns=["trip", "lon", "lat"])
    df["lat"] += gen.normal(0.0, noise_m, len(df)) / deg
    df["lon"] += gen.normal(0.0, noise_m, len(df)) / (deg * np.cos(np.radians(df["lat"])))
    step = df.groupby("trip").cumcount()
    df["time"] = start + pd.to_timedelta(df["trip"] * 3600 + step * 5, unit="s")
    return df[["trip", "time", "lon", "lat"]]


def main(n_trips: int, out_dir: Path) -> None:
    """Run the pipeline on ``n_trips`` simulated trips and write the files to ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pois, trips = synthetic_city(n_points=1000, n_trips=n_trips, seed=7)

    # 1. raw fixes as a CSV file, as they would come from a logger
    csv = out_dir / "fixes.csv"
    simulate_fixes(trips).to_csv(csv, index=False)

    # 2. read them as Point rows (lon/lat columns are detected; CRS EPSG:4326)
    fixes = io.read_trajectories(csv, traj_id_col="trip", time_col="time")
    print(f"{len(fixes)} GPS fixes in {fixes['trip'].nunique()} trips")

    # 3. one LineString per trip, split where the logger paused for more than 10 minutes
    lines = prepare.trajectories_from_points(fixes, "trip", "time", max_gap="10min")
    print("fixes per trajectory: median", int(lines["n_points"].median()))

    # 4. shrink: merge runs of fixes at the same public point, then resample to a length that still gets
    #    a useful budget per point at this epsilon
    max_points = max(2, prepare.suggest_max_points("atp", epsilon=EPSILON))
    lines = prepare.drop_consecutive_duplicates(lines, pois)
    lines = prepare.resample(lines, max_points=max_points)
    n_vertices = shapely.get_num_coordinates(lines.geometry.values)
    print(f"after preparation: at most {n_vertices.max()} points per trajectory (limit {max_points})")

    # 5. perturb (the OS CSPRNG would be used without rng=; the seed is for this reproducible example only).
    #    snap_max_km turns "a vertex is far from every public point" (wrong CRS, wrong point set, a fix in
    #    another city) into an error instead of a silent snap.
    out = lines.ldp.perturb(pois, mechanism="atp", epsilon=EPSILON, snap_max_km=3.0, rng=1)
    print("released columns:", list(out.columns))

    # 6. GeoJSON with the ledger as a top-level "geoldp" member
    path = io.to_geojson(out, out_dir / "perturbed.geojson")
    print("wrote", path)


if __name__ == "__main__":
    small = os.environ.get("GEOLDP_EXAMPLES_SMALL") == "1"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-trips", type=int, default=15 if small else 200)
    parser.add_argument("--out-dir", type=Path, default=None)
    args = parser.parse_args()
    if args.out_dir is None:
        args.out_dir = Path(tempfile.mkdtemp(prefix="geoldp-raw-gps-"))
    main(args.n_trips, args.out_dir)
