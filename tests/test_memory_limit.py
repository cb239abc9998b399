"""A 10^6-point public set under a 2 GiB address-space limit: a result or one clean out-of-memory error.

Loading a compiled library late (SciPy's OpenBLAS for a k-d tree, numba's LLVM) under ``ulimit -v``
failed with "failed to map segment from shared object" (or crashed) instead of a ``MemoryError``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

resource = pytest.importorskip("resource")  # POSIX only

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 2 * 1024**3  # bytes of address space (ulimit -v 2097152)


def _run(argv: list[str], cwd: Path, limit: int = LIMIT) -> subprocess.CompletedProcess:
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = {k: v for k, v in os.environ.items() if k not in ("GEOLDP_TRACEBACK", "ARROW_DEFAULT_MEMORY_POOL")}
    env["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=900,
        preexec_fn=set_limit,
    )


@pytest.fixture(scope="module")
def million(tmp_path_factory):
    d = tmp_path_factory.mktemp("million")
    rng = np.random.default_rng(0)
    n = 1_000_000
    lon, lat = rng.uniform(-10, 10, n), rng.uniform(-10, 10, n)
    np.savetxt(
        d / "points.csv",
        np.column_stack([lon, lat]),
        fmt="%.9f",
        delimiter=",",
        header="lon,lat",
        comments="",
    )
    m = 200  # 20 trips of 10 fixes
    trips = np.column_stack(
        [
            np.repeat(np.arange(20), 10),
            np.tile(np.arange(10), 20),
            rng.uniform(-9, 9, m),
            rng.uniform(-9, 9, m),
        ]
    )
    np.savetxt(d / "trips.csv", trips, fmt="%g", delimiter=",", header="trip,t,lon,lat", comments="")
    return d


@pytest.mark.slow
def test_cli_perturb_with_a_million_public_points_under_2_gib(million):
    argv = ["-m", "geoldp", "perturb", "trips.csv", "--points", "points.csv", "--traj-id-col", "trip"]
    argv += ["--time-col", "t", "--epsilon", "2", "--seed", "1", "-o", "out.csv", "--no-progress"]
    done = _run(argv, million)
    assert done.returncode >= 0, f"killed by signal {-done.returncode}: {done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if done.returncode == 0:
        assert (million / "out.csv").is_file()
    else:  # too little memory on this machine after all: one line that says so and what to do
        lines = [line for line in done.stderr.splitlines() if line.startswith("geoldp: error:")]
        assert done.returncode == 1 and len(lines) == 1, done.stderr[-3000:]
        assert lines[0].startswith("geoldp: error: out of memory (") and "raise the memory limit" in lines[0]


CHILD = """
import sys
import numpy as np
import pandas as pd
import geopandas as gpd
try:
    import geoldp
    points = pd.read_csv("points.csv")
    points["name"] = points.index.astype(str)  # a string column: pandas' Arrow allocator in use
    P = gpd.GeoDataFrame(points, geometry=gpd.points_from_xy(points.lon, points.lat), crs=4326)
    ps = geoldp.PointSet.from_geodataframe(P)
    idx = ps.nearest(ps.lon[:5] + 1e-4, ps.lat[:5])
    t = pd.read_csv("trips.csv")
    trips = gpd.GeoDataFrame(t, geometry=gpd.points_from_xy(t.lon, t.lat), crs=4326)
    out = trips.ldp.perturb(ps, epsilon=2.0, traj_id_col="trip", time_col="t", rng=1)
    assert len(out) == len(trips)
    print("RESULT")
except MemoryError as exc:
    print("MEMORYERROR", exc)
"""


@pytest.mark.slow
@pytest.mark.parametrize("gib", [1.7, 1.9, 2.0, 2.2])  # the limit falls in different stages of the call
def test_python_pointset_and_perturb_with_a_million_points_under_a_limit(million, gib):
    done = _run(["-c", CHILD], million, int(gib * 1024**3))
    assert done.returncode == 0, f"status {done.returncode}: {done.stderr[-3000:]}"
    assert done.stdout.startswith(("RESULT", "MEMORYERROR")), done.stdout + done.stderr[-3000:]
