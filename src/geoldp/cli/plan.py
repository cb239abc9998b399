"""``geoldp plan``: which design answers a question best, simulated on public inputs before any ε is spent."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from geoldp._core.validation import MAX_LENGTH
from geoldp.cli._args import UserError, add_cell_km, existing_file, stage
from geoldp.cli._args import int_in_range as _int_in_range
from geoldp.cli._args import lengths as _lengths
from geoldp.cli._args import positive_float as _positive_float
from geoldp.cli._args import report_warnings as _report_warnings

PROG = "geoldp"
#: The trajectory lengths drawn from without --lengths, --max-length or --pilot.
DEFAULT_LENGTHS = (2, 3, 5, 8)


def _cmd_plan(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp.zones import zone_grid

    points_path = existing_file(args.points, "POINTS")
    lengths = args.lengths
    if lengths is None and args.max_length is None:
        lengths = list(DEFAULT_LENGTHS)  # assumed lengths (public), unless a public bound replaces them
    import pandas as pd

    from geoldp import io as gio
    from geoldp.designs import BaselineDesign
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
            max_length=args.max_length,
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
        best = table.best
        baseline = isinstance(best, BaselineDesign)
        if best is not None:
            bound = "" if args.max_length is None else f"--max-length {args.max_length} "
            if isinstance(best, BaselineDesign) and best.answer_kind == "uniform" and best.lengths:
                bound += f"--lengths {','.join(str(v) for v in best.lengths)} "
            print(
                f"run it: geoldp collect TRIPS --design {best.name} --question {args.question} "
                f"--epsilon {args.epsilon:g} --points {args.points} --cell-km {args.cell_km:g} {bound}"
                f"-o ANSWER.gpkg{'  (no release, no epsilon spent)' if baseline else ''}",
                file=stdout,
            )
        if args.campaign_out is not None and baseline:
            raise UserError(
                f"no campaign written to '{args.campaign_out}': no design beats the no-data baselines for "
                f"{args.question} here (see the table); to collect anyway, write the campaign of a design "
                "you choose with geoldp campaign create --design NAME"
            )
        if args.campaign_out is not None and best is not None and not baseline:
            from geoldp.cli import field as cli_field

            print(cli_field.campaign_from_plan(args, best, points, zones, stderr), file=stdout)
    return 0


def add_parser(sub: Any) -> None:
    """Add ``geoldp plan`` to the ``geoldp`` subparsers."""
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
        default=None,
        metavar="L,L,...",
        help="trajectory lengths to draw from",
    )
    pl.add_argument(
        "--max-length",
        type=_int_in_range(1, MAX_LENGTH, "the longest trajectory geoldp models"),
        default=None,
        metavar="N",
        help="a PUBLIC bound on the points of a trajectory (e.g. the cut the collection app enforces): "
        "without --lengths, lengths are drawn from 2..N, and the recommended report design bounds each "
        "trip's visited zones by N",
    )
    pl.add_argument(
        "--question", choices=("zone_visits", "hotspots", "od_flows", "range_counts"), default="zone_visits"
    )
    add_cell_km(pl, "zone side (default 1.5)")
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
