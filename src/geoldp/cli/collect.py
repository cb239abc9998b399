"""``geoldp collect`` and ``geoldp pilot``: run a design by its planned name, and the private pilot.

``collect`` runs a design by the name ``geoldp plan`` prints and writes its answer as a layer; ``pilot``
releases the private pilot the planner fits its populations to.

One command from a recommendation to a map: the design (:func:`geoldp.designs.design`) releases the
trips under ε per trip, and its answer to the question (post-processing of the release, P and the
zones) is written as a GIS layer (zones with their counts, or OD flow lines); ``--release-out`` keeps
the release itself.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any, TextIO

from geoldp._core.ledger import attach, require
from geoldp._core.validation import MAX_LENGTH
from geoldp.cli import _read
from geoldp.cli._args import add_cell_km, check_output, existing_file, print_written, stage, usage
from geoldp.cli._args import int_in_range as _int_in_range
from geoldp.cli._args import lengths as _lengths
from geoldp.cli._args import positive_float as _positive_float
from geoldp.cli._args import report_warnings as _report_warnings
from geoldp.cli._args import seed as _seed
from geoldp.questions import Question

PROG = "geoldp"


def _inputs(args: argparse.Namespace) -> list[Path]:
    """TRIPS, ``--points`` and ``--zones`` (if given), each checked to exist."""
    inputs = [existing_file(args.trips, "TRIPS"), existing_file(args.points, "--points")]
    return inputs + ([existing_file(args.zones, "--zones")] if args.zones else [])


def _read_inputs(args: argparse.Namespace, inputs: list[Path]) -> tuple[Any, Any, Any]:
    """The public points, the zones (``--zones`` or the ``--cell-km`` grid) and the trips.

    With ``--traj-id-col`` TRIPS holds Point rows (GPS fixes, check-ins), grouped into one LineString per
    trip (ordered by ``--time-col``), so that a trip shares one ε.
    """
    from geoldp import io as gio

    if args.time_col is not None and args.traj_id_col is None:
        usage(args, "--time-col orders the points of a trip: it needs --traj-id-col")
    with stage(f"cannot read --points '{args.points}'"):
        points = gio.read_points(inputs[1])
    zones = _read.zones_for(args, points)
    trips = _read.read_trips(args, inputs[0])
    if args.traj_id_col is not None:
        from geoldp.prepare import trajectories_from_points

        with stage(f"cannot build trips from the Point rows of TRIPS '{args.trips}'"):
            trips = trajectories_from_points(trips, args.traj_id_col, args.time_col)
    return points, zones, trips


def _add_inputs(p: argparse.ArgumentParser, trips: str) -> None:
    """Add TRIPS (``trips`` says whose), its Point-row options, ``--epsilon``, ``--points`` and zones."""
    p.add_argument("trips", metavar="TRIPS", help=trips)
    p.add_argument(
        "--traj-id-col",
        metavar="C",
        default=None,
        help="for Point rows (GPS fixes, check-ins): the column of trip ids; each trip becomes one "
        "LineString (trips of one point are dropped, as geoldp prepare does)",
    )
    p.add_argument("--time-col", metavar="C", default=None, help="the column that orders a trip's points")
    p.add_argument("--epsilon", type=_positive_float, required=True, metavar="EPS", help="budget per trip")
    p.add_argument("--points", required=True, metavar="POINTS", help="the public points P")
    p.add_argument("--zones", metavar="FILE", default=None, help="public zones (default: a --cell-km grid)")
    add_cell_km(p, "zone side over POINTS (default 1.5)")


def _cmd_collect(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp import designs
    from geoldp import io as gio
    from geoldp._core.progress import stages

    question = Question(args.question)
    try:
        design = designs.design(args.design, question=question)
    except (TypeError, ValueError) as exc:
        usage(args, str(exc))
    if question not in design.questions:
        answered = ", ".join(q.value for q in design.questions)
        usage(args, f"the design {design.name!r} answers {answered}, not {question.value}")
    if args.lengths is not None:
        if not isinstance(design, designs.BaselineDesign):
            usage(args, f"--lengths goes with a no-data design (baseline:uniform), not {design.name!r}")
        design = dataclasses.replace(design, lengths=tuple(args.lengths))
    if args.max_length is not None:
        design = design.bounded(args.max_length)
    if isinstance(design, designs.BaselineDesign) and design.lengths is None and not question.is_od:
        if design.answer_kind == "uniform":  # its zone visits average over public lengths
            usage(
                args,
                "--design baseline:uniform needs --lengths L,L,... or --max-length N, as geoldp plan prints",
            )
    inputs = _inputs(args)
    out_path = check_output(args.output, overwrite=args.overwrite, inputs=inputs)
    release_path = None
    if args.release_out is not None:
        if not design.ledger(1.0):
            usage(args, f"--release-out: the design {design.name!r} releases nothing")
        if len(design.ledger(1.0)) > 1:
            usage(args, f"--release-out keeps one release; the design {design.name!r} makes two")
        release_path = check_output(
            args.release_out, overwrite=args.overwrite, inputs=[*inputs, out_path], what="--release-out"
        )
    with _report_warnings(stderr):
        points, zones, trips = _read_inputs(args, inputs)
        with stages(f"collecting with {design.name}", 2, enabled=True) as report:
            report(f"releasing {len(trips)} trips")
            released = design.release(trips, epsilon=args.epsilon, points=points, zones=zones, rng=args.seed)
            report(f"answering {question.value}")
            answer = design.answer(released, question, points=points, zones=zones)
        layer = designs.to_layer(answer, zones)
        with stage(f"cannot write '{args.output}'"):
            written = gio.write_file(layer, out_path, overwrite=args.overwrite, sidecar=False)
        if release_path is not None:
            with stage(f"cannot write '{args.release_out}'"):
                written += gio.write_file(released, release_path, overwrite=args.overwrite)  # a report: CSV
    split = ", ".join(f"{name} {eps:g}" for name, eps in design.ledger(args.epsilon).items())
    spent = f"epsilon per trip: {split}" if split else "nothing released, no epsilon spent"
    supported = answer["supported"].sum()
    print(
        f"{PROG}: collected {len(trips)} trips with {design.name} ({spent}"
        f"{', seeded' if args.seed is not None else ''}); {question.value}: {int(supported)} of "
        f"{len(answer)} cells supported ({answer.attrs['covers']})",
        file=stderr,
    )
    return print_written(written, stdout)


#: Largest pilot table read (bytes): three small integers a trip.
MAX_PILOT_BYTES = 1 << 30


def write_pilot(reports: Any, path: Path, *, overwrite: bool) -> list[Path]:
    """Pilot reports as CSV (rows in order, no index) with their ledger sidecar, written as one unit."""
    from geoldp import io as gio

    data = reports.reset_index(drop=True).to_csv(index=False).encode("utf-8")
    led = require(reports, what="The pilot reports", caller="write_pilot", mechanism="pilot")
    return gio.write_bytes_with_ledger(data, led, path, overwrite=overwrite)


def read_pilot(path: Path) -> Any:
    """Pilot reports written by :func:`write_pilot` (``geoldp pilot``), ledger and columns checked."""
    import io as stdio

    import numpy as np
    import pandas as pd

    from geoldp import io as gio
    from geoldp._core import formats as _formats
    from geoldp.designs.pilot import COLUMNS

    ledger = gio.read_ledger(path)
    if ledger is None or ledger.mechanism != "pilot":
        raise ValueError(
            f"'{path}' has no pilot ledger ({path.name}.ledger.json): write it with geoldp pilot"
        )
    data = _formats.read_regular(path, "geoldp plan --pilot", limit=MAX_PILOT_BYTES)
    table = pd.read_csv(stdio.BytesIO(data), dtype=str, keep_default_na=False)
    if tuple(table.columns) != COLUMNS:
        raise ValueError(f"'{path}' has columns {list(table.columns)[:5]}; a pilot table has {list(COLUMNS)}")
    out = pd.DataFrame(index=pd.RangeIndex(len(table)))
    for col in COLUMNS:
        values = pd.to_numeric(table[col], errors="coerce").to_numpy()
        bad = ~np.isfinite(values) | (values < 0) | (values != np.round(values))
        if bad.any():
            raise ValueError(f"row {int(bad.argmax())} of '{path}': '{col}' is not a class number")
        out[col] = values.astype(np.int64)
    attach(out, ledger)
    return out


def pilot_estimate(path: Path, zones: Any) -> Any:
    """The :class:`~geoldp.designs.PilotEstimate` of a pilot file over the campaign's zones."""
    from geoldp.designs import Pilot

    reports = read_pilot(path)
    return Pilot.of_reports(reports).estimate(reports, zones)


def _cmd_pilot(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp.designs import Pilot

    inputs = _inputs(args)
    out_path = check_output(args.output, overwrite=args.overwrite, inputs=inputs, suffixes=(".csv",))
    with _report_warnings(stderr):
        points, zones, trips = _read_inputs(args, inputs)
        reports = Pilot().release(trips, epsilon=args.epsilon, zones=zones, rng=args.seed)
        with stage(f"cannot write '{args.output}'"):
            written = write_pilot(reports, out_path, overwrite=args.overwrite)
    split = ", ".join(
        f"{k} {v:g}"
        for k, v in require(reports, what="The pilot reports", caller=PROG).settings["split"].items()
    )
    print(f"{PROG}: pilot reports of {len(reports)} trips (epsilon per trip: {split})", file=stderr)
    return print_written(written, stdout)


def add_parser(sub: Any) -> None:
    """Add the ``collect`` and ``pilot`` commands to the ``geoldp`` subparsers."""
    q = sub.add_parser(
        "pilot",
        help="the private pilot: a public share of the users reports what the planner needs",
        description=(
            "Release ε-LDP pilot reports of TRIPS (a public share of the users, chosen by the collector): "
            "each trip's length class, number of distinct zones visited and one visited cell of a coarse "
            "grid, with k-ary randomized response, --epsilon per trip in all. geoldp plan --pilot FILE fits "
            "its populations to them instead of needing the private lengths."
        ),
    )
    _add_inputs(q, "the pilot users' trajectories (LineStrings, or Point rows with --traj-id-col)")
    q.add_argument("-o", "--output", required=True, metavar="PILOT.csv", help="the pilot reports (CSV)")
    q.add_argument("--seed", type=_seed, default=None, help="seeded release: for experiments only")
    q.add_argument("--overwrite", action="store_true", help="replace an existing output")
    q.set_defaults(func=_cmd_pilot, command_parser=q)
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
    _add_inputs(p, "the private trajectories (one LineString per trip, or Point rows with --traj-id-col)")
    p.add_argument("--design", required=True, metavar="NAME", help="the design, as geoldp plan names it")
    p.add_argument("--question", choices=[q.value for q in Question], default=Question.ZONE_VISITS.value)
    p.add_argument(
        "--max-length",
        type=_int_in_range(1, MAX_LENGTH, "the longest trajectory geoldp models"),
        default=None,
        metavar="N",
        help="a PUBLIC bound on the points of a trajectory (as given to geoldp plan): a visited-zone "
        "report's intervals allow at most N zones per trip",
    )
    p.add_argument(
        "--lengths",
        type=_lengths,
        default=None,
        metavar="L,L,...",
        help="PUBLIC trajectory lengths, each equally likely, for the no-data design baseline:uniform "
        "(as geoldp plan prints them)",
    )
    p.add_argument(
        "-o", "--output", required=True, metavar="ANSWER", help="the answer layer (.gpkg, .geojson ...)"
    )
    p.add_argument("--release-out", metavar="FILE", default=None, help="also keep the release in FILE")
    p.add_argument("--seed", type=_seed, default=None, help="seeded release: for experiments only")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    p.set_defaults(func=_cmd_collect, command_parser=p)
