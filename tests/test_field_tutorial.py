"""The field page (docs/field.md) shows examples/field_campaign.py, which runs a whole campaign end to end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from geoldp.store import Store

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "field_campaign.py"
DOC = ROOT / "docs" / "field.md"


def test_the_page_shows_the_script():
    page = DOC.read_text()
    shown = re.findall(
        r"\{literalinclude\} \.\./examples/(\w+\.py)\n:language: python\n:start-after: \"# \[(\w+)\]\"", page
    )
    assert {"settings", "publish", "device", "respond", "ingest", "answer"} <= {
        name for script, name in shown if script == SCRIPT.name
    }
    assert ("field_ldptrace.py", "rounds") in shown  # LDPTrace's two rounds, from their own example
    for script, name in shown:
        text = (ROOT / "examples" / script).read_text()
        assert f"# [{name}]" in text and f"# [/{name}]" in text, name
    assert "(field.md)" in (ROOT / "docs" / "tutorial.md").read_text()


def test_the_script_runs_a_whole_campaign(tmp_path):
    pytest.importorskip("pyogrio")
    env = dict(os.environ, GEOLDP_EXAMPLES_SMALL="1", PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    assert "200 devices answered" in proc.stdout and "stored 200, over budget 0, refused 0" in proc.stdout
    with Store.open(tmp_path / "store.gpkg") as store:
        assert store.count("geoldp_reports") == 200 and store.verify()["overspent"] == 0
    import geopandas as gpd

    layer = gpd.read_file(tmp_path / "zone_visits.gpkg")
    assert len(layer) == 16 and {"estimate", "supported"} <= set(layer.columns)
