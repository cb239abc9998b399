"""The out-of-sample experiment's planner variants (experiments/designs_oos.py): their populations.

The variants the planner's pilot settings were chosen from live in the experiment, which replaces the
planner's populations for a run: start cells shrunk toward P's, and walks concentrated at hot points.
Small made-up data: no file of /work/shared/data is read.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from experiment_support import load_experiment
from pilot_support import checked_pilot_plan, city

import geoldp
from geoldp import designs, planner
from geoldp.zones import check_zones, zone_of_vertices


@pytest.fixture(scope="module")
def oos() -> ModuleType:
    """experiments/designs_oos.py as a module (it imports experiments/designs.py beside it)."""
    return load_experiment("designs_oos", "designs_oos_variants_under_test")


def _cells(pilot_estimate, pts) -> np.ndarray:
    coarse = check_zones(pilot_estimate.coarse, caller="test")
    return zone_of_vertices(coarse, pts.geometry.x.to_numpy(), pts.geometry.y.to_numpy())


def test_the_pilots_cell_shares_shrink_toward_p_by_their_noise(oos):
    # a pilot of 40 reports at ε = 0.05 is noise: its cells are replaced by P's shares of them; one of 3000
    # reports at ε = 24 is precise: its shares are kept (up to the k-RR noise, ~1/sqrt(3000) per cell)
    pilot = designs.Pilot()
    pts, trips, zones = city(3000)
    for n_rep, eps, close_to_p in ((40, 0.05, True), (3000, 24.0, False)):
        est = pilot.estimate(pilot.release(trips.iloc[:n_rep], epsilon=eps, zones=zones, rng=8), zones)
        assert est.cell_std_error is not None and est.cell_std_error.shape == est.cell_pmf.shape
        cells = _cells(est, pts)
        p_shares = np.bincount(cells, minlength=est.cell_pmf.size)[: est.cell_pmf.size] / len(cells)
        shrunk = oos.shrunk_cells(est, cells).cell_pmf
        assert shrunk.sum() == pytest.approx(1.0) and (shrunk >= 0).all()
        if close_to_p:
            np.testing.assert_allclose(shrunk, p_shares, atol=1e-9)
        else:
            assert np.abs(shrunk - est.cell_pmf).sum() < 0.05 < np.abs(est.cell_pmf - p_shares).sum()


def test_a_noise_only_pilot_is_fitted_by_populations_less_like_p(oos):
    # a pilot that is all noise says nothing: the P-likeness penalty then decides, away from P's shares
    pilot = designs.Pilot()
    pts, trips, zones = city(40)
    est = pilot.estimate(pilot.release(trips.iloc[:8], epsilon=0.5, zones=zones, rng=2), zones)
    ps = geoldp.PointSet(pts.geometry.x.to_numpy(), pts.geometry.y.to_numpy())
    z = check_zones(zones, caller="test")
    zp = zone_of_vertices(z, np.asarray(ps.lon), np.asarray(ps.lat))
    cells = _cells(est, pts)
    gen = np.random.default_rng(0)
    lengths = est.draw_lengths(300, gen, maximum=8)
    starts = est.draw_starts(cells, 300, gen)
    spec = oos.VARIANTS["plausible"]
    with_penalty = oos.concentrated_populations(ps, est, lengths, starts, gen, zp, z.size, cells, spec)
    label = next(iter(with_penalty))
    assert not label.startswith("pilot:c0x1@1")  # not the spread walks at the published step law


def test_a_plan_under_the_plausible_variant_spans_its_populations(oos, monkeypatch):
    # the variant replaces the planner's populations for the run (undone after the test)
    original = planner._pilot_populations
    for attr in ("_pilot_populations", "_PILOT_BASELINE_FALLBACK"):
        monkeypatch.setattr(planner, attr, getattr(planner, attr))
    oos.apply_variant(planner, "plausible")
    assert planner._pilot_populations is not original
    _, per_population = checked_pilot_plan()
    assert all(c.startswith("error_pilot:c") for c in per_population)  # the concentrated candidates
