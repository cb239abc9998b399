"""The campaign commands of the command line: ``geoldp prepare``, ``geoldp points``, ``geoldp estimate``.

With ``geoldp perturb`` (whose per-user budget options, ``--user-col``, ``--accountant``,
``--user-budget`` and ``--max-per-user``, are defined here too) they run a whole collection campaign
from files::

    geoldp prepare fixes.csv --traj-id-col user --time-col time --max-gap 30min --max-points 40 \\
        --area=116.2,39.8,116.5,40.1 -o trips.gpkg
    geoldp points --grid 1000 --area=116.2,39.8,116.5,40.1 -o P.gpkg
    geoldp perturb trips.gpkg --points P.gpkg --epsilon 4 --user-col user --max-per-user 2 \\
        --accountant budget.gpkg --total-epsilon 8 -o release.gpkg
    geoldp estimate release.gpkg --points P.gpkg --cell-km 2 -o estimates.gpkg

Errors are one line ``geoldp: error: ...`` (see :mod:`geoldp.cli`): this module raises ``ValueError``
for bad data or parameters (exit status 1) and the subcommand parser's ``error`` for usage (status 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from geoldp._core.ledger import attach, ledger_of
from geoldp.cli._args import bbox as _bbox
from geoldp.cli._args import check_output, existing_file, stage, usage, warned
from geoldp.cli._args import int_at_least as _int_at_least
from geoldp.cli._args import positive_float as _positive_float
from geoldp.cli._args import seed as _seed

PROG = "geoldp"


# ------------------------------------------------------------------------------------------------------
# helpers (the same grammar as geoldp.cli)


def _add_table_options(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--crs", metavar="CRS", default=None, help=f"CRS of {what} coordinates for CSV input")
    p.add_argument(
        "--wkt-col", metavar="C", default=None, help=f"CSV input: the WKT geometry column of {what}"
    )
    p.add_argument("--lon-col", metavar="C", default=None, help=f"CSV input: the longitude column of {what}")
    p.add_argument("--lat-col", metavar="C", default=None, help=f"CSV input: the latitude column of {what}")


def _read_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    return {n: getattr(args, n) for n in ("crs", "wkt_col", "lon_col", "lat_col") if getattr(args, n, None)}


def _read_points(path: Path, label: str) -> Any:
    from geoldp import io as gio
    from geoldp import points as gp

    with stage(f"cannot read {label} '{path}'"):
        return gp.load_provenance(gio.read_points(path), path)  # with the recipe 'geoldp points' kept


# ------------------------------------------------------------------------------------------------------
# geoldp perturb: per-user budgets and the accountant


def extend_perturb(p: argparse.ArgumentParser) -> None:
    """Add the per-user budget options to the ``perturb`` parser."""
    g = p.add_argument_group("per-user budget")
    g.add_argument(
        "--user-col",
        metavar="C",
        default=None,
        help="the column of TRIPS holding each row's user id (read as text; not written unless kept)",
    )
    g.add_argument(
        "--accountant",
        metavar="STORE",
        default=None,
        help="each user's budget record (geoldp.BudgetAccountant): a GeoPackage file (created with "
        "--total-epsilon; a JSON accountant of an earlier geoldp is migrated to FILE.gpkg) or a PostgreSQL "
        "URL. The release is refused if it would take a user past her total; the charge is one transaction, "
        "so several commands may share one accountant. Keep it private, with the data",
    )
    g.add_argument(
        "--total-epsilon",
        type=_positive_float,
        metavar="T",
        default=None,
        help="each user's total budget, to create a new --accountant file",
    )
    g.add_argument(
        "--user-budget",
        choices=("trajectory", "split"),
        default="trajectory",
        help="'trajectory' (default): --epsilon per trajectory; 'split': --epsilon per user in this release, "
        "shared equally by her trips (an 'epsilon' column gives each row's share)",
    )
    g.add_argument(
        "--max-per-user",
        type=_int_at_least(1),
        metavar="K",
        default=None,
        help="release at most K trips per user; the other rows are dropped (see --select-trips)",
    )
    g.add_argument(
        "--kept-rows",
        metavar="CSV",
        default=None,
        help="with --max-per-user: write the positions (0-based) of the TRIPS rows released to CSV (private; "
        "the release itself is written without the row numbers)",
    )
    g.add_argument(
        "--select-trips",
        choices=("first", "last", "random"),
        default="first",
        help="which trips --max-per-user keeps: first or last in file order, or random (default: first)",
    )
    p.set_defaults(command_parser=p)


_CSV_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip")


def text_columns(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    """``read_trajectories`` options that read the id columns of a CSV as text (``"000"`` stays ``"000"``)."""
    cols = [c for c in (getattr(args, "traj_id_col", None), getattr(args, "user_col", None)) if c]
    if not cols or not path.name.lower().endswith(_CSV_SUFFIXES):
        return {}
    return {"dtype": {c: str for c in cols}}


#: The column options of the commands, checked against the file right after reading it.
_COLUMN_OPTIONS = (("user_col", "--user-col"), ("keep_columns", "--keep-columns"), ("keep", "--keep"))


def check_columns(args: argparse.Namespace, frame: Any, what: str) -> None:
    """Refuse a ``--user-col``/``--keep-columns``/``--keep`` column that the file read as ``what`` lacks.

    Like the readers' own messages, the file's column names are counted, not quoted: without a header row
    they would be the first row of data.
    """
    for name, option in _COLUMN_OPTIONS:
        value = getattr(args, name, None)
        for col in [value] if isinstance(value, str) else (value or []):
            if col not in frame.columns:
                raise ValueError(
                    f"{option} names a column that is not in {what}: {col!r}. It was read with "
                    f"{len(frame.columns) - 1} column(s) besides the geometry, whose names are not quoted "
                    "here (without a header row they would be the first row of data): check the spelling "
                    "(names are case-sensitive) and the header row."
                )


def perturb_options(args: argparse.Namespace) -> dict[str, Any]:
    """The extra keyword arguments of ``gdf.ldp.perturb`` for the per-user options (accountant loaded)."""
    strategy = args.user_budget != "trajectory" or args.max_per_user is not None
    if args.select_trips != "first" and args.max_per_user is None:
        usage(args, "--select-trips goes with --max-per-user K")
    if (strategy or args.accountant is not None) and args.user_col is None:
        usage(args, "--accountant, --user-budget split and --max-per-user need --user-col C (the user ids)")
    if args.user_col is not None and not strategy and args.accountant is None:
        usage(args, "--user-col goes with --accountant STORE, --user-budget split or --max-per-user K")
    if args.kept_rows is not None and args.max_per_user is None:
        usage(args, "--kept-rows goes with --max-per-user K")
    if args.total_epsilon is not None and args.accountant is None:
        usage(args, "--total-epsilon goes with --accountant STORE")
    if args.kept_rows is not None:
        from geoldp._core import safe_write as _safe_write

        try:
            _safe_write.check_output(Path(args.kept_rows), overwrite=args.overwrite, what="--kept-rows")
        except ValueError as exc:
            raise ValueError(str(exc).replace("overwrite=True (CLI: --overwrite)", "--overwrite")) from None
    out: dict[str, Any] = {}
    if args.user_col is None:
        return out
    out["user_col"] = args.user_col
    if args.accountant is not None:
        from geoldp.cli import accountant as cli_accountant

        # refused if it is a file this command reads or writes; charges held until the output is written
        out["accountant"] = cli_accountant.open_accountant(args)
    if strategy:
        out.update(
            user_budget=args.user_budget, max_per_user=args.max_per_user, select_trips=args.select_trips
        )
    return out


def finish_perturb(
    args: argparse.Namespace, options: dict[str, Any], trips: Any, out: Any, stderr: TextIO
) -> None:
    """After the release: record the points file, save the accountant, report the rows kept."""
    led = ledger_of(out)
    if getattr(args, "points", None) and led is not None and isinstance(led.points, dict):
        # the name only, not the folder
        attach(out, led.replace(points={**led.points, "file": Path(args.points).name}))
    acc = options.get("accountant")
    if acc is not None:
        # charged (pending) before the release is written, confirmed after: see geoldp.cli.accountant
        print(f"{PROG}: charged the release to {len(acc)} user(s) in '{acc.location}'", file=stderr)
    if getattr(args, "kept_rows", None) is not None:
        import numpy as np

        from geoldp._core import safe_write as _safe_write

        rows = (
            np.flatnonzero(trips.index.isin(out.index)) if len(out) != len(trips) else np.arange(len(trips))
        )
        with stage(f"cannot write --kept-rows '{args.kept_rows}'"):
            _safe_write.write_bytes(
                Path(args.kept_rows),
                ("row\n" + "".join(f"{r}\n" for r in rows)).encode(),
                overwrite=args.overwrite,
            )
    if options.get("max_per_user") is not None and len(out) != len(trips):
        print(
            f"{PROG}: kept {len(out)} of {len(trips)} rows (at most {args.max_per_user} "
            f"trip{'' if args.max_per_user == 1 else 's'} per user, "
            f"{args.select_trips}); the dropped rows are not in the output",
            file=stderr,
        )


# ------------------------------------------------------------------------------------------------------
# geoldp evaluate: checks on reading, zone options


def extend_evaluate(e: argparse.ArgumentParser) -> None:
    """Add ``--zones`` to the ``evaluate`` parser."""
    e.add_argument(
        "--zones",
        metavar="FILE",
        default=None,
        help="public zones (polygons) for the zone and OD errors, instead of the --cell-km grid",
    )
    e.add_argument(
        "--kept-rows",
        metavar="CSV",
        default=None,
        help="for a release made with --max-per-user: the ORIGINAL rows it holds (the CSV written by "
        "'geoldp perturb ... --kept-rows CSV')",
    )
    e.set_defaults(command_parser=e)


def kept_original(args: argparse.Namespace, original: Any) -> Any:
    """The ORIGINAL rows a ``--max-per-user`` release holds, from ``--kept-rows CSV`` (else all rows)."""
    import numpy as np
    import pandas as pd

    if getattr(args, "kept_rows", None) is None:
        return original
    path = existing_file(args.kept_rows, "--kept-rows")
    with stage(f"cannot read --kept-rows '{args.kept_rows}'"):
        table = pd.read_csv(path)
    rows = table["row"].to_numpy() if "row" in table.columns else np.array([])
    if (
        "row" not in table.columns
        or not np.issubdtype(rows.dtype, np.integer)
        or (rows.size and (rows.min() < 0 or rows.max() >= len(original) or np.any(np.diff(rows) <= 0)))
    ):
        raise ValueError(
            f"--kept-rows '{args.kept_rows}' must be the CSV 'geoldp perturb --kept-rows' writes: a column "
            f"'row' of increasing row positions of ORIGINAL (0 to {len(original) - 1})"
        )
    return original.iloc[rows]


def evaluate_zones(args: argparse.Namespace, points: Any) -> Any:
    """The zones of ``geoldp evaluate``: the ``--zones`` file, or the --cell-km grid over P."""
    from geoldp.zones import zone_grid

    if getattr(args, "zones", None) is not None:
        return _read_zones(existing_file(args.zones, "--zones"))
    return "auto" if points is None else zone_grid(points, cell_km=args.cell_km)


def _read_zones(path: Path) -> Any:
    """Public polygons (zones or regions) from a local file, checked: a CRS, polygons only."""
    import geopandas as gpd

    from geoldp._core import formats as _formats

    with stage(f"cannot read the polygons '{path}'"):
        _formats.detect(path, "geoldp")  # a local file whose content matches its suffix
        zones = gpd.read_file(path)
    if not isinstance(zones, gpd.GeoDataFrame):  # e.g. a CSV without a geometry column
        raise ValueError(
            f"the polygons '{path}' have no geometry column: write the zones as polygons with a CRS "
            "(GeoJSON, GeoPackage, ...), or use --points P --cell-km KM for a grid of zones over P"
        )
    if zones.crs is None:
        raise ValueError(f"the polygons '{path}' have no CRS")
    bad = ~zones.geom_type.isin(["Polygon", "MultiPolygon"]).to_numpy()
    if bad.any():
        raise ValueError(f"row position {int(bad.argmax())} of '{path}' is not a polygon")
    return zones


def check_evaluate_inputs(original: Any, perturbed: Any) -> None:
    """Refuse, right after reading, an ORIGINAL and a PERTURBED that cannot be compared row by row."""
    import shapely

    if len(original) != len(perturbed):
        raise ValueError(
            f"ORIGINAL has {len(original)} rows and PERTURBED {len(perturbed)}: evaluate compares them row "
            "by row. Compare the release with the file it was made from (for a release made with "
            "--max-per-user, pass the rows it kept: perturb with --kept-rows CSV, then evaluate with "
            "--kept-rows CSV; for --max-points or --simplify, the output of 'geoldp prepare')."
        )
    a = shapely.get_num_coordinates(original.geometry.values)
    b = shapely.get_num_coordinates(perturbed.geometry.values)
    differ = (a != b) & (b > 0)
    if differ.any():
        pos = int(differ.argmax())
        raise ValueError(
            f"row {pos} has {int(a[pos])} points in ORIGINAL and {int(b[pos])} in PERTURBED: the release was "
            "made from prepared trips (--max-points/--simplify). Write them with 'geoldp prepare ... -o "
            "trips.gpkg', perturb that file and evaluate against it."
        )


# ------------------------------------------------------------------------------------------------------
# geoldp prepare


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
    read_kwargs = _read_kwargs(args)
    read_kwargs.update(text_columns(args, src))  # ids such as GeoLife's "000" stay text
    with stage(f"cannot read FIXES '{args.fixes}'"):
        fixes = gio.read_trajectories(
            src, traj_id_col=args.traj_id_col, time_col=args.time_col, **read_kwargs
        )
    check_columns(args, fixes, f"FIXES '{args.fixes}'")
    n_in = len(fixes)
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
    if len(trips) == 0 and n_in:
        raise ValueError(_empty_after(args))
    n_built = len(trips)
    dropped_outside = 0
    if args.area is not None:  # clip: a trip leaving the box is split there; drop: it is dropped
        trips = prepare.clip_to_area(trips, args.area, outside=args.outside, min_points=args.min_points)
        dropped_outside = int(trips.attrs.get("dropped", 0))
    elif args.points is not None:
        from geoldp import PointSet

        ps = PointSet.from_geodataframe(_read_points(Path(existing_file(args.points, "POINTS")), "POINTS"))
        wgs = trips.to_crs(4326) if not trips.crs.equals("EPSG:4326") else trips
        xy = shapely.get_coordinates(wgs.geometry.values)
        owner = np.repeat(np.arange(len(wgs)), shapely.get_num_coordinates(wgs.geometry.values))
        _, dist_m = ps.nearest(xy[:, 0], xy[:, 1])  # private: used for the filter, then dropped
        far = np.zeros(len(wgs), dtype=bool)
        np.logical_or.at(far, owner, np.asarray(dist_m) > args.max_km * 1000.0)
        del dist_m, xy
        dropped_outside = int(far.sum())
        trips = trips[~far]
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
    for path in written:
        print(path, file=stdout)
    return 0


def _empty_after(args: argparse.Namespace) -> str:
    """Why no trip was built: the options that emptied the data, named as the user gave them."""
    shorter = f"every trip has fewer than --min-points {args.min_points} points"
    if args.max_gap is not None:
        return (
            f"no trip is left after splitting at --max-gap {args.max_gap}: {shorter}. Use a larger gap (with "
            "a unit, e.g. 30min) or a smaller --min-points"
        )
    return f"no trip is left: {shorter}. Use a smaller --min-points"


def _add_prepare(sub: Any) -> None:
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
    _add_table_options(p, "FIXES")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    p.set_defaults(func=warned(_cmd_prepare), command_parser=p)


# ------------------------------------------------------------------------------------------------------
# geoldp points


def _cmd_points(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp import io as gio
    from geoldp import points as gp

    chosen = [n for n in ("grid", "h3", "road_nodes") if getattr(args, n) is not None]
    if len(chosen) != 1:
        usage(args, "give one of --grid SPACING, --h3 RESOLUTION or --road-nodes OSMFILE")
    if chosen[0] in ("grid", "h3") and args.area is None:
        usage(args, f"--{chosen[0]} needs --area MINX,MINY,MAXX,MAXY (a PUBLIC box, never the data's bounds)")
    inputs = [Path(args.road_nodes)] if args.road_nodes else []
    out_path = check_output(args.output, overwrite=args.overwrite, inputs=inputs, ledger=False)
    crs = args.crs
    if args.grid is not None:
        pts = gp.grid(args.area, args.grid, kind=args.kind, crs=crs)
    elif args.h3 is not None:
        pts = gp.h3_cells(args.area, args.h3, crs=crs)
    else:
        pts = gp.road_nodes(existing_file(args.road_nodes, "--road-nodes"), kind=args.road_kind)
    if args.thin is not None:
        pts = gp.thin(pts, args.thin, rng=args.seed)
    pts = pts.reset_index(drop=True)
    with stage(f"cannot write '{args.output}'"):
        written = gio.write_file(pts, out_path, overwrite=args.overwrite, inputs=tuple(inputs))
        # the provenance and recipe, which the file format drops, for the ledgers of later releases
        side = gp.save_provenance(pts, out_path, overwrite=True)
        written += [side] if side is not None else []
    print(
        f"{PROG}: wrote {len(pts)} public points ({pts.attrs.get(gp.PROVENANCE_KEY)}; digest "
        f"{gp.digest_of(pts)[:19]}...)",
        file=stderr,
    )
    for path in written:
        print(path, file=stdout)
    return 0


def _add_points(sub: Any) -> None:
    p = sub.add_parser(
        "points",
        help="write a public point set (grid, H3 cells, road nodes)",
        description=(
            "Write a public point set P built from public inputs only: a square or hexagonal grid over a "
            "public --area, the H3 cells of a resolution over it, or the road junctions of a local "
            "OpenStreetMap extract. Never build P from the trajectories you will release."
        ),
    )
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="the point file (.gpkg, .geojson, ...)"
    )
    p.add_argument(
        "--grid", type=_positive_float, metavar="SPACING", default=None, help="grid spacing, metres"
    )
    p.add_argument(
        "--kind", choices=("square", "hex"), default="square", help="grid lattice (default square)"
    )
    p.add_argument("--h3", type=_int_at_least(0), metavar="RES", default=None, help="H3 resolution 0..15")
    p.add_argument("--road-nodes", metavar="OSMFILE", default=None, help="a local .osm/.pbf extract")
    p.add_argument("--road-kind", choices=("intersections", "all"), default="intersections")
    p.add_argument(
        "--area",
        type=_bbox,
        metavar="MINX,MINY,MAXX,MAXY",
        default=None,
        help="a PUBLIC bounding box (lon/lat unless --crs; write --area=-122.5,... for a minus sign)",
    )
    p.add_argument("--crs", metavar="CRS", default=None, help="CRS of --area (default EPSG:4326)")
    p.add_argument("--thin", type=_int_at_least(2), metavar="N", default=None, help="keep a random N points")
    p.add_argument("--seed", type=_seed, metavar="N", default=None, help="seed of --thin (reproducible)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    p.set_defaults(func=_cmd_points, command_parser=p)


# ------------------------------------------------------------------------------------------------------
# geoldp estimate


def _cmd_estimate(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp import io as gio
    from geoldp import layers as glayers

    src = existing_file(args.release, "RELEASE")
    if "range_counts" in args.layers and args.regions is None:
        usage(args, "the range_counts layer needs --regions FILE (polygons)")
    if args.zones is not None and args.cell_km_given:
        usage(args, "give --zones FILE or --cell-km KM, not both")
    inputs = [src] + [Path(p) for p in (args.points, args.zones, args.regions) if p]
    out_path = check_output(
        args.output,
        overwrite=args.overwrite,
        inputs=inputs,
        suffixes=(".gpkg", ".geojson", ".json"),
        ledger=False,
    )
    with stage(f"cannot read RELEASE '{args.release}'"):
        released = gio.read_trajectories(src, ledger=True)
    if ledger_of(released) is None:
        raise ValueError(
            f"RELEASE '{args.release}' has no geoldp ledger (its .ledger.json sidecar): the estimators need "
            "the mechanism and epsilon it records"
        )
    points = _read_points(existing_file(args.points, "POINTS"), "POINTS") if args.points else None
    points = glayers.points_for(released, points)  # rebuilt from the recipe, or checked against it
    zones = _read_zones(existing_file(args.zones, "--zones")) if args.zones else None
    regions = _read_zones(existing_file(args.regions, "--regions")) if args.regions else None
    fit = {
        "n_candidates": args.n_candidates,
        "n_boot": args.n_boot,
        "level": args.level,
        "fit_rows": args.fit_rows,
        "rng": args.seed,
    }
    lay = glayers.estimate_layers(
        released,
        points,
        zones=zones,
        cell_km=args.cell_km,
        regions=regions,
        layers=args.layers,
        k=args.k,
        progress=True,  # one "geoldp: ..." line per stage
        **fit,
    )
    with stage(f"cannot write '{args.output}'"):
        written = glayers.write_layers(lay, out_path, overwrite=args.overwrite)
    sizes = ", ".join(f"{name} ({_supported_cells(v)})" for name, v in lay.items())
    print(
        f"{PROG}: estimated {sizes} from {len(released)} released trips, {args.level:.0%} intervals "
        "(cell by cell)",
        file=stderr,
    )
    if "hotspots" in lay and "note" in lay["hotspots"].attrs:
        print(f"{PROG}: {lay['hotspots'].attrs['note']}", file=stderr)
    for path in written:
        print(path, file=stdout)
    return 0


def _supported_cells(layer: Any) -> str:
    """``k of N cells supported`` for a layer (its own counts for hotspots, ranked among the supported)."""
    if "supported_cells" in layer.attrs:
        among = f"{layer.attrs['supported_cells']} of {layer.attrs['cells']}"
        return f"{len(layer)} ranked among the {among} cells supported"
    supported = int(layer["supported"].astype(bool).sum()) if "supported" in layer.columns else 0
    return f"{supported} of {len(layer)} cells supported"


class _CellKm(argparse.Action):
    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.cell_km_given = True


def _add_estimate(sub: Any) -> None:
    from geoldp._core.formats import ESTIMATE_LAYERS as LAYER_NAMES

    p = sub.add_parser(
        "estimate",
        help="estimate visits, OD flows, hotspots with intervals, as GIS layers",
        description=(
            "Estimate from RELEASE alone (and its ledger sidecar) how many original trips visit each zone, "
            "flow between zones and pass through regions, with intervals, and write them as layers of a "
            "GeoPackage (or one GeoJSON file per layer): columns estimate, lower, upper, width, raw. The "
            "public points are rebuilt from the ledger when it records a grid's recipe, or read from "
            "--points and checked against the release."
        ),
    )
    p.add_argument("release", metavar="RELEASE", help="a release written by 'geoldp perturb'")
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="OUT.gpkg, or OUT.geojson (a file per layer)"
    )
    p.add_argument("--points", metavar="POINTS", default=None, help="the public points of the release")
    p.add_argument(
        "--cell-km",
        type=_positive_float,
        default=1.5,
        metavar="KM",
        action=_CellKm,
        help="side of the square zones over P (default 1.5)",
    )
    p.add_argument(
        "--zones", metavar="FILE", default=None, help="public zones (polygons) instead of the grid"
    )
    p.add_argument("--regions", metavar="FILE", default=None, help="regions (polygons) for range_counts")
    p.add_argument(
        "--layers",
        nargs="+",
        choices=LAYER_NAMES,
        default=["zone_visits", "od_flows", "hotspots"],
        metavar="NAME",
        help=f"layers to write, of {', '.join(LAYER_NAMES)} (default: zone_visits od_flows hotspots)",
    )
    p.add_argument("--k", type=_int_at_least(1), default=10, metavar="K", help="number of hotspot zones")
    p.add_argument(
        "--n-candidates", type=_int_at_least(10), default=3000, metavar="N", help="fewer: faster, noisier"
    )
    p.add_argument(
        "--n-boot",
        type=_int_at_least(0),
        default=30,
        metavar="N",
        help="bootstrap replicates (0: no interval)",
    )
    p.add_argument("--level", type=float, default=0.95, metavar="L", help="interval coverage (default 0.95)")
    p.add_argument(
        "--fit-rows",
        type=_int_at_least(100),
        default=5000,
        metavar="N",
        help="fit each trip length on at most N released rows drawn at random (default 5000; keep it in "
        "the thousands)",
    )
    p.add_argument(
        "--seed", type=_seed, default=None, metavar="N", help="seed of the estimators' simulations"
    )
    p.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    p.set_defaults(func=_cmd_estimate, command_parser=p, cell_km_given=False)


def register(sub: Any) -> None:
    """Add the ``prepare``, ``points`` and ``estimate`` commands to the ``geoldp`` subparsers."""
    _add_prepare(sub)
    _add_points(sub)
    _add_estimate(sub)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run: geoldp COMMAND")
