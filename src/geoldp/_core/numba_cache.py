r"""Where numba keeps geoldp's compiled-code cache: a per-user directory, never inside the installed package.

geoldp's kernels use ``numba.njit(cache=True)``. By default numba writes that cache next to the source,
into ``site-packages/geoldp/**/__pycache__``. Those files are not in the wheel's RECORD, so ``pip
uninstall`` (or a later ``pip install -e .``) leaves the folders behind, and ``import geoldp`` then finds an
empty namespace package instead of the editable install. So before any geoldp module is decorated (this
module is imported first by ``geoldp/__init__.py``), point numba's cache directory, ``numba.config.CACHE_DIR``
(the setting behind the ``NUMBA_CACHE_DIR`` environment variable), to a per-user cache directory:

1. a directory the user chose (``NUMBA_CACHE_DIR``, or ``cache_dir`` in a ``.numba_config.yaml``) is kept;
2. otherwise ``$XDG_CACHE_HOME/geoldp/numba/<fingerprint>`` (``~/.cache/geoldp/numba/…``;
   ``%LOCALAPPDATA%\geoldp\numba\…`` on Windows, ``~/Library/Caches/geoldp/numba/…`` on macOS), where
   the fingerprint is a digest of every geoldp source file that uses numba (see below);
3. if that cannot be created or written, a fresh private temporary directory, removed at exit: the cache
   then lasts one process, but geoldp still works and still writes nothing into its own package.

Why a fingerprint: numba checks a cached kernel against the time stamp of the file that defines it, not of
the files its callees live in. After an upgrade (or an edit) that changes only a callee's module, say the
ATP region, the cached driver kernel would silently keep the old callee's code. A directory per version of
the numba sources cannot hold such a stale kernel. Old fingerprint directories are removed once they have
not been used for a week (:func:`prune`). A directory the user chose is theirs to manage.

Like ``NUMBA_CACHE_DIR``, the setting is process-wide: other numba libraries imported afterwards cache there
too (in subfolders named after their own source folders). Compiled code is all that is cached; it holds no
input data.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numba


def default_cache_dir() -> Path:
    """The per-user directory for geoldp's numba cache (not created here)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "geoldp" / "numba"


_FINGERPRINT = re.compile(r"[0-9a-f]{16}")
_STALE_SECONDS = 7 * 24 * 3600


#: A kernel source: a file that imports numba or geoldp's kernels module. A file that only mentions numba
#: in its prose is not one, so editing it does not make the compiled kernels or their caches stale.
KERNEL_SOURCE = re.compile(
    rb"^[ \t]*(?:import numba\b|from numba\b|from geoldp\._core\.kernels import|"
    rb"from geoldp\._core import [^\n]*\bkernels\b)",
    re.MULTILINE,
)


def source_fingerprint(root: Path | None = None) -> str:
    """16 hex digits of SHA-256 over geoldp's kernel sources (:data:`KERNEL_SOURCE`; paths and contents)."""
    root = Path(__file__).resolve().parent.parent if root is None else Path(root)
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        data = path.read_bytes()
        if KERNEL_SOURCE.search(data):
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + data + b"\0")
    return h.hexdigest()[:16]


def prune(base: Path, keep: str, *, max_age_s: float = _STALE_SECONDS) -> None:
    """Remove fingerprint directories under ``base`` other than ``keep`` unused for ``max_age_s``."""
    try:
        entries = list(base.iterdir())
    except OSError:
        return
    now = time.time()
    for entry in entries:
        if entry.name == keep or not _FINGERPRINT.fullmatch(entry.name) or entry.is_symlink():
            continue
        try:
            if entry.is_dir() and now - entry.stat().st_mtime > max_age_s:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            continue


def _writable(path: Path) -> bool:
    # The same test numba's locators make: create the folder, then a temporary file inside it.
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def configure() -> str:
    """Set ``numba.config.CACHE_DIR`` unless the user chose one; return the directory in use.

    Returns an empty string when no writable directory could be found at all (numba then keeps its own
    fallbacks, and compiling without a cache still works).
    """
    chosen = getattr(numba.config, "CACHE_DIR", "")
    if chosen:
        return str(chosen)
    fingerprint = source_fingerprint()
    path = default_cache_dir() / fingerprint
    if _writable(path):
        os.utime(path)  # marks it as in use for prune()
        prune(path.parent, fingerprint)
    else:
        try:
            # mkdtemp makes a directory only this user can read: numba's cache files are pickles, so a
            # shared, predictable temporary path could be pre-filled by someone else.
            path = Path(tempfile.mkdtemp(prefix="geoldp-numba-"))
        except OSError:
            return ""
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    numba.config.CACHE_DIR = str(path)  # type: ignore[attr-defined]  # set at import from the environment
    return str(path)


CACHE_DIR = configure()
