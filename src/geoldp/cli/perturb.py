"""``geoldp perturb``: release a file of trajectories with TP, ATP, PointEM or TraCS, and its ledger.

Read TRIPS (and the public points, or a public grid), check the options, prepare the trips
(``--simplify``, ``--max-points``), release them with the per-user budget options
(:mod:`geoldp.cli._budget`), write the output and its ledger, and confirm the accountant's charge.
"""

from __future__ import annotations

import argparse
import ast
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from geoldp._core.formats import WRITE_FORMATS
from geoldp.cli import _budget, _read
from geoldp.cli._args import UsageError, UserError, check_output, existing_file, print_written, stage
from geoldp.cli._args import bbox as _bbox
from geoldp.cli._args import epsilon as _epsilon
from geoldp.cli._args import int_at_least as _int_at_least
from geoldp.cli._args import positive_float as _positive_float
from geoldp.cli._args import report_warnings as _report_warnings
from geoldp.cli._args import seed as _seed

PROG = "geoldp"

SEED_HELP = (
    "integer seed, for experiments only; omit for deployment (OS CSPRNG). The seed is never written to "
    "the output or the ledger."
)


def _granularity(text: str) -> str | int:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or an integer, got {text!r}") from None


#: Longest ``--option NAME=VALUE`` accepted (mechanism options are short; a huge value is refused up front).
MAX_OPTION_CHARS = 1_000


def _option(text: str) -> tuple[str, Any]:
    if len(text) > MAX_OPTION_CHARS:
        raise argparse.ArgumentTypeError(
            f"is {len(text)} characters long, more than {MAX_OPTION_CHARS}; mechanism options are short "
            "NAME=VALUE pairs"
        )
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"must look like NAME=VALUE, got {text[:40]!r}")
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = raw.strip()
    return name, value


def write_frame(
    gdf: Any, path: str | os.PathLike[str], *, overwrite: bool = False, inputs: Sequence[Any] = ()
) -> list[Path]:
    """Write a (perturbed) GeoDataFrame in the format given by the file suffix, plus its ledger.

    The write is atomic and refuses to overwrite (see :func:`geoldp.io.write_file`). GeoJSON is RFC 7946
    (WGS 84, ledger also as a top-level ``"geoldp"`` member); other formats go through GeoPandas. For every
    format, the frame's ledger, if any, is also written to a JSON sidecar
    ``<path>.ledger.json`` (after the data file; it records the data file's SHA-256).

    Parameters
    ----------
    path : str or os.PathLike
        Output path; its suffix selects the format (see ``geoldp.io.WRITE_FORMATS``).
    overwrite : bool, default False
        Replace an existing output and sidecar.
    inputs : sequence of paths
        Files the outputs must not be (the command's inputs).
    """
    from geoldp import io as gio

    p = check_output(os.fspath(path), overwrite=overwrite, inputs=[Path(i) for i in inputs])
    return gio.write_file(gdf, p, overwrite=overwrite, inputs=tuple(inputs))


def _public_points(args: argparse.Namespace) -> tuple[Path | None, Any]:
    """``(POINTS path, None)`` for --points, ``(None, grid frame)`` for --grid/--area (geoldp.points.grid)."""
    if (args.points is None) == (args.grid is None):
        raise UsageError("give either --points POINTS or --grid SPACING --area MINX,MINY,MAXX,MAXY")
    if args.grid is None:
        if args.area is not None:
            raise UsageError("--area goes with --grid SPACING (a public grid); drop it or use --grid")
        return existing_file(args.points, "POINTS"), None
    if args.area is None:
        raise UsageError("--grid needs --area MINX,MINY,MAXX,MAXY (a public bounding box, lon/lat)")
    from geoldp import points as public_points

    with stage("cannot build the --grid points"):
        return None, public_points.grid(args.area, args.grid)


# perturb's preparation and progress options


def _nonnegative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}") from None
    if not (0.0 <= value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


#: ``geoldp perturb`` shows a progress bar by itself (stderr a terminal) from this many trajectories on.
PROGRESS_MIN_ROWS = 1_000


def _prepare_trips(trips: Any, args: argparse.Namespace) -> Any:
    """Apply ``--simplify`` and ``--max-points`` (geoldp.prepare), before perturbation."""
    if args.simplify is None and args.max_points is None:
        return trips
    from geoldp import prepare

    if args.traj_id_col is not None:
        raise UserError(
            "--simplify and --max-points need LineString trips, not Point rows with --traj-id-col; build "
            "one LineString per trajectory first (geoldp.prepare.trajectories_from_points)"
        )
    if args.simplify is not None:
        return prepare.simplify(trips, args.simplify, max_points=args.max_points)
    return prepare.resample(trips, max_points=args.max_points)


def _show_progress(args: argparse.Namespace, stderr: TextIO, n_rows: int) -> bool:
    """``--progress`` forces the bar, ``--no-progress`` hides it; else only for long runs on a terminal."""
    if args.no_progress:
        return False
    if args.progress:
        return True
    isatty = getattr(stderr, "isatty", None)
    return bool(isatty and isatty()) and n_rows >= PROGRESS_MIN_ROWS


def _cmd_perturb(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    continuous = args.mechanism.startswith("tracs")  # TraCS: a public box, public points optional
    if continuous != (args.bounds is not None):
        raise UsageError(
            f"--mechanism {args.mechanism} needs --bounds MINX,MINY,MAXX,MAXY (a public box in the CRS of "
            "TRIPS)"
            if continuous
            else "--bounds goes with --mechanism tracs-d or tracs-c"
        )
    no_points = continuous and args.points is None and args.grid is None and args.area is None
    points_path, grid_points = (None, None) if no_points else _public_points(args)  # usage errors first
    trips_path = existing_file(args.trips, "TRIPS")
    inputs = [p for p in (trips_path, points_path) if p is not None]
    for what, path in (("TRIPS", trips_path), ("POINTS", points_path)):
        if path is not None and (
            Path(args.output).resolve() == path.resolve()
            or (Path(args.output).exists() and os.path.samefile(args.output, path))
        ):
            raise UserError(f"the output '{args.output}' is the {what} file; choose another output path")
    out_path = check_output(args.output, overwrite=args.overwrite, inputs=inputs)

    from geoldp import io as gio
    from geoldp import points as gpoints
    from geoldp.cli import accountant as cli_accountant

    options: dict[str, Any] = dict(args.option or [])
    if args.granularity is not None:
        options["granularity"] = args.granularity
    if continuous:
        options["bounds"] = args.bounds

    with _report_warnings(stderr):
        trips = _read.read_trips(args, trips_path)  # user ids such as "000" stay text
        points = grid_points
        if points_path is not None:
            with stage(f"cannot read POINTS '{args.points}'"):
                points = gio.read_points(points_path, **({"crs": args.points_crs} if args.points_crs else {}))
                points = gpoints.load_provenance(points, points_path)  # the recipe 'geoldp points' kept
        trips = _prepare_trips(trips, args)
        progress = _show_progress(args, stderr, len(trips))
        campaign = _budget.options(args)  # per-user budget, accountant
        out = trips.ldp.perturb(
            points,
            mechanism=args.mechanism,
            epsilon=args.epsilon,
            keep_columns=args.keep_columns,
            snap_max_km=args.snap_max_km,
            traj_id_col=args.traj_id_col,
            time_col=args.time_col,
            progress=progress,
            rng=args.seed,
            **campaign,
            **options,
        )
        _budget.finish(args, campaign, trips, out, stderr)
        with stage(f"cannot write '{args.output}'"):
            written = write_frame(out, out_path, overwrite=args.overwrite, inputs=inputs)
        cli_accountant.confirm_release(campaign, out)  # the accountant's pending charge, now written
    seeded = ", seeded" if args.seed is not None else ""
    print(
        f"{PROG}: perturbed {len(out)} rows with {args.mechanism.upper()} "
        f"(epsilon={args.epsilon:g} per {'user' if args.user_budget == 'split' else 'trajectory'}{seeded})",
        file=stderr,
    )
    return print_written(written, stdout)


def add_parser(sub: Any) -> None:
    """Add ``geoldp perturb`` to the ``geoldp`` subparsers."""
    p = sub.add_parser(
        "perturb",
        help="perturb a file of trajectories",
        description=(
            "Perturb every trajectory (row) of TRIPS onto the public points of POINTS and write the result. "
            "Input formats: GeoJSON, GeoPackage, GeoParquet, FlatGeobuf, Shapefile, GPX and CSV/TSV (with a "
            "WKT column or lon/lat columns; also .gz/.bz2/.xz/.zip), recognised by suffix and content. Only "
            "the geometry is written (not the row numbers) unless --keep-columns is given; kept columns are "
            "NOT protected. A JSON ledger of the privacy budget is written with the output."
        ),
    )
    p.add_argument("trips", metavar="TRIPS", help="trajectories: LineStrings, or Points with --traj-id-col")
    p.add_argument("--points", metavar="POINTS", default=None, help="the public point set (Points)")
    p.add_argument(
        "--grid",
        type=_positive_float,
        metavar="SPACING",
        default=None,
        help="instead of --points: a public square grid, SPACING metres apart, over --area",
    )
    p.add_argument(
        "--area",
        type=_bbox,
        metavar="MINX,MINY,MAXX,MAXY",
        default=None,
        help="with --grid: a PUBLIC bounding box in lon/lat degrees, never the bounds of TRIPS (write "
        "--area=-122.52,37.70,-122.35,37.83 when it starts with a minus sign)",
    )
    p.add_argument(
        "--mechanism",
        default="atp",
        type=str.lower,
        choices=("tp", "atp", "pointem", "tracs-d", "tracs-c"),
        help="the mechanism (default: atp); tracs-d and tracs-c release in a public box (--bounds), "
        "with --points or --grid their released locations are moved to the nearest public point",
    )
    p.add_argument(
        "--bounds",
        type=_bbox,
        metavar="MINX,MINY,MAXX,MAXY",
        default=None,
        help="for tracs-d/tracs-c: the PUBLIC box, in the CRS of TRIPS (lon/lat degrees for EPSG:4326), "
        "never the bounds of TRIPS",
    )
    p.add_argument(
        "--epsilon",
        required=True,
        type=_epsilon,
        metavar="E",
        help="privacy budget per trajectory (row), >= 0.001 (smaller gives uniform noise)",
    )
    p.add_argument("--seed", type=_seed, default=None, metavar="N", help=SEED_HELP)
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help=f"output file; the suffix selects the format ({', '.join(WRITE_FORMATS)})",
    )
    _add_reading_options(p)  # the columns of TRIPS, the mechanism's options, --overwrite
    _add_preparation_options(p)  # --simplify, --max-points, the progress bar
    _budget.add_options(p)  # --user-col, --accountant, --user-budget, --max-per-user
    p.set_defaults(func=_cmd_perturb)


def _add_reading_options(p: argparse.ArgumentParser) -> None:
    """Add how TRIPS and POINTS are read, the mechanism's options and ``--overwrite``."""
    p.add_argument(
        "--traj-id-col",
        metavar="C",
        default=None,
        help="for Point input: the column that groups points into trajectories",
    )
    p.add_argument(
        "--time-col",
        metavar="C",
        default=None,
        help="for Point input: the column that orders points within a trajectory",
    )
    _read.add_table_options(p, "TRIPS")
    p.add_argument(
        "--keep-columns",
        nargs="+",
        metavar="C",
        default=None,
        help="copy these columns to the output UNPROTECTED (a PrivacyWarning is printed)",
    )
    p.add_argument(
        "--snap-max-km",
        type=_positive_float,
        metavar="X",
        default=None,
        help="fail if a vertex is farther than X km from every public point",
    )
    p.add_argument(
        "--granularity",
        type=_granularity,
        metavar="G",
        default=None,
        help="direction granularity of TP/ATP: 'auto' (default) or an integer",
    )
    p.add_argument(
        "--option",
        action="append",
        type=_option,
        metavar="NAME=VALUE",
        default=None,
        help="another mechanism option, e.g. sector_convention='floor' (repeatable)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing OUT (and OUT.ledger.json); without it an existing output is an error",
    )
    p.add_argument("--points-crs", metavar="CRS", default=None, help=_read.crs_help("POINTS"))


def _add_preparation_options(p: argparse.ArgumentParser) -> None:
    """Add ``--simplify`` and ``--max-points`` (applied before the release) and the progress options."""
    p.add_argument(
        "--simplify",
        type=_nonnegative_float,
        metavar="TOL_M",
        default=None,
        help="first simplify each trip (Douglas-Peucker, tolerance in metres; geoldp.prepare.simplify)",
    )
    p.add_argument(
        "--max-points",
        type=_int_at_least(2, "an integer >= 2"),
        metavar="N",
        default=None,
        help="first resample trips longer than N vertices to N evenly spaced vertices "
        "(geoldp.prepare.resample): epsilon is shared by fewer vertices, each keeps more of it",
    )
    progress = p.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress",
        action="store_true",
        help=f"always show a progress bar on stderr (needs tqdm; default: only from {PROGRESS_MIN_ROWS} "
        "trajectories on, when stderr is a terminal)",
    )
    progress.add_argument("--no-progress", action="store_true", help="never show a progress bar")
