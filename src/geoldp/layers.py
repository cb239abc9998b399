"""Estimates as GIS layers: zones with estimate and interval, OD flows as lines, hotspots, regions.

The collector-side estimators (:mod:`geoldp.estimate`) return tables. This module joins them to their
geometry, so a release's estimates can be mapped, plotted (:mod:`geoldp.plotting`), explored
(:mod:`geoldp.explore`) or written to a GeoPackage for QGIS without hand-written code::

    >>> layers = geoldp.layers.estimate_layers(released, cell_km=2.0, rng=0)  # doctest: +SKIP
    >>> geoldp.layers.write_layers(layers, "estimates.gpkg")  # doctest: +SKIP

Every layer has a fresh 0..n-1 index and its ids as ordinary columns (``zone``, ``point``, ``origin``,
``destination``, ``region``), and the columns ``estimate``, ``lower``, ``upper`` (the interval),
``width`` (``upper - lower``) and ``raw`` (the same count on the release itself).

The public points a release was made with are rebuilt from its ledger when it records their recipe (a
grid or H3 set over a bounding box), or checked against the digest the ledger records when they are
given (:func:`points_for`): estimates on the wrong P are refused, never silently wrong.

A release made with ``user_budget="split"`` has parts with different budgets: each part is estimated on
its own and the estimates, and the bounds, are added (the parts hold different trajectories). The
summed interval covers at least ``1 - parts·(1 - level)`` by the union bound, not ``level``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geoldp import points as public_points
from geoldp._core import formats as _formats
from geoldp._core.ledger import ledger_of, release_parts
from geoldp._core.progress import stages
from geoldp._core.validation import check_bool
from geoldp.estimate._ranking import top_supported
from geoldp.zones import zone_grid

__all__ = ["estimate_layers", "od_layer", "regions_layer", "write_layers", "zone_layer"]

#: The layers :func:`estimate_layers` can make, in the order they are written.
LAYER_NAMES = _formats.ESTIMATE_LAYERS
_VALUES = ["estimate", "lower", "upper", "raw"]


def points_for(released: Any, points: Any = None) -> Any:
    """The public points of a release: rebuilt from its ledger's recipe, or ``points`` checked against it.

    Parameters
    ----------
    released : geopandas.GeoDataFrame
        A release with its ledger (as returned, or read back by :func:`geoldp.io.read_trajectories` from
        the file and its sidecar).
    points : PointSet, GeoDataFrame or GeoSeries of Points, optional
        The public points. Checked against the ledger's digest of P when it records one.

    Raises
    ------
    ValueError
        ``points`` do not match the release's digest (another set, other order, moved points); no
        ``points`` and no recipe in the ledger.
    """
    led = ledger_of(released)
    record: Any = None if led is None else led.points
    record = record if isinstance(record, dict) else {}
    digest = record.get("digest")
    if points is None:
        recipe = record.get("recipe")
        if recipe is None:
            raise ValueError(
                "The release's ledger records no recipe for its public points (only a grid or H3 set over "
                "a bounding box has one): pass the public points file it was made with (CLI: --points)."
            )
        points = public_points.from_recipe(recipe)
    if isinstance(digest, str) and public_points.digest_of(points) != digest:
        raise ValueError(
            "The public points do not match the release: its ledger records another point set (digest "
            f"{digest[:19]}..., {record.get('size')} points; these have {len(points)}). Estimates need the "
            "exact point set, in the same order, the release was perturbed onto."
        )
    return points


def _centroids_wgs84(zones: Any) -> Any:
    """Zone centroids in EPSG:4326, computed in a local metric CRS (no geographic-centroid warning)."""
    z = zones.to_crs("EPSG:4326")
    metric = z.estimate_utm_crs()
    return z.to_crs(metric).centroid.to_crs("EPSG:4326")


def _with_values(frame: Any, table: pd.DataFrame) -> Any:
    for col in _VALUES:
        frame[col] = table[col].to_numpy(dtype=np.float64)
    if "std_error" in table.columns:  # an answer table's (geoldp.designs): NaN where the design has none
        frame["std_error"] = table["std_error"].to_numpy(dtype=np.float64)
    frame["width"] = frame["upper"] - frame["lower"]
    if "supported" in table.columns:  # False: the interval holds a no-data population's estimate
        frame["supported"] = table["supported"].to_numpy(dtype=bool)
    return frame


def zone_layer(table: pd.DataFrame, zones: Any, *, id_name: str = "zone") -> Any:
    """Join a per-zone estimate table (e.g. :func:`geoldp.estimate.visit_counts` with ``zones``) to its zones.

    Parameters
    ----------
    table : pandas.DataFrame
        Indexed by the zones' index labels, with ``estimate``, ``lower``, ``upper``, ``raw``.
    zones : geopandas.GeoDataFrame or GeoSeries
        The zones (or public points, for a per-point table), any CRS.
    id_name : str, default "zone"
        Name of the id column.

    Returns
    -------
    geopandas.GeoDataFrame
        One row per table row, in the table's order, in the zones' CRS.
    """
    import geopandas as gpd

    geoms = zones.geometry if isinstance(zones, gpd.GeoDataFrame) else zones
    missing = table.index.difference(geoms.index)
    if len(missing):
        raise ValueError(
            f"zone_layer: {len(missing)} row(s) of the table have no zone (index labels differ)."
        )
    out = gpd.GeoDataFrame(
        {id_name: np.asarray(table.index)},
        geometry=np.asarray(geoms.loc[table.index].values),
        crs=geoms.crs,
    )
    if "rank" in table.columns:
        out.insert(1, "rank", table["rank"].to_numpy())
    return _with_values(out, table)


def od_layer(table: pd.DataFrame, zones: Any) -> Any:
    """OD flows (:func:`geoldp.estimate.od_flows`) as LineStrings from origin to destination zone centroid.

    A flow within one zone is a zero-length line at its centroid (GIS tools draw it as a point).

    Returns
    -------
    geopandas.GeoDataFrame
        Columns ``origin``, ``destination``, the values; EPSG:4326.
    """
    import geopandas as gpd
    import shapely

    if list(table.index.names) == ["origin", "destination"]:  # an answer table: the pairs as columns
        table = table.reset_index()
    cent = _centroids_wgs84(zones)
    o = cent.loc[table["origin"].to_numpy()]
    d = cent.loc[table["destination"].to_numpy()]
    coords = np.stack(
        [
            np.column_stack([o.x.to_numpy(), o.y.to_numpy()]),
            np.column_stack([d.x.to_numpy(), d.y.to_numpy()]),
        ],
        axis=1,
    )
    lines = shapely.linestrings(coords) if len(table) else np.array([], dtype=object)
    out = gpd.GeoDataFrame(
        {"origin": table["origin"].to_numpy(), "destination": table["destination"].to_numpy()},
        geometry=lines,
        crs="EPSG:4326",
    )
    return _with_values(out, table)


def regions_layer(table: pd.DataFrame, regions: Any) -> Any:
    """Range counts (:func:`geoldp.estimate.range_counts`) joined to their polygons (``region`` id column)."""
    return zone_layer(table, regions, id_name="region")


def _sum_tables(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """The parts' tables added up; a cell is supported when every part supports it (conservative)."""
    if len(tables) == 1:
        return tables[0]
    if tables[0].index.nlevels == 1:  # every zone, point or region in each part: their order kept
        total = tables[0][_VALUES].copy()
        supported = tables[0]["supported"].astype(bool)
        for t in tables[1:]:
            total = total.add(t[_VALUES], fill_value=0.0)
            supported = supported & t["supported"].astype(bool).reindex(supported.index, fill_value=False)
        total["supported"] = supported
        return total
    # OD pairs: each part has the pairs it estimates above zero; a pair one part lacks counts 0 there
    grouped = pd.concat(tables).groupby(level=["origin", "destination"], sort=True)
    total = grouped[_VALUES].sum()
    total["supported"] = grouped["supported"].all() & (grouped.size() == len(tables))
    return total


def estimate_layers(
    released: Any,
    points: Any = None,
    *,
    zones: Any = None,
    cell_km: float = 1.5,
    regions: Any = None,
    layers: Any = ("zone_visits", "od_flows", "hotspots"),
    k: int = 10,
    progress: bool = False,
    **fit_kwargs: Any,
) -> dict[str, Any]:
    """Estimate zone visits, OD flows, hotspots (and point visits, range counts) as GIS layers.

    One population model is fitted per release (part) and answers every query
    (:func:`geoldp.estimate.fit`); the release alone, P and the public configuration are read.

    Parameters
    ----------
    released : geopandas.GeoDataFrame
        The release, with its ledger.
    points : PointSet, GeoDataFrame or GeoSeries of Points, optional
        The public points; default rebuilt from the ledger's recipe (:func:`points_for`).
    zones : GeoDataFrame of polygons, optional
        The zones; default :func:`geoldp.zone_grid` of P with ``cell_km`` (public: built from P).
    cell_km : float, default 1.5
        Side of the default zones, km.
    regions : GeoDataFrame of polygons, optional
        For the ``"range_counts"`` layer.
    layers : sequence of str, default ("zone_visits", "od_flows", "hotspots")
        Any of :data:`LAYER_NAMES`.
    k : int, default 10
        Number of hotspot zones, ranked among the supported zones only (none supported: an empty layer
        whose ``attrs["note"]`` says so).
    progress : bool, default False
        Report the stages (the fit's, then each layer's) on a progress bar (tqdm; a widget in notebooks).
        The layers do not change.
    **fit_kwargs
        Passed to :func:`geoldp.estimate.fit` (``rng``, ``n_candidates``, ``n_boot``, ``level`` ...).

    Returns
    -------
    dict of str to geopandas.GeoDataFrame
        Layer name → layer, in the order of ``layers``.

    Raises
    ------
    ValueError
        An unknown layer name, ``range_counts`` without ``regions``, P not matching the release.
    """
    from geoldp import estimate

    names = [layers] if isinstance(layers, str) else list(layers)
    bad = [n for n in names if n not in LAYER_NAMES]
    if bad or not names:
        raise ValueError(
            f"The 'layers' parameter of estimate_layers must name some of {LAYER_NAMES}. Got {bad}."
        )
    if "range_counts" in names and regions is None:
        raise ValueError("The 'range_counts' layer of estimate_layers needs regions= (polygons).")
    points = points_for(released, points)
    if zones is None:
        zones = zone_grid(points, cell_km=cell_km)
    progress = check_bool(progress, "progress", caller="estimate_layers")
    parts = release_parts(released)
    ask = {  # the query of each layer (hotspots: the zone visits)
        "zone_visits": lambda pop: pop.visit_counts(zones),
        "od_flows": lambda pop: pop.od_flows(zones),
        "point_visits": lambda pop: pop.visit_counts(),
        "range_counts": lambda pop: pop.range_counts(regions),
    }
    wanted = {"zone_visits" if n == "hotspots" else n for n in names}
    tables: dict[str, list[pd.DataFrame]] = {q: [] for q in ask if q in wanted}
    with stages("estimate layers", len(parts) * len(tables), enabled=progress) as report:
        for j, part in enumerate(parts):
            pop = estimate.fit(part, points, progress=progress, **fit_kwargs)
            of_part = f" (part {j + 1} of {len(parts)})" if len(parts) > 1 else ""
            for query, found in tables.items():
                report(query.replace("_", " ") + of_part)
                found.append(ask[query](pop))
    out: dict[str, Any] = {}
    for name in names:
        if name == "zone_visits":
            out[name] = zone_layer(_sum_tables(tables[name]), zones)
        elif name == "hotspots":
            top = top_supported(_sum_tables(tables["zone_visits"]), k)
            out[name] = zone_layer(top, zones)
            out[name].attrs.update(top.attrs)
        elif name == "od_flows":
            out[name] = od_layer(_sum_tables(tables[name]), zones)
        elif name == "point_visits":
            pts = points.to_geoseries() if hasattr(points, "to_geoseries") else points
            geo = pts.geometry if hasattr(pts, "geometry") else pts
            geo = geo.reset_index(drop=True)
            geo.index.name = "point"
            out[name] = zone_layer(_sum_tables(tables[name]), geo, id_name="point")
        else:
            out[name] = regions_layer(_sum_tables(tables[name]), regions)
    return out


def write_layers(
    layers: dict[str, Any], path: str | os.PathLike[str], *, overwrite: bool = False
) -> list[Path]:
    """Write estimate layers: all into one GeoPackage (one layer each), or one GeoJSON file per layer.

    Written as one unit through :func:`geoldp.io.write_layer_set` (every file complete before any is named,
    never overwriting without ``overwrite``).

    Parameters
    ----------
    layers : dict of str to geopandas.GeoDataFrame
        From :func:`estimate_layers`.
    path : str or os.PathLike
        A ``.gpkg`` file, or a ``.geojson`` path ``out.geojson`` giving ``out.<layer>.geojson``.
    overwrite : bool, default False
        Replace existing files.

    Returns
    -------
    list of pathlib.Path
        The files written.
    """
    from geoldp import io as gio

    return gio.write_layer_set(dict(layers), path, overwrite=overwrite)
