"""The out-of-sample experiment's trajectory pilot (experiments/designs_oos.py): privacy and the prior.

The pilot users release their trajectories with ATP or PointEM at their whole ε on P, and the planner's
prior is that release or the collector's denoised estimate of it (post-processing). Small made-up data:
no file of /work/shared/data is read.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from experiment_support import load_experiment

import geoldp


@pytest.fixture(scope="module")
def oos() -> ModuleType:
    """experiments/designs_oos.py as a module (it imports experiments/designs.py beside it)."""
    return load_experiment("designs_oos", "designs_oos_trajectory_under_test")


def _setting(seed: int = 0, m: int = 150) -> tuple[pd.DataFrame, gpd.GeoDataFrame]:
    """(P of ``m`` points with lon/lat over a small box, 60 trips of 2..8 points of P)."""
    gen = np.random.default_rng(seed)
    lon, lat = 116.3 + gen.uniform(0.0, 0.1, m), 39.9 + gen.uniform(0.0, 0.1, m)
    points = gpd.GeoDataFrame(
        {"lon": lon, "lat": lat}, geometry=gpd.points_from_xy(lon, lat), crs="EPSG:4326"
    )
    lines = []
    for _ in range(60):
        idx = gen.choice(m, size=int(gen.integers(2, 9)), replace=False)
        lines.append(shapely.linestrings(np.column_stack([lon[idx], lat[idx]])))
    return points, gpd.GeoDataFrame(geometry=lines, crs="EPSG:4326")


@pytest.mark.parametrize("variant", ["trajectory:atp", "trajectory:pointem", "trajectory:atp:denoised"])
def test_trajectory_pilot_is_one_release_per_pilot_user(oos: ModuleType, variant: str) -> None:
    points, trips = _setting()
    rows = np.arange(0, 60, 3)
    spec = oos.TRAJECTORY_VARIANTS[variant]
    release, prior, seqs = oos.trajectory_pilot(trips, points, 2.0, rows, spec)
    led = geoldp.ledger_of(release)
    # the pilot's ledger: the named mechanism at the whole ε of each pilot user, one trajectory each
    assert led.epsilon == 2.0
    assert led.settings["options"]["mechanism"] == spec["mechanism"]
    assert len(release) == rows.size
    # the prior: one trajectory per pilot user, of its released length, every vertex a point of P
    lengths = shapely.get_num_coordinates(np.asarray(trips.geometry.iloc[rows]))
    assert [s.shape[0] for s in seqs] == lengths.tolist()
    flat = np.concatenate(seqs)
    xy = shapely.get_coordinates(np.asarray(prior.geometry))
    np.testing.assert_array_equal(xy[:, 0], points.lon.to_numpy()[flat])
    np.testing.assert_array_equal(xy[:, 1], points.lat.to_numpy()[flat])


def test_denoised_prior_reads_the_release_only(oos: ModuleType, monkeypatch: Any) -> None:
    """Two different pilots whose (stubbed) releases are the same give the same denoised prior."""
    points, trips = _setting(1)
    other = _setting(2)[1]
    spec = oos.TRAJECTORY_VARIANTS["trajectory:atp:denoised"]
    release, _, seqs = oos.trajectory_pilot(trips, points, 4.0, np.arange(20), spec)
    monkeypatch.setattr(type(other.ldp), "perturb", lambda *a, **k: release)
    _, _, again = oos.trajectory_pilot(other, points, 4.0, np.arange(20), spec)
    assert all(np.array_equal(a, b) for a, b in zip(seqs, again, strict=True))
    # and the denoised prior is not the release itself (the post-processing moved some vertices)
    raw = oos.trajectory_pilot(trips, points, 4.0, np.arange(20), oos.TRAJECTORY_VARIANTS["trajectory:atp"])[
        2
    ]
    assert any(not np.array_equal(a, b) for a, b in zip(seqs, raw, strict=True))


def test_the_bounds_judge_the_uniform_baseline_with_the_true_lengths_only(oos: ModuleType) -> None:
    # the upper bounds' second judgement: the uniform baseline's error is replaced (true lengths), no
    # other row changes, and a setting without a replacement keeps its measured value
    measured = pd.DataFrame(
        {
            "dataset": ["a", "a", "a", "b"],
            "epsilon": [1.0, 1.0, 1.0, 1.0],
            "question": ["zone_visits", "zone_visits", "od_flows", "zone_visits"],
            "design": ["baseline:uniform", "atp", "baseline:uniform", "baseline:uniform"],
            "error": [0.9, 0.3, 0.8, 0.7],
        }
    )
    uniform = pd.DataFrame({"dataset": ["a"], "epsilon": [1.0], "question": ["zone_visits"], "error": [0.1]})
    out = oos._with_uniform(measured, uniform)
    assert out["error"].tolist() == [0.1, 0.3, 0.8, 0.7]
    assert measured["error"].tolist() == [0.9, 0.3, 0.8, 0.7]  # the input is left as it was
    assert set(oos.ORACLE_VARIANTS).isdisjoint(
        oos._walk_pool(pd.DataFrame({"variant": list(oos.ORACLE_VARIANTS)}))
    )
