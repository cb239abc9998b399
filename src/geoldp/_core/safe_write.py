"""Atomic, non-clobbering file output (used by :mod:`geoldp.io` and the CLI).

The guarantees (a reader sees the previous file or the complete new one; existing outputs, symlinks and
inputs refused before anything is written; data and sidecar, or a Shapefile's parts, committed as one
unit through a commit record) are described in the notes of :mod:`geoldp.io`. How they are kept:

- On Linux a file is first an unnamed ``O_TMPFILE`` inode, which the kernel frees if the process dies;
  elsewhere (or on file systems without ``O_TMPFILE``) a hidden ``.<name>.geoldp-tmp-<random>`` file,
  removed on any error or interrupt Python can see. It is fsynced, renamed, and the directory fsynced.
- :func:`check_output` compares an output with the inputs by ``os.path.samefile`` (hard links included).
- A :class:`Group`'s commit record ``.<data file>.geoldp-commit`` lists the renames, in the order the
  caller chose, with each new file's size and SHA-256; it is the commit point, and :func:`recover`
  carries out one left by a killed write. ``SIGTERM`` during a write removes the temporary files before
  the process ends (as it would have, by the default action).

For fault-injection tests, the environment variable ``GEOLDP_TEST_PAUSE`` (a comma-separated list of
point names: ``write``, ``commit``, ``staged``, ``journal``, ``rename``, ``done``) makes a write print
``geoldp-test-pause <point>`` to stderr at that point and wait until the file named by
``GEOLDP_TEST_RESUME`` exists (at most 60 s). ``staged``: the files have their temporary names, no
record yet; ``journal``: the record is in place, nothing renamed; ``rename``: the first file renamed. It
is read only at those points and changes nothing else.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import secrets
import shutil
import signal
import stat
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from geoldp._core.formats import ESTIMATE_LAYERS

__all__ = [
    "AtomicFile",
    "Group",
    "Terminated",
    "atomic_file",
    "check_output",
    "check_utf8_name",
    "cleanup_on_sigterm",
    "commit_record_path",
    "discard",
    "family",
    "file_digest",
    "fsync_dir",
    "group",
    "pause_point",
    "publish",
    "recover",
    "remove_stale_temps",
    "signals_held",
    "temp_name",
    "write_bytes",
]

TEMP_TAG = ".geoldp-tmp-"
COMMIT_TAG = ".geoldp-commit"
#: The tail of a data file's ledger sidecar: ``<data file>.ledger.json``.
LEDGER_TAIL = ".ledger.json"
#: The parts of a Shapefile geoldp writes (``.shp`` last), and those other tools keep next to it.
SHAPEFILE_PARTS = (".shp", ".shx", ".dbf", ".prj", ".cpg")
SHAPEFILE_EXTRA = (".qix", ".sbn", ".sbx", ".qpj")
_MAX_RECORD_BYTES = 1 << 20
PAUSE_ENV = "GEOLDP_TEST_PAUSE"
RESUME_ENV = "GEOLDP_TEST_RESUME"
_HELD = (signal.SIGINT, signal.SIGTERM)


class Terminated(BaseException):
    """SIGTERM arrived while geoldp was writing; raised so that temporary files are removed first.

    A BaseException (like KeyboardInterrupt), so that ``except Exception`` does not swallow it.
    """


def pause_point(point: str) -> None:
    """Test hook: pause at the named point of a write when ``GEOLDP_TEST_PAUSE`` lists it (see above)."""
    names = os.environ.get(PAUSE_ENV)
    if not names or point not in names.split(","):
        return
    sys.stderr.write(f"geoldp-test-pause {point}\n")
    sys.stderr.flush()
    resume = os.environ.get(RESUME_ENV)
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline and not (resume and os.path.exists(resume)):
        time.sleep(0.01)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM for the block (they are delivered after it): a group of renames completes.

    Python-level, not a signal mask: a mask holds a signal only for its own thread, and the threads of
    GDAL, Arrow or the compiled kernels would take it. A no-op outside the main thread (where handlers
    cannot be set).
    """
    if not _main_thread():
        yield
        return
    pending: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        pending.append(signum)

    old = {sig: signal.signal(sig, hold) for sig in _HELD}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        for signum in dict.fromkeys(pending):  # now, to the handler the program had
            signal.raise_signal(signum)


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


@contextlib.contextmanager
def cleanup_on_sigterm() -> Iterator[None]:
    """Turn SIGTERM into :class:`Terminated` during the block, so that temporary files are removed.

    Only when SIGTERM has its default action (and in the main thread): the process still ends by SIGTERM
    afterwards, as it would have, but without leaving temporary files. A program that handles SIGTERM
    itself (the geoldp command line does) keeps its handler.
    """
    if (
        not (_main_thread() and hasattr(signal, "SIGTERM"))
        or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL
    ):
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    except Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)  # the default action: end the process
        raise  # only where SIGTERM is blocked
    finally:
        if signal.getsignal(signal.SIGTERM) is _raise_terminated:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def temp_name(path: Path, suffix: str = "") -> Path:
    """A fresh hidden temporary name next to ``path`` (ending in ``suffix``, for drivers that care)."""
    return path.with_name(f".{path.name}{TEMP_TAG}{secrets.token_hex(6)}{suffix}")


def check_utf8_name(name: str, what: str) -> None:
    """Refuse a file name that is not valid UTF-8 (bytes of another encoding, kept by Python as surrogates).

    GDAL (GeoPackage, FlatGeobuf, Shapefile) and Parquet cannot open such a name, so every output refuses
    it alike, before anything is written. ``what`` begins the message (e.g. ``"write_file: the output"``).
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            f"{what} name {name[:60]!r} is not valid UTF-8 (it holds bytes of another encoding), which "
            "GDAL, Parquet and most GIS tools cannot open; choose a UTF-8 name. Nothing was written."
        ) from None


def fsync_dir(directory: Path) -> None:
    """Flush a directory entry change (a rename) to disk; a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def discard(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Remove each file of ``paths`` that can be removed (temporary files, names to give back)."""
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(
    path: str | os.PathLike[str],
    *,
    overwrite: bool,
    inputs: Iterable[str | os.PathLike[str]] = (),
    what: str = "output",
) -> Path:
    """Check that ``path`` may be written; return it as a Path.

    Refused: a symlink, a directory or another non-regular file; an existing file unless ``overwrite``; one
    of ``inputs`` (or a hard link to one, or a path resolving to one); a path whose directory is missing.
    """
    if not isinstance(overwrite, bool):
        raise TypeError(f"The 'overwrite' parameter must be a bool. Got {type(overwrite).__name__}.")
    p = Path(os.fspath(path))
    name = os.fspath(path)
    parent = p.parent
    if not parent.is_dir():
        raise ValueError(f"The directory of the {what} file '{name}' does not exist; create it first.")
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise ValueError(
                f"The {what} path '{name}' is a symbolic link; geoldp never writes through links. "
                "Remove the link or choose another path."
            )
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(
                f"The {what} path '{name}' exists and is not a regular file; choose another path."
            )
    for source in inputs:
        src = Path(os.fspath(source))
        if (st is not None and _same_file(p, src)) or p.resolve() == src.resolve():
            raise ValueError(
                f"The {what} file '{name}' is the input file '{os.fspath(source)}' (same file or a link to "
                "it); writing it would destroy the input. Choose another output path."
            )
    if st is not None and not overwrite:
        raise ValueError(
            f"The {what} file '{name}' already exists. Pass overwrite=True (CLI: --overwrite) to replace it, "
            "or choose another path."
        )
    return p


class AtomicFile:
    """A binary file being written under a temporary identity; see :func:`atomic_file`."""

    def __init__(self, path: Path, *, overwrite: bool) -> None:
        self.path = path
        self.overwrite = overwrite
        self.sha256 = hashlib.sha256()
        self.size = 0
        self._named: Path | None = None
        directory = path.parent
        self._dir = directory
        fd = -1
        tmpfile = getattr(os, "O_TMPFILE", 0)
        if tmpfile and os.path.isdir("/proc/self/fd"):
            try:
                fd = os.open(directory, tmpfile | os.O_WRONLY, 0o666)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                    raise
                fd = -1
        if fd < 0:  # no O_TMPFILE: a hidden named temporary file, removed on error
            self._named = temp_name(path)
            fd = os.open(
                self._named, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666
            )
        self._fd = fd
        self.file: IO[bytes] = os.fdopen(fd, "wb", closefd=False)

    def write(self, data: bytes) -> int:
        """Write bytes (and hash them)."""
        self.sha256.update(data)
        self.size += len(data)
        return self.file.write(data)

    def commit(self) -> None:
        """Flush, fsync and give the file its name (atomically); fsync the directory."""
        self.finish()
        self.publish()
        fsync_dir(self._dir)

    def finish(self) -> None:
        """Flush and fsync the contents (still under the temporary identity)."""
        self.file.flush()
        os.fsync(self._fd)
        self.file.close()

    def publish(self) -> None:
        """Give the finished file its name, atomically (the directory is not fsynced here)."""
        try:
            if self._named is None and not self.overwrite:
                self._link(self.path)  # link(2) never replaces: an existing file is an error, no race
            else:
                _rename(self.stage(), self.path, overwrite=self.overwrite)
                self._named = None
        except FileExistsError:
            raise _appeared(self.path) from None
        finally:
            self._close_fd()

    def stage(self) -> Path:
        """Give the finished file a hidden temporary name next to its target (renamed later); return it."""
        if self._named is None:
            name = temp_name(self.path)
            self._link(name)
            self._named = name
        self._close_fd()
        return self._named

    def _link(self, name: Path) -> None:
        # linkat(AT_SYMLINK_FOLLOW) on /proc/self/fd/N gives the unnamed O_TMPFILE inode a name (Linux);
        # plain link(2) would not follow /proc's link
        dfd = os.open(self._dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            source = f"/proc/self/fd/{self._fd}"
            os.link(source, name.name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=True)
        finally:
            os.close(dfd)

    def _close_fd(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1

    def abort(self) -> None:
        """Discard the temporary file."""
        with contextlib.suppress(Exception):
            self.file.close()
        self._close_fd()
        if self._named is not None:
            discard([self._named])
            self._named = None


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], *, overwrite: bool) -> Iterator[AtomicFile]:
    """Write ``path`` atomically: yield an :class:`AtomicFile`; it is committed only if the block succeeds.

    On any exception (including KeyboardInterrupt) the temporary file is discarded and the previous file,
    if any, is left as it was.
    """
    af = AtomicFile(Path(os.fspath(path)), overwrite=overwrite)
    try:
        yield af
        af.commit()
    except BaseException:
        af.abort()
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes, *, overwrite: bool) -> AtomicFile:
    """Write ``data`` to ``path`` atomically; return the committed :class:`AtomicFile` (size, sha256)."""
    with atomic_file(path, overwrite=overwrite) as af:
        af.write(data)
    return af


def _rename(tmp: Path, path: Path, *, overwrite: bool) -> None:
    """Rename ``tmp`` to ``path``; without ``overwrite`` never replace an existing ``path``."""
    if overwrite:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path, follow_symlinks=False)  # fails if path exists: no window for a race
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links: check, then rename
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, "exists", str(path)) from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def publish(tmp: Path, path: Path, *, overwrite: bool) -> None:
    """Give a complete temporary file ``tmp`` (same directory) the name ``path``: fsync, rename, fsync dir.

    Without ``overwrite`` the rename is a ``link`` that fails if ``path`` exists; ``tmp`` is then removed.
    """
    _fsync_file(tmp)
    try:
        _publish_file(tmp, path, overwrite=overwrite)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    fsync_dir(path.parent)


def remove_stale_temps(path: Path) -> None:
    """Remove temporary files/directories left next to ``path`` by a killed earlier write."""
    directory = path.parent
    prefix = f".{path.name}{TEMP_TAG}"
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                for child in os.scandir(entry.path):
                    os.unlink(child.path)
                os.rmdir(entry.path)
            else:
                os.unlink(entry.path)


class Group:
    """Files written as one unit; see :func:`group`.

    Add each file (:meth:`add_bytes`, or :meth:`add_file` for a complete temporary file written by
    someone else, e.g. GDAL, in the target's directory or a temporary directory inside it, and
    :meth:`add_removal` for a stale file to remove); :meth:`commit` then applies the removals and names
    the files in the order they were added. With more than one name to change and a ``unit``, the commit
    goes through a commit record (see the module notes).
    """

    def __init__(self, *, overwrite: bool, unit: str | os.PathLike[str] | None = None) -> None:
        self.overwrite = overwrite
        self.unit = None if unit is None else Path(os.fspath(unit))
        self._steps: list[tuple[str, Any, Path]] = []
        self._digests: dict[int, tuple[int, str]] = {}
        self._dirs: set[Path] = set()
        self._temp_dirs: list[Path] = []
        self._recorded = False  # the commit record is in place: the temporary files belong to it now

    def add_bytes(self, path: str | os.PathLike[str], data: bytes) -> AtomicFile:
        """Write ``data`` in full under a temporary identity and fsync it; named by :meth:`commit`."""
        target = Path(os.fspath(path))
        af = AtomicFile(target, overwrite=self.overwrite)
        self._steps.append(("bytes", af, target))
        af.write(data)
        af.finish()
        self._staged(target)
        return af

    def add_file(self, tmp: Path, path: str | os.PathLike[str]) -> None:
        """Take a complete temporary file ``tmp`` (in the directory of ``path``); fsync it now."""
        target = Path(os.fspath(path))
        self._steps.append(("file", tmp, target))
        _fsync_file(tmp)
        if self.unit is not None:  # for the commit record, outside the block where signals are held
            self._digests[len(self._steps) - 1] = file_digest(tmp)
        self._staged(target)

    def add_temp_dir(self, path: str | os.PathLike[str]) -> None:
        """Own the temporary directory ``path`` (where e.g. GDAL writes files for :meth:`add_file`).

        It is removed with the group's other temporary files, never while a commit record refers to it.
        """
        self._temp_dirs.append(Path(os.fspath(path)))

    def add_removal(self, path: str | os.PathLike[str]) -> None:
        """Remove ``path`` (a stale file that would not match the new ones) when the group is named."""
        self._steps.append(("remove", None, Path(os.fspath(path))))

    def _staged(self, target: Path) -> None:
        self._dirs.add(target.parent)
        if sum(kind != "remove" for kind, _, _ in self._steps) == 1:
            pause_point("write")

    def _ordered(self) -> list[tuple[int, str, Any, Path]]:
        steps = [(i, *step) for i, step in enumerate(self._steps)]
        return sorted(steps, key=lambda step: step[1] != "remove")  # stable: removals first

    def commit(self) -> None:
        """Name every staged file in order, with SIGINT/SIGTERM held; fsync the directories.

        Without ``overwrite``, a file that appeared at one of the names meanwhile is an error and the
        files this group already named are removed again, so that nothing is left half-named.
        """
        pause_point("commit")
        with signals_held():
            if self.unit is not None and len(self._steps) > 1:
                self._commit_recorded(self.unit)
            else:
                self._commit_direct()
        for directory in self._temp_dirs:
            shutil.rmtree(directory, ignore_errors=True)
        pause_point("done")

    def _commit_direct(self) -> None:
        named: list[Path] = []
        steps = self._ordered()
        try:
            for n, (_, kind, item, target) in enumerate(steps):
                if kind == "remove":
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(target)
                    continue
                if kind == "bytes":
                    item.publish()
                else:
                    _publish_file(item, target, overwrite=self.overwrite)
                named.append(target)
                if len(named) == 1 and n < len(steps) - 1:
                    pause_point("rename")
        except BaseException:
            if not self.overwrite:  # the names were free: give them back
                discard(named)
            raise
        for directory in self._dirs:
            fsync_dir(directory)

    def _commit_recorded(self, unit: Path) -> None:
        directory = unit.parent
        if any(target.parent != unit.parent for *_, target in self._steps):
            raise ValueError("The files of a group must share the directory of its unit.")
        files: list[dict[str, Any]] = []
        removals: list[str] = []
        for i, kind, item, target in self._ordered():
            if kind == "remove":
                removals.append(target.name)
                continue
            if kind == "bytes":
                staged = item.stage()
                size, digest = item.size, item.sha256.hexdigest()
            else:
                staged = item
                size, digest = self._digests[i]
            files.append(
                {
                    "target": target.name,
                    "staged": os.path.relpath(staged, directory),
                    "bytes": size,
                    "sha256": digest,
                }
            )
        for parent in {Path(directory / f["staged"]).parent for f in files}:
            fsync_dir(parent)  # the temporary names, before the record that refers to them
        pause_point("staged")
        record = {
            "geoldp_commit": 1,
            "unit": unit.name,
            "overwrite": self.overwrite,
            "remove": removals,
            "files": files,
        }
        af = AtomicFile(commit_record_path(unit), overwrite=True)
        try:
            af.write(json.dumps(record, indent=1).encode("utf-8"))
            af.commit()  # fsyncs the directory: from here on the new files are the committed state
        except BaseException:
            af.abort()
            raise
        self._recorded = True
        pause_point("journal")
        _roll_forward(unit, record, live=True)

    def abort(self) -> None:
        """Discard every temporary file not yet named (none once the commit record is in place)."""
        if self._recorded:
            return
        for kind, item, _ in self._steps:
            if kind == "bytes":
                item.abort()
        discard(item for kind, item, _ in self._steps if kind == "file")
        for directory in self._temp_dirs:
            shutil.rmtree(directory, ignore_errors=True)


def commit_record_path(unit: str | os.PathLike[str]) -> Path:
    """The commit record of a group whose unit (data file) is ``unit``: ``.<name>.geoldp-commit``."""
    p = Path(os.fspath(unit))
    return p.with_name(f".{p.name}{COMMIT_TAG}")


def file_digest(path: str | os.PathLike[str]) -> tuple[int, str]:
    """The size and SHA-256 (hex) of a file."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
            size += len(block)
    return size, h.hexdigest()


def _appeared(path: Path) -> ValueError:
    return ValueError(
        f"The output file '{path}' appeared while it was being written; it was left untouched. "
        "Pass overwrite=True (CLI: --overwrite) to replace it."
    )


def _check_record(unit: Path, record: dict[str, Any], directory: Path) -> None:
    """Refuse a commit record whose removals or temporary files are not what it says (a recovery's check)."""
    for name in record["remove"]:
        if _is_not(stat.S_ISREG, directory / name):
            raise ValueError(
                f"The commit record '{commit_record_path(unit)}' would remove '{directory / name}', which is "
                "not a regular file (a link or a folder); geoldp changed nothing. Remove the record, then "
                "write the output again."
            )
    for entry in record["files"]:
        staged = directory / entry["staged"]
        folder = staged.parent  # a link standing for the group's temporary folder is refused too
        bad = folder if folder != directory and _is_not(stat.S_ISDIR, folder) else staged
        if _is_not(stat.S_ISDIR if bad is folder else stat.S_ISREG, bad):
            raise ValueError(
                f"The commit record '{commit_record_path(unit)}' names the temporary file '{bad}', which is "
                "not a regular file (a link or a folder); geoldp changed nothing. Remove both, then write "
                "the output again."
            )
        if os.path.lexists(staged) and file_digest(staged) != (entry["bytes"], entry["sha256"]):
            raise ValueError(
                f"The commit record '{commit_record_path(unit)}' does not match its temporary file "
                f"'{staged}'; geoldp changed nothing. Remove both, then write the output again."
            )


def _roll_back(unit: Path, directory: Path, named: list[Path], unplaced: list[dict[str, Any]]) -> None:
    """Free the names this group took (``named``), drop its ``unplaced`` temporary files and its record."""
    discard(named)  # the names were free when the write began: free them again
    discard(directory / later["staged"] for later in unplaced)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(commit_record_path(unit))
    fsync_dir(directory)


def _roll_forward(unit: Path, record: dict[str, Any], *, live: bool) -> None:
    """Carry out a commit record: the removals, then each rename in order; then remove the record.

    ``live``: the writer itself, just after placing the record. Otherwise a recovery (:func:`recover`),
    which checks each temporary file against the record first. A temporary file already gone was renamed
    by an earlier attempt (or a concurrent recovery). Without ``overwrite`` a name taken meanwhile by
    another file rolls the group back instead: the names this group took are freed, nothing else changes.
    """
    directory = unit.parent
    overwrite = record["overwrite"]
    files = record["files"]
    if not live:  # a recovery checks every file before any change
        _check_record(unit, record, directory)
    for name in record["remove"]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(directory / name)
    named: list[Path] = []
    for n, entry in enumerate(files):
        staged, target = directory / entry["staged"], directory / entry["target"]
        expected = (entry["bytes"], entry["sha256"])
        if os.path.lexists(staged):
            try:
                _rename(staged, target, overwrite=overwrite)
            except FileExistsError:
                if not (target.is_file() and file_digest(target) == expected):
                    _roll_back(unit, directory, named, files[n:])
                    raise _appeared(target) from None
                os.unlink(staged)  # renamed by an earlier attempt that stopped before this unlink
            named.append(target)
        if live and n == 0 and len(files) > 1:
            pause_point("rename")
    fsync_dir(directory)
    for entry in files:  # a temporary directory of the group's (GDAL's Shapefile parts), now empty
        parent = (directory / entry["staged"]).parent
        if parent != directory:
            shutil.rmtree(parent, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(commit_record_path(unit))
    fsync_dir(directory)


def family(unit: str | os.PathLike[str]) -> frozenset[str]:
    """The exact file names a write group of ``unit`` writes or removes.

    The data file, its ledger sidecar and, for a Shapefile, its parts (those geoldp writes and the indexes
    other tools keep next to it), for a GeoJSON name the files of a layer set written under it
    (``<stem>.<layer>.geojson``).
    """
    name = Path(os.fspath(unit)).name
    names = {name, name + LEDGER_TAIL}
    stem, suffix = os.path.splitext(name)
    if suffix.lower() == ".shp":
        names |= {stem + ext for ext in (*SHAPEFILE_PARTS, *SHAPEFILE_EXTRA)} | {name + ".xml"}
    if suffix.lower() in (".geojson", ".json"):  # a layer set: <stem>.<layer><suffix> per estimate layer
        names |= {f"{stem}.{layer}{suffix}" for layer in ESTIMATE_LAYERS}
    return frozenset(names)


def _set_unit(path: Path) -> Path | None:
    """For a layer file ``<stem>.<layer>.geojson`` of a layer set, the set's unit ``<stem>.geojson``."""
    stem, suffix = os.path.splitext(path.name)
    base, dot, layer = stem.rpartition(".")
    if dot and base and layer in ESTIMATE_LAYERS and suffix.lower() in (".geojson", ".json"):
        return path.with_name(base + suffix)
    return None


def _is_not(kind: Any, path: Path) -> bool:
    """True if ``path`` exists (links not followed) and is not of ``kind`` (``stat.S_ISREG`` ...)."""
    try:
        return not kind(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def _record_problem(record: Any, unit: Path) -> str | None:
    """Why ``record`` is not a commit record of ``unit`` that may be carried out (None if it is one).

    Only names of ``unit``'s own family (:func:`family`) in its own directory: the record can rename a
    temporary file of this output onto one of those exact names, remove one of them, and nothing else.
    """
    if not isinstance(record, dict) or record.get("geoldp_commit") != 1 or record.get("unit") != unit.name:
        return "it is not a geoldp commit record of this file"
    if not isinstance(record.get("overwrite"), bool) or not isinstance(record.get("remove"), list):
        return "it is malformed"
    files = record.get("files")
    if not isinstance(files, list) or not files:
        return "it is malformed"
    names = family(unit)

    def own(name: Any) -> bool:
        return isinstance(name, str) and name in names

    if not all(own(name) for name in record["remove"]):
        return "it names files of another output"
    for entry in files:
        if not isinstance(entry, dict) or not own(entry.get("target")):
            return "it names files of another output"
        size, digest, staged = entry.get("bytes"), entry.get("sha256"), entry.get("staged")
        if isinstance(size, bool) or not isinstance(size, int) or not isinstance(digest, str):
            return "it is malformed"
        if not isinstance(staged, str):
            return "it is malformed"
        parts = Path(staged).parts
        tags = (f".{entry['target']}{TEMP_TAG}", f".{unit.name}{TEMP_TAG}")
        flat = len(parts) == 1 and parts[0].startswith(tags)
        nested = len(parts) == 2 and parts[0].startswith(tags[1]) and parts[1] == entry["target"]
        if not (flat or nested):
            return "it names files of another output"
    return None


def recover(unit: str | os.PathLike[str]) -> bool:
    """Complete an interrupted commit of the group whose unit is ``unit``; True if there was one.

    A group of several files is committed when its commit record is in place (every new file complete
    and fsynced under a temporary name before): a ``kill -9`` or power loss after that point is rolled
    forward here, by the next reader or writer, so the output is the new complete set of files. Before
    that point the old files were never touched. A cheap ``lstat`` when there is nothing to do.

    Raises
    ------
    ValueError
        The commit record is not a regular file, is malformed, names files of another output, or does not
        match its temporary files.
    OSError
        The rename cannot be done here (e.g. a read-only folder); the message says how to complete it.
    """
    p = Path(os.fspath(unit))
    layer_set = _set_unit(p)
    if layer_set is not None:  # a layer file: finish an interrupted write of its set first
        recover(layer_set)
    record_path = commit_record_path(p)
    try:
        st = os.lstat(record_path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_RECORD_BYTES:
        problem: str | None = "it is not a small regular file"
    else:
        try:
            record = json.loads(record_path.read_bytes())
        except (ValueError, RecursionError):
            record = None
        problem = _record_problem(record, p)
    if problem is not None:
        raise ValueError(
            f"'{record_path}' (left by an interrupted geoldp write of '{p}') cannot be used: {problem}. "
            "Remove it and write the output again."
        )
    try:
        _roll_forward(p, record, live=False)
    except OSError as exc:
        raise OSError(
            exc.errno,
            f"the last write of '{p}' was interrupted after it was complete, and geoldp cannot finish "
            f"renaming its files here ({os.strerror(exc.errno) if exc.errno else 'I/O error'}); make the "
            "folder writable and read or write the file again with geoldp",
        ) from None
    return True


def _publish_file(tmp: Path, path: Path, *, overwrite: bool) -> None:
    try:
        _rename(tmp, path, overwrite=overwrite)
    except FileExistsError:
        raise _appeared(path) from None


@contextlib.contextmanager
def group(*, overwrite: bool, unit: str | os.PathLike[str] | None = None) -> Iterator[Group]:
    """Write several files as one unit: yield a :class:`Group`; it is committed only if the block succeeds.

    On any exception (a full disk, KeyboardInterrupt, SIGTERM) every temporary file is removed and every
    file keeps its previous state (or stays absent). ``unit`` is the path a reader names (the data file):
    an interrupted earlier commit of it is completed first (:func:`recover`), and a group of several files
    is committed through a commit record next to it, so that a ``kill -9`` between two renames is
    completed by the next reader or writer.
    """
    if unit is not None:
        recover(unit)
    g = Group(overwrite=overwrite, unit=unit)
    with cleanup_on_sigterm():
        try:
            yield g
            g.commit()
        finally:
            g.abort()
