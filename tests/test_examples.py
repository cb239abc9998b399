"""Smoke-run every script in examples/ at a small size (GEOLDP_EXAMPLES_SMALL=1), in a temporary directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


def test_examples_exist():
    assert {p.name for p in EXAMPLES} >= {"quickstart.py", "raw_gps.py", "dask_perturb.py"}


#: tutorial.py runs end to end in tests/test_tutorial.py (its code, its command line and its demo data)
SMOKED = [p for p in EXAMPLES if p.name != "tutorial.py"]


@pytest.mark.parametrize("script", SMOKED, ids=[p.name for p in SMOKED])
def test_example_runs(script, tmp_path):
    if script.name.startswith("dask"):
        pytest.importorskip("dask_geopandas")
    env = dict(os.environ, GEOLDP_EXAMPLES_SMALL="1", MPLBACKEND="Agg", TMPDIR=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"{script.name} failed:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.strip()
    assert "Traceback" not in proc.stderr
