"""Reading and writing trajectory files you can trust.

:func:`read_trajectories` and :func:`read_points` read one file in an allow-listed format whose content
is checked against its name (:mod:`geoldp._core.formats`); :func:`write_file` (any format, by suffix) and
:func:`to_geojson` write one with its ledger; :func:`read_ledger` and :func:`write_ledger` handle the
sidecar ``<path>.ledger.json``. :doc:`/user_guide` ("Files: formats, overwriting, atomicity") lists the
formats, what a read refuses, and how every write is atomic (:mod:`geoldp._core.safe_write`), never
overwrites silently and keeps data and sidecar in step even after ``kill -9``. Further:

- :func:`to_geojson` writes RFC 7946 GeoJSON: WGS 84 (lon, lat) coordinates, no ``crs`` member, and the
  ledger (:class:`~geoldp.ReleaseLedger`) as a top-level foreign member ``"geoldp"`` (allowed by RFC 7946 §6.1
  and ignored by QGIS/GDAL) or as the sidecar.
- A Shapefile's parts (``.shp``, ``.shx``, ``.dbf``, ``.prj``, ``.cpg`` and the indexes other tools keep next
  to them) are written by GDAL in a temporary directory, then committed as one unit; a temporary
  directory a killed write left behind is removed by the next write of the same output.
- A GeoPackage is read through SQLite (read-only, under its lock), so rows committed but still in its
  ``-wal`` file are read too.
- Messages never quote the file's contents, so GDAL's own messages (which can) are withheld.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io as _stdio
import json
import os
import re
import shutil
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geoldp._core import formats as _formats
from geoldp._core import frames as _frames
from geoldp._core import safe_write as _safe_write
from geoldp._core import validation as _validation
from geoldp._core.errors import GeoLDPWarning
from geoldp._core.ledger import ATTRS_KEY, ReleaseLedger, attach, ledger_of, record_problem

__all__ = [
    "read_ledger",
    "read_points",
    "read_report_table",
    "read_trajectories",
    "to_geojson",
    "write_file",
    "write_ledger",
]

_WKT_NAMES = ("geometry", "wkt", "geom", "the_geom")
_LON_NAMES = ("lon", "lng", "long", "longitude", "x")
_LAT_NAMES = ("lat", "latitude", "y")
_TAIL_BYTES = 1 << 20
#: A table's column names are not quoted in messages: in a file without a header row they are its first
#: row of data.
_COLUMNS_UNQUOTED = (
    "The file has {} column(s), whose names are not quoted here (without a header row they would be the "
    "first row of data)."
)
_MAX_LEDGER_BYTES = _formats.MAX_LEDGER_BYTES

#: Output formats of :func:`write_file`, by file suffix.
WRITE_FORMATS = _formats.WRITE_FORMATS


def ledger_path(path: str | os.PathLike[str]) -> Path:
    """Sidecar path of the ledger written next to ``path``: ``<path>.ledger.json``."""
    p = Path(path)
    return p.with_name(p.name + _safe_write.LEDGER_TAIL)


# --------------------------------------------------------------------------------------------------
# the ledger


def _ledger_bytes(ledger: ReleaseLedger | Mapping[str, Any], data: tuple[str, int, str] | None) -> bytes:
    """The sidecar's JSON; ``data`` is the (name, size, SHA-256) of the data file it belongs to."""
    doc = ledger.record() if isinstance(ledger, ReleaseLedger) else dict(ledger)
    if data is not None:
        doc["data_file"] = {"name": data[0], "bytes": int(data[1]), "sha256": data[2]}
    return (json.dumps(doc, indent=2, sort_keys=True, default=_json_default) + "\n").encode("utf-8")


def write_ledger(gdf: Any, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path | None:
    """Write the frame's ledger as JSON next to the data file ``path``; return the sidecar path.

    The sidecar ``<path>.ledger.json`` is written atomically and records the size and SHA-256 of the data
    file as it is now (``"data_file"``), so write the data first. Returns None (and writes nothing) when
    the frame carries no ledger.

    Raises
    ------
    ValueError
        The sidecar exists and ``overwrite`` is False, or it is a symlink.
    """
    ledger = ledger_of(gdf)
    if ledger is None:
        return None
    p = Path(path)
    _safe_write.recover(p)  # an interrupted write of the data file and its sidecar is finished first
    side = _safe_write.check_output(ledger_path(p), overwrite=overwrite, inputs=(p,), what="ledger sidecar")
    record = (p.name, *_safe_write.file_digest(p)) if p.is_file() else None
    with _write_errors(side, always=True):
        _safe_write.write_bytes(side, _ledger_bytes(ledger, record), overwrite=overwrite)
    return side


def write_bytes_with_ledger(
    data: bytes,
    ledger: ReleaseLedger | Mapping[str, Any],
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
) -> list[Path]:
    """Write ``data`` to ``path`` and ``ledger`` to its sidecar ``<path>.ledger.json`` as one unit.

    Both files are staged under temporary names and committed together (as :func:`write_file` does), so
    a kill or a full disk leaves the old pair, the new pair, or nothing; the sidecar records the data's
    size and SHA-256. Returns the data file's path, then the sidecar's.
    """
    p = _check_outputs(path, overwrite=overwrite, sidecar=True, caller="write_bytes_with_ledger")
    return _commit(p, data, ledger, overwrite=overwrite)


def _read_sidecar(side: Path, data_path: Path | None, caller: str) -> dict[str, Any]:
    raw = _formats.read_regular(side, caller, limit=_MAX_LEDGER_BYTES)
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise ValueError(
            f"{caller}: the ledger file '{side}' is not valid JSON; remove or regenerate it."
        ) from None
    problem = record_problem(value)
    if problem is not None:
        raise ValueError(f"{caller}: '{side}' is not a geoldp ledger ({problem}); remove or regenerate it.")
    record = value.pop("data_file", None)
    if record is not None and data_path is not None:
        if not isinstance(record, dict) or not isinstance(record.get("sha256"), str):
            raise ValueError(f"{caller}: the ledger file '{side}' has a malformed 'data_file' member.")
        size, digest = _safe_write.file_digest(data_path)
        if record.get("bytes") != size or record["sha256"] != digest:
            raise ValueError(
                f"{caller}: the ledger file '{side}' belongs to another version of '{data_path}' (size or "
                "SHA-256 differ): data and ledger are out of step. Do not trust this ledger; regenerate the "
                "release."
            )
    return value


def _member_ledger(data: bytes, name: str, caller: str) -> dict[str, Any] | None:
    """The top-level ``"geoldp"`` member of a GeoJSON (written last by :func:`to_geojson`), or None."""
    tail = (data[-_TAIL_BYTES:] if len(data) > _TAIL_BYTES else data).decode("utf-8", errors="replace")
    at = tail.rfind('"geoldp": ')
    value: Any = None
    if at >= 0:
        try:
            value, end = json.JSONDecoder().raw_decode(tail, at + 10)
        except json.JSONDecodeError:
            value = None
        else:  # the top-level member is the document's last: only its closing brace follows it
            if tail[end:].strip() != "}":
                value = None
    if value is None and len(data) <= _TAIL_BYTES and b'"geoldp"' in data:
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            return None
        value = doc.get("geoldp") if isinstance(doc, dict) else None
    if value is None:
        return None
    problem = record_problem(value)
    if problem is not None:
        raise ValueError(
            f"{caller}: the 'geoldp' member of '{name}' is not a geoldp ledger ({problem}); remove the "
            "member or regenerate the file."
        )
    return value


def read_ledger(
    path: str | os.PathLike[str], *, sidecar: str | os.PathLike[str] | bool | None = None
) -> ReleaseLedger | None:
    """Read the privacy ledger of a data file; None if there is none.

    Parameters
    ----------
    path : str or os.PathLike
        The data file. A GeoJSON's own top-level ``"geoldp"`` member (as written by :func:`to_geojson`) is
        used first.
    sidecar : path, bool or None
        ``None`` (default) or ``True``: otherwise read ``<path>.ledger.json`` if it exists. A path: read that
        sidecar file. ``False``: never read a sidecar.

    Raises
    ------
    ValueError
        The sidecar is not a regular file, is larger than 16 MiB, is not a valid ledger, or records another
        version of the data file (data and ledger out of step); the message names the file.

    Examples
    --------
    >>> geoldp.io.read_ledger("perturbed.geojson").mechanism  # doctest: +SKIP
    'atp'
    """
    caller = "read_ledger"
    p = Path(path)
    if sidecar is not None and not isinstance(sidecar, bool | str | os.PathLike):
        raise TypeError(f"The 'sidecar' parameter of {caller} must be a path, a bool or None.")
    _safe_write.recover(p)  # a write of the pair interrupted after it was complete: finish it first
    if isinstance(sidecar, str | os.PathLike):
        return ReleaseLedger.from_record(_read_sidecar(Path(sidecar), p if p.is_file() else None, caller))
    if p.suffix.lower() in {".geojson", ".json"} and p.is_file():
        member = _member_ledger(_formats.read_regular(p, caller), str(p), caller)
        if member is not None:
            return ReleaseLedger.from_record(member)
    side = ledger_path(p)
    if sidecar is not False and os.path.lexists(side):
        return ReleaseLedger.from_record(_read_sidecar(side, p if p.is_file() else None, caller))
    return None


# --------------------------------------------------------------------------------------------------
# writing


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


@contextlib.contextmanager
def _write_errors(p: Path, previous: str = "file (if any) is", *, always: bool = False) -> Iterator[None]:
    """Reword an OSError of a write (errno kept; one without errno only if ``always``)."""
    try:
        yield
    except OSError as exc:
        if not (exc.errno or always):
            raise
        raise OSError(
            exc.errno,
            f"cannot write '{p}': {os.strerror(exc.errno) if exc.errno else 'I/O error'}; the previous "
            f"{previous} unchanged and no partial file was left",
        ) from None


def _check_outputs(
    path: Any, *, overwrite: bool, sidecar: bool, caller: str, inputs: tuple[Any, ...] = ()
) -> Path:
    """Check the output ``path`` and, with ``sidecar``, its ledger sidecar, before anything is written."""
    if isinstance(path, str | os.PathLike):
        _safe_write.recover(path)  # an earlier write interrupted after it was complete is finished first
    p = _safe_write.check_output(path, overwrite=overwrite, inputs=inputs)
    side = ledger_path(p)
    _check_names([p, side] if sidecar else [p], caller)
    if sidecar:
        _safe_write.check_output(side, overwrite=overwrite, inputs=(*inputs, p), what="ledger sidecar")
    return p


def _commit(
    p: Path, data: bytes | Callable[[_safe_write.Group], tuple[int, str]], ledger: Any, *, overwrite: bool
) -> list[Path]:
    """Write ``data`` to ``p`` and ``ledger`` (if any) to its sidecar, as one unit (see the module notes).

    ``data`` is the bytes, or a function that stages the file in the group and returns its size and SHA-256
    (which the sidecar records).
    """
    side = ledger_path(p)
    for stale in (p, side):  # what a killed earlier write of this output left behind
        _safe_write.remove_stale_temps(stale)
    with (
        _write_errors(p),
        _safe_write.cleanup_on_sigterm(),  # outside the group: SIGTERM cleans up all
        _safe_write.group(overwrite=overwrite, unit=p) as g,
    ):
        if isinstance(data, bytes):
            g.add_bytes(p, data)
            size, digest = len(data), hashlib.sha256(data).hexdigest()
        else:
            size, digest = data(g)
        if ledger is not None:
            g.add_bytes(side, _ledger_bytes(ledger, (p.name, size, digest)))  # named after the data file
    return [p] if ledger is None else [p, side]


def _check_names(paths: list[Path], caller: str) -> None:
    """Refuse, before anything is written, a name the file system would refuse half-way through.

    A write goes through a temporary name a few dozen bytes longer (and the sidecar adds
    ``.ledger.json``), so a name close to the limit would fail after the data file is in place.
    """
    for q in paths:
        if any(ord(c) < 32 or ord(c) == 127 for c in q.name):
            raise ValueError(
                f"{caller}: the output name {q.name[:60]!r} holds a newline, tab or other control "
                "character (GDAL cannot write some formats under such a name); choose a plain name. "
                "Nothing was written."
            )
        _safe_write.check_utf8_name(q.name, f"{caller}: the output")
        try:
            limit = int(os.pathconf(q.parent, "PC_NAME_MAX"))
        except (OSError, ValueError, AttributeError):
            limit = 255
        temp = _safe_write.temp_name(q, ".gpkg" if q.suffix.lower() == ".gpkg" else "")  # as the writers do
        longest = max(len(os.fsencode(n)) for n in (q.name, temp.name))
        if longest > limit:
            raise ValueError(
                f"{caller}: the output name '{q.name[:40]}...' is too long: with the temporary name it is "
                f"written under first it takes {longest} bytes, and this file system allows {limit}. "
                "Choose a shorter name; nothing was written."
            )


def _check_gdf(gdf: Any, caller: str) -> None:
    import geopandas as gpd

    if not isinstance(gdf, gpd.GeoDataFrame):
        raise TypeError(
            f"The 'gdf' parameter of {caller} must be a geopandas.GeoDataFrame. Got {type(gdf).__name__}."
        )


def _report_ledger(table: Any) -> ReleaseLedger | None:
    """The ledger of ``table`` if it is the table of :func:`geoldp.report` (a DataFrame), else None."""
    import geopandas as gpd

    if not isinstance(table, pd.DataFrame) or isinstance(table, gpd.GeoDataFrame):
        return None
    led = ledger_of(table)
    return led if led is not None and led.mechanism == "report" else None


def _geojson_bytes(gdf: Any, *, member: bool, caller: str) -> bytes:
    if gdf.crs is None:
        raise ValueError(f"The GeoDataFrame passed to {caller} has no CRS. Use set_crs() to declare it.")
    wgs = gdf if _frames.is_wgs84(gdf.crs) else gdf.to_crs(_frames.WGS84)
    geo = wgs.to_geo_dict(na="null", drop_id=_default_index(gdf))
    geo.pop("crs", None)  # RFC 7946: no crs member; coordinates are WGS 84
    prov = ledger_of(gdf)
    if member and prov is not None:
        geo[ATTRS_KEY] = prov.record()
    try:
        text = json.dumps(geo, default=_json_default, allow_nan=False)
    except ValueError:
        raise ValueError(
            f"{caller}: the frame holds NaN or infinite numbers (in a kept column or a coordinate), which "
            "JSON cannot represent; nothing was written. Replace them (e.g. with None) first."
        ) from None
    return text.encode("utf-8")


#: Text that a spreadsheet would run as a formula when it begins a cell (OWASP "CSV injection").
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def _neutralise(value: Any) -> Any:
    """Text beginning like a spreadsheet formula, with a single quote in front; anything else as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def _csv_bytes(gdf: Any, caller: str = "write_file") -> bytes:
    import shapely

    geom_name = gdf.geometry.name
    if geom_name != "geometry" and "geometry" in gdf.columns:
        raise ValueError(
            f"{caller}: the frame has a column named 'geometry' that is not its active geometry "
            f"({geom_name!r}); a CSV holds the active geometry as WKT in a 'geometry' column, which would "
            "replace it. Rename the column (or make it the active geometry) first; nothing was written."
        )
    # WGS 84 (CSV carries no CRS) at full precision; exact only when the input was already in EPSG:4326
    wgs = gdf if gdf.crs is None or gdf.crs.equals("EPSG:4326") else gdf.to_crs("EPSG:4326")
    frame = pd.DataFrame(wgs.drop(columns=geom_name))
    # a spreadsheet runs a text cell beginning with = + - @ (or a tab/CR) as a formula: such text cells
    # and column names get a leading single quote; numbers (-3.5 in a float column) stay numbers
    for i in range(frame.shape[1]):
        col = frame.iloc[:, i]
        if not (pd.api.types.is_numeric_dtype(col) or pd.api.types.is_datetime64_any_dtype(col)):
            if pd.api.types.is_bool_dtype(col) or pd.api.types.is_timedelta64_dtype(col):
                continue
            frame.isetitem(i, col.astype(object).map(_neutralise))
    frame.columns = [_neutralise(c) for c in frame.columns]
    frame["geometry"] = shapely.to_wkt(np.asarray(wgs.geometry.values), rounding_precision=-1)
    # RFC 4180 line ends: the csv module then quotes every cell holding a CR or LF, so a text with a
    # carriage return reads back as one cell (with "\n" alone it would be written bare and split the row)
    return frame.to_csv(index=False, lineterminator="\r\n").encode("utf-8")


#: GeoPackage version written: 1.2 is read without a warning by GDAL 3.6 / QGIS 3.22 and later.
GPKG_VERSION = "1.2"


def _default_index(gdf: Any) -> bool:
    return isinstance(gdf.index, pd.RangeIndex) and gdf.index.start == 0 and gdf.index.step == 1


def _without_index(gdf: Any) -> Any:
    """The frame to write: a release (a frame with a geoldp ledger) without its index, others as they are.

    The gaps of a release's index (rows dropped by ``max_per_user``) would show which rows were left out.
    """
    if ledger_of(gdf) is None or _default_index(gdf):
        return gdf
    out = gdf.reset_index(drop=True)
    out.attrs = dict(gdf.attrs)
    return out


def _gpkg_frame(gdf: Any) -> Any:
    """The frame to write to a GeoPackage: its date-times with a time zone converted to UTC.

    The GeoPackage standard stores a date-time in UTC; GDAL would keep another offset as it is, which
    readers then flag as non-conformant. The instants are unchanged (the offset is not kept); the
    caller's frame is not changed.
    """
    aware = [i for i, dtype in enumerate(gdf.dtypes) if isinstance(dtype, pd.DatetimeTZDtype)]
    if not aware:
        return gdf
    out = gdf.copy()
    for i in aware:
        out.isetitem(i, out.iloc[:, i].dt.tz_convert("UTC"))
    out.attrs = dict(gdf.attrs)
    return out


def _shapefile_parts(p: Path) -> list[Path]:
    """Every file of the Shapefile ``p`` other than ``p`` itself: written ones, then other tools' ones."""
    exts = (*_safe_write.SHAPEFILE_PARTS[1:], *_safe_write.SHAPEFILE_EXTRA)
    return [p.with_suffix(ext) for ext in exts] + [p.with_name(p.name + ".xml")]


@contextlib.contextmanager
def _gdal_errors(p: Path) -> Iterator[None]:
    """GDAL failing to write ``p``: an OSError, ENOSPC when the file system is (nearly) full.

    GDAL's own message is withheld: it can quote values.
    """
    try:
        yield
    except (ValueError, TypeError, OSError):
        raise
    except Exception:
        try:
            full = shutil.disk_usage(p.parent).free < (1 << 20)
        except OSError:
            full = False
        raise OSError(errno.ENOSPC if full else errno.EIO, f"GDAL could not write '{p}'") from None


def _remove_gpkg(tmp: Path) -> None:
    """Remove a temporary GeoPackage and SQLite's files next to it."""
    _safe_write.discard([tmp, *(Path(f"{tmp}{tail}") for tail in ("-journal", "-wal", "-shm"))])


def _sqlite_copy(path: Path, dest: str | Path, then: Callable[[Any], Any]) -> Any:
    """Copy the SQLite database ``path`` to ``dest``; return ``then(copy)``.

    SQLite's own copy, read-only on the original, under its shared lock: it keeps the committed rows still
    in the ``-wal`` file and never a live writer's unfinished transaction.
    """
    import sqlite3
    from urllib.parse import quote

    source = sqlite3.connect(f"file:{quote(os.fspath(path.resolve()))}?mode=ro", uri=True, timeout=10.0)
    try:
        copy = sqlite3.connect(dest)
        try:
            source.backup(copy)
            return then(copy)
        finally:
            copy.close()
    finally:
        source.close()


def _stage_shapefile(gdf: Any, p: Path, tmp: Path, g: _safe_write.Group) -> Path:
    """GDAL writes the parts in the directory ``tmp``; each becomes a file of the group (``.shp`` last).

    Parts of an older Shapefile that the new one lacks (an index, a .cpg) would not match it: the group
    removes them first. Returns the staged ``.shp`` (for the sidecar's digest).
    """
    _formats.pyogrio_module("write_file")
    os.mkdir(tmp)
    g.add_temp_dir(tmp)  # removed with the group's temporary files (kept while a commit record needs it)
    gdf.to_file(tmp / p.name, driver="ESRI Shapefile", engine="pyogrio")
    written = [ext for ext in _safe_write.SHAPEFILE_PARTS if (tmp / (p.stem + ext)).exists()]
    for old in _shapefile_parts(p):
        if old.suffix not in written and os.path.lexists(old):
            g.add_removal(old)
    for ext in sorted(written, key=lambda e: e == ".shp"):
        g.add_file(tmp / (p.stem + ext), p.with_suffix(ext))
    return tmp / p.name


def _stage_gpkg_layer(gdf: Any, p: Path, layer: str, tmp: Path, g: _safe_write.Group) -> Path:
    """Copy an existing GeoPackage to ``tmp`` and add a new layer to the copy, which replaces the original."""
    pyogrio = _formats.pyogrio_module("write_file")
    if not p.is_file():
        raise ValueError(f"add_layer=True needs an existing GeoPackage; '{p}' does not exist.")
    _formats.detect(p, "write_file")
    with _formats.no_network():
        names = [str(n) for n in pyogrio.list_layers(str(p))[:, 0]]
    if layer in names:
        raise ValueError(
            f"The GeoPackage '{p}' already has a layer {layer!r}; choose another layer name (layers are "
            "never replaced inside a file), or write a new file."
        )
    if any(os.path.lexists(f"{p}{tail}") for tail in ("-wal", "-journal")):
        # a program has it open (or stopped half-way): its later commits would go to the replaced file
        raise ValueError(
            f"The GeoPackage '{p}' is open in another program (it has a -wal or -journal file next to it); "
            "close that program first, then add the layer."
        )
    try:
        _sqlite_copy(p, tmp, lambda copy: copy.execute("PRAGMA journal_mode=DELETE"))
        _gpkg_frame(gdf).to_file(tmp, driver="GPKG", layer=layer, mode="a", engine="pyogrio")
        g.add_file(tmp, p)
    except BaseException:
        _remove_gpkg(tmp)
        raise
    return tmp


def _write_format(p: Path, *, layer: str | None, add_layer: bool, sidecar: bool, caller: str) -> str:
    """The output format of ``p`` (its suffix), with ``layer``, ``add_layer`` and ``sidecar`` checked."""
    fmt = WRITE_FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise ValueError(
            f"Cannot infer the output format of '{p}'; use one of the suffixes "
            f"{', '.join(sorted(WRITE_FORMATS))}."
        )
    if not isinstance(add_layer, bool) or not isinstance(sidecar, bool):
        raise TypeError(f"The 'add_layer' and 'sidecar' parameters of {caller} must be bools.")
    if add_layer and (fmt != "GPKG" or not isinstance(layer, str) or not layer):
        raise ValueError("add_layer=True needs a .gpkg output and a layer name (layer='...').")
    if layer is not None and fmt != "GPKG":
        raise ValueError(f"layer= applies to GeoPackage output only, not to '{p.name}'.")
    return fmt


def _serialise(
    gdf: Any, fmt: str, p: Path, *, layer: str | None, add_layer: bool, caller: str
) -> bytes | None:
    """The bytes of ``gdf`` in ``fmt``, or None for a format that GDAL writes to disk (Shapefile, a layer)."""
    if fmt == "GeoJSON":
        return _geojson_bytes(gdf, member=True, caller=caller)
    if fmt == "CSV":
        return _csv_bytes(gdf, caller)
    if fmt == "ESRI Shapefile" or add_layer:
        return None
    buf = _stdio.BytesIO()
    if fmt == "Parquet":
        gdf.to_parquet(buf)
        return buf.getvalue()
    _formats.pyogrio_module(caller)
    # FlatGeobuf's spatial index stores the features in Hilbert-curve order: without it they keep the
    # frame's row order ("same rows, same order"); readers then scan the file instead of using an index
    options: dict[str, Any] = (
        {"layer_options": {"SPATIAL_INDEX": "NO"}} if fmt == "FlatGeobuf" else {"VERSION": GPKG_VERSION}
    )
    frame = _gpkg_frame(gdf) if fmt == "GPKG" else gdf
    frame.to_file(buf, driver=fmt, layer=layer or p.stem, engine="pyogrio", **options)
    return buf.getvalue()


def _stage_on_disk(
    gdf: Any, fmt: str, p: Path, layer: str, tmp: Path, g: _safe_write.Group
) -> tuple[int, str]:
    """Stage a Shapefile or a GeoPackage layer in group ``g``; return the staged file's size and SHA-256."""
    with _gdal_errors(p):
        if fmt == "ESRI Shapefile":
            staged = _stage_shapefile(gdf, p, tmp, g)
        else:
            staged = _stage_gpkg_layer(gdf, p, layer, tmp, g)
    return _safe_write.file_digest(staged)


def write_file(
    gdf: Any,
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    sidecar: bool = True,
    inputs: tuple[str | os.PathLike[str], ...] | list[str | os.PathLike[str]] = (),
    layer: str | None = None,
    add_layer: bool = False,
) -> list[Path]:
    """Write a GeoDataFrame atomically in the format given by the suffix, plus its ledger sidecar.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame, or the table of :func:`geoldp.report`
        The frame (e.g. a release). A release (a frame with a geoldp ledger) is written without its index
        (see :func:`to_geojson`, Notes). A report table is written as CSV with its ledger
        (:func:`read_report_table` reads it back).
    path : str or os.PathLike
        Output file; the suffix selects the format (:data:`WRITE_FORMATS`). GeoJSON is RFC 7946 with the
        ledger also as a top-level ``"geoldp"`` member; CSV is WGS 84 with a WKT ``geometry`` column
        (so another column named ``geometry`` is an error). In CSV, a text cell or column name that
        begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (which a spreadsheet would run
        as a formula) is written with a single quote in front (``'=1+1``); numbers are written as they
        are. A GeoPackage stores date-times with a time zone in UTC, as its standard requires (the same
        instants; the offset is not kept).
    overwrite : bool, default False
        Replace an existing output (and its sidecar). Without it an existing file is an error.
    sidecar : bool, default True
        Also write the frame's ledger (if any) to ``<path>.ledger.json``.
    inputs : sequence of paths
        Files this output must not be (or resolve to, or be a hard link of): the data the release was made
        from. Checked for the data file and the sidecar.
    layer : str, optional
        GeoPackage layer name (default: the file stem).
    add_layer : bool, default False
        GeoPackage only: add ``layer`` as a new layer to an existing file instead of replacing the file.
        Refused while another program has the file open (a ``-wal`` or ``-journal`` file next to it).

    Returns
    -------
    list of pathlib.Path
        The data file, then the sidecar if one was written.

    Raises
    ------
    TypeError
        Not a GeoDataFrame; ``overwrite`` not a bool.
    ValueError
        Unknown suffix, existing output without ``overwrite``, a symlink at an output path, an output that
        is an input, NaN/inf in GeoJSON, a bad ``layer``/``add_layer``, a name with a control character
        (newline, tab) or too long for the file system once the temporary name or the sidecar's
        ``.ledger.json`` is added: all checked before anything is written.
    OSError
        The write failed (e.g. a full disk); the previous file, if any, is unchanged.
    """
    caller = "write_file"
    p = Path(os.fspath(path))
    report = _report_ledger(gdf)
    if report is not None:
        if p.suffix.lower() != ".csv" or layer is not None or add_layer or not sidecar:
            raise ValueError(
                f"{caller} writes a report table as one .csv file with its ledger sidecar, not '{p.name}' "
                "(nor with layer=, add_layer=True or sidecar=False)."
            )
        _check_outputs(p, overwrite=overwrite, sidecar=True, caller=caller, inputs=tuple(inputs))
        return _commit(p, _report_table_csv(gdf), report, overwrite=overwrite)
    _check_gdf(gdf, caller)
    fmt = _write_format(p, layer=layer, add_layer=add_layer, sidecar=sidecar, caller=caller)
    inputs = tuple(inputs)
    ledger = ledger_of(gdf) if sidecar else None
    _check_outputs(
        p, overwrite=overwrite or add_layer, sidecar=ledger is not None, caller=caller, inputs=inputs
    )
    if fmt == "ESRI Shapefile":  # the parts are one unit: all checked before any is touched
        for part in _shapefile_parts(p):
            _safe_write.check_output(part, overwrite=overwrite, inputs=inputs, what="Shapefile part")
    # serialise first: a frame that cannot be written leaves every file as it was
    gdf = _without_index(gdf)
    data = _serialise(gdf, fmt, p, layer=layer, add_layer=add_layer, caller=caller)
    if data is None:
        tmp = _safe_write.temp_name(p, ".gpkg" if add_layer else "")
        return _commit(
            p,
            lambda g: _stage_on_disk(gdf, fmt, p, str(layer), tmp, g),
            ledger,
            overwrite=overwrite or add_layer,
        )
    return _commit(p, data, ledger, overwrite=overwrite or add_layer)


def layer_set_paths(path: str | os.PathLike[str], names: Any) -> dict[str, Path]:
    """The files of a layer set written to ``path``: ``{name: path}``.

    One GeoPackage for all the layers (``path`` itself), or one GeoJSON file ``<stem>.<name><suffix>`` per
    layer.
    """
    p = Path(os.fspath(path))
    if p.suffix.lower() == ".gpkg":
        return {name: p for name in names}
    return {name: p.with_name(f"{p.stem}.{name}{p.suffix}") for name in names}


def write_layer_set(
    frames: dict[str, Any], path: str | os.PathLike[str], *, overwrite: bool = False
) -> list[Path]:
    """Write several frames as one unit: the layers of one GeoPackage, or one GeoJSON file per layer.

    Every file is complete under a temporary name before any is named, and the names are given through
    one commit record (see the module notes): a reader sees the old set or the new one, never a mix, and
    a write killed during the renames is finished by the next reader or writer of the set.

    Parameters
    ----------
    frames : dict of str to geopandas.GeoDataFrame
        The layers, by name (GeoPackage layer names, or the ``<name>`` of ``<stem>.<name>.geojson``).
    path : str or os.PathLike
        A ``.gpkg`` file, or a ``.geojson``/``.json`` path naming the set.
    overwrite : bool, default False
        Replace existing files (otherwise an existing one is an error, before anything is written).
    """
    caller = "write_layers"
    p = Path(os.fspath(path))
    suffix = p.suffix.lower()
    if suffix not in (".gpkg", ".geojson", ".json"):
        raise ValueError(f"{caller} writes .gpkg or .geojson files, not '{p.name}'.")
    if not frames:
        raise ValueError(f"{caller}: no layers to write.")
    for frame in frames.values():
        _check_gdf(frame, caller)
    targets = layer_set_paths(p, frames)
    files = list(dict.fromkeys(targets.values()))
    _safe_write.recover(p)  # an earlier write of the set interrupted after it was complete
    _check_names(files, caller)
    for target in files:
        _safe_write.check_output(target, overwrite=overwrite, what="output")
    with _write_errors(p, "files (if any) are"), _safe_write.group(overwrite=overwrite, unit=p) as g:
        if suffix == ".gpkg":
            _formats.pyogrio_module(caller)
            tmp = _safe_write.temp_name(p, ".gpkg")
            try:
                with _gdal_errors(p):
                    for i, (name, frame) in enumerate(frames.items()):
                        _gpkg_frame(_without_index(frame)).to_file(
                            tmp, driver="GPKG", layer=name, mode="a" if i else "w", engine="pyogrio"
                        )
            except BaseException:
                _remove_gpkg(tmp)
                raise
            g.add_file(tmp, p)  # the group owns it from here
        else:
            for name, frame in frames.items():
                g.add_bytes(targets[name], _geojson_bytes(_without_index(frame), member=True, caller=caller))
    return files


def to_geojson(
    gdf: Any, path: str | os.PathLike[str], *, ledger: bool | str = True, overwrite: bool = False
) -> Path:
    """Write a GeoDataFrame as RFC 7946 GeoJSON (WGS 84, lon/lat order) that QGIS opens directly.

    The file is written atomically (see the module notes): a reader sees the previous file or the complete
    new one, never a partial one.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        Any CRS (reprojected to EPSG:4326 for writing; a missing CRS is an error).
    path : str or os.PathLike
        Output file (``.geojson`` recommended).
    ledger : bool or "sidecar", default True
        ``True``: the frame's ledger becomes a top-level ``"geoldp"`` member of
        the FeatureCollection. ``"sidecar"``: it is written to ``<path>.ledger.json`` instead.
        ``False``: not written.
    overwrite : bool, default False
        Replace an existing file (and sidecar). Without it an existing file is an error.

    Returns
    -------
    pathlib.Path
        The GeoJSON file written.

    Raises
    ------
    TypeError
        Not a GeoDataFrame.
    ValueError
        No CRS (use ``set_crs()``), no active geometry column, an infinite number (or a NaN inside a list
        or dict cell, or in a coordinate), an existing file without ``overwrite=True``, a symlink at the
        path. Nothing is written then: the frame is serialised before any file is touched.

    Notes
    -----
    Feature ``id``: a frame's non-default index is written as each Feature's ``id``, except for a release
    (a frame with a geoldp ledger), which is written without ids, so that the gaps of a subset's index
    cannot show which rows were dropped. Keep an id as a column (``reset_index()``) to publish it.

    A missing value in a column (NaN, None, NaT, ``pd.NA``) is written as JSON ``null``.

    Examples
    --------
    >>> out.ldp.to_geojson("perturbed.geojson")  # doctest: +SKIP
    >>> geopandas.read_file("perturbed.geojson")  # doctest: +SKIP
    """
    caller = "to_geojson"
    _check_gdf(gdf, caller)
    if not (ledger is True or ledger is False or ledger == "sidecar"):
        raise ValueError(f"Got ledger={ledger!r}; `ledger` must be one of (True, False, 'sidecar').")
    side = ledger_of(gdf) if ledger == "sidecar" else None
    p = _check_outputs(path, overwrite=overwrite, sidecar=side is not None, caller=caller)
    data = _geojson_bytes(_without_index(gdf), member=ledger is True, caller=caller)
    return _commit(p, data, side, overwrite=overwrite)[0]  # one unit, as in write_file


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
                f"{source}: WKT column {wkt_col!r} not found. {_COLUMNS_UNQUOTED.format(len(cols))}"
            )
        values = df[wkt_col]
        try:
            geoms = shapely.from_wkt(values.astype(object).where(values.notna(), None).to_numpy())
        except shapely.errors.GEOSException:
            raise ValueError(f"{source}: column {wkt_col!r} holds text that is not valid WKT.") from None
        used = [wkt_col]
    elif lon_col is None or lat_col is None or lon_col not in df.columns or lat_col not in df.columns:
        raise ValueError(
            f"{source}: found neither a WKT column (one of {list(_WKT_NAMES)}) nor lon/lat columns (one of "
            f"{list(_LON_NAMES)} and one of {list(_LAT_NAMES)}). {_COLUMNS_UNQUOTED.format(len(cols))} "
            "Pass wkt_col= or lon_col=/lat_col= (command line: --wkt-col, --lon-col/--lat-col)."
        )
    else:
        lon = pd.to_numeric(df[lon_col], errors="coerce").to_numpy(dtype=np.float64)
        lat = pd.to_numeric(df[lat_col], errors="coerce").to_numpy(dtype=np.float64)
        geoms = shapely.points(lon, lat)
        geoms[np.isnan(lon) | np.isnan(lat)] = None
        used = [lon_col, lat_col]
    geometry = gpd.GeoSeries(geoms, index=df.index, crs=crs)
    return gpd.GeoDataFrame(df.drop(columns=used), geometry=geometry, crs=crs)


def _is_id_name(name: Any) -> bool:
    """``id``, ``trip_id``, ``user-id``, ``Track ID``...: columns read as text from CSV."""
    low = str(name).lower()
    return low == "id" or low.endswith(("_id", "-id", " id"))


def _read_csv(det: _formats.Detected, *, dtype: Any, id_cols: list[Any], caller: str) -> pd.DataFrame:
    name = det.path.name
    inner = det.path.name[: -len(det.path.suffix)] if det.compression else det.path.name
    sep = "\t" if inner.lower().endswith(".tsv") else ","
    # exact decimal -> float parsing (pandas >= 3 always does it; older pandas needs the option)
    extra: dict[str, Any] = (
        {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    )
    try:
        header = pd.read_csv(det.path, sep=sep, compression=det.compression, nrows=0)
        # identifiers keep their text ("000" stays "000"): the trajectory id column and *id-named columns
        types: Any = {c: str for c in header.columns if c in id_cols or _is_id_name(c)}
        if isinstance(dtype, dict):
            types.update(dtype)
        elif dtype is not None:
            types = dtype
        return pd.read_csv(det.path, sep=sep, compression=det.compression, dtype=types, **extra)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{caller}: '{name}' is empty (no header row); it holds no trajectories.") from None
    except (ValueError, TypeError, OSError, EOFError, UnicodeError, pd.errors.ParserError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        kind = type(exc).__name__
        raise ValueError(
            f"{caller}: '{name}' is not a readable CSV ({kind}: malformed rows, a bad dtype=, a corrupt "
            "compressed stream, or not UTF-8 text). Check the file; its contents are not quoted here."
        ) from None


#: GDAL's warnings that say nothing about the data read (see :func:`_gdal_read`)
_GDAL_NOTE = re.compile(
    r"File /vsimem/|Non-conformant content for record \d+ in column .*, successfully parsed$"
)


def _gdal_read(source: Any, *, layer: Any, name: str, fmt: str, caller: str) -> Any:
    """Read with pyogrio (bytes or a checked path), with no network, wrapping GDAL's errors."""
    pyogrio = _formats.pyogrio_module(caller)

    kwargs = {} if layer is None else {"layer": layer}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with _formats.no_network():
                if layer is not None:
                    layers = [str(n) for n in pyogrio.list_layers(source)[:, 0]]
                    if (isinstance(layer, str) and layer not in layers) or (
                        isinstance(layer, int) and not 0 <= layer < len(layers)
                    ):
                        raise KeyError(layer)
                gdf = pyogrio.read_dataframe(source, **kwargs)
        except KeyError:
            raise ValueError(
                f"{caller}: '{name}' has no layer {layer!r}; pass one of its layers as layer= "
                f"({len(layers)} layer(s) found)."
            ) from None
        except Exception:
            raise ValueError(
                f"{caller}: cannot read '{name}' as {fmt}: the file is malformed or truncated. GDAL's "
                "message is withheld because it can quote the file's contents; check the file with ogrinfo."
            ) from None
    # GDAL's notes about pyogrio's in-memory file name (no extension) say nothing about the data, nor do
    # its notes about a GeoPackage date-time with an offset other than UTC, which it read as written
    caught = [w for w in caught if not _GDAL_NOTE.match(str(w.message))]
    if caught:
        warnings.warn(
            f"GDAL reported {len(caught)} warning(s) while reading '{name}' (text withheld, it can quote the "
            "file's contents); check the file with ogrinfo.",
            GeoLDPWarning,
            stacklevel=4,
        )
    return gdf


def _sqlite_snapshot(path: Path, name: str, caller: str) -> bytes:
    """A consistent copy, as bytes, of a GeoPackage with its WAL applied (see :func:`_sqlite_copy`).

    Committed rows can still be in ``<file>-wal``, so the file's own bytes may miss them. GDAL gets the copy
    as bytes, as for the other single-file formats, and never opens a path.
    """
    import sqlite3

    try:
        data = bytearray(_sqlite_copy(path, ":memory:", lambda copy: copy.serialize()))
    except sqlite3.Error:
        raise ValueError(
            f"{caller}: cannot read a consistent copy of the GeoPackage '{name}': a writer holds it locked, "
            "or one stopped half-way and left a journal that only a writer may roll back. Wait for the "
            "writer (or open the file once in QGIS), then read it again."
        ) from None
    if data[68:72] not in (b"GPKG", b"GP10", b"GP11"):  # replaced since it was checked
        raise ValueError(f"{caller}: '{name}' changed while it was read; it is no longer a GeoPackage.")
    if data[18:20] == b"\x02\x02":  # the copy has no WAL: mark it as a rollback-journal database
        data[18:20] = b"\x01\x01"
    return bytes(data)


def _sql_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _check_gpkg_blobs(data: bytes, gdf: Any, *, layer: Any, name: str, caller: str) -> None:
    """Refuse a GeoPackage whose geometry blobs GDAL could not decode (it reads them as missing).

    A NULL geometry is a missing geometry (reported later with its row position); a non-NULL blob that
    decodes to nothing is a corrupt file, never a row without geometry.
    """
    try:
        missing = np.asarray(gdf.geometry.isna())
    except AttributeError:  # a table without geometry: reported by the callers
        return
    if not missing.any():
        return
    pyogrio = _formats.pyogrio_module(caller)
    kwargs = {} if layer is None else {"layer": layer}
    try:
        with warnings.catch_warnings(), _formats.no_network():
            warnings.simplefilter("ignore")  # GDAL's notes on the in-memory file name
            info = pyogrio.read_info(data, **kwargs)
            sql = (
                f"SELECT ({_sql_name(str(info['geometry_name']))} IS NOT NULL) AS geoldp_blob "
                f"FROM {_sql_name(str(info['layer_name']))}"
            )
            blobs = pyogrio.read_dataframe(data, sql=sql, read_geometry=False)["geoldp_blob"]
    except Exception:
        raise ValueError(
            f"{caller}: cannot read '{name}' as GPKG: the file is malformed (its geometries cannot be "
            "checked). Check the file with ogrinfo."
        ) from None
    present = np.asarray(blobs, dtype=bool)
    corrupt = np.flatnonzero(missing & present) if present.size == missing.size else np.array([0])
    if corrupt.size:
        raise ValueError(
            f"{caller}: '{name}' holds geometry data that is not a valid GeoPackage geometry (row position "
            f"{int(corrupt[0])}, {int(corrupt.size)} row(s) in all): the file is corrupt. Check it with "
            "ogrinfo, or regenerate it."
        )


def _read_gpx(data: bytes, name: str, caller: str) -> Any:
    """GPX tracks -> Point rows, one trajectory per track segment (``trajectory``), in time order."""
    _formats.check_xml(data, name, caller, root="gpx")  # the whole document: no DTD/entity, a <gpx> root
    pyogrio = _formats.pyogrio_module(caller)

    try:
        with _formats.no_network():
            layers = [str(n) for n in pyogrio.list_layers(data)[:, 0]]
    except Exception:
        raise ValueError(f"{caller}: cannot read '{name}' as GPX: the file is malformed.") from None
    if "track_points" not in layers:
        raise ValueError(
            f"{caller}: '{name}' has no track points; routes and waypoints are not trajectories."
        )
    pts = _gdal_read(data, layer="track_points", name=name, fmt="GPX", caller=caller)
    if len(pts) == 0:
        raise ValueError(
            f"{caller}: '{name}' has no track points (<trkpt>); routes and waypoints are not trajectories."
        )
    track = pts["track_fid"].astype("int64").astype(str)
    seg = pts["track_seg_id"].astype("int64").astype(str)
    pts = pts.assign(trajectory=(track + "-" + seg).to_numpy())
    order_cols = ["track_fid", "track_seg_id"] + (["time"] if "time" in pts.columns else [])
    pts = pts.sort_values([*order_cols, "track_seg_point_id"], kind="stable", na_position="last")
    keep = ["trajectory", *(["time"] if "time" in pts.columns else [])]
    rest = [c for c in pts.columns if c not in (*keep, pts.geometry.name)]
    rest = [c for c in rest if c not in ("track_fid", "track_seg_id", "track_seg_point_id")]
    return pts[[*keep, *rest, pts.geometry.name]].reset_index(drop=True)


def _read_any(path: str | os.PathLike[str], **kw: Any) -> tuple[Any, bytes | None]:
    """:func:`_read_frame`, with every library error on a malformed file turned into a ValueError.

    The error names the file; the library's message is withheld (GDAL, shapely, pyproj and the
    decompressors can quote the contents).
    """
    try:
        return _read_frame(path, **kw)
    except (ValueError, TypeError, OSError, MemoryError):
        raise
    except Exception as exc:
        name = os.fspath(path) if isinstance(path, str | os.PathLike) else type(path).__name__
        raise ValueError(
            f"{kw['caller']}: cannot read '{name}': the file is malformed or truncated "
            f"({type(exc).__name__}; its message is withheld because it can quote the file's contents). "
            "Check the file with the program that wrote it, or write it again."
        ) from None


def _check_read_args(*, allow_vsi: Any, layer: Any, crs: Any, caller: str) -> Any:
    """Check ``allow_vsi`` and ``layer`` of a read; return ``crs`` as a pyproj CRS (or None)."""
    if not isinstance(allow_vsi, bool):
        raise TypeError(
            f"The 'allow_vsi' parameter of {caller} must be a bool. Got {type(allow_vsi).__name__}."
        )
    if layer is not None and (isinstance(layer, bool) or not isinstance(layer, str | int)):
        raise TypeError(
            f"The 'layer' parameter of {caller} must be a layer name or index. Got {type(layer).__name__}."
        )
    if crs is not None:
        import pyproj

        try:
            crs = pyproj.CRS.from_user_input(crs)
        except (pyproj.exceptions.CRSError, TypeError, ValueError):
            raise ValueError(
                f"The 'crs' parameter of {caller} is not a CRS pyproj understands. Got {crs!r}; pass e.g. "
                "'EPSG:4326'."
            ) from None
    return crs


def _read_parquet(
    det: _formats.Detected, name: str, caller: str, table: Callable[[Any], Any]
) -> tuple[Any, bool]:
    """A (Geo)Parquet file as a frame, and whether it was a plain table (read through ``table``)."""
    import geopandas as gpd
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(det.path).metadata or {}
        if b"geo" in meta:
            return gpd.read_parquet(det.path), False
        # a plain Parquet table without GeoParquet metadata
        return table(pd.read_parquet(det.path)), True
    except (ValueError, TypeError, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(
            f"{caller}: cannot read '{name}' as (Geo)Parquet: the file is malformed or its geo "
            "metadata is invalid. Check the file; its contents are not quoted here."
        ) from None


def _read_gdal_bytes(det: _formats.Detected, *, layer: Any, name: str, caller: str) -> tuple[Any, bytes]:
    """A GeoPackage, GeoJSON, GPX or other GDAL file, read from a snapshot of its bytes: (frame, bytes)."""
    if det.fmt == "GPKG":
        raw = _sqlite_snapshot(det.path, name, caller)
    else:
        raw = _formats.read_regular(det.path, caller)
    if det.fmt == "GeoJSON":
        _formats.check_geojson_crs(raw, name, caller)
    if det.fmt == "GPX":
        return _read_gpx(raw, name, caller), raw
    gdf = _gdal_read(raw, layer=layer, name=name, fmt=det.fmt, caller=caller)
    if det.fmt == "GPKG":
        _check_gpkg_blobs(raw, gdf, layer=layer, name=name, caller=caller)
    return gdf, raw


def _with_crs(gdf: Any, crs: Any, name: str, caller: str) -> Any:
    """``gdf`` in ``crs`` (declared if it has none, else reprojected); unchanged for ``crs=None``."""
    if crs is None:
        return gdf
    try:
        if gdf.crs is None:
            gdf = gdf.set_crs(crs)
        elif not gdf.crs.equals(crs):
            gdf = gdf.to_crs(crs)
    except Exception:
        raise ValueError(
            f"{caller}: cannot use crs={crs!r} for '{name}'; pass a CRS pyproj understands "
            "(e.g. 'EPSG:4326')."
        ) from None
    return gdf


def _read_frame(
    path: str | os.PathLike[str],
    *,
    layer: Any,
    crs: Any,
    wkt_col: Any,
    lon_col: Any,
    lat_col: Any,
    caller: str,
    dtype: Any = None,
    id_cols: list[Any] | None = None,
    allow_vsi: bool = False,
) -> tuple[Any, bytes | None]:
    """The frame read from ``path`` and, for GeoJSON, the file's bytes (for its ledger member)."""
    crs = _check_read_args(allow_vsi=allow_vsi, layer=layer, crs=crs, caller=caller)
    if isinstance(path, str | os.PathLike):
        # a geoldp write of this file interrupted after it was complete (kill -9 between the renames of
        # its files): finish it, so that the file read is the new one, whole, with its own sidecar
        _safe_write.recover(path)
    det = _formats.detect(path, caller, allow_vsi=allow_vsi)
    table_crs = "EPSG:4326" if crs is None else crs
    raw: bytes | None = None
    if isinstance(det, str):  # allow_vsi=True: GDAL opens the virtual path itself
        gdf = _gdal_read(det, layer=layer, name=det, fmt="a GDAL dataset", caller=caller)
        name = det
    else:
        name = det.path.name

        def table(df: Any) -> Any:
            return _from_table(
                df,
                wkt_col=wkt_col,
                lon_col=lon_col,
                lat_col=lat_col,
                crs=table_crs,
                source=f"{caller} '{name}'",
            )

        if det.fmt == "CSV":
            return table(_read_csv(det, dtype=dtype, id_cols=list(id_cols or []), caller=caller)), None
        if det.fmt == "Parquet":
            gdf, plain = _read_parquet(det, name, caller, table)
            if plain:  # a table read through _from_table: as the CSV, returned as it is
                return gdf, None
        elif det.fmt == "Shapefile":
            gdf = _gdal_read(str(det.path.resolve()), layer=layer, name=name, fmt=det.fmt, caller=caller)
        else:
            gdf, raw = _read_gdal_bytes(det, layer=layer, name=name, caller=caller)
    if not _has_geometry(gdf):
        raise ValueError(
            f"{caller}: '{name}' has no geometry column (a plain table); geoldp reads Point or LineString "
            "features. Check the file (and layer=)."
        )
    return _with_crs(gdf, crs, name, caller), raw


def _has_geometry(gdf: Any) -> bool:
    """Whether a read frame is a GeoDataFrame with an active geometry column (a GPKG table may have none)."""
    import geopandas as gpd

    if not isinstance(gdf, gpd.GeoDataFrame):
        return False
    try:
        _ = gdf.geometry
    except AttributeError:
        return False
    return True


def _read_rows(path: Any, *, layer: Any, caller: str, **kw: Any) -> tuple[Any, bytes | None, Path]:
    """:func:`_read_any`, refusing a file with no rows; with the path as a Path."""
    gdf, raw = _read_any(path, layer=layer, caller=caller, **kw)
    p = Path(os.fspath(path))
    if len(gdf) == 0:
        where = f"layer {layer!r} of '{p.name}'" if layer is not None else f"'{p.name}'"
        raise ValueError(
            f"{caller}: {where} holds no rows, so there is nothing to read; check the file (and layer=)."
        )
    return gdf, raw, p


def _parse_time(gdf: Any, time_col: Any, caller: str) -> Any:
    col = gdf[time_col]
    _validation.check_time_kinds(col, time_col, caller=caller)
    numeric = pd.api.types.is_object_dtype(col) and pd.api.types.infer_dtype(col, skipna=True) in (
        "integer",
        "floating",
        "mixed-integer-float",
    )
    if not numeric and (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)):
        for fmt in ("ISO8601", "mixed"):  # ISO 8601 first: "mixed" guesses each value's format
            try:
                parsed = pd.to_datetime(col, format=fmt)
                break
            except (ValueError, TypeError):
                continue
        else:
            raise ValueError(f"{caller}: the time column {time_col!r} holds values that are not dates/times.")
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
    dtype: Any = None,
    ledger: str | os.PathLike[str] | bool = False,
    allow_vsi: bool = False,
) -> Any:
    """Read trajectories (LineString rows, or Point rows with a trajectory id) from a file.

    Parameters
    ----------
    path : str or os.PathLike
        A GeoJSON (``.geojson``/``.json``), GeoPackage (``.gpkg``), GeoParquet (``.parquet``), FlatGeobuf
        (``.fgb``), Shapefile (``.shp``), GPX (``.gpx``) or CSV/TSV file (``.csv``/``.tsv``/``.txt``, also
        compressed: ``.csv.gz``, ``.csv.bz2``, ``.csv.xz``, ``.csv.zip`` with one member). The content must
        match the suffix (a VRT named ``.geojson`` is refused). Tables (CSV, plain Parquet) need a WKT column
        (``geometry``, ``wkt``, ``geom``) or lon/lat columns (``lon``/``lng``/``longitude``/``x`` and
        ``lat``/``latitude``/``y``). A GPX file gives one Point row per track point, with a ``trajectory``
        column (one value per track segment) and a ``time`` column, in time order: pass
        ``traj_id_col="trajectory", time_col="time"`` to ``perturb`` or to
        :func:`geoldp.prepare.trajectories_from_points`.
    traj_id_col, time_col : column label, optional
        Checked to exist (``ValueError`` listing the available columns); a text ``time_col`` is parsed as
        datetimes. From CSV, ``traj_id_col`` and columns named ``id``/``*_id`` are read as text (``"000"``
        stays ``"000"``).
    layer : str or int, optional
        Layer of a multi-layer file (GeoPackage).
    crs : optional
        For CSV / plain Parquet: the CRS of the coordinates, default ``"EPSG:4326"`` (lon/lat degrees).
        For other formats: declared if the file has none, otherwise the data are reprojected to it.
    wkt_col, lon_col, lat_col : column label, optional
        Override the column auto-detection for tables.
    dtype : dtype or dict, optional
        CSV only: passed to :func:`pandas.read_csv`, overriding the text default of the id columns.
    ledger : bool or path, default False
        The sidecar ledger to attach to the frame: ``True`` reads ``<path>.ledger.json``, a path
        reads that file (both validated and checked against this data file). A GeoJSON's own ``"geoldp"``
        member is attached in any case; no other file is read unless asked for.
    allow_vsi : bool, default False
        Let GDAL open a ``/vsi*`` path, ``zip://`` URI or driver-prefixed name (local virtual file systems
        only; network paths are always refused). Such paths skip the content check: use only with files you
        trust.

    Returns
    -------
    geopandas.GeoDataFrame
        With its ledger (:func:`geoldp.ledger_of`) when the file carries one (see :func:`read_ledger`), as
        on a release: combining two different read-back releases warns.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        A refused path or format (VRT, archive, URL, a legacy GeoJSON ``crs`` link), a name that disagrees
        with the content, a malformed file, a file with no rows, unknown columns, a malformed ledger.

    Examples
    --------
    >>> trips = geoldp.io.read_trajectories("trips.csv", traj_id_col="trip", time_col="t")  # doctest: +SKIP
    """
    caller = "read_trajectories"
    if not (isinstance(ledger, bool | str | os.PathLike)):
        raise TypeError(
            f"The 'ledger' parameter of {caller} must be a bool or a path. Got {type(ledger).__name__}."
        )
    gdf, raw, p = _read_rows(
        path,
        layer=layer,
        crs=crs,
        wkt_col=wkt_col,
        lon_col=lon_col,
        lat_col=lat_col,
        caller=caller,
        dtype=dtype,
        id_cols=[traj_id_col] if traj_id_col is not None else [],
        allow_vsi=allow_vsi,
    )
    name = p.name
    missing = [str(c) for c in (traj_id_col, time_col) if c is not None and c not in gdf.columns]
    if missing:  # the file's own names are not listed: without a header row they are a row of data
        raise ValueError(
            f"The 'traj_id_col/time_col' parameter of {caller} names columns that are not in '{name}': "
            f"{missing}. {_COLUMNS_UNQUOTED.format(len(gdf.columns))}"
        )
    if time_col is not None:
        gdf = _parse_time(gdf, time_col, caller)
    found = None
    if raw is not None and p.suffix.lower() in {".geojson", ".json"}:
        found = _member_ledger(raw, name, caller)
    if ledger is not False:
        side = ledger_path(p) if ledger is True else Path(os.fspath(ledger))
        if ledger is True and not os.path.lexists(side):
            raise FileNotFoundError(f"{caller}: ledger=True but there is no sidecar '{side}'.")
        found = _read_sidecar(side, p, caller)
    # attached as on the release itself: pd.concat of two different read-back releases warns
    gdf.attrs = {}
    attach(gdf, found)
    return gdf


def read_points(
    path: str | os.PathLike[str],
    *,
    layer: Any = None,
    crs: Any = None,
    wkt_col: Any = None,
    lon_col: Any = None,
    lat_col: Any = None,
    allow_vsi: bool = False,
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
        A missing or empty geometry (names the row position), a file with no rows, and the reading errors
        of :func:`read_trajectories`.
    """
    import shapely

    caller = "read_points"
    gdf, _, p = _read_rows(
        path,
        layer=layer,
        crs=crs,
        wkt_col=wkt_col,
        lon_col=lon_col,
        lat_col=lat_col,
        caller=caller,
        allow_vsi=allow_vsi,
    )
    geoms = np.asarray(gdf.geometry.values, dtype=object)
    checks: tuple[tuple[Callable[[Any], Any], type[Exception], str], ...] = (
        (shapely.is_missing, ValueError, "has a missing geometry"),
        (lambda g: shapely.get_type_id(g) != 0, TypeError, "is not a Point; public points must be Points"),
        (shapely.is_empty, ValueError, "is an empty Point"),
    )
    for bad, error, what in checks:  # in this order: a missing geometry has no type
        pos = np.flatnonzero(bad(geoms))
        if pos.size:
            raise error(f"{caller}: row position {int(pos[0])} of '{p.name}' {what}.")
    return gdf


#: The largest report table read (a 10^6-row OUE table over 10^3 zones is about 260 MB).
MAX_REPORT_TABLE_BYTES = 4 << 30


# --------------------------------------------------------------------------------------------------
# a report table (geoldp.report) as a file: CSV with its ledger
# --------------------------------------------------------------------------------------------------


def _report_table_csv(table: Any) -> bytes:
    """A report table as CSV bytes.

    Rows in table order without the index (as every release file), OUE bit vectors in hexadecimal, a
    missing report an empty cell.
    """
    out = pd.DataFrame(index=pd.RangeIndex(len(table)))
    for col in table.columns:
        values = table[col]
        if col == "bits":
            out[col] = [None if b is None else bytes(b).hex() for b in values.to_numpy()]
        else:
            out[col] = values.to_numpy()
    return out.to_csv(index=False).encode("utf-8")


def read_report_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a report table (:func:`geoldp.report`) written by :func:`write_file`, with its ledger checked.

    Parameters
    ----------
    path : str or os.PathLike
        The CSV file (``geoldp report`` writes the same), with its sidecar ``<path>.ledger.json``.

    Returns
    -------
    pandas.DataFrame
        The table as :func:`geoldp.report` returned it, with its ledger (:func:`geoldp.ledger_of`).

    Raises
    ------
    ValueError
        No ledger sidecar, a sidecar of another file version, a ledger that is not a report's, or cells
        that the ledger's oracle cannot have produced (the message names the row).
    """
    from geoldp.mechanisms import oracles

    p = Path(os.fspath(path))
    caller = "read_report_table"
    ledger = read_ledger(p)
    if ledger is None or ledger.mechanism != "report":
        raise ValueError(
            f"'{p}' has no report ledger ({p.name}.ledger.json): write report tables with "
            "geoldp.io.write_file or geoldp report"
        )
    try:  # the oracle over the domain the ledger records, at each budget of the table
        name, d = str(ledger.settings["oracle"]), int(ledger.settings["domain"]["size"])
        o = oracles.oracle(name, d, ledger.epsilon)
        epsilons = ledger.part_epsilons  # a user_budget='split' table: one oracle per epsilon part
        parts = {eps: oracles.oracle(name, d, eps) for eps in epsilons or ()}
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"the ledger of '{p}' is not a complete report ledger ({' '.join(str(exc).split())}); "
            "regenerate the release"
        ) from None
    data = _formats.read_regular(p, caller, limit=MAX_REPORT_TABLE_BYTES)
    want = {"krr": ["report"], "olh": ["seed", "report"], "oue": ["bits"]}[o.name]
    if epsilons is not None:
        want = [*want, "epsilon"]
    raw = pd.read_csv(_stdio.BytesIO(data), dtype=dict.fromkeys(want, str), keep_default_na=False)
    if list(raw.columns) != want:
        raise ValueError(f"'{p}' has columns {list(raw.columns)[:5]}; a {o.name} report table has {want}")
    table = pd.DataFrame(index=pd.RangeIndex(len(raw)))
    row_eps = g_of_row = None
    if epsilons is not None:
        row_eps = _row_epsilons(raw, epsilons, p)
        if o.name == "olh":  # OLH's hash range depends on each part's budget
            g_of_row = np.zeros(len(raw), dtype=np.int64)
            for eps, part in parts.items():
                g_of_row[row_eps == eps] = part.g
    if o.name == "oue":
        table["bits"] = _oue_cells(raw["bits"].to_numpy(), o.d, p)
    else:
        top = {"report": o.g if o.name == "olh" else o.d, "seed": 1 << 32}
        for col in (c for c in want if c != "epsilon"):
            limit = g_of_row if (col == "report" and g_of_row is not None) else top[col]
            table[col] = _integer_cells(raw[col].to_numpy(), col, limit, p)
    if epsilons is not None:
        table["epsilon"] = row_eps
    attach(table, ledger)
    return table


def _row_epsilons(raw: Any, epsilons: Any, p: Path) -> Any:
    """The ``epsilon`` column of a split table, each a budget of its ledger (else the row is named)."""
    try:  # Python's float(): the exact value written (repr), unlike a fast CSV float parser
        row_eps = np.array([float(t) for t in raw["epsilon"].to_numpy()], dtype=np.float64)
    except ValueError:
        row_eps = np.full(len(raw), np.nan)
    unknown = ~np.isin(row_eps, np.asarray(epsilons, dtype=np.float64))
    if unknown.any():
        raise ValueError(
            f"row {int(np.argmax(unknown))} of '{p}': 'epsilon' is not one of the budgets in its ledger"
        )
    return row_eps


def _oue_cells(cells: Any, d: int, p: Path) -> Any:
    """OUE bit vectors from their hexadecimal cells (an empty cell: no report), one bytes object per row."""
    width = (d + 7) // 8
    bits = np.full(len(cells), None, dtype=object)
    for i, text in enumerate(cells):  # one bytes object per row is the table's own layout
        if text == "":
            continue
        if len(text) != 2 * width:
            raise ValueError(f"row {i} of '{p}' is not a {d}-bit OUE report ({width} bytes in hex)")
        try:
            bits[i] = bytes.fromhex(text)
        except ValueError:
            raise ValueError(f"row {i} of '{p}' is not hexadecimal") from None
    return bits


def _integer_cells(text: Any, col: str, limit: Any, p: Path) -> Any:
    """A column of integers in ``[0, limit)`` (``limit`` a number or one per row); empty cells missing."""
    ok = text != ""
    digits = np.char.isdigit(text.astype(str)) | ~ok
    if not digits.all():
        raise ValueError(f"row {int(np.argmin(digits))} of '{p}': column {col!r} must hold integers")
    values = text[ok].astype(np.int64)
    bound = limit[ok] if isinstance(limit, np.ndarray) else limit
    bad = np.flatnonzero(values >= bound)
    if bad.size:
        raise ValueError(f"row {int(np.flatnonzero(ok)[bad[0]])} of '{p}': {col!r} is outside its domain")
    full = pd.array(np.zeros(len(text), dtype=np.int64), dtype="Int64")
    full[:] = pd.NA
    full[ok] = values
    return full if not ok.all() else np.asarray(full, dtype=np.int64)
