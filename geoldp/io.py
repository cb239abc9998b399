"""Reading and writing trajectory files.

- :func:`to_geojson` writes RFC 7946 GeoJSON: WGS 84 (lon, lat) coordinates, no ``crs`` member, and the
  privacy ledger (``gdf.attrs["geoldp"]``) as a top-level foreign member ``"geoldp"`` (allowed by RFC 7946
  §6.1 and ignored by QGIS/GDAL) or as a sidecar JSON file ``<path>.ledger.json``.
- GeoPackage and GeoParquet go through GeoPandas (``gdf.to_file(path, driver="GPKG")``,
  ``gdf.to_parquet(path)``); those formats do not carry ``attrs``, so write the ledger with
  :func:`write_ledger` next to them.
- :func:`read_trajectories` and :func:`read_points` read GeoJSON, GeoPackage (and anything else GDAL
  reads), GeoParquet, and CSV with a WKT column or lon/lat columns.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geoldp import _frames

__all__ = ["ledger_path", "read_ledger", "read_points", "read_trajectories", "to_geojson", "write_ledger"]

_CSV = {".csv", ".txt", ".tsv"}
_PARQUET = {".parquet", ".geoparquet", ".pq"}
_WKT_NAMES = ("geometry", "wkt", "geom", "the_geom")
_LON_NAMES = ("lon", "lng", "long", "longitude", "x")
_LAT_NAMES = ("lat", "latitude", "y")


def ledger_path(path: str | os.PathLike[str]) -> Path:
    """Sidecar path of the ledger written next to ``path``: ``<path>.ledger.json``."""
    p = Path(path)
    return p.with_name(p.name + ".ledger.json")


def write_ledger(gdf: Any, path: str | os.PathLike[str]) -> Path | None:
    """Write ``gdf.attrs["geoldp"]`` as JSON next to the data file ``path``; return the sidecar path.

    Returns None (and writes nothing) when the frame carries no ledger.
    """
    ledger = getattr(gdf, "attrs", {}).get("geoldp")
    if ledger is None:
        return None
    side = ledger_path(path)
    side.write_text(json.dumps(ledger, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return side


_TAIL_BYTES = 1 << 20


def read_ledger(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Read the provenance/ledger written next to or inside a data file; None if there is none.

    Looks for the sidecar ``<path>.ledger.json`` first, then (GeoJSON) for a top-level ``"geoldp"``
    member as written by :func:`to_geojson` (found at the end of the file without loading the features).

    Examples
    --------
    >>> geoldp.io.read_ledger("perturbed.geojson")["mechanism"]  # doctest: +SKIP
    'atp'
    """
    p = Path(path)
    side = ledger_path(p)
    if side.exists():
        return json.loads(side.read_text(encoding="utf-8"))
    if p.suffix.lower() not in {".geojson", ".json"} or not p.exists():
        return None
    size = p.stat().st_size
    with p.open("rb") as fh:
        fh.seek(max(0, size - _TAIL_BYTES))
        tail = fh.read().decode("utf-8", errors="replace")
    marker = '"geoldp": '
    at = tail.rfind(marker)
    if at >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(tail[at + len(marker) :])
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
    if size <= _TAIL_BYTES:  # small file: parse it whole (member anywhere)
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        value = doc.get("geoldp") if isinstance(doc, dict) else None
        return value if isinstance(value, dict) else None
    return None


def _json_default(value: Any) -> Any:
    if isinstance(value, pd.Timestamp | np.datetime64):
        return pd.Timestamp(value).isoformat()
    if isinstance(value, pd.Timedelta | np.timedelta64):
        return pd.Timedelta(value).isoformat()
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return str(value)


def to_geojson(gdf: Any, path: str | os.PathLike[str], *, ledger: bool | str = True) -> Path:
    """Write a GeoDataFrame as RFC 7946 GeoJSON (WGS 84, lon/lat order) that QGIS opens directly.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        Any CRS (reprojected to EPSG:4326 for writing; a missing CRS is an error).
    path : str or os.PathLike
        Output file (``.geojson`` recommended).
    ledger : bool or "sidecar", default True
        ``True``: the provenance/ledger ``gdf.attrs["geoldp"]`` becomes a top-level ``"geoldp"`` member of
        the FeatureCollection. ``"sidecar"``: it is written to ``<path>.ledger.json`` instead.
        ``False``: not written.

    Returns
    -------
    pathlib.Path
        The GeoJSON file written.

    Raises
    ------
    TypeError
        Not a GeoDataFrame.
    ValueError
        No CRS (use ``set_crs()``), no active geometry column.

    Examples
    --------
    >>> out.ldp.to_geojson("perturbed.geojson")  # doctest: +SKIP
    >>> geopandas.read_file("perturbed.geojson")  # doctest: +SKIP
    """
    caller = "to_geojson"
    import geopandas as gpd

    if not isinstance(gdf, gpd.GeoDataFrame):
        raise TypeError(
            f"The 'gdf' parameter of {caller} must be a geopandas.GeoDataFrame. Got {type(gdf).__name__}."
        )
    if not (ledger is True or ledger is False or ledger == "sidecar"):
        raise ValueError(f"Got ledger={ledger!r}; `ledger` must be one of (True, False, 'sidecar').")
    if gdf.crs is None:
        raise ValueError("The GeoDataFrame passed to to_geojson has no CRS. Use set_crs() to declare it.")
    wgs = gdf if _frames.is_wgs84(gdf.crs) else gdf.to_crs(_frames.WGS84)
    drop_id = isinstance(gdf.index, pd.RangeIndex) and gdf.index.start == 0 and gdf.index.step == 1
    geo = wgs.to_geo_dict(na="null", drop_id=drop_id)
    geo.pop("crs", None)  # RFC 7946: no crs member; coordinates are WGS 84
    prov = gdf.attrs.get("geoldp")
    if ledger is True and prov is not None:
        geo["geoldp"] = prov
    p = Path(path)
    with p.open("w", encoding="utf-8") as fh:
        json.dump(geo, fh, default=_json_default, allow_nan=False)
    if ledger == "sidecar":
        write_ledger(gdf, p)
    return p


# --------------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------------


def _pick(columns: list[Any], names: tuple[str, ...]) -> Any:
    lower = {str(c).lower(): c for c in columns}
    for name in names:
        if name in lower:
            return lower[name]
    return None


def _from_table(df: pd.DataFrame, *, wkt_col: Any, lon_col: Any, lat_col: Any, crs: Any, source: str) -> Any:
    """A GeoDataFrame from a plain table with a WKT column or lon/lat columns."""
    import geopandas as gpd
    import shapely

    cols = list(df.columns)
    if wkt_col is None and lon_col is None and lat_col is None:
        wkt_col = _pick(cols, _WKT_NAMES)
        if wkt_col is None:
            lon_col, lat_col = _pick(cols, _LON_NAMES), _pick(cols, _LAT_NAMES)
    if wkt_col is not None:
        if wkt_col not in df.columns:
            raise ValueError(
                f"{source}: WKT column {wkt_col!r} not found. Available columns: {[str(c) for c in cols]}."
            )
        values = df[wkt_col]
        try:
            geoms = shapely.from_wkt(values.astype(object).where(values.notna(), None).to_numpy())
        except shapely.errors.GEOSException:
            raise ValueError(f"{source}: column {wkt_col!r} holds text that is not valid WKT.") from None
        rest = df.drop(columns=[wkt_col])
        return gpd.GeoDataFrame(rest, geometry=gpd.GeoSeries(geoms, index=df.index, crs=crs), crs=crs)
    if lon_col is None or lat_col is None or lon_col not in df.columns or lat_col not in df.columns:
        raise ValueError(
            f"{source}: found neither a WKT column (one of {list(_WKT_NAMES)}) nor lon/lat columns (one of "
            f"{list(_LON_NAMES)} and one of {list(_LAT_NAMES)}). "
            f"Available columns: {[str(c) for c in cols]}. "
            "Pass wkt_col= or lon_col=/lat_col=."
        )
    lon = pd.to_numeric(df[lon_col], errors="coerce").to_numpy(dtype=np.float64)
    lat = pd.to_numeric(df[lat_col], errors="coerce").to_numpy(dtype=np.float64)
    geoms = shapely.points(lon, lat)
    geoms[np.isnan(lon) | np.isnan(lat)] = None
    rest = df.drop(columns=[lon_col, lat_col])
    return gpd.GeoDataFrame(rest, geometry=gpd.GeoSeries(geoms, index=df.index, crs=crs), crs=crs)


def _read_any(
    path: str | os.PathLike[str],
    *,
    layer: Any,
    crs: Any,
    wkt_col: Any,
    lon_col: Any,
    lat_col: Any,
    caller: str,
) -> Any:
    import geopandas as gpd

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{caller}: no such file: '{p}'.")
    suffix = p.suffix.lower()
    table_crs = "EPSG:4326" if crs is None else crs
    if suffix in _CSV:
        sep = "\t" if suffix == ".tsv" else ","
        # exact decimal -> float parsing (pandas >= 3 always does it; older pandas needs the option)
        extra = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
        df = pd.read_csv(p, sep=sep, **extra)
        return _from_table(
            df,
            wkt_col=wkt_col,
            lon_col=lon_col,
            lat_col=lat_col,
            crs=table_crs,
            source=f"{caller} '{p.name}'",
        )
    if suffix in _PARQUET:
        try:
            gdf = gpd.read_parquet(p)
        except ValueError:  # a plain Parquet table without GeoParquet metadata
            df = pd.read_parquet(p)
            return _from_table(
                df,
                wkt_col=wkt_col,
                lon_col=lon_col,
                lat_col=lat_col,
                crs=table_crs,
                source=f"{caller} '{p.name}'",
            )
    else:
        kwargs = {} if layer is None else {"layer": layer}
        gdf = gpd.read_file(p, **kwargs)
    if crs is not None:
        if gdf.crs is None:
            gdf = gdf.set_crs(crs)
        elif not gdf.crs.equals(crs):
            gdf = gdf.to_crs(crs)
    return gdf


def _parse_time(gdf: Any, time_col: Any, caller: str) -> Any:
    col = gdf[time_col]
    if pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col):
        try:
            parsed = pd.to_datetime(col, format="ISO8601")
        except (ValueError, TypeError):
            try:
                parsed = pd.to_datetime(col, format="mixed")
            except (ValueError, TypeError):
                raise ValueError(
                    f"{caller}: the time column {time_col!r} holds values that are not dates/times."
                ) from None
        gdf = gdf.copy()
        gdf[time_col] = parsed
    return gdf


def read_trajectories(
    path: str | os.PathLike[str],
    *,
    traj_id_col: Any = None,
    time_col: Any = None,
    layer: Any = None,
    crs: Any = None,
    wkt_col: Any = None,
    lon_col: Any = None,
    lat_col: Any = None,
) -> Any:
    """Read trajectories (LineString rows, or Point rows with a trajectory id) from a file.

    Parameters
    ----------
    path : str or os.PathLike
        GeoJSON, GeoPackage or any format GDAL reads (``geopandas.read_file``); GeoParquet (``.parquet``);
        CSV/TSV with a WKT column (``geometry``, ``wkt``, ``geom``) or lon/lat columns (``lon``/``lng``/
        ``longitude``/``x`` and ``lat``/``latitude``/``y``); a plain Parquet table is read like a CSV.
    traj_id_col, time_col : column label, optional
        Checked to exist (``ValueError`` listing the available columns); a text ``time_col`` is parsed as
        datetimes.
    layer : str or int, optional
        Layer of a multi-layer file (GeoPackage).
    crs : optional
        For CSV / plain Parquet: the CRS of the coordinates, default ``"EPSG:4326"`` (lon/lat degrees).
        For other formats: declared if the file has none, otherwise the data are reprojected to it.
    wkt_col, lon_col, lat_col : column label, optional
        Override the column auto-detection for tables.

    Returns
    -------
    geopandas.GeoDataFrame
        With ``attrs["geoldp"]`` set when the file carries a geoldp ledger (see :func:`read_ledger`).

    Examples
    --------
    >>> trips = geoldp.io.read_trajectories("trips.csv", traj_id_col="trip", time_col="t")  # doctest: +SKIP
    """
    caller = "read_trajectories"
    gdf = _read_any(
        path, layer=layer, crs=crs, wkt_col=wkt_col, lon_col=lon_col, lat_col=lat_col, caller=caller
    )
    cols = [c for c in (traj_id_col, time_col) if c is not None]
    if cols:
        _frames.check_columns(gdf, cols, parameter="traj_id_col/time_col", caller=caller)
    if time_col is not None:
        gdf = _parse_time(gdf, time_col, caller)
    ledger = read_ledger(path)
    if ledger is not None:
        gdf.attrs = {"geoldp": ledger}
    return gdf


def read_points(
    path: str | os.PathLike[str],
    *,
    layer: Any = None,
    crs: Any = None,
    wkt_col: Any = None,
    lon_col: Any = None,
    lat_col: Any = None,
) -> Any:
    """Read a public point set (Point rows); same formats and options as :func:`read_trajectories`.

    Returns
    -------
    geopandas.GeoDataFrame
        Point rows (pass it as ``points=`` or to :meth:`geoldp.PointSet.from_geodataframe`).

    Raises
    ------
    TypeError
        A row that is not a Point (names the row position).
    ValueError
        A missing or empty geometry (names the row position).
    """
    import shapely

    caller = "read_points"
    gdf = _read_any(
        path, layer=layer, crs=crs, wkt_col=wkt_col, lon_col=lon_col, lat_col=lat_col, caller=caller
    )
    geoms = np.asarray(gdf.geometry.values, dtype=object)
    missing = shapely.is_missing(geoms)
    pos = np.flatnonzero(missing)
    if pos.size:
        raise ValueError(f"{caller}: row position {int(pos[0])} has a missing geometry.")
    types = shapely.get_type_id(geoms)
    pos = np.flatnonzero(types != 0)
    if pos.size:
        raise TypeError(f"{caller}: row position {int(pos[0])} is not a Point; public points must be Points.")
    pos = np.flatnonzero(shapely.is_empty(geoms))
    if pos.size:
        raise ValueError(f"{caller}: row position {int(pos[0])} is an empty Point.")
    return gdf
