"""Designs: every way to collect as an object (release, ledger, answer), and the coarse-to-fine zones."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pytest
from shapely.geometry import LineString

import geoldp
from geoldp import designs, zone_grid
from geoldp.reports import estimate_counts
from geoldp.zones import check_zones, zone_of_vertices

FINE = zone_grid((0.0, 0.0, 1.0, 1.0), cells=10)
PTS = np.random.default_rng(3).uniform(0.0, 1.0, size=(400, 2))


def test_coarse_grid_nests_the_fine_grid():
    coarse = designs.coarse.coarse_zones(FINE)
    assert len(coarse) == 25 and coarse.crs == FINE.crs
    # four fine cell centres in every coarse cell: the 5 x 5 grid nests the 10 x 10
    x = (FINE["col"].to_numpy() + 0.5) / 10
    y = (FINE["row"].to_numpy() + 0.5) / 10
    zc = zone_of_vertices(check_zones(coarse, caller="test"), x, y)
    assert (zc < 25).all() and np.bincount(zc, minlength=25).tolist() == [4] * 25


def test_coarse_cells_rejects_bad_input():
    with pytest.raises(ValueError, match="n_zones"):
        designs.coarse.coarse_cells(0)


def test_spread_keeps_every_count_of_a_coarse_cell_with_points():
    coarse = designs.coarse.coarse_zones(FINE)
    m = designs.coarse.spread_of_points(FINE, coarse, PTS[:, 0], PTS[:, 1])
    assert m.shape == (100, 25)
    sums = m.sum(axis=0)
    assert np.allclose(sums[sums > 0], 1.0)
    counts = np.random.default_rng(1).uniform(0, 50, size=25) * (sums > 0)
    fine = designs.coarse.spread_counts(counts, m)
    assert fine.sum() == pytest.approx(counts.sum())
    od = designs.coarse.spread_counts(np.outer(counts, counts).reshape(-1), m, od=True)
    assert od.shape == (100 * 100,) and od.sum() == pytest.approx(counts.sum() ** 2)
    # a fine zone's share is its share of the coarse cell's public points
    zf = zone_of_vertices(check_zones(FINE, caller="test"), PTS[:, 0], PTS[:, 1])
    zc = zone_of_vertices(check_zones(coarse, caller="test"), PTS[:, 0], PTS[:, 1])
    f = int(zf[0])
    assert m[f, zc[0]] == pytest.approx(np.mean(zf[zc == zc[0]] == f))


def test_spread_rejects_a_wrong_shape():
    m = designs.coarse.spread_matrix([0, 1], [0, 0], 2, 1)
    with pytest.raises(ValueError, match="coarse counts"):
        designs.coarse.spread_counts([1.0, 2.0], m)
    with pytest.raises(ValueError, match="pair counts"):
        designs.coarse.spread_counts([1.0, 2.0], m, od=True)
    with pytest.raises(ValueError, match="one asked zone"):
        designs.coarse.spread_matrix([0, 1], [0], 2, 1)


def _trips(m: int) -> gpd.GeoDataFrame:
    """m trajectories, each through the same 3 fine zones on the diagonal (public-looking toy data)."""
    line = LineString([(0.05, 0.05), (0.15, 0.15), (0.25, 0.25)])
    return gpd.GeoDataFrame(geometry=[line] * m, crs="EPSG:4326")


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_coarse_design_is_one_release_of_the_whole_budget(epsilon):
    coarse = designs.coarse.coarse_zones(FINE)
    rep = geoldp.report(_trips(3000), coarse, epsilon=epsilon, pad_length=2, rng=0)
    ledger = rep.attrs["geoldp"]["ledger"]
    assert ledger["max_total_epsilon"] == pytest.approx(epsilon)
    assert sum(ledger["by_kind"].values()) == pytest.approx(epsilon)


def test_padded_counts_estimate_visits_where_one_sample_estimates_shares():
    """ℓ = 3 on trajectories of 3 zones: ℓ·f̂ covers the visit count; ℓ = 1 estimates a third of it."""
    m = 3000
    trips = _trips(m)
    padded = estimate_counts(geoldp.report(trips, FINE, epsilon=4.0, pad_length=3, rng=5), FINE)
    single = estimate_counts(geoldp.report(trips, FINE, epsilon=4.0, pad_length=1, rng=6), FINE)
    for z in (0, 11, 22):  # the diagonal zones visited by every trajectory
        assert abs(padded.loc[z, "estimate"] - m) <= 4 * padded.loc[z, "std_error"]
        assert abs(single.loc[z, "estimate"] - m / 3) <= 4 * single.loc[z, "std_error"]
        assert single.loc[z, "estimate"] + 4 * single.loc[z, "std_error"] < m


# ------------------------------------------------------------------------------------------------------
# the collection model: every planned design is an object that releases, accounts and answers


def _city():
    from geoldp import zone_grid
    from geoldp.datasets import synthetic_city

    pts, trips = synthetic_city(n_points=200, n_trips=150, seed=3)
    return pts, trips, zone_grid(tuple(pts.total_bounds), cells=3)


def test_every_planned_name_is_a_design_with_that_name():
    from geoldp import planner

    for name in planner.DESIGNS:
        question = "od_flows" if ":od" in name else "zone_visits"
        assert designs.design(name, question=question).name == name


@pytest.mark.parametrize(
    "name", ["atp", "tracs-c", "report:visited_zone:pad2:eb", "report:od:coarse", "ldptrace"]
)
def test_a_design_answers_with_the_one_table(name):
    pts, trips, zones = _city()
    question = "od_flows" if ":od" in name else "zone_visits"
    d = designs.design(name, question=question)
    released, answer = d.collect(trips, question, epsilon=4.0, points=pts, zones=zones, rng=0)
    assert tuple(answer.columns) == designs.ANSWER_COLUMNS
    assert len(answer) == (len(zones) ** 2 if question == "od_flows" else len(zones))
    assert answer.attrs["design"] == name and answer.attrs["question"] == question
    assert sum(d.ledger(4.0).values()) == pytest.approx(4.0)
    again = d.release(trips, epsilon=4.0, points=pts, zones=zones, rng=0)  # seeded: the same release
    assert d.answer(again, question, points=pts, zones=zones).equals(answer)
    layer = designs.to_layer(answer, zones)  # the same columns as a GIS layer
    assert len(layer) == len(answer) and set(designs.ANSWER_COLUMNS) <= set(layer.columns)
    # asked for hotspots, the same answer ranks every zone by its estimate, ties by position
    if question == "zone_visits":
        hot = d.answer(released, "hotspots", points=pts, zones=zones)
        assert list(hot.columns) == ["rank", *designs.ANSWER_COLUMNS]
        np.testing.assert_array_equal(hot["estimate"].to_numpy(), answer["estimate"].to_numpy())
        assert sorted(hot["rank"]) == list(range(1, len(hot) + 1))
        position = np.argsort(hot["rank"].to_numpy())  # the rows from rank 1 down
        est = hot["estimate"].to_numpy()[position]
        assert (np.diff(est) <= 0).all() and (np.diff(position)[np.diff(est) == 0] > 0).all()
    np.testing.assert_array_equal(layer["std_error"], answer["std_error"].to_numpy(dtype=float))


def test_a_design_runs_as_its_release_function_does():
    pts, trips, zones = _city()
    d = designs.design("report:visited_zone:padded")
    via_design = d.release(trips, epsilon=2.0, zones=zones, rng=5)
    direct = geoldp.report(trips, zones, statistic="visited_zone", epsilon=2.0, pad_length=3, rng=5)
    assert via_design.drop(columns=[]).equals(direct)


def test_a_composition_splits_its_budget_and_the_plan_returns_a_design():
    pts, trips, zones = _city()
    d = designs.design("hybrid:atp+report@0.25")
    assert d.ledger(4.0) == {"atp": 3.0, "report:visited_zone:shrunk": 1.0}
    table = geoldp.plan(
        pts, zones, epsilon=4.0, n=150, lengths=4, rng=0, designs=["atp", "report:visited_zone"]
    )
    best = table.best
    assert best is None or best.name == table.attrs["recommended"]


def test_bad_design_names_and_questions_are_refused_by_name():
    with pytest.raises(ValueError, match="Unknown design 'nope'"):
        designs.design("nope")
    with pytest.raises(ValueError, match="pad<ℓ>"):
        designs.design("report:visited_zone:padx")
    with pytest.raises(ValueError, match="must be one of .od_flows."):
        designs.design("report:od").answer(None, "zone_visits")  # the question is checked first


# ------------------------------------------------------------------------------------------------------
# the private pilot: what the planner needs, under ε-LDP


def _pilot_city(n_trips: int = 2000):
    from geoldp import zone_grid
    from geoldp.datasets import synthetic_city

    pts, trips = synthetic_city(n_points=300, n_trips=n_trips, seed=4)
    return pts, trips, zone_grid(tuple(pts.total_bounds), cells=5)


def test_the_pilot_splits_its_budget_exactly_and_is_charged_once():
    pilot = designs.Pilot()
    split = pilot.ledger(3.0)
    assert list(split) == ["length_class", "zone_count_class", "coarse_cell"]
    assert sum(split.values()) <= 3.0 and sum(split.values()) == pytest.approx(3.0)
    pts, trips, zones = _pilot_city(60)
    trips["user"] = np.arange(len(trips)) % 20
    acc = geoldp.BudgetAccountant(12.0)
    rep = pilot.release(trips, epsilon=3.0, zones=zones, rng=0, accountant=acc, user_col="user")
    assert rep.index.equals(trips.index) and rep.attrs["geoldp"]["split"] == split
    assert acc.remaining(0) == pytest.approx(12.0 - 3 * 3.0)  # user 0's three trips, ε = 3 each in all
    with pytest.raises(geoldp.BudgetError):
        pilot.release(trips, epsilon=3.0, zones=zones, rng=1, accountant=acc, user_col="user")


def test_each_pilot_report_keeps_its_true_class_at_the_k_rr_rate():
    # k-RR at the ledger's share of ε: the true class is kept with p = e^ε / (e^ε + k − 1)
    from geoldp.mechanisms.krr import krr_constants

    pilot = designs.Pilot(length_edges=(100,), zone_edges=(100,), shares=(0.25, 0.25, 0.5))
    pts, trips, zones = _pilot_city(2000)  # every trip: length class 0, zone-count class 0
    rep = pilot.release(trips, epsilon=2.0, zones=zones, rng=3)
    for col, eps in pilot.ledger(2.0).items():
        if col == "coarse_cell":
            continue
        p, _, _ = krr_constants(2, eps)
        kept = float((rep[col] == 0).mean())
        assert abs(kept - p) <= 4 * np.sqrt(p * (1 - p) / len(rep)), (col, kept, p)


def test_the_pilot_estimate_recovers_the_population_histograms():
    pilot = designs.Pilot()
    pts, trips, zones = _pilot_city(3000)
    est = pilot.estimate(pilot.release(trips, epsilon=24.0, zones=zones, rng=5), zones)
    lengths = trips.geometry.count_coordinates().to_numpy()
    truth = np.bincount(np.searchsorted(pilot.length_edges, lengths, side="right"), minlength=12) / len(trips)
    assert np.abs(est.length_pmf - truth).sum() < 0.05
    for pmf in (est.length_pmf, est.zone_count_pmf, est.cell_pmf):
        assert (pmf >= 0).all() and pmf.sum() == pytest.approx(1.0)
    drawn = est.draw_lengths(5000, np.random.default_rng(0))
    assert drawn.min() >= 1 and abs(np.median(drawn) - np.median(lengths)) <= 2
    with pytest.raises(ValueError, match="not the zones"):
        pilot.estimate(pilot.release(trips.iloc[:10], epsilon=2.0, zones=zones, rng=0), zones.iloc[:4])


def test_the_planner_plans_from_a_pilot_without_private_lengths():
    pilot = designs.Pilot()
    pts, trips, zones = _pilot_city(400)
    est = pilot.estimate(pilot.release(trips, epsilon=24.0, zones=zones, rng=6), zones)
    table = geoldp.plan(
        pts, zones, epsilon=4.0, n=400, pilot=est, rng=0, designs=["pointem", "report:visited_zone"]
    )
    assert "pilot" in table.attrs["population"] and table["recommended"].sum() == 1
    with pytest.raises(TypeError, match="lengths"):
        geoldp.plan(pts, zones, epsilon=4.0, n=400, rng=0)


def test_pilot_lengths_respect_a_public_maximum():
    pilot = designs.Pilot()
    pts, trips, zones = _pilot_city(600)
    est = pilot.estimate(pilot.release(trips, epsilon=1.0, zones=zones, rng=7), zones)
    drawn = est.draw_lengths(4000, np.random.default_rng(1), maximum=5)
    assert drawn.min() >= 1 and drawn.max() <= 5
    free = est.draw_lengths(4000, np.random.default_rng(1))
    assert free.max() > 5  # without the bound the noisy upper classes are drawn from (ε = 1: noise in all)


def test_a_public_maximum_length_bounds_the_recommended_report_and_replaces_the_lengths():
    # no lengths, no pilot: the public maximum alone plans; a recommended visited-zone report carries it as
    # its bound on set sizes (a trip of L points visits at most L zones), which narrows its upper ends
    pts, trips, zones = _pilot_city(2000)
    table = geoldp.plan(
        pts, zones, epsilon=8.0, n=20000, max_length=6, rng=0, designs=["report:visited_zone:padded"]
    )
    assert table.attrs["max_length"] == 6
    if table.attrs["beats_baselines"]:
        assert table.best.max_set_size == 6
    bounded = designs.ReportDesign("visited_zone", 3, max_set_size=6)
    plain = designs.ReportDesign("visited_zone", 3)
    rel = plain.release(trips, epsilon=4.0, zones=zones, rng=2)
    a, b = bounded.answer(rel, "zone_visits", zones=zones), plain.answer(rel, "zone_visits", zones=zones)
    assert (a["upper"] <= b["upper"] + 1e-9).all() and (a["upper"] < b["upper"]).any()
    assert (a["lower"] == b["lower"]).all()
    with pytest.raises(ValueError, match="max_set_size"):
        designs.ReportDesign("visited_zone", 3, max_set_size=0)


@pytest.mark.parametrize("question", ["zone_visits", "od_flows"])
def test_the_inverse_variance_hybrid_answers_inside_its_own_clipped_interval(question):
    # counts lie in [0, n]: the combined interval is clipped to it (it still covers the count) and the
    # answer stays inside its own interval; the unclipped combination is kept in `raw`
    pts, trips, zones = _pilot_city(300)
    d = designs.design("hybrid:atp+report:ivw@0.5", question=question)
    with pytest.warns(geoldp.GeoLDPWarning, match="will not be told from no data"):  # small on purpose
        _, ans = d.collect(trips, question, epsilon=2.0, points=pts, zones=zones, rng=4)
    n = len(trips)
    lo, hi, est = ans["lower"].to_numpy(), ans["upper"].to_numpy(), ans["estimate"].to_numpy()
    assert (lo >= 0).all() and (hi <= n).all() and (lo <= est).all() and (est <= hi).all()
    assert (ans["raw"] < 0).any()  # at ε = 2 on 300 trips some combined counts come out below 0


def test_a_maximum_length_beyond_the_longest_trajectory_is_refused_at_once():
    # the bound is a trajectory length (at most MAX_LENGTH points), not a number of users: a huge value
    # is refused before anything is simulated
    from geoldp._core.validation import MAX_LENGTH

    pts, _, zones = _pilot_city(200)
    with pytest.raises(ValueError, match="max_length"):
        geoldp.plan(pts, zones, epsilon=4.0, n=1000, max_length=MAX_LENGTH + 1, rng=0)
