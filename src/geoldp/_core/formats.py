"""Which files geoldp reads, and how it checks them before any parser sees them.

Reading is restricted to an allow-list of formats (GeoJSON, GeoPackage, GeoParquet, FlatGeobuf, Shapefile,
GPX, CSV and CSV compressed with gzip/bz2/xz/zip). The format is taken from the file name *and* checked
against the content (magic bytes / sniffing): a VRT or any other indirection (a file that makes GDAL open
other files or URLs) is refused whatever it is called. Paths that GDAL would interpret (``/vsi*``, URLs,
``zip://``, ``archive.zip!member``, ``DRIVER:`` prefixes) are refused unless ``allow_vsi=True``, and network
file systems are refused always.

Single-file formats are read by geoldp itself (a regular file, opened by name) and handed to GDAL as bytes,
so GDAL never opens a path. GeoJSON ``crs`` members are checked first: only a named CRS with a local
definition (``urn:ogc:def:crs:...`` or ``EPSG:n``) is accepted; a legacy ``link`` CRS (which GDAL would
fetch over HTTP) is an error. While GDAL runs, its HTTP options are set so that nothing is fetched.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "FORMATS",
    "WRITE_FORMATS",
    "Detected",
    "check_geojson_crs",
    "check_xml",
    "detect",
    "no_network",
    "pyogrio_module",
    "read_regular",
]

#: Allowed formats by name suffix.
FORMATS = {
    ".geojson": "GeoJSON",
    ".json": "GeoJSON",
    ".gpkg": "GPKG",
    ".parquet": "Parquet",
    ".geoparquet": "Parquet",
    ".pq": "Parquet",
    ".fgb": "FlatGeobuf",
    ".shp": "Shapefile",
    ".gpx": "GPX",
    ".csv": "CSV",
    ".tsv": "CSV",
    ".txt": "CSV",
}
#: The estimate layers of ``geoldp.layers.estimate_layers``, in the order they are written (here, so that
#: the command line can name them without importing GeoPandas).
ESTIMATE_LAYERS = ("zone_visits", "od_flows", "hotspots", "point_visits", "range_counts")
#: Output formats of ``geoldp.io.write_file``, by file suffix (here, so that the command line can name them
#: without importing GeoPandas).
WRITE_FORMATS = {
    ".geojson": "GeoJSON",
    ".json": "GeoJSON",
    ".gpkg": "GPKG",
    ".parquet": "Parquet",
    ".geoparquet": "Parquet",
    ".csv": "CSV",
    ".shp": "ESRI Shapefile",
    ".fgb": "FlatGeobuf",
}
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip"}
_MAGIC = {"gzip": b"\x1f\x8b", "bz2": b"BZh", "xz": b"\xfd7zXZ\x00", "zip": b"PK\x03\x04"}
_SIGNATURES = {**_MAGIC, "Parquet": b"PAR1", "FlatGeobuf": b"fgb\x03fgb", "Shapefile": b"\x00\x00\x27\x0a"}
_NETWORK_VSI = (
    "/vsicurl",
    "/vsis3",
    "/vsigs",
    "/vsiaz",
    "/vsiadls",
    "/vsioss",
    "/vsiswift",
    "/vsihdfs",
    "/vsiwebhdfs",
)
_HEAD = 4096
#: Largest ledger or GeoJSON document parsed in Python to check its members.
MAX_LEDGER_BYTES = 16 << 20

_NO_NETWORK_OPTIONS = {
    "CPL_VSIL_CURL_ALLOWED_EXTENSIONS": ".geoldp-never",
    "CPL_VSIL_CURL_ALLOWED_FILENAME": "/geoldp-never",
    "GDAL_HTTP_MAX_RETRY": "0",
    "GDAL_HTTP_TIMEOUT": "1",
    "GDAL_HTTP_CONNECTTIMEOUT": "1",
    "GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
}


class Detected:
    """The outcome of :func:`detect`: ``fmt`` (a FORMATS value) and ``compression`` (or None)."""

    __slots__ = ("compression", "fmt", "path")

    def __init__(self, path: Path, fmt: str, compression: str | None) -> None:
        self.path, self.fmt, self.compression = path, fmt, compression


def _by_name(p: Path, caller: str) -> tuple[str, str | None]:
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] in COMPRESSIONS:
        if len(suffixes) >= 2 and FORMATS.get(suffixes[-2]) == "CSV":
            return "CSV", COMPRESSIONS[suffixes[-1]]
        raise ValueError(
            f"{caller}: '{p.name}' is an archive or a compressed file; geoldp reads compressed CSV only "
            f"(.csv.gz, .csv.bz2, .csv.xz, .csv.zip). Extract the file first, or name a compressed CSV "
            "'<name>.csv.<gz|bz2|xz|zip>'."
        )
    fmt = FORMATS.get(suffixes[-1]) if suffixes else None
    if fmt is None:
        raise ValueError(
            f"{caller}: cannot tell the format of '{p.name}' from its name; geoldp reads "
            f"{', '.join(sorted(FORMATS))} (CSV also as .csv.gz, .csv.bz2, .csv.xz, .csv.zip). "
            "Rename the file with the suffix of its format."
        )
    return fmt, None


def _sniff(head: bytes) -> str:
    """What the first bytes of a file look like."""
    if not head:
        return "empty"
    for name, magic in _SIGNATURES.items():
        if head.startswith(magic):
            return name
    if head.startswith(b"SQLite format 3\x00"):
        app = head[68:72]
        return "GPKG" if app in (b"GPKG", b"GP10", b"GP11") else "SQLite"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"<"):
        low = text.lower()
        if b"<ogrvrtdatasource" in low or b"<vrt" in low:
            return "VRT"
        if b"<gpx" in low:
            return "GPX"
        return "XML"
    if text.startswith((b"{", b"[")):
        return "JSON"
    if b"\x00" in head:
        return "binary"
    return "text"


_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)://")
_DRIVER_PREFIX = re.compile(r"^[a-z][a-z0-9_]+:")
_LOCAL_SCHEMES = {"file", "zip", "tar", "gzip"}


def _is_virtual(low: str) -> bool:
    return low.startswith("/vsi") or _SCHEME.match(low) is not None or _DRIVER_PREFIX.match(low) is not None


def _refuse_path(text: str, *, allow_vsi: bool, caller: str) -> None:
    low = text.lower()
    scheme = _SCHEME.match(low)
    if low.startswith(_NETWORK_VSI) or (scheme and not set(scheme.group(1).split("+")) <= _LOCAL_SCHEMES):
        raise ValueError(
            f"{caller}: '{text}' is a URL or a network path; geoldp never reads over the network. "
            "Download the file and pass its local path."
        )
    if _is_virtual(low) and not allow_vsi:
        raise ValueError(
            f"{caller}: '{text}' is a GDAL virtual path, an archive member or a driver-prefixed name; "
            "geoldp reads only a plain file path. Pass allow_vsi=True to let GDAL open it (local "
            "virtual file systems only), or extract the file."
        )


def _open_regular(path: Path | str, caller: str, limit: int | None = None) -> int:
    """A non-blocking read-only descriptor of the regular file ``path`` (checked with ``os.stat`` first)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{caller}: no such file: '{path}'.") from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(
            f"{caller}: '{path}' is not a regular file (a directory, FIFO or device); name a file."
        )
    if limit is not None and st.st_size > limit:
        raise ValueError(f"{caller}: '{path}' is larger than {limit} bytes; that is not a geoldp ledger.")
    return os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))


def read_regular(path: Path, caller: str, *, limit: int | None = None) -> bytes:
    """The bytes of a regular file (checked with ``os.stat`` before opening; opened non-blocking)."""
    fd = _open_regular(path, caller, limit)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between the two checks
            raise ValueError(f"{caller}: '{path}' is not a regular file; name a file.")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read() if limit is None else fh.read(limit + 1)
    finally:
        os.close(fd)
    if limit is not None and len(data) > limit:
        raise ValueError(f"{caller}: '{path}' is larger than {limit} bytes; that is not a geoldp ledger.")
    return data


def detect(path: Any, caller: str, *, allow_vsi: bool = False) -> Detected | str:
    """Check a path to read; return its :class:`Detected` format, or the path text for a VSI path.

    ``ValueError`` for a refused path or format, a name that disagrees with the content, a non-regular file.
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"{caller}: the path must be a str or os.PathLike. Got {type(path).__name__}.")
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    _refuse_path(text, allow_vsi=allow_vsi, caller=caller)
    if _is_virtual(text.lower()):  # allowed by allow_vsi=True: GDAL opens it (no content check)
        return text
    p = Path(text)
    fmt, compression = _by_name(p, caller)
    fd = _open_regular(text, caller)
    try:
        head = os.read(fd, _HEAD)
    finally:
        os.close(fd)
    seen = _sniff(head)
    expected = compression or fmt
    if compression is None and fmt == "CSV":
        ok = seen in ("text", "empty")
    else:
        ok = seen == expected or (fmt == "GeoJSON" and seen == "JSON")
    if not ok:
        what = {"VRT": "a GDAL VRT (a file that points at other files)", "text": "plain text"}.get(seen, seen)
        raise ValueError(
            f"{caller}: '{p.name}' is named like {expected} but its content is {what}; geoldp reads only "
            "the format its name says and never follows VRT or other indirections. Rename or convert it."
        )
    if compression == "zip":
        with zipfile.ZipFile(p) as zf:
            names = [n for n in zf.namelist() if not n.endswith("/")]
        if len(names) != 1 or FORMATS.get(Path(names[0]).suffix.lower()) != "CSV":
            raise ValueError(
                f"{caller}: the zip archive '{p.name}' must hold exactly one .csv/.tsv/.txt file; extract "
                "the member you want instead."
            )
    if fmt == "Shapefile":
        if "!" in text:
            raise ValueError(f"{caller}: a Shapefile path must not contain '!'; rename '{p.name}'.")
        for part in (".shx", ".dbf"):
            if not (p.with_suffix(part).is_file() or p.with_suffix(part.upper()).is_file()):
                raise ValueError(f"{caller}: the Shapefile '{p.name}' has no {part} file next to it.")
    return Detected(p, fmt, compression)


# a "crs" key in any letter case, or any short key written with \u escapes (which could spell "crs")
_CRS_KEY = re.compile(rb'"[cC][rR][sS]"|"(?:[^"\\\n]|\\.){0,64}\\u[0-9a-fA-F]{4}(?:[^"\\\n]|\\.){0,64}"\s*:')
_CRS_NAME = re.compile(r"^(urn:ogc:def:crs:[A-Za-z0-9.:_-]+|EPSG:\d+|OGC:CRS84)$", re.IGNORECASE)


def _check_crs_member(value: Any, where: str, name: str, caller: str) -> None:
    ok = (
        isinstance(value, dict)
        and str(value.get("type", "")).lower() == "name"
        and isinstance(value.get("properties"), dict)
        and isinstance(value["properties"].get("name"), str)
        and _CRS_NAME.match(value["properties"]["name"]) is not None
    )
    if value is not None and not ok:
        kind = value.get("type") if isinstance(value, dict) else type(value).__name__
        raise ValueError(
            f"{caller}: '{name}' has a legacy GeoJSON 'crs' member ({where}, type {str(kind)[:20]!r}) that "
            "is not a local CRS name; geoldp never fetches CRS definitions (no network). Remove the member "
            "(RFC 7946 GeoJSON is WGS 84) or use a named CRS such as 'urn:ogc:def:crs:EPSG::4326'."
        )


def check_geojson_crs(data: bytes, name: str, caller: str) -> None:
    r"""Refuse a GeoJSON whose ``crs`` members (top level, features, geometries) are not local CRS names.

    GDAL looks members up case-insensitively and json decodes ``\u`` escapes, so the document is parsed
    whenever a ``crs`` key could be present in any spelling.
    """
    if _CRS_KEY.search(data) is None:
        return
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        raise ValueError(f"{caller}: '{name}' is not valid JSON; check the file.") from None
    stack: list[tuple[Any, str]] = [(doc, "top level")]
    while stack:
        obj, where = stack.pop()
        if isinstance(obj, dict):
            for key, value in obj.items():
                if isinstance(key, str) and key.lower() == "crs":
                    _check_crs_member(value, where, name, caller)
            for key in ("features", "geometry", "geometries"):
                child = obj.get(key)
                if isinstance(child, list):
                    stack.extend((c, f"in {key}") for c in child)
                elif isinstance(child, dict):
                    stack.append((child, f"in {key}"))
        elif isinstance(obj, list):
            stack.extend((c, where) for c in obj)


class _Refused(Exception):
    """Raised inside the expat handlers of :func:`check_xml` (``"root"``: another document element)."""


_XML_CHUNK = 1 << 16


def check_xml(data: bytes, name: str, caller: str, *, root: str | None = None) -> None:
    """Refuse an XML document (GPX) with a DTD or an entity anywhere in it, or that is not well formed.

    The whole document is streamed through the standard library's expat parser (no tree is built) before
    GDAL sees it: a DOCTYPE declaration (internal subset or external DTD), any entity or notation
    declaration, and any external or parameter entity are refused wherever they appear, and parameter
    entities are never parsed. A reference to an undeclared entity is not well formed. So no entity is
    ever expanded and no other file or URL is ever read, however far into the file the declaration sits.
    With ``root``, the document element must have that name (with or without a namespace prefix), so a
    VRT or other GDAL document behind a long comment is never handed to GDAL as a GPX.
    """
    import xml.parsers.expat as expat

    def refuse(*_: Any) -> Any:
        raise _Refused

    seen: list[str] = []

    def on_start(tag: str, _attrs: Any) -> None:
        if not seen:
            seen.append(tag)
            if root is not None and tag.rpartition(":")[2] != root:
                raise _Refused("root")

    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.UnparsedEntityDeclHandler = refuse
    parser.NotationDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.StartElementHandler = on_start
    try:
        for start in range(0, len(data), _XML_CHUNK):
            parser.Parse(data[start : start + _XML_CHUNK], False)
        parser.Parse(b"", True)
    except _Refused as exc:
        if exc.args:
            raise ValueError(
                f"{caller}: '{name}' is XML but its document element is not <{root}>; geoldp reads only "
                f"{root.upper() if root else 'XML'} documents under that name. Rename or convert it."
            ) from None
        raise ValueError(
            f"{caller}: '{name}' declares a DOCTYPE, a DTD or XML entities; geoldp refuses them anywhere in "
            "the file (they can make the parser read other files or expand without bound). Remove the "
            "declaration."
        ) from None
    except (expat.ExpatError, ValueError, RecursionError, MemoryError):
        raise ValueError(
            f"{caller}: '{name}' is not well-formed XML (or uses an entity it does not declare); check the "
            "file. Its contents are not quoted here."
        ) from None


def pyogrio_module(caller: str) -> Any:
    """The pyogrio module, or an ImportError saying how to install it."""
    try:
        import pyogrio
    except ImportError:
        raise ImportError(
            f"{caller}: reading and writing GeoJSON, GeoPackage, FlatGeobuf, Shapefile and GPX needs "
            "pyogrio; "
            'install it with: pip install "geoldp[io]"'
        ) from None
    return pyogrio


@contextlib.contextmanager
def no_network() -> Iterator[None]:
    """Set GDAL's HTTP options so that nothing is fetched, for the duration of the block."""
    pyogrio = pyogrio_module("geoldp")

    old = {name: pyogrio.get_gdal_config_option(name) for name in _NO_NETWORK_OPTIONS}
    pyogrio.set_gdal_config_options(_NO_NETWORK_OPTIONS)
    try:
        yield
    finally:
        pyogrio.set_gdal_config_options(old)
