"""Fault injection: kills, signals and a full disk during a write, and reads of a database being written.

After every fault each output must be the old file (byte for byte), the new complete file, or absent, with
no temporary file left (or, after kill -9, none left once the next write ran) and no traceback. The fast
tests kill the writer deterministically in the middle of writing its bytes (a patched writer sends the
signal to itself) or at the named pause points of geoldp._core.safe_write (GEOLDP_TEST_PAUSE); the slow ones
run the whole matrix of formats, points and signals, and kill a subprocess writing a large frame after a
short, seeded delay. A full disk where only the ledger sidecar fails is simulated by a patched writer and,
where mounting is permitted (root), by a small tmpfs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from geoldp import io as gio

SUFFIXES = [".geojson", ".gpkg", ".parquet", ".csv", ".fgb", ".shp"]
ROOT = Path(__file__).resolve().parents[1]

# A child process: builds a frame of N LineStrings, says "ready", then overwrites TARGET with it. MODE
# "self-kill" patches the byte writer to kill -9 itself half-way through the bytes (for a Shapefile: after
# GDAL wrote the parts); MODE "external" just writes (the parent sends the signal).
CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import numpy as np, geopandas as gpd, shapely
    from geoldp import io as gio
    from geoldp._core import safe_write as _safe_write

    target, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rng = np.random.default_rng(0)
    xy = rng.uniform([116.0, 39.8], [116.6, 40.1], size=(n, 8, 2))
    frame = gpd.GeoDataFrame(
        {"v": np.arange(n)}, geometry=shapely.linestrings(xy), crs="EPSG:4326"
    )
    sig = signal.SIGTERM if mode == "self-term" else signal.SIGKILL
    if mode in ("self-kill", "self-term"):
        original = _safe_write.AtomicFile.write

        def half_then_signal(self, data):
            original(self, data[: len(data) // 2])
            self.file.flush()
            os.kill(os.getpid(), sig)
            original(self, data[len(data) // 2 :])
            return len(data)

        _safe_write.AtomicFile.write = half_then_signal
        if target.endswith(".shp"):  # GDAL writes the parts in a temporary directory: signal after it
            import geopandas

            original_to_file = geopandas.GeoDataFrame.to_file

            def to_file_then_signal(self, *a, **k):
                original_to_file(self, *a, **k)
                os.kill(os.getpid(), sig)

            geopandas.GeoDataFrame.to_file = to_file_then_signal
    print("ready", flush=True)
    try:
        gio.write_file(frame, target, overwrite=True, sidecar=False)
    except KeyboardInterrupt:
        sys.exit(130)
    print("done", flush=True)
    """
)


@pytest.fixture(autouse=True)
def _ctrl_c_raises():
    """Python's Ctrl-C handler in this process for each test: a job started in the background by a shell
    (the README's test command in CI, ``pytest &``) inherits SIGINT ignored, and the tests that press Ctrl-C
    in this process would then see nothing happen."""
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if previous is not None:  # None: a handler set outside Python, which cannot be put back
        signal.signal(signal.SIGINT, previous)


def _default_sigint() -> None:
    # a job started in the background by a shell inherits SIGINT ignored; the child must see Ctrl-C
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run_child(target: Path, n: int, mode: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "NUMBA_DISABLE_JIT": os.environ.get("NUMBA_DISABLE_JIT", "0"),
    }
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(target), str(n), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_default_sigint,
    )


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def _temps(directory: Path) -> list[str]:
    return [n for n in os.listdir(directory) if ".geoldp-tmp-" in n]


def _frame(n: int):
    import geopandas as gpd
    import shapely

    xy = np.random.default_rng(0).uniform([116.0, 39.8], [116.6, 40.1], size=(n, 8, 2))
    return gpd.GeoDataFrame({"v": np.arange(n)}, geometry=shapely.linestrings(xy), crs="EPSG:4326")


def _write_old(target: Path) -> dict[str, bytes]:
    gio.write_file(_frame(5), target, sidecar=False)
    return _snapshot(target.parent)


def _check_old_kept(tmp_path: Path, target: Path, before: dict[str, bytes], *, temps_allowed: bool) -> None:
    assert _snapshot(tmp_path) == before  # the old file, byte for byte
    if not temps_allowed:  # O_TMPFILE: nothing to clean up, even after kill -9
        assert _temps(tmp_path) == []
    # the old file still reads, and a later write cleans up whatever a kill -9 could leave
    assert len(gio.read_trajectories(target)) == 5
    gio.write_file(gio.read_trajectories(target), target, overwrite=True, sidecar=False)
    assert _temps(tmp_path) == []


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_kill_9_in_the_middle_of_a_write_keeps_the_old_file(tmp_path, suffix):
    target = tmp_path / f"out{suffix}"
    before = _write_old(target)
    child = _run_child(target, 300, "self-kill")
    out, err = child.communicate(timeout=120)
    assert "done" not in out and child.returncode == -signal.SIGKILL, (out, err)
    _check_old_kept(tmp_path, target, before, temps_allowed=suffix == ".shp")


@pytest.mark.parametrize("fresh", [True, False], ids=["fresh", "overwrite"])
def test_sigterm_during_a_shapefile_write_leaves_no_temporary_directory(tmp_path, fresh):
    target = tmp_path / "out.shp"
    before = {} if fresh else _write_old(target)
    child = _run_child(target, 300, "self-term")  # SIGTERM right after GDAL wrote the parts
    out, err = child.communicate(timeout=120)
    assert "done" not in out and child.returncode == -signal.SIGTERM, (out, err)
    assert "Traceback" not in err
    assert _snapshot(tmp_path) == before and _temps(tmp_path) == []  # no .out.shp.geoldp-tmp-* left


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_ctrl_c_in_the_middle_of_a_write_keeps_the_old_file(tmp_path, suffix, monkeypatch):
    import geopandas as gpd

    from geoldp._core import safe_write as _safe_write

    target = tmp_path / f"out{suffix}"
    before = _write_old(target)
    original = _safe_write.AtomicFile.write

    def half_then_sigint(self, data):
        original(self, data[: len(data) // 2])
        os.kill(os.getpid(), signal.SIGINT)  # Python raises KeyboardInterrupt here
        original(self, data[len(data) // 2 :])  # pragma: no cover - never reached

    monkeypatch.setattr(_safe_write.AtomicFile, "write", half_then_sigint)
    if suffix == ".shp":
        original_to_file = gpd.GeoDataFrame.to_file

        def to_file_then_sigint(self, *a, **k):
            original_to_file(self, *a, **k)
            os.kill(os.getpid(), signal.SIGINT)

        monkeypatch.setattr(gpd.GeoDataFrame, "to_file", to_file_then_sigint)
    with pytest.raises(KeyboardInterrupt):
        gio.write_file(_frame(300), target, overwrite=True, sidecar=False)
    monkeypatch.undo()
    _check_old_kept(tmp_path, target, before, temps_allowed=False)


@pytest.mark.slow
@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_external_signal_during_a_large_write(tmp_path, suffix, sig):
    """A subprocess writing a large frame is killed after a short, seeded delay (a few trials)."""
    target = tmp_path / f"out{suffix}"
    before = _write_old(target)
    delays = np.random.default_rng(sig + len(suffix)).uniform(0.0, 2.0, size=3)
    for delay in delays:
        child = _run_child(target, 150_000, "external")
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(float(delay))
        child.send_signal(sig)
        out, err = child.communicate(timeout=300)
        state = _snapshot(tmp_path)
        if "done" in out:  # finished before the signal: the new file must be complete
            assert len(gio.read_trajectories(target)) == 150_000
            return
        assert state == before, (delay, err[-500:])
        if suffix != ".shp":
            assert _temps(tmp_path) == []


# --------------------------------------------------------------------------------------------------
# a GeoPackage read while another process holds it open in WAL mode

# A child process: switches TARGET (a GeoPackage with a layer "trips") to WAL mode with automatic
# checkpoints off, commits 15 more rows, says "ready" and holds the database open until stdin closes.
# The committed rows live only in TARGET-wal until a checkpoint.
WAL_WRITER = textwrap.dedent(
    """
    import sqlite3, sys

    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    geoms = [row[0] for row in con.execute("SELECT geom FROM trips ORDER BY fid")]
    for i in range(15):
        con.execute("INSERT INTO trips (v, geom) VALUES (?, ?)", (100 + i, geoms[i % len(geoms)]))
    print("ready", flush=True)
    sys.stdin.read()
    """
)


def test_geopackage_with_uncheckpointed_wal_rows_reads_every_committed_row(tmp_path):
    pyogrio = pytest.importorskip("pyogrio")
    target = tmp_path / "live.gpkg"
    # no R-tree: its triggers call GDAL's SQL functions, which a plain sqlite3 writer does not have
    _frame(5).to_file(
        target, driver="GPKG", layer="trips", engine="pyogrio", layer_options={"SPATIAL_INDEX": "NO"}
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", WAL_WRITER, str(target)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        wal = tmp_path / "live.gpkg-wal"
        assert wal.stat().st_size > 0  # the 15 rows are committed but not checkpointed
        # the -shm file is SQLite's shared lock area (readers mark it, GDAL's own read too), not data
        data_files = ("live.gpkg", "live.gpkg-wal")
        files_before = {n: b for n, b in _snapshot(tmp_path).items() if n in data_files}
        # GDAL opening the path itself sees 20 rows: the 5 of the main file and the 15 in the WAL
        expected = pyogrio.read_dataframe(target)["v"].tolist()
        assert len(expected) == 20
        got = gio.read_trajectories(target)
        assert got["v"].tolist() == expected  # every row, in GDAL's order
        assert gio.read_trajectories(target, layer="trips")["v"].tolist() == expected
        # reading changed no data (no checkpoint) and made no new files
        assert {n: b for n, b in _snapshot(tmp_path).items() if n in data_files} == files_before
        assert sorted(os.listdir(tmp_path)) == ["live.gpkg", "live.gpkg-shm", "live.gpkg-wal"]
    finally:
        writer.communicate(input="", timeout=60)
    assert writer.returncode == 0


def test_adding_a_layer_to_a_geopackage_open_in_another_program_is_refused(tmp_path):
    pytest.importorskip("pyogrio")
    target = tmp_path / "live.gpkg"
    _frame(5).to_file(
        target, driver="GPKG", layer="trips", engine="pyogrio", layer_options={"SPATIAL_INDEX": "NO"}
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", WAL_WRITER, str(target)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        before = _snapshot(tmp_path)
        # replacing the file would send the writer's later commits to a deleted file (and, with a copy
        # of the main file only, drop the 15 rows still in its -wal)
        with pytest.raises(ValueError, match="open in another program"):
            gio.write_file(_frame(3), target, layer="extra", add_layer=True, sidecar=False)
        assert {n: b for n, b in _snapshot(tmp_path).items() if not n.endswith("-shm")} == {
            n: b for n, b in before.items() if not n.endswith("-shm")
        }
        assert len(gio.read_trajectories(target, layer="trips")) == 20
    finally:
        writer.communicate(input="", timeout=60)
    assert _temps(tmp_path) == []
    gio.write_file(_frame(3), target, layer="extra", add_layer=True, sidecar=False)  # writer closed
    assert len(gio.read_trajectories(target, layer="trips")) == 20
    assert len(gio.read_trajectories(target, layer="extra")) == 3


# --------------------------------------------------------------------------------------------------
# a Shapefile's parts are one unit


def test_a_shapefile_never_replaces_an_unrelated_part_without_overwrite(tmp_path):
    for ext in (".dbf", ".prj", ".qix"):
        unrelated = tmp_path / f"o1{ext}"
        unrelated.write_bytes(b"someone else's file")
        with pytest.raises(ValueError, match=rf"o1\{ext}.*already exists"):
            gio.write_file(_frame(5), tmp_path / "o1.shp", sidecar=False)
        assert sorted(os.listdir(tmp_path)) == [unrelated.name]  # nothing written, nothing left
        assert unrelated.read_bytes() == b"someone else's file"
        unrelated.unlink()


def test_a_shapefile_overwrite_refused_for_a_symlinked_part_touches_no_part(tmp_path):
    target = tmp_path / "o1.shp"
    gio.write_file(_frame(5), target, sidecar=False)
    outside = tmp_path / "elsewhere.dbf"
    outside.write_bytes(b"not a part of o1")
    (tmp_path / "o1.dbf").unlink()
    (tmp_path / "o1.dbf").symlink_to(outside)
    before = _snapshot(tmp_path)
    with pytest.raises(ValueError, match=r"o1\.dbf.*symbolic link"):
        gio.write_file(_frame(7), target, overwrite=True, sidecar=False)
    assert _snapshot(tmp_path) == before  # no part replaced, the link's target untouched
    assert (tmp_path / "o1.dbf").is_symlink() and _temps(tmp_path) == []


# --------------------------------------------------------------------------------------------------
# a nearly full disk where the data fits and only the ledger sidecar does not


def _released(n: int):
    frame = _frame(n)
    frame.attrs["geoldp"] = {"mechanism": "atp", "epsilon": float(n)}
    return frame


def _state(directory: Path) -> dict[str, bytes]:
    return {n: b for n, b in _snapshot(directory).items() if ".geoldp-tmp-" not in n}


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("fresh", [True, False], ids=["fresh", "overwrite"])
@pytest.mark.parametrize("last", [".ledger.json", ".geoldp-commit"], ids=["sidecar", "commit record"])
def test_sidecar_that_does_not_fit_leaves_the_old_pair(tmp_path, suffix, fresh, last, monkeypatch):
    """The disk is full for the sidecar, or for the small commit record written after every data file."""
    import errno

    from geoldp._core import safe_write as _safe_write

    target = tmp_path / f"out{suffix}"
    if not fresh:
        gio.write_file(_released(5), target)
    before = _state(tmp_path)
    original = _safe_write.AtomicFile.write

    def full_for_the_sidecar(self, data):
        if self.path.name.endswith(last):
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, data)

    monkeypatch.setattr(_safe_write.AtomicFile, "write", full_for_the_sidecar)
    with pytest.raises(OSError) as info:
        gio.write_file(_released(7), target, overwrite=not fresh)
    assert info.value.errno == errno.ENOSPC and "unchanged" in str(info.value)
    monkeypatch.undo()
    assert _state(tmp_path) == before  # fresh: nothing at all; overwrite: the old pair, byte for byte
    assert _hidden(tmp_path) == []  # no temporary file, directory or commit record
    if not fresh:
        assert gio.read_ledger(target).epsilon == 5.0  # the old pair still matches


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs mounted at a directory, sized by the test (root only; skipped where mounting is refused)."""
    mounted: list[Path] = []

    def mount(size: int) -> Path:
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip("mounting a small tmpfs is not permitted here")
        mounted.append(where)
        return where

    if os.geteuid() != 0 or sys.platform != "linux":
        pytest.skip("needs root on Linux to mount a small tmpfs")
    yield mount
    for where in mounted:
        subprocess.run(["umount", str(where)], check=False)


@pytest.mark.parametrize("suffix", [".geojson", ".csv", ".parquet"])
def test_real_full_disk_where_only_the_sidecar_fails(tmp_path, suffix, small_disk):
    page = os.sysconf("SC_PAGE_SIZE")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    gio.write_file(_released(300), scratch / f"out{suffix}", sidecar=False)
    size = (scratch / f"out{suffix}").stat().st_size
    disk = small_disk(-(-size // page) * page)  # room for the data file's pages, none for the sidecar
    with pytest.raises(OSError) as info:
        gio.write_file(_released(300), disk / f"out{suffix}")
    assert info.value.errno == 28  # ENOSPC
    assert os.listdir(disk) == []  # neither the data file nor the sidecar: not half a release


# --------------------------------------------------------------------------------------------------
# SIGKILL / SIGTERM / SIGINT at the named points of a write (the GEOLDP_TEST_PAUSE hook of _safe_write)

# A child process: writes a release of N rows (ledger epsilon = N) to TARGET with its sidecar, pausing
# where GEOLDP_TEST_PAUSE says. Ctrl-C is reported as a program would (one line, exit 130).
PAUSED_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np, geopandas as gpd, shapely
    from geoldp import io as gio

    target, n, overwrite = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
    xy = np.random.default_rng(0).uniform([116.0, 39.8], [116.6, 40.1], size=(n, 8, 2))
    frame = gpd.GeoDataFrame({"v": np.arange(n)}, geometry=shapely.linestrings(xy), crs="EPSG:4326")
    frame.attrs["geoldp"] = {"mechanism": "atp", "epsilon": float(n)}
    try:
        gio.write_file(frame, target, overwrite=overwrite)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    print("done", flush=True)
    """
)
POINTS = ["write", "commit", "staged", "journal", "rename", "done"]
SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "INT": signal.SIGINT}


def _signal_at(argv: list[str], point: str, sig: int, tmp_path: Path) -> tuple[int, str]:
    """Run ``argv`` with a pause at ``point``, send ``sig`` there, let it go on; return (rc, stderr)."""
    resume = tmp_path / f"resume-{point}-{sig}"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "GEOLDP_TEST_PAUSE": point,
        "GEOLDP_TEST_RESUME": str(resume),
    }
    child = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        preexec_fn=_default_sigint,
    )
    assert child.stderr is not None
    seen = []
    for line in child.stderr:
        seen.append(line)
        if line.strip() == f"geoldp-test-pause {point}":
            break
    else:  # pragma: no cover - the child ended without reaching the point
        child.wait(timeout=60)
        pytest.fail(f"the writer never reached {point!r}: {''.join(seen)[-2000:]}")
    child.send_signal(sig)
    resume.touch()
    out, err = child.communicate(timeout=120)
    return child.returncode, "".join(seen) + err


def _hidden(directory: Path) -> list[str]:
    """Litter: temporary files or directories and commit records (every hidden name geoldp makes)."""
    return sorted(n for n in os.listdir(directory) if n.startswith("."))


def _new_names(suffix: str, tmp_path: Path) -> set[str]:
    """The names a complete new release pair of this format has (written in a scratch folder)."""
    ref = tmp_path / "reference"
    ref.mkdir(exist_ok=True)
    gio.write_file(_released(7), ref / f"out{suffix}", overwrite=True)
    return {n for n in os.listdir(ref) if not n.startswith(".")}


#: Where the data and its sidecar are renamed (the commit record is in place): a kill -9 there is
#: completed by the next geoldp reader or writer.
COMMITTED = ("journal", "rename", "done")
#: The first geoldp call on the output after the kill, each of which must finish an interrupted commit.
FIRST_READERS = {
    "read_ledger": lambda target: gio.read_ledger(target),
    "read_trajectories": lambda target: gio.read_trajectories(target, ledger=True),
    "read_points": lambda target: _read_points_anyway(target),
    "next_write": lambda target: gio.write_file(_released(7), target, overwrite=True),
}


def _read_points_anyway(target: Path) -> None:
    with pytest.raises(TypeError, match="not a Point"):  # the release holds LineStrings
        gio.read_points(target)


def _check_after_signal(
    out_dir: Path,
    target: Path,
    before: dict[str, bytes],
    point: str,
    sig: int,
    new_names: set[str],
    first_reader: str = "read_ledger",
) -> None:
    """Every output is the old file, the new complete file or absent, and no litter is left.

    SIGINT and SIGTERM are held from the commit on, so they leave the new pair; before it, the old one.
    After kill -9 the first geoldp reader (or writer) of the output finishes a commit whose record was in
    place and then sees exactly the new pair; before that point the old pair was never touched.
    """
    state = _state(out_dir)
    held = point not in ("write", "commit")
    new = held if sig != signal.SIGKILL else point in COMMITTED  # what the first geoldp call must see
    if sig != signal.SIGKILL:
        assert _hidden(out_dir) == []  # no litter, even after SIGTERM or Ctrl-C
        assert state == before if not new else set(state) == new_names
    elif not new:
        assert state == before  # the old pair (or nothing), byte for byte
        assert not any(n.endswith(".geoldp-commit") for n in _hidden(out_dir))
    try:
        FIRST_READERS[first_reader](target)
    except FileNotFoundError:
        assert not os.path.lexists(target) and not new
    if new or first_reader == "next_write":  # the new complete pair, and nothing else
        assert set(_state(out_dir)) == new_names
        if new or sig != signal.SIGKILL:
            assert _hidden(out_dir) == []
        assert len(gio.read_trajectories(target, ledger=True)) == 7
        assert gio.read_ledger(target).epsilon == 7.0  # data and sidecar match (size, SHA-256)
    else:
        assert _state(out_dir) == before  # a reader never rolls an uncommitted write forward
    # whatever a kill -9 left behind, the next write cleans up
    gio.write_file(_released(9), target, overwrite=True)
    assert _hidden(out_dir) == [] and gio.read_ledger(target).epsilon == 9.0


def _writer_case(
    tmp_path: Path, suffix: str, point: str, name: str, fresh: bool, first_reader: str = "read_ledger"
) -> None:
    sig = SIGNALS[name]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / f"out{suffix}"
    if not fresh:
        gio.write_file(_released(5), target)
    before = _state(out_dir)
    argv = [sys.executable, "-c", PAUSED_WRITER, str(target), "7", "0" if fresh else "1"]
    rc, err = _signal_at(argv, point, sig, tmp_path)
    assert "Traceback" not in err, err[-3000:]
    expected_rc = {"KILL": -signal.SIGKILL, "TERM": -signal.SIGTERM, "INT": 130}[name]
    assert rc == expected_rc, err[-3000:]
    _check_after_signal(out_dir, target, before, point, sig, _new_names(suffix, tmp_path), first_reader)


# the default tier: each point, signal and first reader at least once (the full matrix is slow)
FAST_CASES = [
    (".shp", "write", "TERM", True, "read_ledger"),  # GDAL's temporary directory of a fresh Shapefile
    (".shp", "commit", "KILL", False, "next_write"),
    (".parquet", "commit", "INT", False, "read_ledger"),
    (".csv", "rename", "KILL", False, "read_ledger"),  # kill -9 between the renames of data and sidecar
    (".csv", "rename", "KILL", True, "read_ledger"),  # ... of a fresh output (on its own: a lone sidecar)
    (".shp", "journal", "KILL", False, "read_trajectories"),  # the record in place, nothing renamed
    (".gpkg", "staged", "KILL", True, "read_points"),  # temporary names, no record: nothing happened
    (".geojson", "rename", "TERM", True, "read_ledger"),
]


@pytest.mark.parametrize(("suffix", "point", "name", "fresh", "first_reader"), FAST_CASES)
def test_signal_at_a_named_point_of_a_write(tmp_path, suffix, point, name, fresh, first_reader):
    _writer_case(tmp_path, suffix, point, name, fresh, first_reader)


@pytest.mark.slow
@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("name", sorted(SIGNALS))
def test_signal_matrix_every_format_point_and_signal(tmp_path, suffix, point, name):
    """An old pair is overwritten; 108 writer processes (several minutes on a free 2-core machine)."""
    _writer_case(tmp_path, suffix, point, name, False)


@pytest.mark.slow
@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("first_reader", sorted(FIRST_READERS))
def test_kill_9_matrix_fresh_outputs(tmp_path, suffix, point, first_reader):
    """No old file: after kill -9 and the first geoldp call, the output is absent or the new pair."""
    _writer_case(tmp_path, suffix, point, "KILL", True, first_reader)


# --------------------------------------------------------------------------------------------------
# the command line: a signal prints one line, never a traceback, and the outputs stay whole


@pytest.fixture(scope="module")
def cli_inputs(tmp_path_factory):
    from geoldp.datasets import synthetic_city

    where = tmp_path_factory.mktemp("cli-in")
    points, trips = synthetic_city(n_points=60, n_trips=20, seed=1)
    gio.to_geojson(points, where / "p.geojson")
    gio.to_geojson(trips, where / "t.geojson")
    return where


def _cli_case(tmp_path, cli_inputs, suffix, point, name, fresh):
    sig = SIGNALS[name]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / f"out{suffix}"
    if not fresh:
        gio.write_file(_released(5), target)
    before = _state(out_dir)
    argv = [sys.executable, "-m", "geoldp", "perturb", str(cli_inputs / "t.geojson")]
    argv += ["--points", str(cli_inputs / "p.geojson"), "--epsilon", "4", "--seed", "1", "-o", str(target)]
    rc, err = _signal_at([*argv, *([] if fresh else ["--overwrite"])], point, sig, tmp_path)
    assert "Traceback" not in err, err[-3000:]
    lines = [line for line in err.splitlines() if not line.startswith("geoldp-test-pause")]
    if point not in ("write", "commit"):  # held until the new pair was in place
        assert gio.read_ledger(target).mechanism == "atp" and len(gio.read_trajectories(target)) == 20
    else:
        assert _state(out_dir) == before
    assert _hidden(out_dir) == []
    word = {"INT": "interrupted", "TERM": "terminated"}[name]
    assert rc == {"INT": 130, "TERM": 143}[name] and lines[-1] == f"geoldp: {word}", err[-3000:]


def test_cli_ctrl_c_while_writing_prints_one_line_and_keeps_the_old_pair(tmp_path, cli_inputs):
    _cli_case(tmp_path, cli_inputs, ".parquet", "commit", "INT", False)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("suffix", "point", "name", "fresh"),
    [
        (".shp", "write", "TERM", True),
        (".shp", "write", "INT", False),
        (".parquet", "done", "INT", False),  # late: after the rename, before the command returns
        (".fgb", "rename", "TERM", False),
        (".gpkg", "commit", "TERM", False),
        (".csv", "rename", "INT", True),
        (".geojson", "write", "TERM", False),
    ],
)
def test_cli_signal_while_writing(tmp_path, cli_inputs, suffix, point, name, fresh):
    _cli_case(tmp_path, cli_inputs, suffix, point, name, fresh)


def test_signals_held_delivers_ctrl_c_after_the_block():
    from geoldp._core import safe_write as _safe_write

    reached = []
    with pytest.raises(KeyboardInterrupt):
        with _safe_write.signals_held():
            signal.raise_signal(signal.SIGINT)  # held: no KeyboardInterrupt inside the block
            reached.append("end of block")
    assert reached == ["end of block"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_to_geojson_sidecar_that_does_not_fit_writes_nothing(tmp_path, monkeypatch):
    import errno

    from geoldp._core import safe_write as _safe_write

    original = _safe_write.AtomicFile.write

    def full_for_the_sidecar(self, data):
        if self.path.name.endswith(".ledger.json"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, data)

    monkeypatch.setattr(_safe_write.AtomicFile, "write", full_for_the_sidecar)
    with pytest.raises(OSError, match="unchanged"):
        gio.to_geojson(_released(7), tmp_path / "out.geojson", ledger="sidecar")
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------------------------------
# Ctrl-C while the command line starts (its own imports) and a KeyboardInterrupt through a string exec()

# Loaded by Python's start-up (as sitecustomize) in a child `python -m geoldp ...`: arranges a Ctrl-C the
# first time the module named by GEOLDP_TEST_CTRL_C is imported. The signal is sent from code run by a
# string exec(), as namedtuple, dataclass and numba definitions run: after that, `python -m` ends the
# program by SIGINT (status -2) even when the KeyboardInterrupt was handled, unless geoldp clears it.
CTRL_C_AT_IMPORT = textwrap.dedent(
    """
    import importlib.abc, os, sys

    class CtrlC(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == os.environ.get("GEOLDP_TEST_CTRL_C"):
                sys.meta_path.remove(self)
                exec("import os, signal; os.kill(os.getpid(), signal.SIGINT)")
            return None

    sys.meta_path.insert(0, CtrlC())
    """
)


def _perturb_argv(cli_inputs: Path, out: Path) -> list[str]:
    return [
        "perturb",
        str(cli_inputs / "t.geojson"),
        "--points",
        str(cli_inputs / "p.geojson"),
        "--epsilon",
        "4",
        "--seed",
        "1",
        "-o",
        str(out),
    ]


@pytest.mark.parametrize(
    "module",
    [
        "geoldp.cli",  # the command line itself, before main() runs
        "geoldp._core.formats",  # one of its imports
        "geoldp._core.safe_write",  # imported by main() before it handles signals
        "geoldp.io",  # inside the command (a KeyboardInterrupt that passed through exec)
    ],
)
@pytest.mark.parametrize("entry", ["python -m geoldp", "program"])
def test_cli_ctrl_c_during_start_up_imports_exits_130_with_one_line(tmp_path, cli_inputs, module, entry):
    """Both entry points: ``python -m geoldp`` and a console script calling ``geoldp.__main__:run``."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(CTRL_C_AT_IMPORT)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{hook}", "GEOLDP_TEST_CTRL_C": module}
    script = tmp_path / "geoldp-program"  # what pip writes for the entry point geoldp.__main__:run
    script.write_text("import sys\nfrom geoldp.__main__ import run\nsys.exit(run())\n")
    start = ["-m", "geoldp"] if entry == "python -m geoldp" else [str(script)]
    argv = [sys.executable, *start, *_perturb_argv(cli_inputs, out_dir / "o.geojson")]
    done = subprocess.run(
        argv, capture_output=True, text=True, env=env, timeout=300, preexec_fn=_default_sigint
    )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 130 and done.stderr == "geoldp: interrupted\n", (done.returncode, done.stderr)
    assert os.listdir(out_dir) == []


@pytest.mark.slow
def test_cli_ctrl_c_at_random_moments_of_a_run(tmp_path, cli_inputs):
    """A real Ctrl-C at seeded delays after the command line began loading (after Python's own start-up,
    whose `site` step runs no geoldp code): exit 130 with one line, or the run finished first."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    delays = np.random.default_rng(7).uniform(0.0, 1.5, size=12)
    for k, delay in enumerate(np.sort(delays)):
        out = tmp_path / f"o{k}.geojson"
        child = subprocess.Popen(
            [sys.executable, "-X", "importtime", "-m", "geoldp", *_perturb_argv(cli_inputs, out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=_default_sigint,
        )
        assert child.stderr is not None
        for line in child.stderr:  # -X importtime: one line per module, once it is loaded
            if line.rstrip().endswith("| geoldp.cli._args"):
                break
        time.sleep(float(delay))
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=300)
        lines = [ln for ln in err.splitlines() if not ln.startswith("import time:")]
        assert "Traceback" not in err, (delay, err[-3000:])
        if child.returncode == 0:  # finished before the signal: the complete output
            assert gio.read_ledger(out).mechanism == "atp"
            continue
        assert child.returncode == 130 and lines == ["geoldp: interrupted"], (delay, child.returncode, lines)
        if out.exists():  # Ctrl-C came while the files were renamed: held until the pair was in place
            assert gio.read_ledger(out).mechanism == "atp"
        assert _hidden(tmp_path) == []


# --------------------------------------------------------------------------------------------------
# the commit record: concurrent readers, a name taken meanwhile, a record that cannot be trusted


class _Killed(BaseException):
    """Stands for kill -9 at a pause point: the write stops there and cleans nothing up."""


def _die_at(monkeypatch, where: str) -> None:
    from geoldp._core import safe_write as _safe_write

    def pause(point: str) -> None:
        if point == where:
            raise _Killed()

    monkeypatch.setattr(_safe_write, "pause_point", pause)


@pytest.mark.parametrize("point", ["journal", "rename"])
def test_a_reader_during_the_renames_finishes_them_and_the_writer_still_succeeds(
    tmp_path, point, monkeypatch
):
    from geoldp._core import safe_write as _safe_write

    target = tmp_path / "out.csv"
    gio.write_file(_released(5), target)
    seen = []

    def pause(name: str) -> None:
        if name == point:  # another process reads the output while the writer renames its files
            seen.append(gio.read_ledger(target).epsilon)

    monkeypatch.setattr(_safe_write, "pause_point", pause)
    gio.write_file(_released(7), target, overwrite=True)
    assert seen == [7.0]  # the reader finished the commit: the new pair, never half of it
    assert gio.read_ledger(target).epsilon == 7.0 and len(gio.read_trajectories(target)) == 7
    assert sorted(os.listdir(tmp_path)) == ["out.csv", "out.csv.ledger.json"]


@pytest.mark.parametrize(("point", "taken"), [("journal", "out.csv"), ("rename", "out.csv.ledger.json")])
def test_a_fresh_name_taken_during_the_commit_rolls_the_write_back(tmp_path, point, taken, monkeypatch):
    from geoldp._core import safe_write as _safe_write

    def pause(name: str) -> None:
        if name == point:  # another program creates one of the names after the commit began
            (tmp_path / taken).write_bytes(b"someone else's file")

    monkeypatch.setattr(_safe_write, "pause_point", pause)
    with pytest.raises(ValueError, match=rf"{taken}' appeared while it was being written"):
        gio.write_file(_released(7), tmp_path / "out.csv")
    assert _snapshot(tmp_path) == {taken: b"someone else's file"}  # ours removed again, theirs kept
    assert _hidden(tmp_path) == []


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_kill_9_after_the_record_is_finished_by_the_next_reader_in_process(tmp_path, suffix, monkeypatch):
    target = tmp_path / f"out{suffix}"
    gio.write_file(_released(5), target)
    _die_at(monkeypatch, "journal")
    with pytest.raises(_Killed):
        gio.write_file(_released(7), target, overwrite=True)
    monkeypatch.undo()
    assert any(n.endswith(".geoldp-commit") for n in _hidden(tmp_path))
    assert len(gio.read_trajectories(target, ledger=True)) == 7  # finished first, then read
    assert gio.read_ledger(target).epsilon == 7.0 and _hidden(tmp_path) == []


def test_a_commit_that_cannot_be_finished_here_says_how(tmp_path, monkeypatch):
    target = tmp_path / "out.csv"
    gio.write_file(_released(5), target)
    _die_at(monkeypatch, "journal")
    with pytest.raises(_Killed):
        gio.write_file(_released(7), target, overwrite=True)
    monkeypatch.undo()

    def read_only(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", read_only)  # as in a folder the reader may not write
    with pytest.raises(OSError, match="interrupted after it was complete.*make the folder writable"):
        gio.read_ledger(target)
    monkeypatch.undo()
    assert gio.read_ledger(target).epsilon == 7.0 and _hidden(tmp_path) == []


def _record_of_a_killed_write(tmp_path: Path, monkeypatch) -> tuple[Path, Path, dict]:
    import json

    target = tmp_path / "out.csv"
    gio.write_file(_released(5), target)
    _die_at(monkeypatch, "journal")
    with pytest.raises(_Killed):
        gio.write_file(_released(7), target, overwrite=True)
    monkeypatch.undo()
    record = tmp_path / ".out.csv.geoldp-commit"
    return target, record, json.loads(record.read_text())


@pytest.mark.parametrize(
    "tamper",
    ["not json", "another output's file", "a path outside the folder", "other content", "a symlink"],
)
def test_a_commit_record_that_cannot_be_trusted_is_refused_and_nothing_moves(tmp_path, monkeypatch, tamper):
    import json

    target, record, doc = _record_of_a_killed_write(tmp_path, monkeypatch)
    (tmp_path / "victim.txt").write_bytes(b"unrelated")
    if tamper == "not json":
        record.write_text("{")
    elif tamper == "another output's file":
        doc["files"][0]["target"] = "victim.txt"
        record.write_text(json.dumps(doc))
    elif tamper == "a path outside the folder":
        doc["files"][0]["target"] = "../out.csv"
        record.write_text(json.dumps(doc))
    elif tamper == "other content":
        doc["files"][0]["sha256"] = "0" * 64
        doc["remove"] = ["out.csv.ledger.json"]  # checked before anything is removed
        record.write_text(json.dumps(doc))
    else:
        (tmp_path / "elsewhere").write_text(json.dumps(doc))
        record.unlink()
        record.symlink_to(tmp_path / "elsewhere")
    before, litter = _snapshot(tmp_path), _hidden(tmp_path)
    for reader in (gio.read_ledger, gio.read_trajectories):
        with pytest.raises(ValueError, match="geoldp-commit"):
            reader(target)
    assert _snapshot(tmp_path) == before and _hidden(tmp_path) == litter  # nothing renamed or removed
    assert (tmp_path / "victim.txt").read_bytes() == b"unrelated"


# -- recovery touches only regular files it wrote, under exact names ---------------------------------------


@pytest.mark.parametrize(
    "tamper",
    [
        "target: a sibling of the same stem",
        "removal: a sibling of the same stem",
        "removal: the stem with another suffix",
        "removal: a symlink under an exact name",
        "staged: a symlink to a file outside the folder",
    ],
)
def test_recovery_touches_only_its_own_regular_files(tmp_path, monkeypatch, tamper):
    import json

    target, record, doc = _record_of_a_killed_write(tmp_path, monkeypatch)
    (tmp_path / "out_sibling.csv").write_bytes(b"sibling")
    (tmp_path / "out.gpkg").write_bytes(b"same stem, another file")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    if tamper.startswith("target"):
        doc["files"][0]["target"] = "out_sibling.csv"
    elif tamper == "removal: a sibling of the same stem":
        doc["remove"] = ["out_sibling.csv"]
    elif tamper == "removal: the stem with another suffix":
        doc["remove"] = ["out.gpkg"]
    elif tamper == "removal: a symlink under an exact name":
        (outside / "precious").write_bytes(b"precious")
        (tmp_path / "out.csv.ledger.json").unlink()
        (tmp_path / "out.csv.ledger.json").symlink_to(outside / "precious")
        doc["remove"] = ["out.csv.ledger.json"]
    else:  # the staged temporary replaced by a link to a file with the same content elsewhere
        staged = tmp_path / doc["files"][0]["staged"]
        (outside / "copy").write_bytes(staged.read_bytes())
        staged.unlink()
        staged.symlink_to(outside / "copy")
    record.write_text(json.dumps(doc))
    before, litter, elsewhere = _snapshot(tmp_path), _hidden(tmp_path), _snapshot(outside)
    links = {n: os.readlink(tmp_path / n) for n in os.listdir(tmp_path) if (tmp_path / n).is_symlink()}
    for reader in (gio.read_ledger, gio.read_trajectories):
        with pytest.raises(ValueError, match="geoldp-commit"):
            reader(target)
    assert _snapshot(tmp_path) == before and _hidden(tmp_path) == litter  # nothing renamed or removed
    assert {n: os.readlink(tmp_path / n) for n in links} == links
    assert not target.is_symlink()
    assert (tmp_path / "out_sibling.csv").read_bytes() == b"sibling"
    assert _snapshot(outside) == elsewhere


@pytest.mark.parametrize("suffix", [".csv", ".geojson", ".gpkg", ".shp"])
def test_recovery_of_each_format_still_finishes_with_exact_names(tmp_path, suffix, monkeypatch):
    target = tmp_path / f"out{suffix}"
    (tmp_path / "out_sibling.csv").write_bytes(b"sibling")
    gio.write_file(_released(5), target)
    _die_at(monkeypatch, "journal")
    with pytest.raises(_Killed):
        gio.write_file(_released(7), target, overwrite=True)
    monkeypatch.undo()
    assert gio.read_ledger(target).epsilon == 7.0 and _hidden(tmp_path) == []
    assert (tmp_path / "out_sibling.csv").read_bytes() == b"sibling"


# -- a layer set (estimate -o X.gpkg / X.geojson) is written as one unit -----------------------------------


def _layer_set(n: int) -> dict:
    import geopandas as gpd
    import shapely

    def frame(k):
        return gpd.GeoDataFrame(
            {"estimate": np.arange(n, dtype=float) + k}, geometry=[shapely.Point(116.3, 39.9)] * n, crs=4326
        )

    return {"zone_visits": frame(0), "od_flows": frame(1), "hotspots": frame(2)}


def _set_state(tmp_path: Path, suffix: str) -> dict:
    import geopandas as gpd

    if suffix == ".gpkg":
        import pyogrio

        p = tmp_path / "est.gpkg"
        return {str(n): len(gpd.read_file(p, layer=str(n))) for n in pyogrio.list_layers(p)[:, 0]}
    return {
        name: len(gio.read_trajectories(tmp_path / f"est.{name}.geojson"))
        for name in ("zone_visits", "od_flows", "hotspots")
    }


@pytest.mark.parametrize("suffix", [".gpkg", ".geojson"])
@pytest.mark.parametrize("point", ["staged", "journal", "rename"])
def test_a_layer_set_killed_during_its_write_is_old_or_new_whole(tmp_path, suffix, point, monkeypatch):
    from geoldp import layers

    layers.write_layers(_layer_set(3), tmp_path / f"est{suffix}")
    old = _set_state(tmp_path, suffix)
    _die_at(monkeypatch, point)
    try:
        layers.write_layers(_layer_set(5), tmp_path / f"est{suffix}", overwrite=True)
        killed = False
    except _Killed:
        killed = True
    monkeypatch.undo()
    state = _set_state(tmp_path, suffix)  # a reader of the set (each layer file) after the kill
    assert state in (old, {k: 5 for k in old}), state
    if killed and point != "staged":
        assert state == {k: 5 for k in old}  # committed: finished by the reader
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == [] or point == "staged"


def test_a_layer_set_that_fails_half_way_leaves_the_old_set(tmp_path, monkeypatch):
    import geopandas as gpd

    from geoldp import layers

    layers.write_layers(_layer_set(3), tmp_path / "est.gpkg")
    before = _snapshot(tmp_path)
    calls = []
    real = gpd.GeoDataFrame.to_file

    def second_layer_fails(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(gpd.GeoDataFrame, "to_file", second_layer_fails)
    with pytest.raises(OSError, match="No space left|previous files"):
        layers.write_layers(_layer_set(5), tmp_path / "est.gpkg", overwrite=True)
    monkeypatch.undo()
    assert _snapshot(tmp_path) == before and _hidden(tmp_path) == []
    assert _set_state(tmp_path, ".gpkg") == {"zone_visits": 3, "od_flows": 3, "hotspots": 3}
