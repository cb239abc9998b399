"""ATP's public tables kept on disk, so that later processes (CLI runs, workers) reuse them.

A table of :mod:`geoldp.trajectory._atp_table` is a function of the point set P and public options only
(never of trajectories), so it may outlive the call that built it, like P itself. This module keeps it in
a per-user cache folder, one file per (P, options), named by a digest of P's coordinates, the options and
the kernels' source fingerprint:

``<cache>/atp-tables/<name>.atptable``
    ``MAGIC``, an 8-byte header length, a JSON header (format, P's digest, the options, the source
    fingerprint, the table's shape, the SHA-256 of the payload) and the float64 payload.
``<cache>/atp-tables/<name>.demand``
    How many ATP copies the calls over (P, options) have asked for so far (JSON with its own SHA-256):
    the table is built once these calls repay it, counted across calls and processes. Twice the number of
    trajectories released, which every release shows: nothing about the data.

Files are written atomically (:mod:`geoldp._core.safe_write`). On read, a file that does not parse, whose
checksum does not match, or that describes another P, other options or other kernels is ignored with a
:class:`~geoldp.GeoLDPWarning` and rebuilt; nothing in it is trusted before these checks, and it
holds numbers only (no pickle). ``<cache>`` is ``$GEOLDP_CACHE_DIR`` or the user's cache folder
(``~/.cache/geoldp`` on Linux); ``GEOLDP_TABLE_CACHE=0`` turns the disk cache off.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import struct
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from geoldp._core.errors import GeoLDPWarning
from geoldp._core.numba_cache import source_fingerprint
from geoldp._core.safe_write import write_bytes

__all__ = ["ENABLED", "DemandCounts", "add_demand", "cache_dir", "load", "points_digest", "save"]


class DemandCounts(dict):
    """Counts of ATP copies asked for per (P, options): twice each call's (released) trajectory count.

    The only state a release leaves behind besides public structures of P.
    """


MAGIC = b"GEOLDP-ATP-TABLE\n"
FORMAT = 1
#: [False] turns the disk cache off (tests compare both routes)
ENABLED = [os.environ.get("GEOLDP_TABLE_CACHE", "1") != "0"]
# demand counts not yet written: path -> (count on disk when read, copies added since, time of last write)
_DEMAND: DemandCounts = DemandCounts()
_LOCK = threading.Lock()
_WRITE_EVERY_S = 1.0


def cache_dir() -> Path | None:
    """The folder of the kept tables (``None`` when the disk cache is off)."""
    if not ENABLED[0]:
        return None
    base = os.environ.get("GEOLDP_CACHE_DIR")
    if base:
        return Path(base) / "atp-tables"
    if sys.platform == "win32":
        root = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        root = str(Path.home() / "Library" / "Caches")
    else:
        root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "geoldp" / "atp-tables"


@functools.lru_cache(maxsize=1)
def _fingerprint() -> str:
    return source_fingerprint()


def points_digest(lam: np.ndarray, phi: np.ndarray) -> str:
    """SHA-256 of P's coordinates (radians, float64, in P's order)."""
    h = hashlib.sha256()
    h.update(struct.pack("<q", lam.shape[0]))
    h.update(np.ascontiguousarray(lam, dtype="<f8").tobytes())
    h.update(np.ascontiguousarray(phi, dtype="<f8").tobytes())
    return h.hexdigest()


def _header_key(digest: str, key: tuple) -> dict:
    return {"format": FORMAT, "points": digest, "options": list(key), "kernels": _fingerprint()}


def _other_key(record: dict, digest: str, key: tuple) -> bool:
    return {k: record.get(k) for k in ("format", "points", "options", "kernels")} != _header_key(digest, key)


def _write(path: Path, data: bytes) -> None:
    try:  # atomic; a failure to write only costs a later rebuild
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(path, data, overwrite=True)
    except OSError:
        return


def _path(digest: str, key: tuple, suffix: str) -> Path | None:
    folder = cache_dir()
    if folder is None:
        return None
    name = hashlib.sha256(json.dumps(_header_key(digest, key), sort_keys=True).encode()).hexdigest()[:32]
    return folder / f"{name}{suffix}"


def _ignore(path: Path, why: str) -> None:
    warnings.warn(
        f"geoldp ignored the kept ATP table {path} ({why}); it is rebuilt. Nothing is read from it.",
        GeoLDPWarning,
        stacklevel=4,
    )


def load(digest: str, key: tuple, m: int) -> np.ndarray | None:
    """The kept table of (P, options), |P| = ``m``, if a valid file holds it, else ``None``.

    A bad file: a warning. The caller checks the width against the bands of ``key``.
    """
    path = _path(digest, key, ".atptable")
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _ignore(path, f"unreadable: {exc.strerror}")
        return None
    try:
        if not data.startswith(MAGIC):
            raise ValueError("not an ATP table file")
        (n,) = struct.unpack_from("<Q", data, len(MAGIC))
        start = len(MAGIC) + 8
        if n > 1 << 16 or start + n > len(data):
            raise ValueError("truncated header")
        header = json.loads(data[start : start + n].decode("utf-8"))
        if not isinstance(header, dict):
            raise ValueError("malformed header")
        payload = data[start + n :]
        if _other_key(header, digest, key):
            raise ValueError("made for another point set, other options or another geoldp version")
        shape = header.get("shape")
        if (
            not isinstance(shape, list)
            or len(shape) != 2
            or shape[0] != m
            or type(shape[1]) is not int
            or len(payload) != 8 * m * shape[1]
        ):
            raise ValueError("wrong size")
        if header.get("sha256") != hashlib.sha256(payload).hexdigest():
            raise ValueError("checksum mismatch")
    except (ValueError, struct.error, UnicodeDecodeError) as exc:
        _ignore(path, str(exc))
        return None
    table = np.frombuffer(payload, dtype="<f8").reshape(m, shape[1]).astype(np.float64)
    table.setflags(write=False)
    return table


def save(digest: str, key: tuple, table: np.ndarray) -> None:
    """Keep ``table`` for later processes (atomic; a failure to write only costs a later rebuild)."""
    path = _path(digest, key, ".atptable")
    if path is None:
        return
    payload = np.ascontiguousarray(table, dtype="<f8").tobytes()
    header = dict(_header_key(digest, key), shape=list(table.shape))
    header["sha256"] = hashlib.sha256(payload).hexdigest()
    head = json.dumps(header, sort_keys=True).encode()
    _write(path, MAGIC + struct.pack("<Q", len(head)) + head + payload)


def _read_demand(path: Path, digest: str, key: tuple) -> int:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        body = record["body"]
        if record.get("sha256") != hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest():
            raise ValueError("checksum mismatch")
        if _other_key(body, digest, key):
            raise ValueError("made for another point set or other options")
        copies = body["copies"]
        if type(copies) is not int or copies < 0:
            raise ValueError("malformed count")
        return copies
    except FileNotFoundError:
        return 0
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        _ignore(path, str(exc))
        return 0


def _write_demand(path: Path, digest: str, key: tuple, copies: int) -> None:
    body = dict(_header_key(digest, key), copies=int(copies))
    text = json.dumps(body, sort_keys=True)
    record = {"body": body, "sha256": hashlib.sha256(text.encode()).hexdigest()}
    _write(path, json.dumps(record, sort_keys=True).encode())


def add_demand(digest: str, key: tuple, copies: int) -> int | None:
    """Add a call's ATP ``copies`` to the count of (P, options) kept on disk; return the total so far.

    ``None`` when the disk cache is off (the caller then counts in memory only). The count is written at
    most once a second per table (and at exit), so that many small calls do not each wait for a write.
    """
    path = _path(digest, key, ".demand")
    if path is None:
        return None
    with _LOCK:
        entry = _DEMAND.get(path)
        if entry is None:
            entry = _DEMAND[path] = [_read_demand(path, digest, key), 0, 0.0, digest, key]
        entry[1] += int(copies)
        total = entry[0] + entry[1]
        now = time.monotonic()
        if now - entry[2] >= _WRITE_EVERY_S:
            _write_demand(path, digest, key, total)
            entry[0], entry[1], entry[2] = total, 0, now
    return total


@atexit.register
def _flush() -> None:
    """Write the counts added since their last write."""
    with _LOCK:
        for path, (disk, added, _, digest, key) in list(_DEMAND.items()):
            if added:
                _write_demand(path, digest, key, disk + added)
        _DEMAND.clear()
