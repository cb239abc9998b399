"""``geoldp collect``: run any design by the name ``geoldp plan`` prints, and write its answer as a layer.

One command from a recommendation to a map: the design (:func:`geoldp.designs.design`) releases the
trips under ε per trip, and its answer to the question (post-processing of the release, P and the
zones) is written as a GIS layer (zones with their counts, or OD flow lines); ``--release-out`` keeps
the release itself.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from geoldp._cli_args import check_output, existing_file, stage, usage
from geoldp._cli_args import positive_float as _positive_float
from geoldp._cli_args import report_warnings as _report_warnings
from geoldp._cli_args import seed as _seed
from geoldp.questions import Question

PROG = "geoldp"


def _write_release(released: Any, path: Path, overwrite: bool) -> list[Path]:
    """The release as a file: trajectories as a GIS file, a report table as CSV (with the ledger)."""
    from geoldp import cli_reports
    from geoldp import io as gio

    if hasattr(released, "geometry"):
        return gio.write_file(released, path, overwrite=overwrite)
    return cli_reports.write_report_table(released, path, overwrite=overwrite)


def _cmd_collect(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp import cli_campaign, designs
    from geoldp import io as gio

    question = Question(args.question)
    try:
        design = designs.design(args.design, question=question)
    except (TypeError, ValueError) as exc:
        usage(args, str(exc))
    if question not in design.questions:
        answered = ", ".join(q.value for q in design.questions)
        usage(args, f"the design {design.name!r} answers {answered}, not {question.value}")
    trips_path = existing_file(args.trips, "TRIPS")
    points_path = existing_file(args.points, "--points")
    inputs = [trips_path, points_path]
    if args.zones is not None:
        inputs.append(existing_file(args.zones, "--zones"))
    out_path = check_output(args.output, overwrite=args.overwrite, inputs=inputs)
    release_path = None
    if args.release_out is not None:
        if len(design.ledger(1.0)) > 1:
            usage(args, f"--release-out keeps one release; the design {design.name!r} makes two")
        release_path = check_output(
            args.release_out, overwrite=args.overwrite, inputs=[*inputs, out_path], what="--release-out"
        )
    with _report_warnings(stderr):
        with stage(f"cannot read --points '{args.points}'"):
            points = gio.read_points(points_path)
        zones = cli_campaign.evaluate_zones(args, points)
        with stage(f"cannot read TRIPS '{args.trips}'"):
            trips = gio.read_trajectories(trips_path)
        released, answer = design.collect(
            trips, question, epsilon=args.epsilon, points=points, zones=zones, rng=args.seed
        )
        layer = designs.to_layer(answer, zones)
        with stage(f"cannot write '{args.output}'"):
            written = gio.write_file(layer, out_path, overwrite=args.overwrite, sidecar=False)
        if release_path is not None:
            with stage(f"cannot write '{args.release_out}'"):
                written += _write_release(released, release_path, args.overwrite)
    split = ", ".join(f"{name} {eps:g}" for name, eps in design.ledger(args.epsilon).items())
    supported = answer["supported"].sum()
    print(
        f"{PROG}: collected {len(trips)} trips with {design.name} (epsilon per trip: {split}"
        f"{', seeded' if args.seed is not None else ''}); {question.value}: {int(supported)} of "
        f"{len(answer)} cells supported ({answer.attrs['covers']})",
        file=stderr,
    )
    for path in written:
        print(path, file=stdout)
    return 0


def register(sub: Any) -> None:
    """Add the ``collect`` command to the ``geoldp`` subparsers."""
    p = sub.add_parser(
        "collect",
        help="run a design by the name geoldp plan prints, and write its answer as a GIS layer",
        description=(
            "Release TRIPS with a design (the name geoldp plan prints, e.g. atp, report:visited_zone:coarse, "
            "report:od:eb, hybrid:atp+report@0.5) under --epsilon per trip, and write its answer to "
            "--question as a GIS layer (zones with estimate, lower, upper, std_error, supported, raw; OD "
            "flows as lines)."
        ),
    )
    p.add_argument("trips", metavar="TRIPS", help="the private trajectories (one LineString per trip)")
    p.add_argument("--design", required=True, metavar="NAME", help="the design, as geoldp plan names it")
    p.add_argument("--epsilon", type=_positive_float, required=True, metavar="EPS", help="budget per trip")
    p.add_argument("--points", required=True, metavar="POINTS", help="the public points P")
    p.add_argument("--zones", metavar="FILE", default=None, help="public zones (default: a --cell-km grid)")
    p.add_argument(
        "--cell-km",
        type=_positive_float,
        default=1.5,
        metavar="KM",
        help="zone side over POINTS (default 1.5)",
    )
    p.add_argument("--question", choices=[q.value for q in Question], default=Question.ZONE_VISITS.value)
    p.add_argument(
        "-o", "--output", required=True, metavar="ANSWER", help="the answer layer (.gpkg, .geojson ...)"
    )
    p.add_argument("--release-out", metavar="FILE", default=None, help="also keep the release in FILE")
    p.add_argument("--seed", type=_seed, default=None, help="seeded release: for experiments only")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    p.set_defaults(func=_cmd_collect, command_parser=p)
