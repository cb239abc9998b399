"""Quickstart: perturb synthetic trips with TP and ATP and measure what is left.

Run:  python examples/quickstart.py [--n-trips N] [--out-dir DIR]

Everything here is synthetic (geoldp.datasets.synthetic_city), so nothing is downloaded. The seed makes
the run reproducible: seeds are for experiments like this one, never for deployment, where you omit ``rng``
and geoldp draws from the operating system's CSPRNG.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np

import geoldp  # importing geoldp registers the GeoDataFrame.ldp accessor
from geoldp.datasets import synthetic_city


def main(n_trips: int, out_dir: Path) -> None:
    """Perturb ``n_trips`` synthetic trips with TP and ATP, evaluate, write GeoJSON to ``out_dir``."""
    # 1. A public point set P (venues, intersections, ...) and private trips whose vertices are near P.
    points, trips = synthetic_city(n_points=500, n_trips=n_trips, seed=42)
    print(f"{len(points)} public points, {len(trips)} trips")

    # 2. Perturb every trip (row) with epsilon = 4 per trip. One rng object for both calls: the second call
    #    continues the stream instead of repeating it.
    rng = np.random.default_rng(2023)
    tp = trips.ldp.perturb(points, mechanism="tp", epsilon=4.0, rng=rng)
    atp = trips.ldp.perturb(points, mechanism="atp", epsilon=4.0, rng=rng)

    # Same rows, same order, same CRS; only the geometry (and the index) comes back by default.
    assert atp.index.equals(trips.index) and atp.crs == trips.crs
    print("output columns:", list(atp.columns))

    # 3. The privacy ledger travels with the frame (never the seed).
    ledger = atp.ldp.ledger
    print("ledger:", ledger.mechanism, ledger.epsilon, sorted(ledger.settings))

    # 4. Utility: distance between original and perturbed points, and more.
    for name, frame in (("TP", tp), ("ATP", atp)):
        print(f"\n{name}:")
        print(geoldp.evaluate(trips, frame).to_string())

    # 5. Export: RFC 7946 GeoJSON in WGS 84, with the ledger.
    out_dir.mkdir(parents=True, exist_ok=True)
    atp.ldp.to_geojson(out_dir / "atp.geojson")
    print("\nwrote", sorted(p.name for p in out_dir.iterdir()))


if __name__ == "__main__":
    small = os.environ.get("GEOLDP_EXAMPLES_SMALL") == "1"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-trips", type=int, default=60 if small else 1000)
    parser.add_argument("--out-dir", type=Path, default=None)
    args = parser.parse_args()
    if args.out_dir is None:
        args.out_dir = Path(tempfile.mkdtemp(prefix="geoldp-quickstart-"))
    main(args.n_trips, args.out_dir)
