"""numba's cache: never inside the installed geoldp package, one folder per version of the kernel sources.

Each check runs geoldp in a fresh interpreter from a copy of the package (so that nothing cached earlier in
the source tree can hide a regression), compiles one cached kernel, and then looks at where numba wrote.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import geoldp
from geoldp._core import numba_cache as _numba_cache

SOURCE = Path(geoldp.__file__).resolve().parent


# Compiles (or loads) one small ``njit(cache=True)`` kernel and prints numba's cache directory.
SNIPPET = """
import numba, geoldp
from geoldp.trajectory.calibration import sw_estimate
assert sw_estimate(0.5, 0.25, 2.0) == (0.5 + 0.25) * 2.0 / 1.5
print(numba.config.CACHE_DIR)
"""


def _cache_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".nbi", ".nbc"))


def _run(tmp_path: Path, env_updates: dict[str, str]) -> tuple[str, Path]:
    package = tmp_path / "site" / "geoldp"
    shutil.copytree(SOURCE, package, ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(env_updates, PYTHONPATH=str(package.parent))
    proc = subprocess.run(
        [sys.executable, "-c", SNIPPET], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1], package


def test_cache_goes_to_the_per_user_cache_dir(tmp_path):
    cache_home = tmp_path / "xdg"
    used, package = _run(tmp_path, {"XDG_CACHE_HOME": str(cache_home)})
    if sys.platform.startswith("linux"):
        # one subfolder per version of the numba sources (the copied package has the same sources)
        assert Path(used) == cache_home / "geoldp" / "numba" / _numba_cache.source_fingerprint(package)
    assert _cache_files(Path(used)), "numba wrote no cache files into the configured directory"
    assert _cache_files(package) == [], "numba wrote its cache inside the package"


def test_user_set_numba_cache_dir_is_respected(tmp_path):
    chosen = tmp_path / "mine"
    used, package = _run(tmp_path, {"NUMBA_CACHE_DIR": str(chosen), "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert Path(used) == chosen
    assert _cache_files(chosen)
    assert not (tmp_path / "xdg" / "geoldp").exists()
    assert _cache_files(package) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME is the Linux cache base")
def test_unwritable_cache_dir_degrades_to_a_private_temporary_dir(tmp_path):
    # A regular file where the cache base should be: the directory cannot be created, even by root.
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    used, package = _run(tmp_path, {"XDG_CACHE_HOME": str(blocker), "TMPDIR": str(tmp_path)})
    assert Path(used).parent == tmp_path and Path(used).name.startswith("geoldp-numba-")
    assert not Path(used).exists(), "the temporary cache directory outlived the process"
    assert _cache_files(package) == []


def test_fingerprint_follows_the_numba_sources_only(tmp_path):
    # a kernel's callee in another module changes: numba's own check (the defining file's time stamp)
    # would reuse the stale kernel, the fingerprinted directory cannot
    package = tmp_path / "geoldp"
    shutil.copytree(SOURCE, package, ignore=shutil.ignore_patterns("__pycache__"))
    before = _numba_cache.source_fingerprint(package)
    assert before == _numba_cache.source_fingerprint(SOURCE)
    errors = package / "_core" / "errors.py"
    errors.write_text(errors.read_text() + "\n# a module without kernels\n")
    assert _numba_cache.source_fingerprint(package) == before
    # a module that only mentions numba in its prose is not a kernel source either
    demo = package / "demo.py"
    assert b"numba" in demo.read_bytes()
    demo.write_text(demo.read_text() + "\n# numba is mentioned here, nothing compiled\n")
    assert _numba_cache.source_fingerprint(package) == before
    region = package / "trajectory" / "_atp_region.py"
    region.write_text(region.read_text() + "\n# changed\n")
    assert _numba_cache.source_fingerprint(package) != before


def test_prune_removes_only_old_fingerprint_directories(tmp_path):
    keep, old, recent = "0123456789abcdef", "fedcba9876543210", "00000000ffffffff"
    for name in (keep, old, recent, "other-tool"):
        (tmp_path / name).mkdir()
    week_ago = os.path.getmtime(tmp_path / old) - 8 * 24 * 3600
    for name in (keep, old, "other-tool"):
        os.utime(tmp_path / name, (week_ago, week_ago))
    _numba_cache.prune(tmp_path, keep)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([keep, recent, "other-tool"])


def test_numba_imported_after_geoldp_still_caches_outside_the_package(tmp_path):
    # numba loads only when a kernel module is imported; geoldp's cache directory must be set by then
    code = "import geoldp, numba\nfrom geoldp.trajectory import ATP\nprint(numba.config.CACHE_DIR)\n"
    env_home = tmp_path / "xdg"
    env = dict(os.environ, PYTHONPATH=str(SOURCE.parent), XDG_CACHE_HOME=str(env_home))
    env.pop("NUMBA_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    if sys.platform.startswith("linux"):
        assert Path(proc.stdout.strip()).parent == env_home / "geoldp" / "numba"
