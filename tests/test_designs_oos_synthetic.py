"""The out-of-sample experiment's LDPTrace pilot (experiments/designs_oos.py): privacy and placement.

The pilot users report LDPTrace at their whole ε, and the planner's population is built from the synthetic
release and public P only. Small made-up data: no file of /work/shared/data is read.
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
from geoldp import zone_grid


@pytest.fixture(scope="module")
def oos() -> ModuleType:
    """experiments/designs_oos.py as a module (it imports experiments/designs.py beside it)."""
    return load_experiment("designs_oos", "designs_oos_under_test")


def _setting(seed: int = 0, m: int = 300) -> tuple[pd.DataFrame, Any, gpd.GeoDataFrame]:
    """(P of ``m`` points with lon/lat, 10 × 10 zones over P's box, 120 trips of 2..8 points of P)."""
    gen = np.random.default_rng(seed)
    lon, lat = gen.uniform(0.0, 1.0, m), gen.uniform(0.0, 1.0, m)
    points = gpd.GeoDataFrame(
        {"lon": lon, "lat": lat}, geometry=gpd.points_from_xy(lon, lat), crs="EPSG:4326"
    )
    zones = zone_grid(points, cells=10)
    lines = []
    for _ in range(120):
        # trips that stay near a start: points of P within 0.2 of it
        start = gen.integers(m)
        near = np.flatnonzero(np.hypot(lon - lon[start], lat - lat[start]) < 0.2)
        idx = gen.choice(near, size=int(gen.integers(2, 9)))
        lines.append(shapely.linestrings(np.column_stack([lon[idx], lat[idx]])))
    return points, zones, gpd.GeoDataFrame(geometry=lines, crs="EPSG:4326")


@pytest.mark.parametrize("variant", ["ldptrace:zones:cells", "ldptrace:6", "ldptrace:6:centres"])
def test_synthetic_pilot_is_one_ldptrace_release_per_pilot_user(oos: ModuleType, variant: str) -> None:
    points, zones, trips = _setting()
    rows = np.arange(0, 120, 10)
    syn, prior, seqs = oos.synthetic_pilot(trips, points, zones, 2.0, rows, 500, oos.SYNTH_VARIANTS[variant])
    led = geoldp.ledger_of(syn)
    # the pilot's ledger: LDPTrace at the whole ε of each of the pilot users, and no one else
    assert led.mechanism == "ldptrace"
    assert led.epsilon == 2.0
    assert led.settings["n_users"] == rows.size
    assert led.settings["length_domain"] == oos.MAX_LENGTH
    # the population: P's points, at most the public maximum length, one line a trajectory
    assert len(prior) == len(seqs) == 500
    lengths = np.array([s.shape[0] for s in seqs])
    assert lengths.min() >= 2 and lengths.max() <= oos.MAX_LENGTH
    flat = np.concatenate(seqs)
    assert flat.min() >= 0 and flat.max() < len(points)
    xy = shapely.get_coordinates(np.asarray(prior.geometry))
    np.testing.assert_array_equal(xy[:, 0], points.lon.to_numpy()[flat])


def test_population_reads_the_synthetic_release_only(oos: ModuleType, monkeypatch: Any) -> None:
    """Two different pilots whose (stubbed) synthetic releases are the same give the same population."""
    points, zones, trips = _setting(1)
    other = _setting(2)[2]
    spec = oos.SYNTH_VARIANTS["ldptrace:zones:cells"]
    syn, _, seqs = oos.synthetic_pilot(trips, points, zones, 4.0, np.arange(30), 400, spec)
    monkeypatch.setattr(geoldp, "synthesize", lambda *a, **k: syn)
    _, _, again = oos.synthetic_pilot(other, points, zones, 4.0, np.arange(30), 400, spec)
    assert all(np.array_equal(a, b) for a, b in zip(seqs, again, strict=True))


def test_placed_cells_are_the_synthetic_cells(oos: ModuleType) -> None:
    """With ``place="cell"`` every point of the population lies in the grid cell the synthetic trip visits."""
    from geoldp import ldptrace

    points, zones, trips = _setting(3, m=2000)
    spec = oos.SYNTH_VARIANTS["ldptrace:zones:cells"]
    syn, _, seqs = oos.synthetic_pilot(trips, points, zones, 8.0, np.arange(60), 300, spec)
    grid, cells, offsets, _, _ = ldptrace.synthetic_cells(syn, caller="test")
    p_cell = grid.cells(points.lon.to_numpy(), points.lat.to_numpy())
    assert np.bincount(p_cell, minlength=grid.size).min() > 0  # every cell holds points of P
    for t, seq in enumerate(seqs):
        visited = cells[offsets[t] : offsets[t + 1]]
        # one point a cell, in the synthetic trip's order (at most MAX_LENGTH of its cells, evenly spaced)
        if visited.shape[0] <= oos.MAX_LENGTH:
            np.testing.assert_array_equal(
                p_cell[seq], np.repeat(visited, 2) if visited.shape[0] == 1 else visited
            )
        else:
            assert set(p_cell[seq].tolist()) <= set(visited.tolist())


def test_population_pilot_histograms_are_the_populations(oos: ModuleType) -> None:
    points, zones, _ = _setting(4)
    seqs = [np.array([0, 1]), np.array([2, 3, 4, 5]), np.array([6, 6])]
    est = oos.population_pilot(seqs, points, zones)
    assert est.n == 3
    np.testing.assert_allclose(est.length_pmf.sum(), 1.0)
    np.testing.assert_allclose(est.zone_count_pmf.sum(), 1.0)
    np.testing.assert_allclose(est.cell_pmf.sum(), 1.0)
    # two of length 2 (class [2, 3)), one of length 4 (class [4, 6))
    assert est.length_pmf[1] == pytest.approx(2 / 3) and est.length_pmf[3] == pytest.approx(1 / 3)
