"""``geoldp demo``: TP and ATP on a built-in synthetic city, a utility table and maps (no download)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, TextIO

from geoldp.cli._args import UserError, check_name
from geoldp.cli._args import epsilon as _epsilon
from geoldp.cli._args import positive_int as _positive_int
from geoldp.cli._args import report_warnings as _report_warnings
from geoldp.cli._args import seed as _seed


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


def add_parser(sub: Any) -> None:
    """Add ``geoldp demo`` to the ``geoldp`` subparsers."""
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
