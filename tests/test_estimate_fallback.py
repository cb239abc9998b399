"""The rules that guard the count answers of geoldp.estimate against the raw release and no data.

Default (``support-range``): a range count the table does not flag supported is the raw release's count;
the other tables are the model's. The alternative ``split`` rule (a held-out check of the release) is
tested through ``estimate.FALLBACK``. ``attrs["estimator"]["fallback"]`` says which answer a table gives
and keeps the model's own.
"""

from __future__ import annotations

import numpy as np
import pytest

from geoldp import PointSet, estimate, perturb_trajectories
from geoldp.estimate import _model

GRID = np.linspace(0.0, 0.2, 10)
LON, LAT = (a.ravel() for a in np.meshgrid(GRID, GRID))
P = PointSet(LON, LAT)
FAST = dict(n_candidates=600, n_sims=8)
CIRCLES = [(0.02, 0.02, 3.0), (0.1, 0.1, 4.0), (0.18, 0.05, 2.0)]


def corner_population(seed: int, n: int = 300) -> list[np.ndarray]:
    """Trajectories of 2-3 points, 80 % inside one corner of P (a truth far from every no-data answer)."""
    gen = np.random.default_rng(seed)
    corner = np.flatnonzero((LON < 0.05) & (LAT < 0.05))
    return [gen.choice(corner if gen.random() < 0.8 else np.arange(P.size), size=2 + s % 2) for s in range(n)]


@pytest.fixture(scope="module")
def population() -> estimate.Population:
    rel = perturb_trajectories(corner_population(1), P, mechanism="atp", epsilon=8.0, rng=2)
    return estimate.fit(rel, P, mechanism="atp", epsilon=8.0, rng=3, n_boot=5, **FAST)


def _tables(pop: estimate.Population) -> list:
    from geoldp import zone_grid

    zones = zone_grid((0.0, 0.0, 0.2, 0.2), cells=3)
    return [pop.visit_counts(), pop.visit_counts(zones), pop.range_counts(CIRCLES), pop.od_flows(zones)]


def test_range_counts_report_the_raw_count_where_not_supported(population, monkeypatch):
    monkeypatch.setattr(estimate, "FALLBACK", "none")
    model = population.range_counts(CIRCLES)
    monkeypatch.setattr(estimate, "FALLBACK", "support-range")
    table = population.range_counts(CIRCLES)
    record = table.attrs["estimator"]["fallback"]
    assert record["rule"] == "support-range"
    sup = table["supported"].to_numpy()
    np.testing.assert_array_equal(sup, model["supported"].to_numpy())
    est = table["estimate"].to_numpy()
    np.testing.assert_array_equal(est[~sup], table["raw"].to_numpy()[~sup])
    np.testing.assert_array_equal(est[sup], model["estimate"].to_numpy()[sup])
    if not sup.all():
        np.testing.assert_array_equal(record["model"], model["estimate"].to_numpy())
    assert np.all((table["lower"] <= est) & (est <= table["upper"]))


def test_the_other_count_tables_are_the_models(population, monkeypatch):
    from geoldp import zone_grid

    zones = zone_grid((0.0, 0.0, 0.2, 0.2), cells=3)
    checked = [population.visit_counts(), population.visit_counts(zones), population.od_flows(zones)]
    monkeypatch.setattr(estimate, "FALLBACK", "none")
    model = [population.visit_counts(), population.visit_counts(zones), population.od_flows(zones)]
    for a, b in zip(checked, model, strict=True):
        assert a.attrs["estimator"]["fallback"] == {"rule": "support-range", "answer": "model"}
        np.testing.assert_array_equal(a["estimate"], b["estimate"])


def test_every_rule_records_its_answer_and_holds_it_in_its_interval(population, monkeypatch):
    for rule in ("support", "split", "splitraw"):
        monkeypatch.setattr(estimate, "FALLBACK", rule)
        for table in _tables(population):
            record = table.attrs["estimator"]["fallback"]
            assert record["rule"] == rule
            if rule.startswith("split"):
                assert record["answer"] in ("model", "raw", "uniform", "constant")
                assert set(record["score"]) == {"model", "raw", "uniform", "constant"}
            est = table["estimate"].to_numpy()
            assert np.all(table["lower"].to_numpy() <= est + 1e-9)
            assert np.all(est <= table["upper"].to_numpy() + 1e-9)
            if record["answer"] != "model":
                assert len(record["model"]) == len(table)


def test_the_check_tells_a_spread_release_from_the_constant(population, monkeypatch):
    from geoldp import zone_grid

    monkeypatch.setattr(estimate, "FALLBACK", "split")
    record = population.visit_counts(zone_grid((0.0, 0.0, 0.2, 0.2), cells=3)).attrs["estimator"]["fallback"]
    score = record["score"]
    # 20 % of the trajectories anywhere in P: every point at the 1-median explains the other half worst
    assert score["constant"] > 1.2 * max(score["model"], score["raw"], score["uniform"])
    assert record["answer"] != "constant"


def test_a_release_of_the_constant_population_is_answered_by_the_constant(monkeypatch):
    from geoldp import zone_grid

    monkeypatch.setattr(estimate, "FALLBACK", "split")
    med = P.one_median()
    trajs = [np.full(2 + s % 2, med) for s in range(300)]
    rel = perturb_trajectories(trajs, P, mechanism="tp", epsilon=8.0, rng=7)
    pop = estimate.fit(rel, P, mechanism="tp", epsilon=8.0, rng=8, n_boot=0, **FAST)
    table = pop.visit_counts(zone_grid((0.0, 0.0, 0.2, 0.2), cells=3))
    score = table.attrs["estimator"]["fallback"]["score"]
    assert score["constant"] < min(score["model"], score["raw"], score["uniform"])
    assert table.attrs["estimator"]["fallback"]["answer"] == "constant"
    expected = np.zeros(len(table))
    expected[table.index.get_loc(table.index[_zone_of_median()])] = 300.0
    np.testing.assert_allclose(table["estimate"].to_numpy(), expected)
    assert not table["supported"].any()


def _zone_of_median() -> int:
    from geoldp import zone_grid
    from geoldp.estimate import _inputs

    zone, _ = _inputs.zone_of_points(zone_grid((0.0, 0.0, 0.2, 0.2), cells=3), P, caller="test")
    return int(zone[P.one_median()])


@pytest.mark.parametrize("answer", ["released", "uniform", "constant"])
def test_a_fallback_reports_the_alternative_and_keeps_the_models_answer(population, monkeypatch, answer):
    real = _model.Model.release_check

    def forced(self, values, columns, **kw):
        check = real(self, values, columns, **kw)
        return _model.ReleaseCheck(answer, check.score, check.prior)

    monkeypatch.setattr(estimate, "FALLBACK", "none")
    unchecked = population.range_counts(CIRCLES)  # the model's own answer
    monkeypatch.setattr(estimate, "FALLBACK", "split")
    monkeypatch.setattr(_model.Model, "release_check", forced)
    table = population.range_counts(CIRCLES)
    record = table.attrs["estimator"]["fallback"]
    assert record["answer"] == {"released": "raw"}.get(answer, answer)
    np.testing.assert_allclose(record["model"], unchecked["estimate"].to_numpy())
    est = table["estimate"].to_numpy()
    if answer == "released":
        np.testing.assert_array_equal(est, table["raw"].to_numpy())
        np.testing.assert_array_equal(table["supported"], unchecked["supported"])
    else:
        assert not table["supported"].any()  # a no-data answer is never learned from the release
        np.testing.assert_allclose(est, _no_data(answer), rtol=0.05)
    assert table.attrs["total"]["estimate"] == pytest.approx(est.sum())
    assert np.all((table["lower"] <= table["estimate"]) & (table["estimate"] <= table["upper"]))


def _no_data(answer: str) -> np.ndarray:
    """The no-data range counts of the fixture's 300 trajectories (150 of 2 points, 150 of 3), exactly."""
    from geoldp.estimate import _inputs

    members, _ = _inputs.region_members(CIRCLES, P, crs="EPSG:4326", caller="test")
    if answer == "constant":
        return np.array([300.0 * (P.one_median() in set(m.tolist())) for m in members])
    share = np.array([m.size / P.size for m in members])
    return 150.0 * (1 - (1 - share) ** 2) + 150.0 * (1 - (1 - share) ** 3)


def test_the_constant_answer_puts_every_trajectory_at_the_one_median(population, monkeypatch):
    monkeypatch.setattr(estimate, "FALLBACK", "split")
    real = _model.Model.release_check
    monkeypatch.setattr(
        _model.Model,
        "release_check",
        lambda self, values, columns, **kw: _model.ReleaseCheck(
            "constant", *(lambda c: (c.score, c.prior))(real(self, values, columns, **kw))
        ),
    )
    table = population.visit_counts()
    expected = np.zeros(P.size)
    expected[P.one_median()] = population.n_trajectories
    np.testing.assert_allclose(table["estimate"].to_numpy(), expected)


def test_the_check_is_reproducible(population, monkeypatch):
    monkeypatch.setattr(estimate, "FALLBACK", "split")
    checked = population.range_counts(CIRCLES)
    again = population.range_counts(CIRCLES)
    assert checked.attrs["estimator"]["fallback"] == again.attrs["estimator"]["fallback"]
    np.testing.assert_array_equal(checked["estimate"], again["estimate"])


def test_the_check_reads_only_the_release_and_its_key(monkeypatch):
    """Two fits of the same release with the same rng make the same choice; the originals never enter."""
    monkeypatch.setattr(estimate, "FALLBACK", "split")
    rel = perturb_trajectories(corner_population(4, 200), P, mechanism="tp", epsilon=2.0, rng=5)
    a = estimate.visit_counts(rel, P, mechanism="tp", epsilon=2.0, rng=6, n_boot=0, **FAST)
    b = estimate.visit_counts(rel, P, mechanism="tp", epsilon=2.0, rng=6, n_boot=0, **FAST)
    assert a.attrs["estimator"]["fallback"] == b.attrs["estimator"]["fallback"]
    np.testing.assert_array_equal(a["estimate"], b["estimate"])
