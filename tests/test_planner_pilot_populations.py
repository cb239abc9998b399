"""The pilot's estimate and the planner's plan over the populations fitted to it."""

import geoldp
from geoldp import designs


def _city(n_trips: int = 400):
    from geoldp import zone_grid
    from geoldp.datasets import synthetic_city

    pts, trips = synthetic_city(n_points=300, n_trips=n_trips, seed=4)
    return pts, trips, zone_grid(tuple(pts.total_bounds), cells=5)


def test_the_pilot_estimate_has_the_standard_errors_of_both_fitted_histograms():
    pilot = designs.Pilot()
    pts, trips, zones = _city(300)
    est = pilot.estimate(pilot.release(trips, epsilon=2.0, zones=zones, rng=1), zones)
    assert est.zone_count_std_error.shape == est.zone_count_pmf.shape
    assert est.cell_std_error.shape == est.cell_pmf.shape
    # k-RR noise: at a smaller ε the same pilot is noisier
    low = pilot.estimate(pilot.release(trips, epsilon=0.5, zones=zones, rng=1), zones)
    assert (low.zone_count_std_error > est.zone_count_std_error).all()


def test_a_plan_over_the_fitted_populations_spans_them_and_is_reproducible():
    pilot = designs.Pilot()
    pts, trips, zones = _city(400)
    est = pilot.estimate(pilot.release(trips, epsilon=24.0, zones=zones, rng=6), zones)
    kw = dict(epsilon=4.0, n=400, pilot=est, designs=["pointem", "report:visited_zone"], max_length=8)
    a = geoldp.plan(pts, zones, rng=0, **kw)
    b = geoldp.plan(pts, zones, rng=0, **kw)
    assert a.equals(b) and a.attrs["recommended"] == b.attrs["recommended"]
    per_population = [c for c in a.columns if c.startswith("error_pilot:")]
    assert 1 <= len(per_population) <= 3 and a["recommended"].sum() == 1
    if len(per_population) > 1:  # the predicted error's interval covers every plausible population's error
        errs = a[per_population]
        assert (a["error_low"] <= errs.min(axis=1) + 1e-12).all()
        assert (a["error_high"] >= errs.max(axis=1) - 1e-12).all()
