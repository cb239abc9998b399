"""``geoldp campaign``, ``respond``, ``ingest`` and ``answer``: a collection in the field.

The collector publishes a campaign file (``campaign create``; LDPTrace's second round: ``campaign
next-round``), each user's device answers it with one
report (``geoldp.client.respond`` on the device; ``geoldp respond`` simulates many devices from a file of
trips), the collector ingests the report files into a transactional store (``ingest``: each user's budget
charged, every record stored once) and answers questions from the store as GIS layers (``answer``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from geoldp.cli import _read
from geoldp.cli._args import UserError, check_output, existing_file, print_written, stage, usage
from geoldp.cli._args import int_at_least as _int_at_least
from geoldp.cli._args import positive_float as _positive_float
from geoldp.cli._args import report_warnings as _report_warnings
from geoldp.cli._args import seed as _seed
from geoldp.questions import Question

PROG = "geoldp"


def _store_target(text: str) -> str:
    """A store: a postgresql:// URL as it is, or a GeoPackage path whose folder exists."""
    from geoldp.store import is_url

    if is_url(text):
        return text
    folder = Path(text).parent if str(Path(text).parent) else Path(".")
    if not folder.is_dir():
        raise UserError(f"the folder of the store '{text}' does not exist")
    return text


# ------------------------------------------------------------------------------------------------------
# campaign create | show | verify


def _cmd_create(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp import io as gio
    from geoldp.field.campaign import Campaign

    points_path = existing_file(args.points, "--points")
    inputs = [points_path] + ([existing_file(args.zones, "--zones")] if args.zones else [])
    out_path = check_output(
        args.output, overwrite=args.overwrite, inputs=inputs, suffixes=(".json",), ledger=False
    )
    with _report_warnings(stderr):
        with stage(f"cannot read --points '{args.points}'"):
            points = gio.read_points(points_path)
        zones = _read.zones_for(args, points)
        campaign = Campaign.create(
            args.design,
            epsilon=args.epsilon,
            points=points,
            zones=zones,
            user_total_epsilon=args.user_total_epsilon,
            max_points=args.max_points,
        )
        print(_publish(campaign, args.output, out_path, args.overwrite, stderr), file=stdout)
    return 0


def campaign_from_plan(
    args: argparse.Namespace, design: Any, points: Any, zones: Any, stderr: TextIO
) -> Path:
    """``geoldp plan --campaign-out FILE``: the recommended design's campaign, written to FILE."""
    from geoldp.field.campaign import Campaign

    out_path = check_output(
        args.campaign_out, overwrite=args.overwrite, suffixes=(".json",), ledger=False, what="--campaign-out"
    )
    campaign = Campaign.create(design, epsilon=args.epsilon, points=points, zones=zones)
    return _publish(campaign, args.campaign_out, out_path, args.overwrite, stderr)


def _publish(campaign: Any, given: str, out_path: Path, overwrite: bool, stderr: TextIO) -> Path:
    """Write a campaign file (``given``: as the user named it) and say what it collects."""
    with stage(f"cannot write '{given}'"):
        campaign.write(out_path, overwrite=overwrite)
    _describe(campaign, stderr)
    return out_path


def _describe(campaign: Any, out: TextIO) -> None:
    print(f"{PROG}: " + campaign.summary(), file=out)
    par = campaign.document["parameters"]
    if campaign.document["kind"] == "ldptrace" and par["round"] == 1:
        print(
            f"{PROG}: LDPTrace asks its users in two rounds: once this round's reports are ingested, write "
            "the second with geoldp campaign next-round CAMPAIGN --store STORE -o ROUND2.json",
            file=out,
        )


def _cmd_show(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp.field.campaign import Campaign

    campaign = Campaign.read(existing_file(args.campaign, "CAMPAIGN"))
    _describe(campaign, stdout)
    return 0


def _cmd_verify(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp.field.campaign import Campaign

    campaign = Campaign.read(existing_file(args.campaign, "CAMPAIGN"))
    with _report_warnings(stderr):
        campaign.verify()
    print(
        f"{PROG}: campaign {campaign.id} verified: its design's split and P's arrays are geoldp's",
        file=stdout,
    )
    return 0


# ------------------------------------------------------------------------------------------------------
# respond: many simulated devices from a file of trips


def _cmd_respond(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    import numpy as np

    from geoldp import client
    from geoldp import io as gio
    from geoldp._core.frames import warn_if_fixes
    from geoldp._core.safe_write import atomic_file

    campaign_path = existing_file(args.campaign, "CAMPAIGN")
    trips_path = existing_file(args.trips, "TRIPS")
    out_path = check_output(
        args.output,
        overwrite=args.overwrite,
        inputs=[campaign_path, trips_path],
        suffixes=(".jsonl",),
        ledger=False,
    )
    device = client.Client(campaign_path)
    with _report_warnings(stderr):
        with stage(f"cannot read TRIPS '{args.trips}'"):
            trips = gio.read_trajectories(trips_path)
        if args.user_col is not None and args.user_col not in trips.columns:
            raise UserError(
                f"--user-col {args.user_col!r} is not a column of TRIPS; its columns: "
                f"{', '.join(map(str, trips.columns))}"
            )
        if trips.crs is None:
            raise UserError(f"TRIPS '{args.trips}' has no CRS; set one (geoldp reads WGS 84 coordinates)")
        # GPS fixes without a trip id would each be a device's trip, at the full epsilon
        warn_if_fixes(trips, traj_id_col=None, caller="geoldp respond", option=None, ignore=(args.user_col,))
        wgs = trips.to_crs(4326) if trips.crs.to_epsg() != 4326 else trips
        seeds = None if args.seed is None else np.random.SeedSequence(args.seed).spawn(len(wgs))
        users = wgs[args.user_col] if args.user_col is not None else None
        with stage(f"cannot write '{args.output}'"), atomic_file(out_path, overwrite=args.overwrite) as fh:
            for i, geom in enumerate(wgs.geometry):
                if geom is None or geom.is_empty or geom.geom_type not in ("LineString", "Point"):
                    raise UserError(f"row position {i} of TRIPS is not a LineString or a Point")
                xy = np.asarray(geom.coords, dtype=np.float64)[:, :2]
                user = f"row-{i}" if users is None else str(users.iloc[i])
                try:
                    record = device.respond(xy, user=user, rng=None if seeds is None else seeds[i])
                except ValueError as exc:
                    raise UserError(f"row position {i} of TRIPS: {exc}") from None
                fh.write((client.to_json_line(record) + "\n").encode("utf-8"))
    print(
        f"{PROG}: {len(wgs)} report records of campaign {device.id[:12]}... ({device.design}, epsilon "
        f"{device.epsilon:g} each{', seeded' if args.seed is not None else ''})",
        file=stderr,
    )
    print(out_path, file=stdout)
    return 0


# ------------------------------------------------------------------------------------------------------
# ingest and answer


def _cmd_ingest(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp import _campaign_doc
    from geoldp.field.ingest import DEFAULT_BATCH, ingest
    from geoldp.store import is_url, redact

    campaign_path = existing_file(args.campaign, "CAMPAIGN")
    document = _campaign_doc.load_campaign(campaign_path)
    files = [existing_file(f, "REPORTS") for f in args.reports]
    target = _store_target(args.store)
    summary = ingest(campaign_path, files, store=target, batch=args.batch or DEFAULT_BATCH)
    where = redact(target) if is_url(target) else f"'{target}'"
    for refusal in summary.refused[: args.max_errors]:
        print(f"{PROG}: refused: {refusal}", file=stderr)
    if len(summary.refused) > args.max_errors:
        print(f"{PROG}: refused: ... and {len(summary.refused) - args.max_errors} more", file=stderr)
    print(
        f"{PROG}: ingested {summary.read} records of campaign {document['id'][:12]}... into "
        f"{where}: "
        f"{summary.stored} stored, {summary.duplicates} already stored, {summary.over_budget} over their "
        f"user's budget (not stored, not charged), {len(summary.refused)} refused",
        file=stdout,
    )
    return 1 if summary.refused else 0


def _cmd_next_round(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp.field.campaign import Campaign
    from geoldp.store import Store, is_url

    round1_path = existing_file(args.campaign, "ROUND1")
    if not is_url(args.store):
        existing_file(args.store, "--store")
    out_path = check_output(
        args.output, overwrite=args.overwrite, inputs=[round1_path], suffixes=(".json",), ledger=False
    )
    round1 = Campaign.read(round1_path)
    with _report_warnings(stderr), Store.open(args.store) as store:
        round2 = round1.next_round(store)
    print(_publish(round2, args.output, out_path, args.overwrite, stderr), file=stdout)
    return 0


def _answer_synthetic(
    args: argparse.Namespace, store: Any, campaign: Any, stdout: TextIO, stderr: TextIO
) -> int:
    """``geoldp answer`` of an LDPTrace round 2 without --question: the synthetic trajectories."""
    from geoldp import io as gio
    from geoldp.field.ingest import answer

    synthetic = answer(store, campaign, n_synthetic=args.n_synthetic, rng=args.seed)
    with stage(f"cannot write '{args.output}'"):
        written = gio.write_file(synthetic, args.output_path, overwrite=args.overwrite, sidecar=False)
    print(
        f"{PROG}: {len(synthetic)} synthetic trajectories from {synthetic.attrs['reports']} round-2 "
        f"reports of campaign {campaign.id[:12]}... (LDPTrace, L = "
        f"{campaign.document['parameters']['max_length']})",
        file=stderr,
    )
    return print_written(written, stdout)


def _answer_pilot(args: argparse.Namespace, store: Any, campaign: Any, stdout: TextIO, stderr: TextIO) -> int:
    """A pilot campaign's answer: its reports as the PILOT.csv that ``geoldp plan --pilot`` reads."""
    from geoldp.cli.collect import write_pilot
    from geoldp.field.ingest import answer

    if args.question is not None:
        usage(args, "a pilot campaign answers no question: leave out --question for its reports (PILOT.csv)")
    if args.output_path.suffix.lower() != ".csv":
        usage(
            args,
            "a pilot campaign's answer is its reports: write them to a .csv file for geoldp plan --pilot",
        )
    reports = answer(store, campaign)
    with stage(f"cannot write '{args.output}'"):
        written = write_pilot(reports, args.output_path, overwrite=args.overwrite)
    print(
        f"{PROG}: {len(reports)} pilot reports of campaign {campaign.id[:12]}...: plan with "
        f"geoldp plan POINTS --pilot {args.output} and the campaign's zones",
        file=stderr,
    )
    return print_written(written, stdout)


def _cmd_answer(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp import designs
    from geoldp import io as gio
    from geoldp.field.ingest import answer, stored_campaign
    from geoldp.store import Store, is_url

    if not is_url(args.store):
        existing_file(args.store, "--store")
    out_path = check_output(args.output, overwrite=args.overwrite)
    args.output_path = out_path
    with _report_warnings(stderr), Store.open(args.store) as store:
        campaign = stored_campaign(store, args.campaign)
        ldptrace = campaign.document["kind"] == "ldptrace"
        if not ldptrace and (args.n_synthetic is not None or args.seed is not None):
            usage(args, "--n-synthetic and --seed are for an LDPTrace campaign's synthetic trajectories")
        if ldptrace and args.question is None:
            return _answer_synthetic(args, store, campaign, stdout, stderr)
        if campaign.document["kind"] == "pilot":
            return _answer_pilot(args, store, campaign, stdout, stderr)
        question = Question(args.question or Question.ZONE_VISITS.value)
        if question not in campaign.design().questions:
            answered = ", ".join(q.value for q in campaign.design().questions)
            usage(
                args,
                f"the campaign's design {campaign.design_name!r} answers {answered}, not {question.value}",
            )
        if ldptrace and campaign.zones() is None:
            usage(args, "the campaign has no zones to answer a question over: leave out --question")
        extra = {"n_synthetic": args.n_synthetic, "rng": args.seed} if ldptrace else {}
        table = answer(store, campaign, question, **extra)
        layer = designs.to_layer(table, campaign.zones())
        with stage(f"cannot write '{args.output}'"):
            written = gio.write_file(layer, out_path, overwrite=args.overwrite, sidecar=False)
    print(
        f"{PROG}: {question.value} from {table.attrs['reports']} reports of campaign {campaign.id[:12]}... "
        f"({campaign.design_name}): {int(table['supported'].sum())} of {len(table)} cells supported "
        f"({table.attrs['covers']})",
        file=stderr,
    )
    return print_written(written, stdout)


# ------------------------------------------------------------------------------------------------------
# the parsers


def add_parser(sub: Any) -> None:
    """Add ``campaign``, ``respond``, ``ingest`` and ``answer`` to the ``geoldp`` subparsers."""
    _add_campaign(sub)
    _add_respond(sub)
    _add_ingest(sub)
    _add_answer(sub)


def _add_campaign(sub: Any) -> None:
    """Add ``geoldp campaign``."""
    c = sub.add_parser(
        "campaign",
        help="publish, show or verify a campaign file (a collection's public configuration)",
        description=(
            "A campaign file holds the public configuration of one collection: the design and its "
            "parameters, epsilon and its split, each user's total, the public points P and the zones. "
            "Devices answer it with geoldp.client (or geoldp respond), and geoldp ingest takes their "
            "reports in."
        ),
    )
    csub = c.add_subparsers(dest="campaign_command", metavar="{create,show,verify,next-round}", required=True)
    cr = csub.add_parser(
        "create",
        help="write the campaign file of a design",
        description="Write the campaign file of --design at --epsilon per report over the public --points.",
    )
    cr.add_argument("--design", required=True, metavar="NAME", help="the design, as geoldp plan names it")
    cr.add_argument("--epsilon", type=_positive_float, required=True, metavar="EPS", help="budget per report")
    cr.add_argument("--points", required=True, metavar="POINTS", help="the public points P")
    cr.add_argument("--zones", metavar="FILE", default=None, help="public zones (default: a --cell-km grid)")
    cr.add_argument(
        "--cell-km",
        type=_positive_float,
        default=1.5,
        metavar="KM",
        help="zone side over POINTS (default 1.5)",
    )
    cr.add_argument(
        "--user-total-epsilon",
        type=_positive_float,
        default=None,
        metavar="EPS",
        help="each user's total budget over the campaign (default --epsilon: one report per user)",
    )
    cr.add_argument(
        "--max-points",
        type=_int_at_least(1, "--max-points"),
        default=64,
        metavar="N",
        help="longest trajectory a device reports (trajectory designs; default 64)",
    )
    cr.add_argument("-o", "--output", required=True, metavar="CAMPAIGN.json", help="the campaign file")
    cr.add_argument("--overwrite", action="store_true", help="replace an existing campaign file")
    cr.set_defaults(func=_cmd_create, command_parser=cr)
    sh = csub.add_parser(
        "show", help="print a campaign's id, design and sizes", description="Print a campaign."
    )
    sh.add_argument("campaign", metavar="CAMPAIGN", help="the campaign file")
    sh.set_defaults(func=_cmd_show, command_parser=sh)
    ve = csub.add_parser(
        "verify",
        help="recompute a campaign's derived parts (split, P's arrays) and compare",
        description=(
            "Recompute everything a campaign file derives from its design, epsilon and points (the split of "
            "every trajectory length, P's diameter and arrays) and fail if anything differs."
        ),
    )
    ve.add_argument("campaign", metavar="CAMPAIGN", help="the campaign file")
    ve.set_defaults(func=_cmd_verify, command_parser=ve)
    nr = csub.add_parser(
        "next-round",
        help="write LDPTrace's round-2 campaign from the round-1 reports in a store",
        description=(
            "LDPTrace asks its users in two rounds. Read the round-1 (length) reports of ROUND1 from the "
            "store, fix L (the length quantile of their estimate: post-processing only) and write the "
            "round-2 campaign (start, end and L - 1 transition reports) that devices answer next."
        ),
    )
    nr.add_argument("campaign", metavar="ROUND1", help="the round-1 campaign file")
    nr.add_argument(
        "--store", required=True, metavar="STORE", help="the store its reports were ingested into"
    )
    nr.add_argument("-o", "--output", required=True, metavar="ROUND2.json", help="the round-2 campaign file")
    nr.add_argument("--overwrite", action="store_true", help="replace an existing campaign file")
    nr.set_defaults(func=_cmd_next_round, command_parser=nr)


def _add_respond(sub: Any) -> None:
    """Add ``geoldp respond``."""
    r = sub.add_parser(
        "respond",
        help="simulate devices: one report record per trip of TRIPS (JSON Lines)",
        description=(
            "Run each user's randomiser (geoldp.client) on each row of TRIPS, as the users' devices would, "
            "and write one report record per row to a JSON Lines file for geoldp ingest."
        ),
    )
    r.add_argument("campaign", metavar="CAMPAIGN", help="the campaign file")
    r.add_argument("trips", metavar="TRIPS", help="the devices' trajectories (one LineString per row)")
    r.add_argument(
        "--user-col", default=None, metavar="COL", help="the user id column (default: row-<position>)"
    )
    r.add_argument("-o", "--output", required=True, metavar="REPORTS.jsonl", help="the report records")
    r.add_argument("--seed", type=_seed, default=None, help="seeded reports: for experiments only")
    r.add_argument("--overwrite", action="store_true", help="replace an existing output")
    r.set_defaults(func=_cmd_respond, command_parser=r)


def _add_ingest(sub: Any) -> None:
    """Add ``geoldp ingest``."""
    i = sub.add_parser(
        "ingest",
        help="check report records and store them, charging each user's budget",
        description=(
            "Check every report record of the JSON Lines files REPORTS against CAMPAIGN and append the valid "
            "ones to the store: each transaction charges every record's user and stores the record, a user "
            "past her total is refused, a record sent twice is stored once. Exit status 1 if any line was "
            "refused (each is printed with its file and line)."
        ),
    )
    i.add_argument("campaign", metavar="CAMPAIGN", help="the campaign file")
    i.add_argument("reports", metavar="REPORTS", nargs="+", help="JSON Lines files of report records")
    i.add_argument(
        "--store",
        required=True,
        metavar="STORE",
        help="a GeoPackage file (created if new) or a postgresql:// URL",
    )
    i.add_argument(
        "--batch",
        type=_int_at_least(1, "--batch"),
        default=None,
        metavar="N",
        help="records per transaction (default: geoldp.field.ingest.DEFAULT_BATCH, 2000)",
    )
    i.add_argument(
        "--max-errors",
        type=_int_at_least(0, "--max-errors"),
        default=20,
        metavar="N",
        help="refused lines printed (default 20)",
    )
    i.set_defaults(func=_cmd_ingest, command_parser=i)


def _add_answer(sub: Any) -> None:
    """Add ``geoldp answer``."""
    a = sub.add_parser(
        "answer",
        help="answer a question from a campaign's stored reports, as a GIS layer",
        description=(
            "Read the reports of one campaign from the store and write the design's answer to --question as "
            "a GIS layer (zones with estimate, lower, upper, std_error, supported, raw; OD flows as lines). "
            "For an LDPTrace campaign, name its round 2: without --question the layer is its synthetic "
            "trajectories. A pilot campaign answers no question: its reports go to a .csv file for "
            "geoldp plan --pilot."
        ),
    )
    a.add_argument("--store", required=True, metavar="STORE", help="the GeoPackage file or postgresql:// URL")
    a.add_argument("--campaign", required=True, metavar="ID", help="the campaign id (or a unique prefix)")
    a.add_argument(
        "--question",
        choices=[q.value for q in Question],
        default=None,
        help="the question (default zone_visits; an LDPTrace round 2 without it: its synthetic trajectories)",
    )
    a.add_argument(
        "--n-synthetic",
        type=_int_at_least(1, "--n-synthetic"),
        default=None,
        metavar="N",
        help="LDPTrace: synthetic trajectories drawn (default: one per round-2 report)",
    )
    a.add_argument(
        "--seed", type=_seed, default=None, help="LDPTrace: seeded synthesis, for experiments only"
    )
    a.add_argument(
        "-o", "--output", required=True, metavar="ANSWER", help="the answer layer (.gpkg, .geojson ...)"
    )
    a.add_argument("--overwrite", action="store_true", help="replace an existing output")
    a.set_defaults(func=_cmd_answer, command_parser=a)
