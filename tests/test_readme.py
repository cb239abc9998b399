"""The README's Python examples run as written (in a temporary working directory)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _python_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_examples_run(tmp_path, monkeypatch):
    blocks = _python_blocks()
    assert len(blocks) >= 3, "the README lost its examples"
    needs_folium = [b for b in blocks if ".ldp.explore(" in b]
    if needs_folium:
        pytest.importorskip("folium")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for k, block in enumerate(blocks):
        exec(compile(block, f"README.md python block {k}", "exec"), namespace)  # noqa: S102
    assert (tmp_path / "perturbed.geojson").exists()
