r"""``geoldp prepare``: build the trips to release from GPS fixes (split at gaps, clip, shorten).

The output holds the prepared ORIGINAL trips: private, the file to perturb and to evaluate the release
against::

    geoldp prepare fixes.csv --traj-id-col user --time-col time --max-gap 30min --max-points 40 \
        --area=116.2,39.8,116.5,40.1 -o trips.gpkg
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from geoldp.cli import _read
from geoldp.cli._args import bbox as _bbox
from geoldp.cli._args import check_output, existing_file, print_written, stage, usage, warned
from geoldp.cli._args import int_at_least as _int_at_least
from geoldp.cli._args import positive_float as _positive_float

PROG = "geoldp"


def _cmd_prepare(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    import geopandas as gpd
    import numpy as np
    import shapely

    from geoldp import io as gio
    from geoldp import prepare

    src = existing_file(args.fixes, "FIXES")
    if (args.area is not None) and args.points is not None:
        usage(args, "give --area (clip or drop at a public box) or --points with --max-km, not both")
    if args.max_km is not None and args.points is None:
        usage(args, "--max-km needs --points POINTS (the public point set)")
    if args.outside != "clip" and args.area is None:
        usage(args, "--outside goes with --area")
    inputs = [src] + ([Path(args.points)] if args.points else [])
    out_path = check_output(args.output, overwrite=args.overwrite, inputs=inputs, ledger=False)
    read_kwargs = _read.read_kwargs(args)
    read_kwargs.update(_read.text_columns(args, src))  # ids such as GeoLife's "000" stay text
    with stage(f"cannot read FIXES '{args.fixes}'"):
        fixes = gio.read_trajectories(
            src, traj_id_col=args.traj_id_col, time_col=args.time_col, **read_kwargs
        )
    _read.check_columns(args, fixes, f"FIXES '{args.fixes}'")
    n_in = len(fixes)
    trips = _build_trips(args, fixes)
    if len(trips) == 0 and n_in:
        raise ValueError(_empty_after(args))
    n_built = len(trips)
    trips, dropped_outside = _outside_dropped(args, trips)
    if len(trips) == 0 and n_built:
        option = "--area" if args.area is not None else "--max-km"
        raise ValueError(f"no trip is left after {option}: check the area or the distance")
    trips = trips.reset_index(drop=True)
    if args.simplify is not None:
        trips = prepare.simplify(trips, args.simplify, max_points=args.max_points)
    elif args.max_points is not None or args.spacing_m is not None:
        trips = prepare.resample(trips, max_points=args.max_points, spacing_m=args.spacing_m)
    trips = gpd.GeoDataFrame(trips, geometry=trips.geometry.name, crs=trips.crs)
    if "n_points" in trips.columns:  # the vertex count of the prepared trip
        trips["n_points"] = shapely.get_num_coordinates(np.asarray(trips.geometry.values))
    trips.attrs = {}
    with stage(f"cannot write '{args.output}'"):
        written = gio.write_file(trips, out_path, overwrite=args.overwrite, inputs=tuple(inputs))
    what = f"{n_in} rows" + (f" ({n_built} trips before the area filter)" if n_built != len(trips) else "")
    why = {
        "clip": "with no run of --min-points fixes inside the area",
        "drop": "leaving the area",
    }.get(args.outside if args.area is not None else "", f"with a fix farther than {args.max_km} km from P")
    extra = f"; {dropped_outside} trip(s) {why} dropped" if dropped_outside else ""
    print(f"{PROG}: prepared {len(trips)} trips from {what}{extra} (private: keep this file)", file=stderr)
    return print_written(written, stdout)


def _build_trips(args: argparse.Namespace, fixes: Any) -> Any:
    """Trips from FIXES: Point rows grouped by ``--traj-id-col`` (split at ``--max-gap``), or LineStrings."""
    from geoldp import prepare

    kinds = set(fixes.geom_type.dropna().unique())
    if kinds <= {"Point"}:
        if args.traj_id_col is None:
            usage(args, "Point rows need --traj-id-col C (the column grouping fixes into trajectories)")
        keep = [
            c for c in (args.keep or []) + ([args.user_col] if args.user_col else []) if c != args.traj_id_col
        ]
        trips = prepare.trajectories_from_points(
            fixes,
            args.traj_id_col,
            args.time_col,
            max_gap=args.max_gap,
            min_points=args.min_points,
            keep=list(dict.fromkeys(keep)) or None,
        )
        if args.user_col == args.traj_id_col and args.user_col is not None:
            trips[args.user_col] = trips[args.traj_id_col]
    elif kinds <= {"LineString"}:
        if args.max_gap is not None:
            usage(args, "--max-gap splits Point rows; FIXES already holds LineStrings")
        trips = prepare.drop_short_trips(fixes, args.min_points)  # the checks perturb makes, and --min-points
    else:
        raise ValueError(f"FIXES must hold Point rows or LineStrings, not {sorted(kinds)}")
    return trips


def _outside_dropped(args: argparse.Namespace, trips: Any) -> tuple[Any, int]:
    """The trips kept by ``--area`` (clip or drop) or ``--max-km`` from the public points.

    Returns the trips kept and the number of trips dropped.
    """
    import numpy as np
    import shapely

    from geoldp import prepare

    dropped_outside = 0
    if args.area is not None:  # clip: a trip leaving the box is split there; drop: it is dropped
        trips = prepare.clip_to_area(trips, args.area, outside=args.outside, min_points=args.min_points)
        dropped_outside = int(trips.attrs.get("dropped", 0))
    elif args.points is not None:
        from geoldp import PointSet

        ps = PointSet.from_geodataframe(
            _read.read_points(Path(existing_file(args.points, "POINTS")), "POINTS")
        )
        wgs = trips.to_crs(4326) if not trips.crs.equals("EPSG:4326") else trips
        xy = shapely.get_coordinates(wgs.geometry.values)
        owner = np.repeat(np.arange(len(wgs)), shapely.get_num_coordinates(wgs.geometry.values))
        _, dist_m = ps.nearest(xy[:, 0], xy[:, 1])  # private: used for the filter, then dropped
        far = np.zeros(len(wgs), dtype=bool)
        np.logical_or.at(far, owner, np.asarray(dist_m) > args.max_km * 1000.0)
        del dist_m, xy
        dropped_outside = int(far.sum())
        trips = trips[~far]
    return trips, dropped_outside


def _empty_after(args: argparse.Namespace) -> str:
    """Why no trip was built: the options that emptied the data, named as the user gave them."""
    shorter = f"every trip has fewer than --min-points {args.min_points} points"
    if args.max_gap is not None:
        return (
            f"no trip is left after splitting at --max-gap {args.max_gap}: {shorter}. Use a larger gap (with "
            "a unit, e.g. 30min) or a smaller --min-points"
        )
    return f"no trip is left: {shorter}. Use a smaller --min-points"


def add_parser(sub: Any) -> None:
    """Add ``geoldp prepare`` to the ``geoldp`` subparsers."""
    p = sub.add_parser(
        "prepare",
        help="build trips from GPS fixes: split at gaps, clip, shorten (private output)",
        description=(
            "Turn FIXES (Point rows, one GPS fix per row, or LineString trips) into the trips to perturb: "
            "group the Point rows by --traj-id-col into LineStrings ordered by --time-col, split them where "
            "two fixes are more than --max-gap apart, clip them to a public --area (or drop those leaving "
            "it, or those farther than --max-km from the public points), then simplify and/or resample them "
            "(--simplify, --max-points, --spacing-m). The output holds the prepared ORIGINAL trips: private, "
            "the file to perturb and to evaluate the release against."
        ),
    )
    p.add_argument("fixes", metavar="FIXES", help="GPS fixes (Points) or trips (LineStrings)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the prepared trips (private)")
    p.add_argument("--traj-id-col", metavar="C", default=None, help="the column grouping fixes into trips")
    p.add_argument("--time-col", metavar="C", default=None, help="the column ordering fixes in time")
    p.add_argument(
        "--max-gap", metavar="GAP", default=None, help="split where fixes are more than GAP apart (30min)"
    )
    p.add_argument("--min-points", type=_int_at_least(2), default=2, metavar="N", help="drop shorter pieces")
    p.add_argument(
        "--user-col",
        metavar="C",
        default=None,
        help="a column constant per trip to keep (the user id, as text)",
    )
    p.add_argument(
        "--keep", nargs="+", metavar="C", default=None, help="other columns constant per trip to keep"
    )
    p.add_argument(
        "--area", type=_bbox, metavar="MINX,MINY,MAXX,MAXY", default=None, help="a PUBLIC lon/lat box"
    )
    p.add_argument(
        "--outside",
        choices=("clip", "drop"),
        default="clip",
        help="with --area: clip (drop the fixes outside the box and split a trip where it leaves it; "
        "default) or drop the trips that leave the box",
    )
    p.add_argument("--points", metavar="POINTS", default=None, help="public points, for --max-km")
    p.add_argument(
        "--max-km",
        type=_positive_float,
        metavar="KM",
        default=None,
        help="drop trips with a fix farther than KM from POINTS",
    )
    p.add_argument(
        "--simplify", type=_positive_float, metavar="TOL_M", default=None, help="Douglas-Peucker tolerance, m"
    )
    p.add_argument(
        "--max-points", type=_int_at_least(2), metavar="N", default=None, help="at most N vertices per trip"
    )
    p.add_argument(
        "--spacing-m", type=_positive_float, metavar="M", default=None, help="one vertex every M metres"
    )
    _read.add_table_options(p, "FIXES")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    p.set_defaults(func=warned(_cmd_prepare), command_parser=p)
