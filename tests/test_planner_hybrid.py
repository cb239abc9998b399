"""The inverse-variance hybrids of the planner, their parts' errors, and the users-needed search's floor."""

from __future__ import annotations

import math

import numpy as np
import pytest

import geoldp
from geoldp import planner, shrinkage, zone_grid
from geoldp.designs import ReportDesign

PTS = np.random.default_rng(0).uniform(0.0, 1.0, size=(150, 2))
ZONES = zone_grid((0.0, 0.0, 1.0, 1.0), cells=4)
IVW = ["hybrid:atp+report:ivw@0.5", "hybrid:atp+report:ivw@0.75"]


def test_inverse_variance_matches_the_formula_and_is_never_less_precise_than_a_part():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 20))
    s = rng.uniform(0.5, 3.0, size=(3, 20))
    est, se = shrinkage.inverse_variance(x, s)
    w = 1.0 / s**2
    assert np.allclose(est, (w * x).sum(axis=0) / w.sum(axis=0))
    assert np.allclose(se, w.sum(axis=0) ** -0.5)
    assert (se <= s.min(axis=0) + 1e-12).all()


def test_inverse_variance_leaves_out_a_part_without_an_error():
    est, se = shrinkage.inverse_variance(
        [[1.0, 2.0, 3.0], [9.0, 9.0, 9.0]], [[1.0, 1.0, np.nan], [np.nan, 0.0, 1.0]]
    )
    assert est.tolist() == [1.0, 2.0, 9.0] and se.tolist() == [1.0, 1.0, 1.0]
    est, _ = shrinkage.inverse_variance([[1.0], [2.0]], [[np.nan], [0.0]])
    assert np.isnan(est[0])


def test_inverse_variance_of_unbiased_parts_is_unbiased_with_the_stated_variance():
    # two unbiased normal parts of sd 1 and 2: the combination has variance 1 / (1 + 1/4) = 0.8; with 40,000
    # draws the sample mean's sd is 0.0045 and the sample variance's relative sd about 0.7 %
    rng = np.random.default_rng(2)
    draws = 40_000
    a = 5.0 + rng.normal(0.0, 1.0, draws)
    b = 5.0 + rng.normal(0.0, 2.0, draws)
    est, se = shrinkage.inverse_variance([a, b], [np.ones(draws), np.full(draws, 2.0)])
    assert abs(est.mean() - 5.0) < 4 * math.sqrt(0.8 / draws)
    assert est.var() == pytest.approx(0.8, rel=0.04)
    assert np.allclose(se, math.sqrt(0.8))


def test_inverse_variance_refuses_mismatched_errors():
    with pytest.raises(ValueError, match="std_errors"):
        shrinkage.inverse_variance([[1.0, 2.0]], [[1.0]])
    with pytest.raises(ValueError, match="std_errors"):
        shrinkage.inverse_variance([], [])


@pytest.mark.parametrize("question", ["zone_visits", "od_flows", "range_counts"])
def test_ivw_hybrids_are_in_the_table(question):
    t = geoldp.plan(PTS, ZONES, epsilon=4.0, n=800, lengths=[2, 3, 5], question=question, rng=3)
    assert set(IVW) <= set(t.index)
    assert (t.loc[IVW, "kind"] == "hybrid").all()
    assert np.isfinite(t.loc[IVW, "error"]).all()
    assert t.loc[IVW, "interval_width"].isna().all()  # a biased part: no interval claimed


def test_ivw_hybrid_follows_its_precise_part():
    # at ε = 8 with 3/4 of it to a padded report of 200,000 users, the report's standard error is a small
    # share of ATP's RMS error (ATP at ε = 2 is biased, more users do not help it): the combination's error
    # is well below ATP's at the whole ε
    kw = dict(epsilon=8.0, n=200_000, lengths=[2, 3], question="range_counts", rng=4)
    t = geoldp.plan(PTS, ZONES, designs=["atp", "report:visited_zone:padded", IVW[1]], **kw)
    assert t.loc[IVW[1], "error"] < 0.5 * t.loc["atp", "error"]


def test_trajectory_rms_is_per_cell_floored_and_reproducible():
    kw = dict(epsilon=2.0, n=4000, lengths=[2, 3], rng=5)
    vis = planner.trajectory_rms(PTS, ZONES, **kw)
    od = planner.trajectory_rms(PTS, ZONES, question="od_flows", **kw)
    assert vis.shape == (16,) and od.shape == (256,)
    assert (vis >= 2.0).all() and (od >= 2.0).all()  # 4000 users simulated by 2000 trajectories
    assert np.array_equal(vis, planner.trajectory_rms(PTS, ZONES, **kw))
    # ATP at ε = 2 misplaces visits: the RMS is far above the floor somewhere
    assert vis.max() > 10.0


def test_trajectory_rms_refuses_the_robust_population():
    with pytest.raises(ValueError, match="population"):
        planner.trajectory_rms(PTS, ZONES, epsilon=1.0, n=100, lengths=2, population="robust")


def test_users_needed_uses_the_one_percent_floor_at_every_trial_size():
    # a report-kind design whose absolute error is 0.5 % of the users in every zone: its range-count error
    # (floor 1 % of the users) is the same at every n, so the search returns the smallest trial size when
    # the target is above that error and NaN when it is below. A floor of one user at small trial sizes
    # (a larger share of few users) would make small trials look better and end the search early.
    class FlatError(ReportDesign):
        def simulate(self, sim, question):
            return [sim.visits(sim.seqs) * (sim.n / len(sim.seqs)) + 0.005 * sim.n], None

    planner.register_design(FlatError(), name="flat-error")
    try:
        zones = zone_grid((0.0, 0.0, 1.0, 1.0), cells=10)
        kw = dict(epsilon=1.0, n=2000, lengths=[2, 3], question="range_counts", designs=["flat-error"], rng=6)
        err = geoldp.plan(PTS, zones, **kw).loc["flat-error", "error"]
        below = geoldp.plan(PTS, zones, target_error=0.9 * err, **kw)
        assert np.isnan(below.loc["flat-error", "users_needed"])
        above = geoldp.plan(PTS, zones, target_error=1.1 * err, **kw)
        assert above.loc["flat-error", "users_needed"] == round(2000 / 64)
    finally:
        del planner.DESIGNS["flat-error"]
