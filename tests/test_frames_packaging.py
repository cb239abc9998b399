"""Packaging guards for the GeoPandas-layer owner: pyproject pins, README set-up commands, .ci/run."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_floor_only_pins_and_extras():
    project = _pyproject()["project"]
    assert project["name"] == "geoldp" and project["requires-python"] == ">=3.11"
    reqs = list(project["dependencies"])
    for extra in ("test", "docs", "dask"):
        assert extra in project["optional-dependencies"]
        reqs += project["optional-dependencies"][extra]
    for req in reqs:
        assert not re.search(r"==|<|~=|!=", req), req
    names = {re.split(r"[<>=\[ ]", r)[0].lower() for r in project["dependencies"]}
    assert {"numpy", "pandas", "geopandas", "shapely", "pyproj", "scikit-learn"} <= names
    assert project["scripts"]["geoldp"] == "geoldp.__main__:run"
    assert (ROOT / "src" / "geoldp" / "py.typed").exists()


def _readme_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    head = text.split("---", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", head, flags=re.S)


def test_readme_has_exactly_two_setup_commands():
    cmds = _readme_commands()
    assert len(cmds) == 2 and all("\n" not in c for c in cmds)
    assert cmds[0].endswith("geoldp demo") and "pip install" in cmds[0]
    # a plain install must draw the demo's map: matplotlib is a core dependency
    names = {re.split(r"[<>=\[ ]", r)[0].lower() for r in _pyproject()["project"]["dependencies"]}
    assert "matplotlib" in names
    assert '".[test]"' in cmds[1] and "pytest" in cmds[1]


@pytest.mark.parametrize("marker, position", [("demo-command", 0), ("test-command", 1)])
def test_ci_runs_the_readme_commands(marker, position):
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    extract = re.search(r"^readme_command\(\) \{\n.*?^\}\n", script, flags=re.S | re.M).group(0)
    assert f"$(readme_command {marker})" in script
    out = subprocess.run(
        ["bash", "-c", f"{extract}\nreadme_command {marker}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == _readme_commands()[position]


@pytest.mark.parametrize(
    "phrase",
    [
        "one row",
        "not protected",
        "seeded",
        "deployment",
        "Side channels",
        "length",
        "Timestamps",
        "Development",
        "bench_engine.py",
        "paper_setup.py",
    ],
)
def test_readme_mentions(phrase):
    assert phrase.lower() in (ROOT / "README.md").read_text(encoding="utf-8").lower()
