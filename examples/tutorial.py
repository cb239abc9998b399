"""Tutorial: raw GPS fixes -> public grid -> short trips -> ATP release -> GeoPackage for QGIS.

Run:  python examples/tutorial.py [OUT_DIR] [--fixes FIXES.csv] [--epsilon E]

``FIXES.csv`` (also ``.csv.gz``) holds one GPS fix per row with the columns ``user_id``, ``time``, ``lon``,
``lat``: the log of each user's device, with a pause between trips. Without ``--fixes`` a small simulated
log is written first (demo data only). The steps are explained in docs/tutorial.md, which shows the code
between the ``# [name]`` and ``# [/name]`` markers of this file.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import shapely

import geoldp
from geoldp import io, layers, points, prepare

# [settings]
#: A PUBLIC area: central Beijing, a rounded bounding box (lon/lat) chosen without looking at the data.
AREA = (116.25, 39.80, 116.50, 40.05)
SPACING_M = 500  # public grid spacing, metres
EPSILON = 4.0  # budget of ONE trajectory
TOTAL_EPSILON = 9.0  # what each user may spend over all releases
PILOT_EPSILON = 1.0  # the private pilot's budget, for one trip of each pilot user
MAX_PER_USER = 2  # trips released per user: (TOTAL_EPSILON - PILOT_EPSILON) / EPSILON (others dropped)
# [/settings]


def main(
    fixes_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    epsilon: float = EPSILON,
    budget_path: str | os.PathLike[str] | None = None,
    rng: int | None = None,
) -> Path:
    """Run every step of the tutorial on ``fixes_path``; return the GeoPackage written to ``out_dir``.

    Parameters
    ----------
    fixes_path : path
        The raw GPS fixes (private), a CSV (or ``.csv.gz``) with ``user_id``, ``time``, ``lon``, ``lat``.
    out_dir : path
        Folder for the release: ``released.gpkg`` and its ledger sidecar ``released.gpkg.ledger.json``.
    epsilon : float, default 4.0
        Budget per trajectory.
    budget_path : path, optional
        The accountant's JSON file (it holds user ids: keep it with the private data). Default:
        ``budget.json`` next to the fixes. An existing file is loaded, so budgets add up across runs.
    rng : int, optional
        A seed for experiments and tests only; ``None`` (default) uses the operating system's CSPRNG.
    """
    fixes_path = Path(fixes_path)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    budget_path = Path(budget_path) if budget_path is not None else fixes_path.with_name("budget.json")

    # [read]
    fixes = io.read_trajectories(fixes_path, traj_id_col="user_id", time_col="time")
    print(f"{len(fixes)} GPS fixes of {fixes['user_id'].nunique()} users, CRS {fixes.crs.to_string()}")
    # [/read]

    # [grid]
    P = points.grid(AREA, SPACING_M)  # public: built from AREA and SPACING_M only, never from `fixes`
    print(f"{len(P)} public points; provenance: {points.provenance_of(P)}")
    # [/grid]

    # [prepare]
    # one LineString per trip: a new trip starts where a user's log pauses for more than 10 minutes
    trips = prepare.trajectories_from_points(fixes, "user_id", "time", max_gap="10min")
    print(f"{len(trips)} trips, median {int(trips['n_points'].median())} fixes per trip")
    # keep the trips inside the public area: P says nothing useful about the others (snap_max_km below would
    # refuse them); each trip is kept or dropped on its own data only, and dropped trips are not released
    trips = trips[trips.within(shapely.box(*AREA))]
    # the longest trip that still gets at least 0.1 of budget per point at this epsilon
    max_points = prepare.suggest_max_points("atp", epsilon=epsilon)
    trips = prepare.drop_consecutive_duplicates(trips, P)  # a stop at one public point counts once
    trips = prepare.resample(trips, max_points=max_points)  # at most max_points, evenly along the track
    n = int(trips.geometry.count_coordinates().max())
    print(f"at most {n} points per trip: {prepare.point_budget('atp', n, epsilon=epsilon):.2f} of ε each")
    # [/prepare]

    # [save-trips]
    # the prepared trips are still private: keep them with the raw fixes (for the command line, step 9)
    io.write_file(trips, fixes_path.with_name("trips.gpkg"), overwrite=True, inputs=[fixes_path])
    # [/save-trips]

    # [plan]
    # every release of the campaign is charged to one budget file, the pilot's first
    acc = (
        geoldp.BudgetAccountant.load(budget_path)
        if budget_path.exists()
        else geoldp.BudgetAccountant(TOTAL_EPSILON)
    )
    # no public prior: a private pilot. A public share of the users (every fifth, by id) reports for one trip,
    # under PILOT_EPSILON, its length class, its number of distinct zones and one coarse cell it visits
    zones = geoldp.zone_grid(P, cell_km=1.5)
    pilot_users = sorted(trips["user_id"].unique())[::5]
    first_trips = trips[trips["user_id"].isin(pilot_users)].groupby("user_id").head(1)
    pilot = geoldp.designs.Pilot()
    reports = pilot.release(
        first_trips, epsilon=PILOT_EPSILON, zones=zones, accountant=acc, user_col="user_id", rng=rng
    )
    # which design answers "where do people go?" best at this budget: each design is simulated on
    # populations fitted to the pilot's estimates (post-processing), next to the no-data baselines
    plan = geoldp.plan(P, zones, epsilon=epsilon, n=len(trips), pilot=pilot.estimate(reports, zones), rng=rng)
    print(plan[["kind", "error", "error_low", "error_high", "recommended"]].round(3).to_string())
    print(f"recommended for zone visits: {plan.attrs['recommended']} ({plan.attrs['population']})")
    # plan.best is the recommended design itself (a no-data baseline, which releases nothing, when no design
    # beats it): best.collect(trips, "zone_visits", epsilon=..., points=P, zones=zones, accountant=...)
    # releases and answers with it; on the command line, geoldp collect TRIPS --design NAME ... (printed by
    # geoldp plan)
    print(f"run it with: {plan.best!r}, ledger {plan.best.ledger(epsilon)}")
    # [/plan]

    # [perturb]
    released = trips.ldp.perturb(
        P,
        mechanism="atp",
        epsilon=epsilon,
        accountant=acc,  # refuses, before any random draw, a release that takes a user past the total
        user_col="user_id",  # who pays for each trip; not released (not in keep_columns)
        max_per_user=MAX_PER_USER,  # a user's first 2 trips (in time order); her other trips are dropped
        snap_max_km=2.0,  # a fix more than 2 km from every public point is an error, not a silent snap
        rng=rng,
    )
    acc.save(budget_path)
    ledger = released.ldp.ledger
    mech, eps = ledger.mechanism, ledger.epsilon
    print(f"released {len(released)} of {len(trips)} trips with {mech} at ε = {eps} each")
    print(f"a user has {acc.remaining(trips['user_id'].iloc[0])} of ε = {acc.total_epsilon} left")
    # [/perturb]

    # [evaluate]
    # the release next to two baselines computed from P alone: "uniform" (every vertex a uniform draw from P)
    # and "constant" (every vertex at P's 1-median); one row each, one column per metric
    table = geoldp.evaluate(trips.loc[released.index], released, points=P)  # the rows released
    print(table[["NE_km", "PRQ_1km", "range_query_error", "zone_l1", "od_l1"]].round(3).to_string())
    # [/evaluate]

    # [estimate]
    # population statistics from the release alone (post-processing: no budget is spent, no original is read);
    # the mechanism and its ε are read from the release's ledger
    # one fit answers every query: zone visits, origin -> destination flows (lines between zone centres)
    # and the 10 busiest zones, each with estimate, lower, upper (95 % interval), width and raw columns
    estimates = layers.estimate_layers(released, P, zones=zones, rng=rng)
    visits = estimates["zone_visits"]
    cols = ["zone", "estimate", "lower", "upper", "raw"]
    print(visits.sort_values("estimate", ascending=False)[cols].head(5).round(1).to_string(index=False))
    flows = estimates["od_flows"]
    cols = ["origin", "destination", "estimate", "lower", "upper"]
    print(flows.sort_values("estimate", ascending=False)[cols].head(3).round(1).to_string(index=False))
    # [/estimate]

    # [write]
    gpkg = out_dir / "released.gpkg"
    # the public points first (a new file, replacing an old one whole), then the release as a second layer;
    # the ledger sidecar is written last and records the final file's size and SHA-256
    io.write_file(P, gpkg, layer="public_points", overwrite=True)
    written = io.write_file(released, gpkg, layer="released_trips", add_layer=True, inputs=[fixes_path])
    # the estimates (computed from the release alone: as public as it is), one layer each
    written += layers.write_layers(estimates, out_dir / "estimates.gpkg", overwrite=True)
    print("wrote", ", ".join(p.name for p in written))
    # [/write]
    return gpkg


def _demo_fixes(path: Path, *, n_users: int, seed: int = 0) -> None:
    """Write a simulated GPS log (demo data, not part of the tutorial): three trips per user, 5 s fixes."""
    gen = np.random.default_rng(seed)  # simulation noise, not privacy noise
    rows = []
    for user in range(n_users):
        t = pd.Timestamp("2026-05-04 07:00") + pd.Timedelta(minutes=int(gen.integers(0, 120)))
        for _trip in range(3):
            lon, lat = gen.uniform(116.33, 116.42), gen.uniform(39.88, 39.97)
            heading = gen.uniform(0, 2 * np.pi)
            for _fix in range(int(gen.integers(150, 300))):
                heading += gen.normal(0, 0.1)
                lon += 40 * np.cos(heading) / 85_000 + gen.normal(0, 5e-5)  # ~8 m/s, ~5 m GPS noise
                lat += 40 * np.sin(heading) / 111_000 + gen.normal(0, 5e-5)
                rows.append((f"u{user:03d}", t, lon, lat))
                t += pd.Timedelta(seconds=5)
            t += pd.Timedelta(hours=3)  # at work: the log pauses
    pd.DataFrame(rows, columns=["user_id", "time", "lon", "lat"]).to_csv(path, index=False)


if __name__ == "__main__":
    small = os.environ.get("GEOLDP_EXAMPLES_SMALL") == "1"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", type=Path, default=None, help="output folder")
    parser.add_argument("--fixes", type=Path, default=None, help="raw fixes CSV (default: simulated)")
    parser.add_argument("--epsilon", type=float, default=EPSILON)
    args = parser.parse_args()
    if args.out_dir is None:
        args.out_dir = Path(tempfile.mkdtemp(prefix="geoldp-tutorial-"))
    if args.fixes is None:
        args.fixes = Path(tempfile.mkdtemp(prefix="geoldp-tutorial-private-")) / "fixes.csv"
        _demo_fixes(args.fixes, n_users=10 if small else 50)
    main(args.fixes, args.out_dir, epsilon=args.epsilon)
