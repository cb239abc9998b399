"""``geoldp synthesize``: synthetic trips with LDPTrace (ε-LDP reports of each trip, a fitted model).

Every trip reports its length, start and end cells and moves on a public grid; the collector fits a
Markov model and writes synthetic trips, with the ledger and the per-user budget options of
:mod:`geoldp.cli._budget`::

    geoldp synthesize trips.gpkg --points P.gpkg --grid-size 8 --epsilon 4 -o synthetic.gpkg
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from geoldp._core.ledger import attach, require
from geoldp.cli import _budget, _read
from geoldp.cli._args import bbox as _bbox
from geoldp.cli._args import check_output, existing_file, print_written, stage, usage
from geoldp.cli._args import int_at_least as _int_at_least
from geoldp.cli._args import positive_float as _positive_float
from geoldp.cli._args import seed as _seed
from geoldp.cli._args import warned as _warned

PROG = "geoldp"
SEED_HELP = "integer seed, for experiments only; omit for deployment (OS CSPRNG). Never written out."


def _per_user(args: argparse.Namespace, trips: Any, source: Any) -> tuple[Any, dict[str, Any]]:
    """Apply ``--max-per-user`` (a public selection rule) and load the accountant.

    ``--user-budget split`` is refused: an LDPTrace model needs one ε for every trip.
    """
    from geoldp import budget_strategies

    options = _budget.options(args)  # the same checks and accountant file as perturb
    if options.get("user_budget", "trajectory") != "trajectory":
        raise ValueError(
            f"--user-budget split is not available for '{args.command}': its model needs one epsilon for "
            "every trip. Keep at most K trips per user with --max-per-user K (and --epsilon per trip) instead"
        )
    kept = trips
    if options.get("max_per_user") is not None:
        keep = budget_strategies.select_per_user(
            trips, args.user_col, args.max_per_user, select_trips=args.select_trips, rng=source
        )
        kept = trips.iloc[keep.nonzero()[0]]
    release = {k: options[k] for k in ("user_col", "accountant") if k in options}
    if "accountant" not in release:
        release.pop("user_col", None)
    return kept, {"options": options, "release": release}


def _rule(args: argparse.Namespace) -> dict[str, Any] | None:
    if args.max_per_user is None:
        return None
    return {
        "strategy": "trajectory",
        "user_col": str(args.user_col),
        "max_per_user": args.max_per_user,
        "select_trips": args.select_trips,
        "dropped_rows_released": False,
    }


def _grid_size(text: str) -> int | str:
    if text.strip().lower() == "auto":
        return "auto"
    return _int_at_least(1, "'auto' or an integer >= 1")(text)


def _cmd_synthesize(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp import io as gio
    from geoldp import ldptrace
    from geoldp._core.randomness import resolve_rng
    from geoldp.cli import accountant as cli_accountant

    if (args.points is None) == (args.area is None):
        usage(args, "give either --points POINTS (their box is the grid's) or --area MINX,MINY,MAXX,MAXY")
    trips_path = existing_file(args.trips, "TRIPS")
    inputs = [trips_path]
    points = None
    if args.points is not None:
        inputs.append(existing_file(args.points, "POINTS"))
        with stage(f"cannot read POINTS '{args.points}'"):
            points = gio.read_points(inputs[-1])
    out_path = check_output(args.output, overwrite=args.overwrite, inputs=inputs)
    trips = _read.read_trips(args, trips_path)
    source = resolve_rng(args.seed)
    kept, per_user = _per_user(args, trips, source)
    out = ldptrace.synthesize(
        kept,
        epsilon=args.epsilon,
        bounds=args.area,
        points=points,
        grid_size=args.grid_size,
        length_hint=args.length_hint,
        n_synthetic=args.n_synthetic,
        quantile=args.quantile,
        rng=source,
        progress=True,
        **per_user["release"],
    )
    rule = _rule(args)
    if rule is not None:
        attach(out, require(out, what="The synthetic trips", caller=PROG).replace(user_budget=rule))
    _budget.finish(args, per_user["options"], trips, kept, stderr)
    with stage(f"cannot write '{args.output}'"):
        written = gio.write_file(out, out_path, overwrite=args.overwrite, inputs=tuple(inputs))
    cli_accountant.confirm_release(per_user["options"], out)  # the accountant's pending charge, now written
    grid = require(out, what="The synthetic trips", caller=PROG).settings["grid"]
    print(
        f"{PROG}: synthesised {len(out)} trips from {len(kept)} (LDPTrace, {grid['n']}x{grid['n']} grid, "
        f"epsilon={args.epsilon:g} per trip{', seeded' if args.seed is not None else ''})",
        file=stderr,
    )
    return print_written(written, stdout)


def add_parser(sub: Any) -> None:
    """Add ``geoldp synthesize`` to the ``geoldp`` subparsers."""
    from geoldp._core.formats import WRITE_FORMATS

    p = sub.add_parser(
        "synthesize",
        help="synthesise trips with LDPTrace (epsilon-LDP reports, synthetic output)",
        description=(
            "Every trip of TRIPS reports its length, start and end cells and moves on a public N x N grid "
            "with OUE under epsilon-LDP (LDPTrace, Du et al., PVLDB 2023); the collector fits a Markov model "
            "and writes synthetic trips made of cell centres (not the input's rows), with the ledger."
        ),
    )
    p.add_argument("trips", metavar="TRIPS", help="trips: one LineString per row")
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help=f"synthetic trips ({', '.join(WRITE_FORMATS)})"
    )
    p.add_argument("--epsilon", required=True, type=float, metavar="E", help="privacy budget per trip (row)")
    p.add_argument("--points", metavar="POINTS", default=None, help="public points: their box is the grid's")
    p.add_argument(
        "--area",
        type=_bbox,
        metavar="MINX,MINY,MAXX,MAXY",
        default=None,
        help="instead of --points: a PUBLIC box in the CRS of TRIPS (--area=-122.5,... for a minus sign)",
    )
    p.add_argument(
        "--grid-size", type=_grid_size, default=6, metavar="N", help="grid side N, or 'auto' (default 6)"
    )
    p.add_argument(
        "--length-hint", type=_positive_float, default=None, metavar="L", help="typical length, for auto"
    )
    p.add_argument("--n-synthetic", type=_int_at_least(1), default=None, metavar="N", help="synthetic trips")
    p.add_argument("--quantile", type=float, default=0.9, metavar="Q", help="length quantile (default 0.9)")
    p.add_argument("--seed", type=_seed, default=None, metavar="N", help=SEED_HELP)
    _read.add_table_options(p, "TRIPS")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT (and its ledger)")
    _budget.add_options(p)
    p.set_defaults(func=_warned(_cmd_synthesize), command_parser=p)
