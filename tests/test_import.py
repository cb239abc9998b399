"""``import geoldp``: a light start (no heavy module loaded), lazy names that are the real objects, and the
``.ldp`` accessor registered whatever the import order."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import geoldp

SOURCE = Path(geoldp.__file__).resolve().parent


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


def test_lazy_names_are_the_real_objects():
    from geoldp import accounting, trajectory

    assert geoldp.ATP is trajectory.ATP and geoldp.BudgetAccountant is accounting.BudgetAccountant
    assert {"prepare", "io", "plotting", "datasets", "estimate", "points"} <= set(dir(geoldp))
    assert set(geoldp.__all__) <= set(dir(geoldp))
    for name in geoldp.__all__:
        assert getattr(geoldp, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        geoldp.nope  # noqa: B018


# the command line answers --help, --version and usage errors without loading a heavy module
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
