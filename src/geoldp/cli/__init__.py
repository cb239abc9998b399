"""Command-line interface: ``geoldp perturb``, ``geoldp demo``, ``geoldp evaluate``, ``geoldp info``.

Every command has ``--help``. User errors (a missing file, a bad ε, an unknown column, ...) print one
line ``geoldp: error: ...`` to stderr and return exit status 2 (command-line usage) or 1 (bad input
data or parameters), without a traceback. Set the environment variable ``GEOLDP_TRACEBACK=1`` to get the
full traceback instead (for bug reports).

The entry point is :func:`main`, used by the ``geoldp`` console script and by ``python -m geoldp``.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from geoldp._core import progress as _progress
from geoldp._core.formats import WRITE_FORMATS
from geoldp._core.memory import is_out_of_memory

# the output formats of `geoldp perturb` are those of geoldp.io.write_file, by file suffix. Only light
# modules at the top: `--help`, `--version` and usage errors answer before numba or GeoPandas load (every
# command imports what it needs inside its function).
from geoldp.cli._args import (
    UsageError,
    UserError,
    check_name,
    check_output,
    existing_file,
    join_negative_boxes,
    stage,
)
from geoldp.cli._args import bbox as _bbox
from geoldp.cli._args import lengths as _lengths
from geoldp.cli._args import one_line as _one_line
from geoldp.cli._args import positive_float as _positive_float
from geoldp.cli._args import positive_int as _positive_int
from geoldp.cli._args import report_warnings as _report_warnings
from geoldp.cli._args import seed as _seed

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["main"]

PROG = "geoldp"

SEED_HELP = (
    "integer seed, for experiments only; omit for deployment (OS CSPRNG). The seed is never written to "
    "the output or the ledger."
)


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line, raised as :class:`UsageError` instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


# ------------------------------------------------------------------------------------------------------
# helpers


def _version() -> str:
    from geoldp._core.versions import geoldp_version

    return geoldp_version()


def _epsilon(text: str) -> float:
    # Only the syntax is checked here; the range is validated by the library (one grammar everywhere).
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None


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
    gdf : geopandas.GeoDataFrame
        The frame to write.
    path : str or os.PathLike
        Output path; its suffix selects the format (see ``geoldp.io.WRITE_FORMATS``).
    overwrite : bool, default False
        Replace an existing output and sidecar.
    inputs : sequence of paths
        Files the outputs must not be (the command's inputs).

    Returns
    -------
    list of pathlib.Path
        The files written.
    """
    from geoldp import io as gio

    p = check_output(os.fspath(path), overwrite=overwrite, inputs=[Path(i) for i in inputs])
    return gio.write_file(gdf, p, overwrite=overwrite, inputs=tuple(inputs))


# ------------------------------------------------------------------------------------------------------
# commands


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


def _min_two_int(text: str) -> int:
    value = _positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be an integer >= 2, got {text!r}")
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
    from geoldp.cli import campaign as cli_campaign

    options: dict[str, Any] = dict(args.option or [])
    if args.granularity is not None:
        options["granularity"] = args.granularity
    if continuous:
        options["bounds"] = args.bounds

    read_kwargs: dict[str, Any] = {
        name: getattr(args, name)
        for name in ("traj_id_col", "time_col", "crs", "wkt_col", "lon_col", "lat_col")
        if getattr(args, name) is not None
    }

    read_kwargs.update(cli_campaign.text_columns(args, trips_path))  # user ids such as "000" stay text
    with _report_warnings(stderr):
        with stage(f"cannot read TRIPS '{args.trips}'"):
            trips = gio.read_trajectories(trips_path, **read_kwargs)
        cli_campaign.check_columns(args, trips, f"TRIPS '{args.trips}'")
        points = grid_points
        if points_path is not None:
            with stage(f"cannot read POINTS '{args.points}'"):
                points = gio.read_points(points_path, **({"crs": args.points_crs} if args.points_crs else {}))
                points = gpoints.load_provenance(points, points_path)  # the recipe 'geoldp points' kept
        trips = _prepare_trips(trips, args)
        progress = _show_progress(args, stderr, len(trips))
        campaign = cli_campaign.perturb_options(args)  # per-user budget, accountant
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
        cli_campaign.finish_perturb(args, campaign, trips, out, stderr)
        with stage(f"cannot write '{args.output}'"):
            written = write_frame(out, out_path, overwrite=args.overwrite, inputs=inputs)
        cli_accountant.confirm_release(campaign, out)  # the accountant's pending charge, now written
    seeded = ", seeded" if args.seed is not None else ""
    print(
        f"{PROG}: perturbed {len(out)} rows with {args.mechanism.upper()} "
        f"(epsilon={args.epsilon:g} per {'user' if args.user_budget == 'split' else 'trajectory'}{seeded})",
        file=stderr,
    )
    for path in written:
        print(path, file=stdout)
    return 0


def _cmd_demo(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp.demo import run_demo

    check_name(args.output, "demo output")
    folder = Path(args.output)
    if os.path.lexists(folder) and (folder.is_symlink() or not folder.is_dir()):
        raise UserError(f"the demo output '{args.output}' exists and is not a directory; choose a directory")
    with _report_warnings(stderr):
        run_demo(
            args.output,
            n_trips=args.n_trips,
            n_points=args.n_points,
            epsilon=args.epsilon,
            seed=args.seed,
            plot=not args.no_plot,
            stream=stdout,
            overwrite=args.overwrite,
        )
    return 0


def _cmd_evaluate(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    original_path = existing_file(args.original, "ORIGINAL")
    perturbed_path = existing_file(args.perturbed, "PERTURBED")
    points_path = None if args.points is None else existing_file(args.points, "POINTS")
    if args.estimate and points_path is None:
        raise UserError("--estimate needs --points (the estimators read the public points)")
    if (args.mechanism is None) != (args.epsilon is None):
        raise UserError("--mechanism and --epsilon go together (default: the release's ledger)")
    if args.plot is not None:
        inputs = [p for p in (original_path, perturbed_path, points_path) if p is not None]
        plot_path = check_output(
            args.plot,
            overwrite=args.overwrite,
            inputs=inputs,
            suffixes=(".png", ".pdf", ".svg"),
            ledger=False,
            what="--plot",
        )
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise UserError('--plot needs matplotlib; install it with: pip install "geoldp[plot]"')

    import pandas as pd

    from geoldp import io as gio
    from geoldp import metrics
    from geoldp.cli import campaign as cli_campaign

    with _report_warnings(stderr):
        with stage(f"cannot read ORIGINAL '{args.original}'"):
            original = gio.read_trajectories(original_path)
        original = cli_campaign.kept_original(args, original)  # --kept-rows of a --max-per-user release
        with stage(f"cannot read PERTURBED '{args.perturbed}'"):
            perturbed = gio.read_trajectories(perturbed_path)
        cli_campaign.check_evaluate_inputs(original, perturbed)  # before any long computation
        points = None
        if points_path is not None:
            with stage(f"cannot read POINTS '{args.points}'"):
                points = gio.read_points(points_path)
        zones = cli_campaign.evaluate_zones(args, points)  # --zones FILE or the --cell-km grid
        table = metrics.evaluate(
            original,
            perturbed,
            points=points,
            zones=zones,
            estimate=args.estimate,
            mechanism=args.mechanism,
            epsilon=args.epsilon,
            # the estimators' stages, one "geoldp: ..." line each
            estimate_options={"n_candidates": args.n_candidates, "n_boot": 0, "progress": True}
            if args.estimate
            else None,
            progress=True,  # one "geoldp: evaluating: ..." line per stage
        )
        # one column per release (the perturbed file, then the no-data baselines), one row per metric
        with pd.option_context("display.width", 120, "display.max_columns", 50, "display.max_rows", 200):
            print(table.T.to_string(float_format=lambda v: f"{v:.4f}"), file=stdout)
        if points is None:
            print(
                f"{PROG}: pass --points to add the no-data baselines (uniform, constant), the zone and OD "
                "errors and the hotspot rows",
                file=stderr,
            )
        if args.plot is not None:
            from geoldp._core import safe_write as _safe_write
            from geoldp.demo import save_comparison_map

            # drawn under a temporary name in the same directory, then renamed: never a partial image
            tmp = _safe_write.temp_name(plot_path, plot_path.suffix)
            try:
                with stage(f"cannot write '{args.plot}'"):
                    save_comparison_map(original, {"perturbed": perturbed}, tmp, points=points)
                    _safe_write.publish(tmp, plot_path, overwrite=args.overwrite)
            finally:
                if tmp.exists():
                    tmp.unlink()
            print(f"{PROG}: wrote {args.plot}", file=stderr)
    return 0


def _cmd_plan(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp.zones import zone_grid

    points_path = existing_file(args.points, "POINTS")
    lengths = args.lengths
    import pandas as pd

    from geoldp import io as gio
    from geoldp.planner import plan

    with _report_warnings(stderr):
        with stage(f"cannot read POINTS '{args.points}'"):
            points = gio.read_points(points_path)
        prior = None
        if args.prior is not None:
            with stage(f"cannot read PRIOR '{args.prior}'"):
                prior = gio.read_trajectories(existing_file(args.prior, "PRIOR"))
        zones = zone_grid(points, cell_km=args.cell_km)
        pilot = None
        if args.pilot is not None:
            from geoldp.cli import collect as cli_collect

            with stage(f"cannot read --pilot '{args.pilot}'"):
                pilot = cli_collect.pilot_estimate(existing_file(args.pilot, "--pilot"), zones)
        table = plan(
            points,
            zones,
            epsilon=args.epsilon,
            n=args.n,
            lengths=None if pilot is not None else lengths,
            question=args.question,
            prior=prior,
            pilot=pilot,
            progress=True,
            population=args.population,
            rng=args.seed,
        )
        with pd.option_context("display.width", 120, "display.max_columns", 20):
            print(table.to_string(float_format=lambda v: f"{v:.4f}"), file=stdout)
        verdict = "" if table.attrs["beats_baselines"] else " (no design beats the no-data baselines)"
        print(f"recommended: {table.attrs['recommended']}{verdict}", file=stdout)
        if table.best is not None:
            print(
                f"run it: geoldp collect TRIPS --design {table.best.name} --question {args.question} "
                f"--epsilon {args.epsilon:g} --points {args.points} --cell-km {args.cell_km:g} "
                "-o ANSWER.gpkg",
                file=stdout,
            )
        if args.campaign_out is not None and table.best is None:
            raise UserError(
                f"no campaign written to '{args.campaign_out}': no design beats the no-data baselines for "
                f"{args.question} here (see the table); to collect anyway, write the campaign of a design "
                "you choose with geoldp campaign create --design NAME"
            )
        if args.campaign_out is not None and table.best is not None:
            from geoldp.cli import field as cli_field

            print(cli_field.campaign_from_plan(args, table.best, points, zones, stderr), file=stdout)
    return 0


def _cmd_info(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp._core.versions import show_versions

    print(
        f"{PROG} {_version()}: trajectory collection under local differential privacy (TP, ATP)", file=stdout
    )
    show_versions(file=stdout)
    return 0


# ------------------------------------------------------------------------------------------------------
# parser


def build_parser() -> argparse.ArgumentParser:
    """Build the ``geoldp`` argument parser (used by :func:`main` and by the docs).

    Returns
    -------
    argparse.ArgumentParser
    """
    from geoldp.cli import accountant as cli_accountant
    from geoldp.cli import campaign as cli_campaign
    from geoldp.cli import collect as cli_collect
    from geoldp.cli import field as cli_field
    from geoldp.cli import reports as cli_reports

    parser = _Parser(
        prog=PROG,
        description=(
            "Perturb trajectories under local differential privacy with TP and ATP (Zhang et al., "
            "PVLDB 2023). One row = one trajectory = one privacy unit."
        ),
        epilog="Run 'geoldp COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

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
    p.add_argument(
        "--crs",
        metavar="CRS",
        default=None,
        help="CRS of TRIPS coordinates for CSV input (default EPSG:4326), or declared if the file has none",
    )
    p.add_argument("--wkt-col", metavar="C", default=None, help="CSV input: the WKT geometry column of TRIPS")
    p.add_argument(
        "--lon-col", metavar="C", default=None, help="CSV input: the longitude (x) column of TRIPS"
    )
    p.add_argument("--lat-col", metavar="C", default=None, help="CSV input: the latitude (y) column of TRIPS")
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
    p.add_argument(
        "--points-crs",
        metavar="CRS",
        default=None,
        help="CRS of POINTS coordinates for CSV input (default EPSG:4326), or declared if the file has none",
    )
    p.add_argument(
        "--simplify",
        type=_nonnegative_float,
        metavar="TOL_M",
        default=None,
        help="first simplify each trip (Douglas-Peucker, tolerance in metres; geoldp.prepare.simplify)",
    )
    p.add_argument(
        "--max-points",
        type=_min_two_int,
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
    cli_campaign.extend_perturb(p)  # --user-col, --accountant, --user-budget, --max-per-user
    p.set_defaults(func=_cmd_perturb)

    d = sub.add_parser(
        "demo",
        help="run TP and ATP on a built-in synthetic city (no download)",
        description=(
            "Generate a deterministic synthetic city (public points and trips), perturb the trips with TP "
            "and ATP, print a utility table, and write GeoJSON files and a PNG map to DIR. The demo is "
            "seeded (an experiment); deployments omit the seed."
        ),
    )
    d.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        default="geoldp-demo",
        help="output directory (created if needed; default: ./geoldp-demo)",
    )
    d.add_argument("--n-trips", type=_positive_int, default=2000, metavar="N", help="number of trips")
    d.add_argument(
        "--n-points", type=_positive_int, default=1000, metavar="M", help="number of public points"
    )
    d.add_argument("--epsilon", type=_epsilon, default=4.0, metavar="E", help="privacy budget per trip")
    d.add_argument(
        "--seed",
        type=_seed,
        default=0,
        metavar="N",
        help="seed of the city and of the perturbation (demo/experiments only)",
    )
    d.add_argument("--no-plot", action="store_true", help="do not draw the PNG maps and the web map")
    d.add_argument("--overwrite", action="store_true", help="replace the files of an earlier run in DIR")
    d.set_defaults(func=_cmd_demo)

    e = sub.add_parser(
        "evaluate",
        help="compare original and perturbed trajectories",
        description=(
            "Print the utility table of geoldp.metrics.evaluate for ORIGINAL and PERTURBED (same rows, "
            "same order): NE, PRQ, range-query error, length and diameter JSD, and with --points the "
            "zone visit-density and OD-flow errors over a square grid, the hotspot metrics, and the "
            "no-data baselines 'uniform' (every point a uniform draw from POINTS) and 'constant' (every "
            "point the 1-median of POINTS) next to the release."
        ),
    )
    e.add_argument("original", metavar="ORIGINAL", help="original trajectories")
    e.add_argument("perturbed", metavar="PERTURBED", help="perturbed trajectories (same rows)")
    e.add_argument(
        "--points",
        metavar="POINTS",
        default=None,
        help="the public points: adds the hotspot rows to the table and the points to the map",
    )
    e.add_argument(
        "--cell-km",
        type=_positive_float,
        default=1.5,
        metavar="KM",
        help="side of the square zones of the zone and OD errors, built over POINTS (default 1.5)",
    )
    e.add_argument(
        "--estimate",
        action="store_true",
        help=(
            "also print '<MECH> estimated' (zone, OD, range and visit counts estimated from the release "
            "alone) and '<MECH> denoised' columns; needs --points"
        ),
    )
    e.add_argument(
        "--mechanism",
        choices=("tp", "atp", "pointem"),
        default=None,
        help="mechanism of the release, for --estimate (default: read from the release's ledger)",
    )
    e.add_argument(
        "--epsilon", type=_positive_float, default=None, metavar="EPS", help="its budget, with --mechanism"
    )
    e.add_argument(
        "--n-candidates",
        type=int,
        default=3000,
        metavar="N",
        help="candidate trajectories per released length for --estimate (fewer: faster, noisier)",
    )
    e.add_argument("--plot", metavar="PNG", default=None, help="also save a map comparing the two")
    e.add_argument("--overwrite", action="store_true", help="replace an existing --plot file")
    cli_campaign.extend_evaluate(e)  # --zones
    e.set_defaults(func=_cmd_evaluate)
    cli_campaign.register(sub)  # prepare, points, estimate
    cli_reports.register(sub)  # report, report-estimate, synthesize
    cli_collect.register(sub)  # collect: any design by its planned name
    cli_accountant.register(sub)  # accountant show, accountant reconcile
    cli_field.register(sub)  # campaign, respond, ingest, answer: a collection in the field

    pl = sub.add_parser(
        "plan",
        help="say which design answers a question before any epsilon is spent",
        description=(
            "Simulate every design (TP, ATP, PointEM, aggregate reports) on no-data populations built from "
            "the public POINTS (or a public --prior) and print the expected error, interval width and users "
            "needed per design next to the no-data baselines, and the recommended design."
        ),
    )
    pl.add_argument("points", metavar="POINTS", help="the public points")
    pl.add_argument(
        "--epsilon", type=_positive_float, required=True, metavar="EPS", help="budget per trajectory"
    )
    pl.add_argument("--n", type=int, required=True, metavar="N", help="number of users (trajectories)")
    pl.add_argument(
        "--lengths",
        type=_lengths,
        default="2,3,5,8",
        metavar="L,L,...",
        help="trajectory lengths to draw from",
    )
    pl.add_argument(
        "--question", choices=("zone_visits", "hotspots", "od_flows", "range_counts"), default="zone_visits"
    )
    pl.add_argument(
        "--cell-km", type=_positive_float, default=1.5, metavar="KM", help="zone side (default 1.5)"
    )
    pl.add_argument("--prior", metavar="FILE", default=None, help="a public prior population of trajectories")
    pl.add_argument(
        "--pilot",
        metavar="PILOT.csv",
        default=None,
        help="private pilot reports (geoldp pilot, same --cell-km): the populations are fitted to them",
    )
    pl.add_argument(
        "--population",
        choices=("spread", "hubs", "mixed", "robust"),
        default="spread",
        help="without --prior: random walks starting anywhere in POINTS, at a few hubs, half of each, or "
        "all three (robust: the pick with the smallest worst regret)",
    )
    pl.add_argument("--seed", type=int, default=None, help="seed of the simulation (reproducible table)")
    pl.add_argument(
        "--campaign-out",
        metavar="CAMPAIGN.json",
        default=None,
        help="write the recommended design's campaign file (geoldp campaign create) for devices to answer",
    )
    pl.add_argument("--overwrite", action="store_true", help="replace an existing --campaign-out file")
    pl.set_defaults(func=_cmd_plan)

    i = sub.add_parser(
        "info",
        help="print the geoldp version and dependency versions",
        description="Print the geoldp version and the versions of its dependencies.",
    )
    i.set_defaults(func=_cmd_info)
    return parser


def _lean_arrow_allocator() -> None:
    """Let Arrow (pandas' string columns) use the C allocator in this process, unless the user chose one.

    Arrow's default allocator (mimalloc) reserves 1 GiB of address space on its first allocation; under a
    2 GiB address-space limit (``ulimit -v``) that left too little for a 10^6-point public set. The choice
    is read when pyarrow is loaded, so it is made only if pyarrow is not loaded yet (the command line, not
    a Python session calling :func:`main`); results do not depend on it.
    """
    if "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``geoldp`` command line.

    Ctrl-C (SIGINT) prints ``geoldp: interrupted`` and returns 130, SIGTERM prints ``geoldp: terminated``
    and returns 143, never with a traceback; an output being written keeps its previous state (or is
    complete, if the signal came while it was being renamed into place) and no temporary file is left.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments, without the program name. Defaults to ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success, 1 for bad input data or parameters, 2 for command-line usage
        errors, 130 after SIGINT, 143 after SIGTERM.
    """
    import signal

    from geoldp._core.safe_write import Terminated

    def terminate(signum: int, frame: Any) -> None:
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, terminate)
    except (ValueError, AttributeError, OSError):  # not the main thread, or no SIGTERM
        previous = None
    code = 130
    _progress.use_lines()  # long stages: one "geoldp: ..." line each on stderr
    _lean_arrow_allocator()
    try:
        code = _run(argv)
    except Terminated:
        print(f"{PROG}: terminated", file=sys.stderr)
        code = 143
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
    finally:
        _progress.use_lines(False)
        ending = argv is None  # run as a program: the process ends now
        if previous is not None:
            # a signal during interpreter shutdown would print a traceback from a library's thread or
            # finaliser; called in-process: restore
            signal.signal(signal.SIGTERM, signal.SIG_IGN if ending else previous)
            if ending and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
        if ending and code == 130:
            # CPython ends a program by SIGINT (status -2, not 130) when a KeyboardInterrupt once passed
            # through a string exec() (numba compiles that way), even a handled one; executing an empty
            # string clears that mark
            exec("")
    return code


def _run(argv: Sequence[str] | None = None) -> int:
    """Run the ``geoldp`` command line (signals are handled by :func:`main`).

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments, without the program name. Defaults to ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success, 1 for bad input data or parameters, 2 for command-line usage
        errors.
    """
    from geoldp._core.errors import GeoLDPError

    stdout, stderr = sys.stdout, sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(join_negative_boxes(sys.argv[1:] if argv is None else argv))
    except UsageError as exc:
        print(f"{PROG}: error: {_one_line(exc)}", file=stderr)
        return 2
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=stderr)
        return 130
    except Exception as exc:  # e.g. MemoryError on an absurd argument: one line all the same
        if os.environ.get("GEOLDP_TRACEBACK"):
            raise
        return _unexpected(exc, stderr)
    if args.command is None:
        parser.print_help(stdout)
        return 0
    func: Callable[[argparse.Namespace, TextIO, TextIO], int] = args.func
    try:
        with _report_warnings(stderr):  # every command's warnings as "geoldp: warning: ..." lines
            return func(args, stdout, stderr)
    except UsageError as exc:
        print(f"{PROG}: error: {_one_line(exc)}", file=stderr)
        return 2
    except UserError as exc:
        print(f"{PROG}: error: {_one_line(exc)}", file=stderr)
        return 1
    except (GeoLDPError, ValueError, TypeError, KeyError, ImportError) as exc:
        # Validation errors of the library: the message grammar names the parameter or the row position.
        if os.environ.get("GEOLDP_TRACEBACK"):
            raise
        if isinstance(exc, ImportError) and is_out_of_memory(exc):  # a library that could not be mapped
            return _out_of_memory(exc, stderr)
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"{PROG}: error: {_one_line(message)}", file=stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=stderr)
        return 130
    except BrokenPipeError:
        # The reader of stdout went away (``geoldp info | head``): exit quietly, as Unix tools do.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 141
    except (OSError, ArithmeticError, MemoryError) as exc:
        # A file that cannot be read or written (a full disk, permissions), or a numeric failure: one line.
        if os.environ.get("GEOLDP_TRACEBACK"):
            raise
        if is_out_of_memory(exc):  # a MemoryError, or a library that could not be mapped (OSError)
            return _out_of_memory(exc, stderr)
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else _one_line(exc)
        print(f"{PROG}: error: {type(exc).__name__}: {_one_line(detail)}", file=stderr)
        return 1
    except Exception as exc:  # anything else (a bug, RecursionError, ...): still one line, no traceback
        if os.environ.get("GEOLDP_TRACEBACK"):
            raise
        return _unexpected(exc, stderr)


def _out_of_memory(exc: BaseException, stderr: TextIO) -> int:
    """The one line for a MemoryError, or a library that could not be loaded for lack of memory."""
    detail = _one_line(exc)
    if not isinstance(exc, MemoryError):
        detail = f"a compiled library could not be loaded: {detail}"
    print(
        f"{PROG}: error: out of memory ({detail[:300]}): the input or the public points need more memory "
        "than this process may use; split the input, use fewer public points, or raise the memory limit",
        file=stderr,
    )
    return 1


def _unexpected(exc: BaseException, stderr: TextIO) -> int:
    """One line for an error geoldp did not foresee; GEOLDP_TRACEBACK=1 gives the traceback instead."""
    if is_out_of_memory(exc):
        return _out_of_memory(exc, stderr)
    kind = type(exc).__name__
    print(
        f"{PROG}: error: unexpected {kind}: {_one_line(exc)[:200]} (run with GEOLDP_TRACEBACK=1 for the "
        "traceback of a bug report)",
        file=stderr,
    )
    return 1
