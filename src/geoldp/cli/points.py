"""``geoldp points``: write a public point set P (a grid or H3 cells over a public area, road nodes)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from geoldp.cli._args import bbox as _bbox
from geoldp.cli._args import check_output, existing_file, print_written, stage, usage
from geoldp.cli._args import int_at_least as _int_at_least
from geoldp.cli._args import int_in_range as _int_in_range
from geoldp.cli._args import positive_float as _positive_float
from geoldp.cli._args import seed as _seed

PROG = "geoldp"


def _cmd_points(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp import io as gio
    from geoldp import points as gp

    chosen = [n for n in ("grid", "h3", "road_nodes") if getattr(args, n) is not None]
    if len(chosen) != 1:
        usage(args, "give one of --grid SPACING, --h3 RESOLUTION or --road-nodes OSMFILE")
    if chosen[0] in ("grid", "h3") and args.area is None:
        usage(args, f"--{chosen[0]} needs --area MINX,MINY,MAXX,MAXY (a PUBLIC box, never the data's bounds)")
    inputs = [Path(args.road_nodes)] if args.road_nodes else []
    out_path = check_output(args.output, overwrite=args.overwrite, inputs=inputs, ledger=False)
    crs = args.crs
    if args.grid is not None:
        pts = gp.grid(args.area, args.grid, kind=args.kind, crs=crs)
    elif args.h3 is not None:
        pts = gp.h3_cells(args.area, args.h3, crs=crs)
    else:
        pts = gp.road_nodes(existing_file(args.road_nodes, "--road-nodes"), kind=args.road_kind)
    if args.thin is not None:
        pts = gp.thin(pts, args.thin, rng=args.seed)
    pts = pts.reset_index(drop=True)
    with stage(f"cannot write '{args.output}'"):
        written = gio.write_file(pts, out_path, overwrite=args.overwrite, inputs=tuple(inputs))
        # the provenance and recipe, which the file format drops, for the ledgers of later releases
        side = gp.save_provenance(pts, out_path, overwrite=True)
        written += [side] if side is not None else []
    print(
        f"{PROG}: wrote {len(pts)} public points ({pts.attrs.get(gp.PROVENANCE_KEY)}; digest "
        f"{gp.digest_of(pts)[:19]}...)",
        file=stderr,
    )
    return print_written(written, stdout)


def add_parser(sub: Any) -> None:
    """Add ``geoldp points`` to the ``geoldp`` subparsers."""
    p = sub.add_parser(
        "points",
        help="write a public point set (grid, H3 cells, road nodes)",
        description=(
            "Write a public point set P built from public inputs only: a square or hexagonal grid over a "
            "public --area, the H3 cells of a resolution over it, or the road junctions of a local "
            "OpenStreetMap extract. Never build P from the trajectories you will release."
        ),
    )
    p.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="the point file (.gpkg, .geojson, ...)"
    )
    p.add_argument(
        "--grid", type=_positive_float, metavar="SPACING", default=None, help="grid spacing, metres"
    )
    p.add_argument(
        "--kind", choices=("square", "hex"), default="square", help="grid lattice (default square)"
    )
    p.add_argument(
        "--h3",
        type=_int_in_range(0, 15, "H3's resolutions"),
        metavar="RES",
        default=None,
        help="H3 resolution 0..15",
    )
    p.add_argument("--road-nodes", metavar="OSMFILE", default=None, help="a local .osm/.pbf extract")
    p.add_argument("--road-kind", choices=("intersections", "all"), default="intersections")
    p.add_argument(
        "--area",
        type=_bbox,
        metavar="MINX,MINY,MAXX,MAXY",
        default=None,
        help="a PUBLIC bounding box (lon/lat unless --crs; write --area=-122.5,... for a minus sign)",
    )
    p.add_argument("--crs", metavar="CRS", default=None, help="CRS of --area (default EPSG:4326)")
    p.add_argument("--thin", type=_int_at_least(2), metavar="N", default=None, help="keep a random N points")
    p.add_argument("--seed", type=_seed, metavar="N", default=None, help="seed of --thin (reproducible)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    p.set_defaults(func=_cmd_points, command_parser=p)
