"""Perturb a partitioned frame with Dask, and check it equals the in-memory result.

Run:  python examples/dask_perturb.py [--n-trips N] [--npartitions K]

Needs the extra: pip install "geoldp[dask]".

geoldp.dask.perturb draws one stream key per call and numbers every trajectory by its global row
position, so with a seed the result does not depend on how the frame is partitioned: it equals
``gdf.ldp.perturb`` with the same seed. (Without a seed, the OS CSPRNG is used, as in deployment.)
"""

from __future__ import annotations

import argparse
import os

import dask_geopandas

import geoldp
import geoldp.dask
from geoldp.datasets import synthetic_city


def main(n_trips: int, npartitions: int) -> None:
    """Perturb ``n_trips`` trips in ``npartitions`` partitions; compare with the in-memory result."""
    pois, trips = synthetic_city(n_points=500, n_trips=n_trips, seed=3)
    ddf = dask_geopandas.from_geopandas(trips, npartitions=npartitions)

    lazy = geoldp.dask.perturb(ddf, pois, mechanism="atp", epsilon=4.0, rng=123)
    out = lazy.compute()
    print(f"{len(out)} trajectories perturbed in {ddf.npartitions} partitions")

    reference = trips.ldp.perturb(pois, mechanism="atp", epsilon=4.0, rng=123)
    same = bool(out.geometry.geom_equals_exact(reference.geometry, tolerance=0).all())
    print("identical to the in-memory result with the same seed:", same)
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    small = os.environ.get("GEOLDP_EXAMPLES_SMALL") == "1"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-trips", type=int, default=50 if small else 2000)
    parser.add_argument("--npartitions", type=int, default=3 if small else 8)
    args = parser.parse_args()
    main(args.n_trips, args.npartitions)
