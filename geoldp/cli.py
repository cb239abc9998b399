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
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

__all__ = ["build_parser", "main"]

PROG = "geoldp"

#: Output formats of ``geoldp perturb``, by file suffix.
OUTPUT_FORMATS = {
    ".geojson": "GeoJSON",
    ".json": "GeoJSON",
    ".gpkg": "GPKG",
    ".parquet": "Parquet",
    ".geoparquet": "Parquet",
    ".csv": "CSV",
    ".shp": "ESRI Shapefile",
    ".fgb": "FlatGeobuf",
}

SEED_HELP = (
    "integer seed, for experiments only; omit for deployment (OS CSPRNG). The seed is never written to "
    "the output or the ledger."
)


class UsageError(Exception):
    """A command-line usage error (exit status 2)."""


class UserError(Exception):
    """An error in the user's data or parameters (exit status 1)."""


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line, raised as :class:`UsageError` instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


# ------------------------------------------------------------------------------------------------------
# helpers


def _one_line(message: object) -> str:
    """Collapse a message to one line."""
    text = " ".join(str(message).split())
    return text or "unknown error"


def _version() -> str:
    from geoldp._versions import _geoldp_version

    return _geoldp_version()


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return value


def _epsilon(text: str) -> float:
    # Only the syntax is checked here; the range is validated by the library (one grammar everywhere).
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not (0.0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _granularity(text: str) -> str | int:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or an integer, got {text!r}") from None


def _option(text: str) -> tuple[str, Any]:
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"must look like NAME=VALUE, got {text!r}")
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        value = raw.strip()
    return name, value


def _existing_file(path: str, what: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise UserError(f"{what} file '{path}' does not exist")
    if p.is_dir() and p.suffix.lower() not in {".parquet", ".gdb"}:
        raise UserError(f"{what} path '{path}' is a directory, not a file")
    return p


def _output_path(path: str) -> tuple[Path, str]:
    p = Path(path)
    fmt = OUTPUT_FORMATS.get(p.suffix.lower())
    if fmt is None:
        known = ", ".join(sorted(OUTPUT_FORMATS))
        raise UserError(f"cannot infer the output format of '{path}'; use one of the suffixes {known}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"output directory '{parent}' does not exist")
    return p, fmt


@contextmanager
def _stage(what: str) -> Iterator[None]:
    """Turn any exception raised while doing ``what`` (reading or writing a file) into a UserError."""
    try:
        yield
    except (UsageError, UserError):
        raise
    except Exception as exc:
        if os.environ.get("GEOLDP_TRACEBACK"):
            raise
        raise UserError(f"{what}: {_one_line(exc)}") from exc


@contextmanager
def _report_warnings(stderr: TextIO) -> Iterator[None]:
    """Print each distinct warning raised inside the block as one ``geoldp: warning:`` line.

    The warnings are printed when the block succeeds; after an error only the error line is printed.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    seen: set[str] = set()
    for w in caught:
        line = f"{PROG}: warning: {w.category.__name__}: {_one_line(w.message)}"
        if line not in seen:
            seen.add(line)
            print(line, file=stderr)


def write_frame(gdf: Any, path: str | os.PathLike[str]) -> list[Path]:
    """Write a (perturbed) GeoDataFrame in the format given by the file suffix, plus its ledger.

    GeoJSON goes through :func:`geoldp.io.to_geojson` (RFC 7946, WGS 84, ledger as a top-level ``"geoldp"``
    member). Other formats go through GeoPandas. For every format, the ledger in ``gdf.attrs["geoldp"]``, if
    any, is also written to a JSON sidecar ``<path>.ledger.json``.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        The frame to write.
    path : str or os.PathLike
        Output path; its suffix selects the format (see ``OUTPUT_FORMATS``).

    Returns
    -------
    list of pathlib.Path
        The files written.
    """
    p, fmt = _output_path(os.fspath(path))
    if fmt == "GeoJSON":
        from geoldp import io as gio

        gio.to_geojson(gdf, p, ledger=True)  # ledger as a top-level "geoldp" member, and a sidecar below
    elif fmt == "Parquet":
        gdf.to_parquet(p)
    elif fmt == "CSV":
        import pandas as pd
        import shapely

        # WGS 84 (CSV carries no CRS) at full precision; exact only when the input was already in EPSG:4326
        wgs = gdf if gdf.crs is None or gdf.crs.equals("EPSG:4326") else gdf.to_crs("EPSG:4326")
        frame = pd.DataFrame(wgs.drop(columns=wgs.geometry.name))
        frame["geometry"] = shapely.to_wkt(np.asarray(wgs.geometry.values), rounding_precision=-1)
        frame.to_csv(p, index=False)
    else:
        gdf.to_file(p, driver=fmt)
    from geoldp import io as gio

    written = [p]
    side = gio.write_ledger(gdf, p)
    if side is not None:
        written.append(side)
    return written


# ------------------------------------------------------------------------------------------------------
# commands


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
    trips_path = _existing_file(args.trips, "TRIPS")
    points_path = _existing_file(args.points, "POINTS")
    out_path, _ = _output_path(args.output)
    for what, path in (("TRIPS", trips_path), ("POINTS", points_path)):
        if out_path.resolve() == path.resolve():
            raise UserError(f"the output '{args.output}' is the {what} file; choose another output path")

    from geoldp import io as gio

    options: dict[str, Any] = dict(args.option or [])
    if args.granularity is not None:
        options["granularity"] = args.granularity

    read_kwargs: dict[str, Any] = {
        name: getattr(args, name)
        for name in ("traj_id_col", "time_col", "crs", "wkt_col", "lon_col", "lat_col")
        if getattr(args, name) is not None
    }

    with _report_warnings(stderr):
        with _stage(f"cannot read TRIPS '{args.trips}'"):
            trips = gio.read_trajectories(trips_path, **read_kwargs)
        with _stage(f"cannot read POINTS '{args.points}'"):
            points = gio.read_points(points_path, **({"crs": args.points_crs} if args.points_crs else {}))
        trips = _prepare_trips(trips, args)
        progress = _show_progress(args, stderr, len(trips))
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
            **options,
        )
        with _stage(f"cannot write '{args.output}'"):
            written = write_frame(out, out_path)
    seeded = ", seeded" if args.seed is not None else ""
    print(
        f"{PROG}: perturbed {len(out)} rows with {args.mechanism.upper()} "
        f"(epsilon={args.epsilon:g} per trajectory{seeded})",
        file=stderr,
    )
    for path in written:
        print(path, file=stdout)
    return 0


def _cmd_demo(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp.demo import run_demo

    with _report_warnings(stderr):
        run_demo(
            args.output,
            n_trips=args.n_trips,
            n_points=args.n_points,
            epsilon=args.epsilon,
            seed=args.seed,
            plot=not args.no_plot,
            stream=stdout,
        )
    return 0


def _cmd_evaluate(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    original_path = _existing_file(args.original, "ORIGINAL")
    perturbed_path = _existing_file(args.perturbed, "PERTURBED")
    points_path = None if args.points is None else _existing_file(args.points, "POINTS")
    if args.plot is not None:
        plot_path = Path(args.plot)
        if plot_path.suffix.lower() not in {".png", ".pdf", ".svg"}:
            raise UserError(f"--plot must end in .png, .pdf or .svg, got '{args.plot}'")
        if not plot_path.parent.is_dir():
            raise UserError(f"output directory '{plot_path.parent}' does not exist")
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise UserError('--plot needs matplotlib; install it with: pip install "geoldp[plot]"')

    import pandas as pd

    from geoldp import io as gio
    from geoldp import metrics

    with _report_warnings(stderr):
        with _stage(f"cannot read ORIGINAL '{args.original}'"):
            original = gio.read_trajectories(original_path)
        with _stage(f"cannot read PERTURBED '{args.perturbed}'"):
            perturbed = gio.read_trajectories(perturbed_path)
        points = None
        if points_path is not None:
            with _stage(f"cannot read POINTS '{args.points}'"):
                points = gio.read_points(points_path)
        table = metrics.evaluate(original, perturbed, points=points)
        with pd.option_context("display.width", 120, "display.max_columns", 50, "display.max_rows", 200):
            print(table.to_string(), file=stdout)
        if args.plot is not None:
            from geoldp.demo import save_comparison_map

            with _stage(f"cannot write '{args.plot}'"):
                save_comparison_map(original, {"perturbed": perturbed}, args.plot, points=points)
            print(f"{PROG}: wrote {args.plot}", file=stderr)
    return 0


def _cmd_info(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp._versions import show_versions

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
            "Any format GeoPandas reads (GeoJSON, GeoPackage, Parquet, CSV with a WKT column or lon/lat "
            "columns, ...). Only the geometry and the index are written unless --keep-columns is given; kept "
            "columns are NOT protected. A JSON ledger of the privacy budget is written with the output."
        ),
    )
    p.add_argument("trips", metavar="TRIPS", help="trajectories: LineStrings, or Points with --traj-id-col")
    p.add_argument("--points", required=True, metavar="POINTS", help="the public point set (Points)")
    p.add_argument(
        "--mechanism",
        default="atp",
        type=str.lower,
        choices=("tp", "atp", "pointem"),
        help="the mechanism (default: atp)",
    )
    p.add_argument(
        "--epsilon",
        required=True,
        type=_epsilon,
        metavar="E",
        help="privacy budget per trajectory (row), > 0",
    )
    p.add_argument("--seed", type=_seed, default=None, metavar="N", help=SEED_HELP)
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help=f"output file; the suffix selects the format ({', '.join(OUTPUT_FORMATS)})",
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
    d.add_argument("--no-plot", action="store_true", help="do not draw the PNG map")
    d.set_defaults(func=_cmd_demo)

    e = sub.add_parser(
        "evaluate",
        help="compare original and perturbed trajectories",
        description=(
            "Print the utility table of geoldp.metrics.evaluate for ORIGINAL and PERTURBED (same rows, "
            "same order): NE, PRQ, range-query error, length and diameter JSD, and with --points the "
            "hotspot metrics."
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
    e.add_argument("--plot", metavar="PNG", default=None, help="also save a map comparing the two")
    e.set_defaults(func=_cmd_evaluate)

    i = sub.add_parser(
        "info",
        help="print the geoldp version and dependency versions",
        description="Print the geoldp version and the versions of its dependencies.",
    )
    i.set_defaults(func=_cmd_info)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``geoldp`` command line.

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
    from geoldp.errors import GeoLDPError

    stdout, stderr = sys.stdout, sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        print(f"{PROG}: error: {_one_line(exc)}", file=stderr)
        return 2
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    if args.command is None:
        parser.print_help(stdout)
        return 0
    func: Callable[[argparse.Namespace, TextIO, TextIO], int] = args.func
    try:
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
