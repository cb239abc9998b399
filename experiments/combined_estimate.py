"""Measure geoldp.combine: each part's zone-visit estimate and the combined one, next to no-data baselines.

On the built-in synthetic city (``geoldp.datasets.synthetic_city``: 400 public points, 3,000 trips of 2–8
vertices over 20 km; no download), zones a public 4 km grid over P, each repetition releases the same trips
three times and combines them:

- ``hybrid:pointem`` and ``hybrid:report``: the two halves of ``geoldp.hybrid`` at ε = 4 per trip (2 for a
  PointEM trajectory, 2 for a visited-zone report with ℓ = 3);
- ``ldptrace``: an LDPTrace synthetic set at ε = 4 per trip (6 × 6 grid over P's box);
- ``combined:report+pointem`` (the two hybrid halves) and ``combined:all`` (all three).

A second table combines unbiased parts only: two visited-zone reports of the same trips (OUE at ε = 2 and
k-RR at ε = 1, ℓ = 8, the longest trip, so that every count is unbiased), ``--report-reps`` times.

For each it reports the relative L1 error of the zone-visit counts (Σ|x̂ − x| / Σx), the mean 95 % interval
width and the interval coverage over zones × repetitions; the no-data baselines are ``uniform`` (every
vertex a uniform draw from P) and ``constant`` (every vertex P's 1-median). Seeded (experiments only).

Usage::

    nice -n 10 python experiments/combined_estimate.py            # 20 + 100 repetitions (about 2 min CPU)
    python experiments/combined_estimate.py --reps 3
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

import geoldp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--trips", type=int, default=3000)
    parser.add_argument("--report-reps", type=int, default=100, help="repetitions of the reports-only table")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    t0 = time.process_time()

    import geopandas as gpd
    import shapely

    from geoldp import datasets, metrics
    from geoldp.designs.combine import combine, part_estimates
    from geoldp.reports import estimate_counts, true_counts

    points, trips = datasets.synthetic_city(n_points=400, n_trips=args.trips, seed=0)
    trips = trips[["geometry"]]
    zones = geoldp.zone_grid(points, cell_km=4.0)
    truth = true_counts(trips, zones).to_numpy(np.float64)
    gen = np.random.default_rng(0)
    # the no-data baselines (uniform over P, constant at P's 1-median), with the trips' own lengths
    xy = np.column_stack([points.geometry.x, points.geometry.y])
    lengths = shapely.get_num_coordinates(trips.geometry.values)
    uni = shapely.linestrings(
        xy[gen.integers(len(xy), size=lengths.sum())], indices=np.repeat(np.arange(len(trips)), lengths)
    )
    med = xy[metrics.one_median(points)]
    const = [shapely.LineString([med, med])] * len(trips)
    base = {
        "uniform": true_counts(gpd.GeoDataFrame(geometry=uni, crs=4326), zones).to_numpy(np.float64),
        "constant": true_counts(gpd.GeoDataFrame(geometry=const, crs=4326), zones).to_numpy(np.float64),
    }
    rows: dict[str, list] = {}

    def record(name, est, se, lo=None, hi=None):
        if lo is None:
            lo, hi = est - 1.959964 * se, est + 1.959964 * se
        ok = np.isfinite(est)
        rows.setdefault(name, []).append(
            (
                np.abs(np.where(ok, est, 0.0) - truth).sum() / truth.sum(),
                np.nanmean(hi - lo),
                np.mean(((lo <= truth) & (truth <= hi))[ok]),
            )
        )

    opts = {"n_candidates": 500, "n_boot": 10}
    for r in range(args.reps):
        traj, rep = geoldp.hybrid(
            trips,
            points,
            zones,
            epsilon=4.0,
            mechanism="pointem",
            report_options={"pad_length": 3},
            rng=100 + r,
        )
        syn = geoldp.synthesize(trips, epsilon=4.0, points=points, grid_size=6, rng=200 + r)
        ests, ses, _ = part_estimates([traj, rep, syn], zones, points=points, estimate_options=opts, rng=r)
        for col, name in zip(ests.columns, ("hybrid:pointem", "hybrid:report", "ldptrace"), strict=True):
            record(name, ests[col].to_numpy(), ses[col].to_numpy())
        own = estimate_counts(rep, zones, max_set_size=8)  # the report's own interval of the visit counts
        record(
            "hybrid:report, own interval",
            *(own[c].to_numpy() for c in ("estimate", "std_error", "lower", "upper")),
        )
        # public: at most 8 vertices, so at most 8 zones, per trip (the report's ℓ = 3 is padded)
        both = combine([traj, rep], zones, points=points, max_set_size=8, estimate_options=opts, rng=r)
        record(
            "combined:report+pointem",
            *(both[c].to_numpy() for c in ("estimate", "std_error", "lower", "upper")),
        )
        every = combine([traj, rep, syn], zones, points=points, max_set_size=8, estimate_options=opts, rng=r)
        record("combined:all", *(every[c].to_numpy() for c in ("estimate", "std_error", "lower", "upper")))
    table = pd.DataFrame(
        {name: np.mean(v, axis=0) for name, v in rows.items()},
        index=["L1 (relative)", "mean width", "coverage"],
    ).T
    for name, b in base.items():
        table.loc[name] = [np.abs(b - truth).sum() / truth.sum(), np.nan, np.nan]
    print(
        f"{len(trips)} trips, {len(zones)} zones, {args.reps} repetitions, "
        f"{len(zones) * args.reps} intervals per row"
    )
    print("| release | " + " | ".join(table.columns) + " |")
    print("|---|" + "---:|" * len(table.columns))
    for name, row in table.iterrows():
        print(f"| {name} | " + " | ".join("–" if np.isnan(v) else f"{v:.3f}" for v in row) + " |")
    # unbiased parts only: two reports (l = 8, the longest trip: every visit count is unbiased)
    cov: dict[str, list] = {}
    for r in range(args.report_reps):
        a = geoldp.report(trips, zones, epsilon=2.0, oracle="oue", pad_length=8, rng=1000 + r)
        b = geoldp.report(trips, zones, epsilon=1.0, oracle="krr", pad_length=8, rng=2000 + r)
        both = combine([a, b], zones, max_set_size=8)  # public: at most 8 vertices, so 8 zones, per trip
        for name, e, se in (
            ("report OUE, epsilon 2", *part_estimates([a], zones, max_set_size=8)[:2]),
            ("report k-RR, epsilon 1", *part_estimates([b], zones, max_set_size=8)[:2]),
        ):
            x, s_ = e["part0"].to_numpy(), se["part0"].to_numpy()
            cov.setdefault(name, []).append(
                (
                    np.abs(x - truth).sum() / truth.sum(),
                    np.mean(2 * 1.959964 * s_),
                    np.mean((x - 1.959964 * s_ <= truth) & (truth <= x + 1.959964 * s_)),
                )
            )
        x, s_ = both["estimate"].to_numpy(), both["std_error"].to_numpy()
        cov.setdefault("combined", []).append(
            (
                np.abs(x - truth).sum() / truth.sum(),
                np.mean(2 * 1.959964 * s_),
                np.mean((both["lower"] <= truth) & (truth <= both["upper"])),
            )
        )
    print(
        f"\nreports only: {args.report_reps} repetitions, {len(zones) * args.report_reps} intervals per row"
    )
    print("| release | L1 (relative) | mean width | coverage |")
    print("|---|---:|---:|---:|")
    for name, v in cov.items():
        m = np.mean(v, axis=0)
        print(f"| {name} | {m[0]:.3f} | {m[1]:.3f} | {m[2]:.3f} |")
    print(f"CPU {time.process_time() - t0:.0f} s")


if __name__ == "__main__":
    main()
