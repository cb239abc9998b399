"""The read step shared by the commands: table options, columns checked on reading, public points and zones.

Light at import (the standard library only); every reader imports GeoPandas inside its function.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from geoldp.cli._args import existing_file, stage

__all__ = [
    "add_table_options",
    "check_columns",
    "crs_help",
    "read_kwargs",
    "read_points",
    "read_trips",
    "read_zones",
    "text_columns",
    "zones_for",
]


def add_table_options(p: argparse.ArgumentParser, what: str) -> None:
    """Add ``--crs``, ``--wkt-col``, ``--lon-col`` and ``--lat-col`` (CSV input of ``what``)."""
    p.add_argument("--crs", metavar="CRS", default=None, help=crs_help(what))
    p.add_argument(
        "--wkt-col", metavar="C", default=None, help=f"CSV input: the WKT geometry column of {what}"
    )
    p.add_argument(
        "--lon-col", metavar="C", default=None, help=f"CSV input: the longitude (x) column of {what}"
    )
    p.add_argument(
        "--lat-col", metavar="C", default=None, help=f"CSV input: the latitude (y) column of {what}"
    )


def crs_help(what: str) -> str:
    """The help of a ``--crs`` option for the file ``what``."""
    return f"CRS of {what} coordinates for CSV input (default EPSG:4326), or declared if the file has none"


def read_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The ``read_trajectories`` options of :func:`add_table_options`."""
    names = ("crs", "wkt_col", "lon_col", "lat_col")
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def read_points(path: Path, label: str) -> Any:
    """Public points from ``path`` (``label`` names it in messages), with the recipe 'geoldp points' kept."""
    from geoldp import io as gio
    from geoldp import points as gp

    with stage(f"cannot read {label} '{path}'"):
        return gp.load_provenance(gio.read_points(path), path)  # with the recipe 'geoldp points' kept


_CSV_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip")


def text_columns(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    """``read_trajectories`` options that read the id columns of a CSV as text (``"000"`` stays ``"000"``)."""
    cols = [c for c in (getattr(args, "traj_id_col", None), getattr(args, "user_col", None)) if c]
    if not cols or not path.name.lower().endswith(_CSV_SUFFIXES):
        return {}
    return {"dtype": {c: str for c in cols}}


#: The column options of the commands, checked against the file right after reading it.
_COLUMN_OPTIONS = (("user_col", "--user-col"), ("keep_columns", "--keep-columns"), ("keep", "--keep"))


def check_columns(args: argparse.Namespace, frame: Any, what: str) -> None:
    """Refuse a ``--user-col``/``--keep-columns``/``--keep`` column that the file read as ``what`` lacks.

    Like the readers' own messages, the file's column names are counted, not quoted: without a header row
    they would be the first row of data.
    """
    for name, option in _COLUMN_OPTIONS:
        value = getattr(args, name, None)
        for col in [value] if isinstance(value, str) else (value or []):
            if col not in frame.columns:
                raise ValueError(
                    f"{option} names a column that is not in {what}: {col!r}. It was read with "
                    f"{len(frame.columns) - 1} column(s) besides the geometry, whose names are not quoted "
                    "here (without a header row they would be the first row of data): check the spelling "
                    "(names are case-sensitive) and the header row."
                )


def read_trips(args: argparse.Namespace, path: Path) -> Any:
    """TRIPS read with the table options (and Point grouping), id columns as text, column options checked."""
    from geoldp import io as gio

    kwargs = read_kwargs(args)
    kwargs.update(
        {n: getattr(args, n) for n in ("traj_id_col", "time_col") if getattr(args, n, None) is not None}
    )
    kwargs.update(text_columns(args, path))  # user ids such as "000" stay text
    with stage(f"cannot read TRIPS '{args.trips}'"):
        trips = gio.read_trajectories(path, **kwargs)
    check_columns(args, trips, f"TRIPS '{args.trips}'")
    return trips


def zones_for(args: argparse.Namespace, points: Any) -> Any:
    """The zones of a command: the ``--zones`` file, or the ``--cell-km`` grid over P ("auto" without P)."""
    from geoldp.zones import zone_grid

    if getattr(args, "zones", None) is not None:
        return read_zones(existing_file(args.zones, "--zones"))
    return "auto" if points is None else zone_grid(points, cell_km=args.cell_km)


def read_zones(path: Path) -> Any:
    """Public polygons (zones or regions) from a local file, checked: a CRS, polygons only."""
    import geopandas as gpd

    from geoldp._core import formats as _formats

    with stage(f"cannot read the polygons '{path}'"):
        _formats.detect(path, "geoldp")  # a local file whose content matches its suffix
        zones = gpd.read_file(path)
    if not isinstance(zones, gpd.GeoDataFrame):  # e.g. a CSV without a geometry column
        raise ValueError(
            f"the polygons '{path}' have no geometry column: write the zones as polygons with a CRS "
            "(GeoJSON, GeoPackage, ...), or use --points P --cell-km KM for a grid of zones over P"
        )
    if zones.crs is None:
        raise ValueError(f"the polygons '{path}' have no CRS")
    bad = ~zones.geom_type.isin(["Polygon", "MultiPolygon"]).to_numpy()
    if bad.any():
        raise ValueError(f"row position {int(bad.argmax())} of '{path}' is not a polygon")
    return zones
