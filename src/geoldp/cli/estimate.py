"""``geoldp estimate``: zone visits, OD flows, hotspots and range counts with intervals, from a release.

The answer is written as GIS layers (a GeoPackage, or one GeoJSON file per layer)::

    geoldp estimate release.gpkg --points P.gpkg --cell-km 2 -o estimates.gpkg
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from geoldp._core.ledger import ledger_of
from geoldp.cli import _read
from geoldp.cli._args import add_cell_km, check_output, existing_file, print_written, stage, usage
from geoldp.cli._args import int_at_least as _int_at_least
from geoldp.cli._args import seed as _seed

PROG = "geoldp"
#: The layers written without --layers (and range_counts when --regions is given).
DEFAULT_LAYERS = ("zone_visits", "od_flows", "hotspots")


def _cmd_estimate(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp import io as gio
    from geoldp import layers as glayers

    src = existing_file(args.release, "RELEASE")
    if args.layers is None:  # regions are given to be counted
        args.layers = [*DEFAULT_LAYERS, *(["range_counts"] if args.regions is not None else [])]
    if "range_counts" in args.layers and args.regions is None:
        usage(args, "the range_counts layer needs --regions FILE (polygons)")
    if args.zones is not None and args.cell_km_given:
        usage(args, "give --zones FILE or --cell-km KM, not both")
    inputs = [src] + [Path(p) for p in (args.points, args.zones, args.regions) if p]
    out_path = check_output(
        args.output,
        overwrite=args.overwrite,
        inputs=inputs,
        suffixes=(".gpkg", ".geojson", ".json"),
        ledger=False,
    )
    with stage(f"cannot read RELEASE '{args.release}'"):
        released = gio.read_trajectories(src, ledger=True)
    if ledger_of(released) is None:
        raise ValueError(
            f"RELEASE '{args.release}' has no geoldp ledger (its .ledger.json sidecar): the estimators need "
            "the mechanism and epsilon it records"
        )
    points = _read.read_points(existing_file(args.points, "POINTS"), "POINTS") if args.points else None
    points = glayers.points_for(released, points)  # rebuilt from the recipe, or checked against it
    zones = _read.read_zones(existing_file(args.zones, "--zones")) if args.zones else None
    regions = _read.read_zones(existing_file(args.regions, "--regions")) if args.regions else None
    fit = {
        "n_candidates": args.n_candidates,
        "n_boot": args.n_boot,
        "level": args.level,
        "fit_rows": args.fit_rows,
        "rng": args.seed,
    }
    lay = glayers.estimate_layers(
        released,
        points,
        zones=zones,
        cell_km=args.cell_km,
        regions=regions,
        layers=args.layers,
        k=args.k,
        progress=True,  # one "geoldp: ..." line per stage
        **fit,
    )
    with stage(f"cannot write '{args.output}'"):
        written = glayers.write_layers(lay, out_path, overwrite=args.overwrite)
    sizes = ", ".join(f"{name} ({_supported_cells(v)})" for name, v in lay.items())
    print(
        f"{PROG}: estimated {sizes} from {len(released)} released trips, {args.level:.0%} intervals "
        "(cell by cell)",
        file=stderr,
    )
    if "hotspots" in lay and "note" in lay["hotspots"].attrs:
        print(f"{PROG}: {lay['hotspots'].attrs['note']}", file=stderr)
    return print_written(written, stdout)


def _supported_cells(layer: Any) -> str:
    """``k of N cells supported`` for a layer (its own counts for hotspots, ranked among the supported)."""
    if "supported_cells" in layer.attrs:
        among = f"{layer.attrs['supported_cells']} of {layer.attrs['cells']}"
        return f"{len(layer)} ranked among the {among} cells supported"
    supported = int(layer["supported"].astype(bool).sum()) if "supported" in layer.columns else 0
    return f"{supported} of {len(layer)} cells supported"


class _CellKm(argparse.Action):
    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.cell_km_given = True


def add_parser(sub: Any) -> None:
    """Add ``geoldp estimate`` to the ``geoldp`` subparsers."""
    from geoldp._core.formats import ESTIMATE_LAYERS as LAYER_NAMES

    p = sub.add_parser(
        "estimate",
        help="estimate visits, OD flows, hotspots with intervals, as GIS layers",
        description=(
            "Estimate from RELEASE alone (and its ledger sidecar) how many original trips visit each zone, "
            "flow between zones and pass through regions, with intervals, and write them as layers of a "
            "GeoPackage (or one GeoJSON file per layer): columns estimate, lower, upper, width, raw. The "
            "public points are rebuilt from the ledger when it records a grid's recipe, or read from "
            "--points and checked against the release."
        ),
    )
    p.add_argument("release", metavar="RELEASE", help="a release written by 'geoldp perturb'")
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="OUT.gpkg, or OUT.geojson (a file per layer)"
    )
    p.add_argument("--points", metavar="POINTS", default=None, help="the public points of the release")
    add_cell_km(p, "side of the square zones over P (default 1.5)", action=_CellKm)
    p.add_argument(
        "--zones", metavar="FILE", default=None, help="public zones (polygons) instead of the grid"
    )
    p.add_argument("--regions", metavar="FILE", default=None, help="regions (polygons) for range_counts")
    p.add_argument(
        "--layers",
        nargs="+",
        choices=LAYER_NAMES,
        default=None,
        metavar="NAME",
        help=f"layers to write, of {', '.join(LAYER_NAMES)} (default: {' '.join(DEFAULT_LAYERS)}, and "
        "range_counts with --regions)",
    )
    p.add_argument("--k", type=_int_at_least(1), default=10, metavar="K", help="number of hotspot zones")
    p.add_argument(
        "--n-candidates", type=_int_at_least(10), default=3000, metavar="N", help="fewer: faster, noisier"
    )
    p.add_argument(
        "--n-boot",
        type=_int_at_least(0),
        default=30,
        metavar="N",
        help="bootstrap replicates (0: no interval)",
    )
    p.add_argument("--level", type=float, default=0.95, metavar="L", help="interval coverage (default 0.95)")
    p.add_argument(
        "--fit-rows",
        type=_int_at_least(100),
        default=5000,
        metavar="N",
        help="fit each trip length on at most N released rows drawn at random (default 5000; keep it in "
        "the thousands)",
    )
    p.add_argument(
        "--seed", type=_seed, default=None, metavar="N", help="seed of the estimators' simulations"
    )
    p.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    p.set_defaults(func=_cmd_estimate, command_parser=p, cell_km_given=False)
