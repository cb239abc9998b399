"""The notebook example (examples/campaign.ipynb) runs top to bottom, with its plots inline."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "campaign.ipynb"


@pytest.mark.slow  # a kernel start and a fit: about 15-40 s
def test_campaign_notebook_runs(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")  # stored without outputs
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2  # the estimate map and the interval plot, inline
    text = "".join(o.get("text", "") for o in outputs)
    assert "released 24 of 36 trips" in text
    assert "user 000 has 0.0 left" in text
