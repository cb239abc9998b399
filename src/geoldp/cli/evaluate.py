"""``geoldp evaluate``: the utility table (and a map) of a release against the trips it was made from."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from geoldp.cli import _read
from geoldp.cli._args import UserError, add_cell_km, check_output, existing_file, stage
from geoldp.cli._args import positive_float as _positive_float
from geoldp.cli._args import report_warnings as _report_warnings

PROG = "geoldp"


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
    from geoldp._core.ledger import ledger_of

    with _report_warnings(stderr):
        with stage(f"cannot read ORIGINAL '{args.original}'"):
            original = gio.read_trajectories(original_path)
        original = _kept_original(args, original)  # --kept-rows of a --max-per-user release
        with stage(f"cannot read PERTURBED '{args.perturbed}'"):  # with its ledger: the mechanism, ε
            perturbed = gio.read_trajectories(perturbed_path, ledger=True)
        led = ledger_of(perturbed)
        if led is None or not led.synthetic:  # a synthetic set is compared on its distributions only
            _check_inputs(original, perturbed)  # before any long computation
        points = None
        if points_path is not None:
            with stage(f"cannot read POINTS '{args.points}'"):
                points = gio.read_points(points_path)
        zones = _read.zones_for(args, points)  # --zones FILE or the --cell-km grid
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
            from geoldp.demo import save_comparison_map

            with stage(f"cannot write '{args.plot}'"):  # atomic: never a partial image
                save_comparison_map(
                    original, {"perturbed": perturbed}, plot_path, points=points, overwrite=args.overwrite
                )
            print(f"{PROG}: wrote {args.plot}", file=stderr)
    return 0


def _kept_original(args: argparse.Namespace, original: Any) -> Any:
    """The ORIGINAL rows a ``--max-per-user`` release holds, from ``--kept-rows CSV`` (else all rows)."""
    import numpy as np
    import pandas as pd

    if getattr(args, "kept_rows", None) is None:
        return original
    path = existing_file(args.kept_rows, "--kept-rows")
    with stage(f"cannot read --kept-rows '{args.kept_rows}'"):
        table = pd.read_csv(path)
    rows = table["row"].to_numpy() if "row" in table.columns else np.array([])
    if (
        "row" not in table.columns
        or not np.issubdtype(rows.dtype, np.integer)
        or (rows.size and (rows.min() < 0 or rows.max() >= len(original) or np.any(np.diff(rows) <= 0)))
    ):
        raise ValueError(
            f"--kept-rows '{args.kept_rows}' must be the CSV 'geoldp perturb --kept-rows' writes: a column "
            f"'row' of increasing row positions of ORIGINAL (0 to {len(original) - 1})"
        )
    return original.iloc[rows]


def _check_inputs(original: Any, perturbed: Any) -> None:
    """Refuse, right after reading, an ORIGINAL and a PERTURBED that cannot be compared row by row."""
    import shapely

    if len(original) != len(perturbed):
        raise ValueError(
            f"ORIGINAL has {len(original)} rows and PERTURBED {len(perturbed)}: evaluate compares them row "
            "by row. Compare the release with the file it was made from (for a release made with "
            "--max-per-user, pass the rows it kept: perturb with --kept-rows CSV, then evaluate with "
            "--kept-rows CSV; for --max-points or --simplify, the output of 'geoldp prepare')."
        )
    a = shapely.get_num_coordinates(original.geometry.values)
    b = shapely.get_num_coordinates(perturbed.geometry.values)
    differ = (a != b) & (b > 0)
    if differ.any():
        pos = int(differ.argmax())
        raise ValueError(
            f"row {pos} has {int(a[pos])} points in ORIGINAL and {int(b[pos])} in PERTURBED: the release was "
            "made from prepared trips (--max-points/--simplify). Write them with 'geoldp prepare ... -o "
            "trips.gpkg', perturb that file and evaluate against it."
        )


def _add_zone_options(e: argparse.ArgumentParser) -> None:
    """Add ``--zones`` and ``--kept-rows`` to the ``evaluate`` parser."""
    e.add_argument(
        "--zones",
        metavar="FILE",
        default=None,
        help="public zones (polygons) for the zone and OD errors, instead of the --cell-km grid",
    )
    e.add_argument(
        "--kept-rows",
        metavar="CSV",
        default=None,
        help="for a release made with --max-per-user: the ORIGINAL rows it holds (the CSV written by "
        "'geoldp perturb ... --kept-rows CSV')",
    )
    e.set_defaults(command_parser=e)


def add_parser(sub: Any) -> None:
    """Add ``geoldp evaluate`` to the ``geoldp`` subparsers."""
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
    add_cell_km(e, "side of the square zones of the zone and OD errors, built over POINTS (default 1.5)")
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
    _add_zone_options(e)  # --zones, --kept-rows
    e.set_defaults(func=_cmd_evaluate)
