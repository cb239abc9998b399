"""The pilot's estimate and the planner's plan over the populations fitted to it."""

from pilot_support import checked_pilot_plan, city

from geoldp import designs


def test_the_pilot_estimate_has_the_standard_errors_of_both_fitted_histograms():
    pilot = designs.Pilot()
    pts, trips, zones = city(300)
    est = pilot.estimate(pilot.release(trips, epsilon=2.0, zones=zones, rng=1), zones)
    assert est.zone_count_std_error.shape == est.zone_count_pmf.shape
    assert est.cell_std_error.shape == est.cell_pmf.shape
    # k-RR noise: at a smaller ε the same pilot is noisier
    low = pilot.estimate(pilot.release(trips, epsilon=0.5, zones=zones, rng=1), zones)
    assert (low.zone_count_std_error > est.zone_count_std_error).all()


def test_a_plan_over_the_fitted_populations_spans_them_and_is_reproducible():
    checked_pilot_plan()
