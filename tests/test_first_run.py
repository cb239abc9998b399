"""A first run that just works: numba's cache never lands inside the installed geoldp package.

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


# ------------------------------------------------------------------------------------------------------
# A light start: `import geoldp` and the command line's --help/--version/usage errors load no heavy module.

HEAVY = ("numba", "geopandas", "pandas", "geoldp.estimate", "geoldp.trajectory", "geoldp.accessor")


def _python(code: str, tmp_path: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(SOURCE.parent))
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_import_geoldp_loads_no_heavy_module(tmp_path):
    out = _python(f"import sys, geoldp; print([m for m in {HEAVY!r} if m in sys.modules])", tmp_path)
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    ("argv", "status"), [(["--version"], 0), (["--help"], 0), (["perturb", "--help"], 0), (["perturb"], 2)]
)
def test_cli_answers_help_version_and_usage_errors_without_heavy_imports(tmp_path, argv, status):
    code = (
        "import contextlib, io, sys\n"
        "from geoldp.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    rc = main({argv!r})\n"
        f"print(rc, [m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    assert _python(code, tmp_path).split(maxsplit=1) == [str(status), "[]\n"]


@pytest.mark.parametrize(
    "imports", ["import geopandas as gpd\nimport geoldp", "import geoldp\nimport geopandas as gpd"]
)
def test_accessor_is_there_whatever_the_import_order(tmp_path, imports):
    code = (
        f"{imports}\n"
        "import sys\n"
        "assert 'geoldp.accessor' not in sys.modules  # registered, not yet loaded\n"
        "gdf = gpd.GeoDataFrame(geometry=[])\n"
        "assert hasattr(gdf, 'ldp') and type(gdf.ldp).__name__ == 'LDPAccessor'\n"
        "assert gpd.GeoDataFrame.ldp is sys.modules['geoldp.accessor'].LDPAccessor\n"
        "import pandas as pd\n"
        "assert not hasattr(pd.DataFrame(), 'ldp')  # a plain DataFrame: AttributeError, as before\n"
        "print('ok')\n"
    )
    assert _python(code, tmp_path).strip() == "ok"


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


def test_lazy_names_are_the_real_objects():
    from geoldp import accounting, trajectory

    assert geoldp.ATP is trajectory.ATP and geoldp.BudgetAccountant is accounting.BudgetAccountant
    assert {"prepare", "io", "plotting", "datasets", "estimate", "points"} <= set(dir(geoldp))
    assert set(geoldp.__all__) <= set(dir(geoldp))
    for name in geoldp.__all__:
        assert getattr(geoldp, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        geoldp.nope  # noqa: B018


def test_cached_budget_split_is_the_exact_one_and_read_only():
    # the split is cached per (configuration, ε, length): a hit must give what a fresh computation gives
    from fractions import Fraction

    from geoldp.budget import exact_share, release_scope
    from geoldp.trajectory import split

    for eps, n, copy in [(4.0, 5, "A"), (4, 5, "A"), (0.1, 17, "B"), (Fraction(1, 3), 2, "B")]:
        fresh = split._copy_budgets(eps, n, copy, split.ATP_FRACTIONS, "grouped")
        with release_scope():
            assert split.copy_budgets(eps, n, copy, list(split.ATP_FRACTIONS), "grouped") == fresh
        assert split.copy_budgets(eps, n, copy, split.ATP_FRACTIONS, "grouped") == fresh
        for share in fresh.shares.values():
            assert Fraction(exact_share(eps, share)) <= Fraction(eps) * share
    with pytest.raises(TypeError):
        split.copy_budgets(4.0, 5, "A", split.ATP_FRACTIONS, "uniform").shares["pivot_em"] = Fraction(1)
    with release_scope():
        ledger = split.build_ledger(4.0, 5, split.ATP_FRACTIONS, "uniform", anchor=True)
    assert ledger.total() <= Fraction(4) and ledger is split.build_ledger(
        4.0, 5, split.ATP_FRACTIONS, "uniform", anchor=True
    )


def test_exact_share_is_the_exact_rounded_down_product():
    # the integer arithmetic of exact_share against Fraction arithmetic, on awkward values
    import math
    from fractions import Fraction

    import numpy as np

    from geoldp.budget import exact_share

    rng = np.random.default_rng(0)
    values = [1e-300, 5e-324, 0.1, 1.0, 3.0, 7.25, 1e300, Fraction(1, 3), 4, np.float64(0.3)]
    values += [float(x) for x in rng.uniform(0.001, 50.0, 200)]
    shares = [Fraction(0), Fraction(1), Fraction(1, 3), Fraction(3, 64), Fraction(9, 16 * 999), 0.5, 1]
    shares += [Fraction(int(a), int(b)) for a, b in rng.integers(1, 10**6, (200, 2))]
    for eps in values:
        for share in shares:
            exact = Fraction(eps) * Fraction(share)
            value = float(exact)
            if Fraction(value) > exact:
                value = math.nextafter(value, 0.0)
            got = exact_share(eps, share)
            assert got == value and type(got) is float, (eps, share)


@pytest.mark.parametrize(
    ("state", "stage"), [("compile", "compiling kernels (first run only)"), ("ready", None)]
)
def test_progress_shows_the_kernel_stage_before_the_bar(monkeypatch, toy_lines, city_points, state, stage):
    from geoldp import _release
    from geoldp.trajectory import engine

    bars: list[dict] = []

    class Bar:  # records what geoldp asks tqdm for
        def __init__(self, **kwargs):
            bars.append(dict(kwargs, updates=0))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, n):
            bars[-1]["updates"] += n

    plain = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=5)
    monkeypatch.setattr(_release, "_tqdm", lambda: Bar)
    monkeypatch.setattr(engine, "kernel_state", lambda mechanism: state)
    shown = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=5, progress=True)
    assert shown.geometry.equals(plain.geometry)  # the warm-up uses none of the release's randomness
    descs = [b["desc"] for b in bars]
    if stage is None:
        assert descs == ["geoldp"]
    else:  # the stage first, then the bar (whose rate and ETA start after it)
        assert descs == [f"geoldp: {stage}", "geoldp"] and bars[0]["updates"] == 1
    assert bars[-1]["total"] == len(toy_lines) == bars[-1]["updates"]
