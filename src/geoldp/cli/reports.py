r"""Aggregate reports on the command line: ``geoldp report`` and ``geoldp report-estimate``.

Beside ``geoldp perturb`` (a whole trajectory per user), a collector can release one aggregate report per
trip over public zones, from files, with the same per-user budget options, and estimate counts from the
table::

    geoldp report trips.gpkg --points P.gpkg --cell-km 2 --statistic od --epsilon 4 \
        --user-col user --max-per-user 1 --accountant budget.gpkg --total-epsilon 8 -o od.csv
    geoldp report-estimate od.csv --points P.gpkg --cell-km 2 -o od_estimates.gpkg

A report release is a CSV table with its ledger in ``OUT.ledger.json`` (its columns: :doc:`/cli`,
"geoldp report"). Errors are one line ``geoldp: error: ...``
(see :mod:`geoldp.cli`): this module raises ``ValueError`` for bad data or parameters (exit status 1) and
the subcommand parser's ``error`` for usage (status 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from geoldp._core.ledger import require
from geoldp._core.validation import MAX_PAD_LENGTH
from geoldp.cli import _budget, _read
from geoldp.cli._args import (
    add_cell_km,
    check_output,
    check_target,
    existing_file,
    print_written,
    stage,
    usage,
)
from geoldp.cli._args import int_at_least as _int_at_least
from geoldp.cli._args import int_in_range as _int_in_range
from geoldp.cli._args import lengths as _lengths
from geoldp.cli._args import seed as _seed
from geoldp.cli._args import warned as _warned

PROG = "geoldp"
SEED_HELP = "integer seed, for experiments only; omit for deployment (OS CSPRNG). Never written out."
#: ``geoldp.reports.STATISTICS`` and ``geoldp.reports.ORACLES``, spelt out so that ``--help`` loads no
#: kernels (a test checks that they agree).
STATISTICS = ("visited_zone", "od", "transitions")
ORACLES = ("krr", "oue", "olh")


# ------------------------------------------------------------------------------------------------------
# shared: zones, trips, per-user options


def _add_zone_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("public zones (give --zones, or --points with --cell-km)")
    g.add_argument("--zones", metavar="FILE", default=None, help="public zones (polygons)")
    g.add_argument(
        "--points", metavar="POINTS", default=None, help="public points: zones are a grid over them"
    )
    add_cell_km(
        g, "side of the square zones over POINTS (default 1.5; the same as geoldp estimate and evaluate)"
    )


def _zones(args: argparse.Namespace) -> tuple[Any, list[Path]]:
    """The public zones (``--zones`` file or the ``--cell-km`` grid over ``--points``) and the files read."""
    from geoldp import io as gio

    if (args.zones is None) == (args.points is None):
        usage(args, "give either --zones FILE or --points POINTS (zones: a --cell-km grid over them)")
    if args.zones is not None:
        path = existing_file(args.zones, "--zones")
        return _read.zones_for(args, None), [path]
    path = existing_file(args.points, "POINTS")
    with stage(f"cannot read POINTS '{args.points}'"):
        points = gio.read_points(path)
    return _read.zones_for(args, points), [path]


# ------------------------------------------------------------------------------------------------------
# geoldp report


def _cmd_report(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp import io as gio
    from geoldp import reports
    from geoldp.cli import accountant as cli_accountant

    trips_path = existing_file(args.trips, "TRIPS")
    zones, zone_files = _zones(args)
    out_path = check_output(
        args.output, overwrite=args.overwrite, inputs=[trips_path, *zone_files], suffixes=(".csv",)
    )
    trips = _read.read_trips(args, trips_path)
    # the same checks and accountant file as perturb; the per-user options go to geoldp.report as they are
    options = _budget.options(args)
    out = reports.report(
        trips,
        zones,
        statistic=args.statistic,
        epsilon=args.epsilon,
        oracle=args.oracle,
        pad_length=args.pad_length,
        rng=args.seed,
        progress=True,  # one line per stage
        **options,
    )
    _budget.finish(args, options, trips, out, stderr)  # accountant, kept rows
    with stage(f"cannot write '{args.output}'"):
        written = gio.write_file(out, out_path, overwrite=args.overwrite)
    cli_accountant.confirm_release(options, out)  # the accountant's pending charge, now written
    led = require(out, what="The reports", caller=PROG).settings
    unit = "per user, shared by her trips" if args.user_budget == "split" else "per trip"
    print(
        f"{PROG}: reported {len(out)} trips ({led['statistic']}, {led['oracle']} over "
        f"{led['domain']['size']} "
        f"values, epsilon={args.epsilon:g} {unit}{', seeded' if args.seed is not None else ''})",
        file=stderr,
    )
    return print_written(written, stdout)


def _add_report(sub: Any) -> None:

    p = sub.add_parser(
        "report",
        help="release one aggregate report per trip over public zones",
        description=(
            "Release, for every trip (row) of TRIPS, one epsilon-LDP report of a statistic over public zones "
            "(the zones it visits, its origin-destination pair, or its zone-to-zone moves) with a frequency "
            "oracle (k-RR, OUE or OLH), and write the reports as a CSV table in input order with the ledger "
            "in OUT.ledger.json (with --user-budget split, an 'epsilon' column gives each row's share of its "
            "user's budget). Estimate them with 'geoldp report-estimate'."
        ),
    )
    p.add_argument(
        "trips", metavar="TRIPS", help="trips: one LineString per row (a Point row is a one-point trip)"
    )
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the report table, OUT.csv")
    p.add_argument(
        "--epsilon",
        required=True,
        type=float,
        metavar="E",
        help="privacy budget per trip (row); with --user-budget split, per user (her trips share it)",
    )
    p.add_argument("--statistic", choices=STATISTICS, default="visited_zone", help="what each trip reports")
    p.add_argument(
        "--oracle", choices=("auto", *ORACLES), default="auto", help="frequency oracle (default: by variance)"
    )
    p.add_argument(
        "--pad-length",
        type=_int_in_range(1, MAX_PAD_LENGTH, "geoldp.reports.MAX_PAD_LENGTH"),
        default=1,
        metavar="L",
        help="padding-and-sampling length of the set statistics (1 for od): counts are unbiased for trips "
        "with at most L zones (or moves)",
    )
    p.add_argument("--seed", type=_seed, default=None, metavar="N", help=SEED_HELP)
    _add_zone_options(p)
    _read.add_table_options(p, "TRIPS")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT (and its ledger)")
    _budget.add_options(p)  # --user-col, --accountant, --total-epsilon, --user-budget, --max-per-user
    p.set_defaults(func=_warned(_cmd_report), command_parser=p)


# ------------------------------------------------------------------------------------------------------
# geoldp report-estimate


def _cmd_report_estimate(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp import io as gio
    from geoldp import layers as glayers
    from geoldp._core.progress import stages
    from geoldp.estimate._ranking import top_supported
    from geoldp.questions import answer_table
    from geoldp.reports import estimate_counts
    from geoldp.reports.release import n_reports

    if args.lengths is not None and args.shrink is None:
        usage(args, "--lengths goes with --shrink POINTS")
    src = existing_file(args.reports, "REPORTS")
    zones, zone_files = _zones(args)
    shrink_path = None if args.shrink is None else existing_file(args.shrink, "--shrink")
    out_path = Path(args.output)
    if out_path.suffix.lower() not in (".gpkg", ".geojson", ".json"):
        raise ValueError(f"cannot write '{args.output}': use one of the suffixes .geojson, .gpkg, .json")
    with stage(f"cannot read REPORTS '{args.reports}'"):
        table = gio.read_report_table(src)
    statistic = require(table, what="REPORTS", caller=PROG).settings["statistic"]
    if shrink_path is not None and statistic not in ("visited_zone", "od"):
        usage(args, "--shrink takes visited-zone or OD reports")
    names = {"visited_zone": ["zone_visits", "hotspots"], "od": ["od_flows"]}.get(statistic, ["transitions"])
    # every file the layers go to, checked before any is written (one per layer for GeoJSON)
    geojson = out_path.suffix.lower() != ".gpkg"
    targets = (
        [out_path.with_name(f"{out_path.stem}.{n}{out_path.suffix}") for n in names]
        if geojson
        else [out_path]
    )
    inputs = [src, *zone_files, *([shrink_path] if shrink_path else [])]
    for target in targets:
        check_target(target, overwrite=args.overwrite, inputs=inputs)
    # refuses zones other than the reports' own (digest)
    with stages("estimating", 2, enabled=True) as report:
        report(f"counts of {n_reports(table)} reports")
        est = estimate_counts(table, zones, max_set_size=args.max_set_size, simultaneous=args.simultaneous)
        report("layers")
    intervals = "simultaneous" if args.simultaneous else "cell by cell"
    # the one answer table (as geoldp answer and collect write it): the count kept inside its interval,
    # the unbiased estimate as raw; supported where the interval excludes 0
    answer = answer_table(
        est.index,
        est["projected"],
        lower=est["lower"],
        upper=est["upper"],
        std_error=est["std_error"],
        raw=est["estimate"],
        question={"visited_zone": "zone_visits", "od": "od_flows"}.get(statistic, statistic),
        design=f"report:{statistic}",
        covers=f"95 % interval of each cell's count ({intervals})",
    )
    answer["support"] = est["support"]  # reports supporting the cell, before debiasing
    extra = ["support"]  # std_error is a column of every layer of a table that has one
    if shrink_path is not None:
        from geoldp.shrinkage import shrunk_counts

        with stage(f"cannot read POINTS '{args.shrink}'"):
            points = gio.read_points(shrink_path)
        answer["shrunk"] = shrunk_counts(est, points, zones, lengths=args.lengths)
        extra.append("shrunk")
    rank = "estimate" if shrink_path is None else "shrunk"
    lay: dict[str, Any] = {}
    supported = f"{int(answer['supported'].sum())} of {len(answer)} cells supported"
    if statistic == "visited_zone":
        zl = glayers.zone_layer(answer, zones)
        lay["zone_visits"] = zl.assign(**{c: answer[c].to_numpy() for c in extra})
        top = top_supported(answer, args.k, by=rank)  # noise is never ranked
        hot = glayers.zone_layer(top, zones)  # with its rank, after the zone id
        lay["hotspots"] = hot.assign(**{c: top[c].to_numpy() for c in extra})
    else:
        # sparse: the supported pairs only (at most one per report can be non-zero), unless asked for all
        flows = answer.reset_index() if args.all_cells else answer[answer["supported"]].reset_index()
        name = "od_flows" if statistic == "od" else "transitions"
        lay[name] = glayers.od_layer(flows, zones).assign(**{c: flows[c].to_numpy() for c in extra})
    with stage(f"cannot write '{args.output}'"):
        written = glayers.write_layers(lay, out_path, overwrite=args.overwrite)
    print(
        f"{PROG}: estimated {', '.join(f'{k} ({len(v)})' for k, v in lay.items())} from "
        f"{n_reports(table)} reports, 95% intervals "
        f"({intervals}); {supported}",
        file=stderr,
    )
    return print_written(written, stdout)


def _add_report_estimate(sub: Any) -> None:
    p = sub.add_parser(
        "report-estimate",
        help="estimate counts with intervals from a report table, as GIS layers",
        description=(
            "Estimate from REPORTS (a table written by 'geoldp report' and its ledger) how many trips "
            "visit each zone (layers zone_visits and hotspots), flow between two zones (od_flows) or move "
            "between them (transitions), with 95% intervals, and write them as layers of a GeoPackage or "
            "one GeoJSON file per layer: columns estimate (the count, within its interval), lower, upper, "
            "width, std_error, supported, raw (the unbiased estimate) and support (reports supporting the "
            "zone, before debiasing); with --shrink also shrunk (the estimate shrunk zone by zone toward "
            "the no-data answers of the public points, as far as its noise allows; the hotspots are then "
            "ranked by it). The zones must be the reports' own (checked against the ledger)."
        ),
    )
    p.add_argument("reports", metavar="REPORTS", help="a report table written by 'geoldp report'")
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="OUT.gpkg, or OUT.geojson (a file per layer)"
    )
    _add_zone_options(p)
    p.add_argument("--k", type=_int_at_least(1), default=10, metavar="K", help="number of hotspot zones")
    p.add_argument(
        "--max-set-size",
        type=_int_at_least(1),
        default=None,
        metavar="M",
        help=(
            "padded visited-zone or transition reports: a public bound on the zones one trip visits "
            "(the outside included) or on the transitions it makes, known without the data; narrows "
            "the upper ends (default: the whole domain)"
        ),
    )
    p.add_argument(
        "--shrink",
        metavar="POINTS",
        default=None,
        help=(
            "public points: add a column shrunk, the estimate shrunk toward their no-data answers "
            "(empirical Bayes; visited-zone and OD reports)"
        ),
    )
    p.add_argument(
        "--lengths",
        type=_lengths,
        default=None,
        metavar="L,L,...",
        help="with --shrink: public or assumed trip lengths (adds the uniform-visits answer to the shapes)",
    )
    p.add_argument(
        "--simultaneous",
        action="store_true",
        help="family-wise 95%% intervals: all cells' intervals hold together (wider; to read a map whole)",
    )
    p.add_argument(
        "--all-cells",
        action="store_true",
        help="OD and transition reports: write every zone pair (default: the supported pairs only)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    p.set_defaults(func=_warned(_cmd_report_estimate), command_parser=p)


def add_parser(sub: Any) -> None:
    """Add the ``report`` and ``report-estimate`` commands to the ``geoldp`` subparsers."""
    _add_report(sub)
    _add_report_estimate(sub)
