"""LDPTrace (geoldp.synthesize): exact privacy of the user-side randomiser, the budget split, the model,
the synthesis and the frame-level API."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import geopandas as gpd
import numpy as np
import pytest
import shapely
from shapely import LineString

import geoldp
from geoldp import ldptrace
from geoldp._core.errors import BudgetError
from geoldp.mechanisms import oracles

# --------------------------------------------------------------------------------------------------
# the user-side randomiser (OUE)
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.3, 1.0, math.log(3), 4.0])
def test_oue_exact_ratio_is_at_most_e_eps_and_tight(eps):
    d = 4
    vectors = list(itertools.product([0, 1], repeat=d))
    values = [-1, 0, 1, 2, 3]  # -1: an empty report (padding), which must be as private as a real one
    pmf = {v: np.array([oracles.oue_pmf(v, b, eps) for b in vectors]) for v in values}
    for v in values:
        assert pmf[v].sum() == pytest.approx(1.0, abs=1e-12)
    worst = max(float(np.max(pmf[a] / pmf[b])) for a in values for b in values)
    assert worst <= math.exp(eps) * (1 + 1e-12)
    # two real values reach e^ε exactly (OUE is tight), so the bound above can fail
    assert float(np.max(pmf[0] / pmf[1])) == pytest.approx(math.exp(eps), rel=1e-12)


def test_oue_probabilities_follow_the_formula():
    p, q = oracles.oue_probabilities(2.0)
    assert p == 0.5 and q == pytest.approx(1 / (math.e**2 + 1))


def test_oue_perturb_black_box_audit_matches_the_pmf():
    # seeded audit of the randomiser as a black box: frequencies of every output vector for two inputs
    eps, d, m = 1.0, 3, 60_000
    vectors = list(itertools.product([0, 1], repeat=d))
    for value in (0, 2, -1):
        bits = oracles.oue_perturb(np.full(m, value), d, eps, rng=123 + value)
        codes = bits.astype(np.int64) @ (2 ** np.arange(d)[::-1])
        freq = np.bincount(codes, minlength=2**d) / m
        expected = np.array([oracles.oue_pmf(value, b, eps) for b in vectors])
        sd = np.sqrt(expected * (1 - expected) / m)
        assert np.all(np.abs(freq - expected) <= 5 * sd)  # 5 σ per cell: a false alarm has p < 1e-5
    a = oracles.oue_perturb(np.zeros(m, dtype=int), d, eps, rng=1)
    b = oracles.oue_perturb(np.ones(m, dtype=int), d, eps, rng=2)
    pa = np.bincount(a.astype(int) @ (2 ** np.arange(d)[::-1]), minlength=8) / m
    pb = np.bincount(b.astype(int) @ (2 ** np.arange(d)[::-1]), minlength=8) / m
    # empirical ratio within e^ε up to its sampling error (delta method, 5 σ)
    rel = 5 * np.sqrt((1 - pa) / (pa * m) + (1 - pb) / (pb * m))
    assert np.all(pa / pb <= math.exp(eps) * np.exp(rel))


def test_oue_perturb_rejects_values_outside_the_domain():
    with pytest.raises(ValueError, match="values"):
        oracles.oue_perturb([4], 4, 1.0, rng=0)


def test_aggregate_counts_have_the_distribution_of_summed_reports():
    # oue_counts (binomial shortcut) against the moments of a sum of per-user OUE vectors
    eps, m, reps = 1.0, 400, 1000
    c = np.array([0, 100, 250, 50])
    p, q = oracles.oue_probabilities(eps)
    draws = np.array([oracles.oue_counts(c, m, eps, rng=s) for s in range(reps)])
    mean = c * p + (m - c) * q
    var = c * p * (1 - p) + (m - c) * q * (1 - q)
    assert np.all(np.abs(draws.mean(0) - mean) <= 5 * np.sqrt(var / reps))
    assert np.all(np.abs(draws.var(0, ddof=1) / var - 1) <= 5 * np.sqrt(2 / (reps - 1)))
    # and the per-user randomiser, summed, has the same mean
    values = np.repeat(np.arange(4), [0, 100, 250, 50])  # 400 reports, 50 of them value 3
    sums = np.array([oracles.oue_perturb(values, 4, eps, rng=s).sum(0) for s in range(200)])
    c2 = np.array([0, 100, 250, 50])
    mean2 = c2 * p + (m - c2) * q
    var2 = c2 * p * (1 - p) + (m - c2) * q * (1 - q)
    assert np.all(np.abs(sums.mean(0) - mean2) <= 5 * np.sqrt(var2 / 200))


def test_oue_estimate_is_unbiased():
    eps, m = 2.0, 1000
    c = np.array([0, 10, 500, 490])
    est = np.mean(
        [oracles.oue_estimate(oracles.oue_counts(c, m, eps, rng=s), m, eps) for s in range(2000)], 0
    )
    p, q = oracles.oue_probabilities(eps)
    sd = np.sqrt((c * p * (1 - p) + (m - c) * q * (1 - q)) / (p - q) ** 2 / 800)
    assert np.all(np.abs(est - c) <= 5 * sd)


# --------------------------------------------------------------------------------------------------
# the budget split and the public domain
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.1, 1.0, 2.0, 3.7, 8.0, 100.0])
@pytest.mark.parametrize("L", [1, 2, 7, 35, 400])
def test_budget_split_sums_to_epsilon_and_never_more(eps, L):
    split = ldptrace.budget_split(eps, L)
    total = Fraction(split["length"]) + split["reports"] * Fraction(split["per_report"])
    assert split["reports"] == L + 1
    assert total <= Fraction(eps)
    assert float(total) == pytest.approx(eps, rel=1e-12)
    assert split["length"] == pytest.approx(eps / 10, rel=1e-15)


def test_grid_is_public_and_clamps_points_outside():
    grid = ldptrace.Grid(0.0, 0.0, 3.0, 3.0, n=3)
    # (0.5, 2.5): column 0, row 2 -> 2; far outside: clamped to the corner cells
    assert grid.cells([0.5, 2.5, -100, 100], [2.5, 0.5, -100, 100]).tolist() == [2, 6, 0, 8]
    x, y = grid.centres()
    assert (x[5], y[5]) == (1.5, 2.5)
    nb = grid.neighbours()
    assert nb.shape == (9, 8) and (nb[4] >= 0).all() and (nb[0] >= 0).sum() == 3


def test_domain_and_split_do_not_depend_on_the_data():
    box = (0.0, 0.0, 6.0, 6.0)
    a = gpd.GeoDataFrame(geometry=[LineString([(0.5, 0.5), (1.5, 0.5)])] * 300, crs="EPSG:3857")
    b = gpd.GeoDataFrame(geometry=[LineString([(5.5, 5.5), (5.5, 4.5), (4.5, 3.5)])] * 300, crs="EPSG:3857")
    la = geoldp.synthesize(a, epsilon=2.0, bounds=box, rng=0).attrs["geoldp"]
    lb = geoldp.synthesize(b, epsilon=2.0, bounds=box, rng=0).attrs["geoldp"]
    assert la["grid"] == lb["grid"] and la["length_domain"] == lb["length_domain"] == 36
    assert la["epsilon"] == lb["epsilon"] == 2.0


def test_auto_grid_size_follows_the_rule():
    e = math.exp(0.9 * 2.0 / 11.0)
    expected = round(2.5 * (100_000 * 10 * (e - 1) ** 2 / e) ** 0.25)
    assert ldptrace.auto_grid_size(100_000, 2.0, 10.0) == expected
    assert ldptrace.auto_grid_size(1, 0.01, 50.0) == 2  # clipped below


# --------------------------------------------------------------------------------------------------
# grid trajectories
# --------------------------------------------------------------------------------------------------


def test_cell_sequences_drop_repeats_and_fill_gaps_diagonal_first():
    grid = ldptrace.Grid(0.0, 0.0, 4.0, 4.0, n=4)
    # trajectory 0: (0,0) (0,0) -> (3,1): diagonal to (1,1), then straight (2,1), (3,1)
    # trajectory 1: a single cell (2,2), given twice
    x = [0.5, 0.6, 3.5, 2.5, 2.5]
    y = [0.5, 0.4, 1.5, 2.5, 2.5]
    cells, offsets = ldptrace.cell_sequences(x, y, [0, 3, 5], grid)
    assert offsets.tolist() == [0, 4, 5]
    assert cells.tolist() == [0 * 4 + 0, 1 * 4 + 1, 2 * 4 + 1, 3 * 4 + 1, 2 * 4 + 2]


def test_move_codes_index_the_moves():
    grid = ldptrace.Grid(0.0, 0.0, 3.0, 3.0, n=3)
    centre = 4
    nb = grid.neighbours()[centre]
    assert ldptrace.move_codes(np.full(8, centre), nb, grid).tolist() == list(range(8))


# --------------------------------------------------------------------------------------------------
# the model and the synthesis on a known Markov chain
# --------------------------------------------------------------------------------------------------


def _known_chain(n_users: int, seed: int):
    """Every trip starts in cell (0,0) of a 4 x 4 grid, moves +x (p = 0.7) or diagonally (0.3), then ends."""
    rng = np.random.default_rng(seed)
    diag = rng.random(n_users) < 0.3
    lines = [LineString([(0.5, 0.5), (1.5, 1.5) if d else (1.5, 0.5)]) for d in diag]
    return gpd.GeoDataFrame(geometry=lines, crs="EPSG:3857"), diag


def test_model_recovers_the_transition_probabilities_at_large_epsilon():
    n = 20_000
    trips, diag = _known_chain(n, 0)
    grid = ldptrace.Grid(0.0, 0.0, 4.0, 4.0, n=4)
    xy = shapely.get_coordinates(trips.geometry.values)
    cells, offsets = ldptrace.cell_sequences(xy[:, 0], xy[:, 1], np.arange(0, 2 * n + 1, 2), grid)
    model = ldptrace.collect(cells, offsets, grid, 60.0, rng=1)
    assert model.max_length == 2
    row = model.move_probabilities()[0]
    east, northeast = 6, 7  # moves (1, 0) and (1, 1)
    true_p = diag.mean()
    # at ε = 60 the 0 -> 1 flips vanish (q ~ 1e-8), but OUE keeps a true bit with p = 1/2 only: an
    # estimated count has variance ~ c, so the estimated share has sd ~ sqrt(p (1 - p) / n)
    sd = math.sqrt(true_p * (1 - true_p) / n)
    assert abs(row[northeast] - true_p) <= 5 * sd
    assert abs(row[east] - (1 - true_p)) <= 5 * sd
    assert row[8] == pytest.approx(0.0, abs=1e-3)  # nobody ends in the start cell
    syn, syn_off = ldptrace.synthesize_cells(model, n, rng=2)
    lengths = np.diff(syn_off)
    assert (lengths == 2).all()
    second = syn[syn_off[:-1] + 1]
    share = (second == 5).mean()  # cell (1, 1)
    assert abs(share - row[northeast]) <= 5 * sd  # sampling from the model


def test_model_estimates_are_unbiased_at_moderate_epsilon():
    n = 5_000
    trips, diag = _known_chain(n, 3)
    grid = ldptrace.Grid(0.0, 0.0, 4.0, 4.0, n=4)
    xy = shapely.get_coordinates(trips.geometry.values)
    cells, offsets = ldptrace.cell_sequences(xy[:, 0], xy[:, 1], np.arange(0, 2 * n + 1, 2), grid)
    model = ldptrace.collect(cells, offsets, grid, 8.0, rng=4)
    eps_r = model.split["per_report"]
    p, q = oracles.oue_probabilities(eps_r)
    m = n * (model.max_length - 1)
    c = np.zeros((16, 8))
    c[0, 6], c[0, 7] = (~diag).sum(), diag.sum()
    sd = np.sqrt((c * p * (1 - p) + (m - c) * q * (1 - q)) / (p - q) ** 2)
    inside = ldptrace.Grid(0.0, 0.0, 4.0, 4.0, n=4).neighbours() >= 0
    z = np.abs(model.transitions - c)[inside] / sd[inside]
    assert z.max() <= 5.0


# --------------------------------------------------------------------------------------------------
# the frame-level API
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def trips():
    lines = [LineString([(0.2, 0.2), (1.7, 0.4), (2.5, 2.5)]), LineString([(3.5, 3.5), (3.6, 3.4)])] * 40
    frame = gpd.GeoDataFrame({"user": np.arange(80) % 20}, geometry=lines, crs="EPSG:3857")
    return frame.set_axis([f"r{i}" for i in range(80)])


def test_synthesize_returns_cell_centres_in_the_input_crs(trips):
    before = trips.copy()
    syn = geoldp.synthesize(trips, epsilon=4.0, bounds=(0, 0, 4, 4), grid_size=4, rng=0)
    assert syn.crs == trips.crs and len(syn) == len(trips)
    assert syn.index.equals(gpd.pd.RangeIndex(len(trips)))
    xy = shapely.get_coordinates(syn.geometry.values)
    assert np.isin(xy, [0.5, 1.5, 2.5, 3.5]).all()  # centres of the 1 x 1 cells
    assert (shapely.get_type_id(syn.geometry.values) == 1).all()
    assert trips.equals(before)  # input not mutated
    ledger = syn.attrs["geoldp"]
    assert ledger["mechanism"] == "ldptrace" and ledger["epsilon"] == 4.0
    assert ledger["grid"]["n"] == 4 and ledger["grid"]["bounds"] == [0, 0, 4, 4]
    split = ledger["split"]
    spent = Fraction(split["length"]) + (split["transition_reports"] + 2) * Fraction(split["transitions"])
    assert spent <= Fraction(4.0) and float(spent) == pytest.approx(4.0)
    assert ledger["rng"] == "seeded" and "release_id" in ledger


def test_synthesize_is_reproducible_when_seeded_and_sized_on_request(trips):
    a = trips.ldp.synthesize(epsilon=2.0, bounds=(0, 0, 4, 4), rng=5, n_synthetic=33)
    b = geoldp.synthesize(trips, epsilon=2.0, bounds=(0, 0, 4, 4), rng=5, n_synthetic=33)
    assert len(a) == 33 and a.geometry.equals(b.geometry)


def test_synthesize_with_public_points_uses_their_box(trips):
    pts = gpd.GeoDataFrame(geometry=gpd.points_from_xy([0, 4, 2], [0, 4, 1]), crs="EPSG:3857")
    syn = geoldp.synthesize(trips, epsilon=4.0, points=pts, grid_size=2, rng=0)
    assert syn.attrs["geoldp"]["grid"]["bounds"] == [0, 0, 4, 4]


def test_synthesize_records_the_public_points_it_was_built_from(trips):
    # the same "points" record as every other release, so a collector can verify or rebuild the grid's P
    pts = gpd.GeoDataFrame(geometry=gpd.points_from_xy([0, 4, 2], [0, 4, 1]), crs="EPSG:3857")
    record = geoldp.synthesize(trips, epsilon=4.0, points=pts, grid_size=2, rng=0).attrs["geoldp"]["points"]
    assert record["digest"] == geoldp.points.digest_of(pts)
    assert record["size"] == 3


def test_synthesize_charges_the_accountant(trips):
    acc = geoldp.BudgetAccountant(16.0)
    syn = geoldp.synthesize(trips, epsilon=4.0, bounds=(0, 0, 4, 4), rng=0, accountant=acc, user_col="user")
    assert acc.spent_by(0) == pytest.approx(16.0)  # 4 trips per user
    assert "accounting" in syn.attrs["geoldp"]


def test_synthesize_refuses_before_charging(trips):
    acc = geoldp.BudgetAccountant(10.0)
    with pytest.raises(BudgetError):
        geoldp.synthesize(trips, epsilon=4.0, bounds=(0, 0, 4, 4), rng=0, accountant=acc, user_col="user")
    assert acc.spent_by(0) == 0.0


def test_synthesize_accountant_within_budget(trips):
    acc = geoldp.BudgetAccountant(20.0)
    geoldp.synthesize(trips, epsilon=4.0, bounds=(0, 0, 4, 4), rng=0, accountant=acc, user_col="user")
    assert acc.spent_by(0) == pytest.approx(16.0) and acc.remaining(0) == pytest.approx(4.0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({}, ValueError, "exactly one of 'bounds'"),
        ({"bounds": (0, 0, 4, 4), "points": "x"}, ValueError, "exactly one of 'bounds'"),
        ({"bounds": (0, 0, 0, 4)}, ValueError, "bounds"),
        ({"bounds": ("a", 0, 4, 4)}, TypeError, "bounds"),
        ({"bounds": (0, 0, 4, 4), "grid_size": "auto"}, ValueError, "length_hint"),
        ({"bounds": (0, 0, 4, 4), "grid_size": 1000}, ValueError, "grid_size"),
        ({"bounds": (0, 0, 4, 4), "quantile": 0.0}, ValueError, "quantile"),
        ({"bounds": (0, 0, 4, 4), "n_synthetic": 0}, ValueError, "n_synthetic"),
    ],
)
def test_synthesize_bad_parameters_name_themselves(trips, kwargs, error, match):
    with pytest.raises(error, match=match):
        geoldp.synthesize(trips, epsilon=1.0, rng=0, **kwargs)


def test_synthesize_box_warning_does_not_compare_the_box_with_the_trips(trips):
    import warnings

    # whether a warning is given must not depend on the private trips' own box: the same public box
    # warns the same for trips that span it exactly and for trips well inside it
    box = tuple(trips.total_bounds)
    inside = trips.copy()
    centre = shapely.Point((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
    inside.geometry = trips.geometry.scale(0.5, 0.5, origin=centre)
    for frame in (trips, inside):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            geoldp.synthesize(frame, epsilon=1.0, bounds=box, rng=0)


def test_synthesize_counts_the_trips_leaving_the_box_without_releasing_it(trips):
    box = (0.0, 0.0, 3.0, 3.0)  # cuts some trips
    b = trips.geometry.bounds
    leave = int(((b["maxx"] > 3.0) | (b["maxy"] > 3.0) | (b["minx"] < 0) | (b["miny"] < 0)).sum())
    assert 0 < leave < len(trips)
    with pytest.warns(geoldp.GeoLDPWarning, match=rf"^{leave} of the {len(trips)} trajectories .* outside"):
        syn = geoldp.synthesize(trips, epsilon=1.0, bounds=box, rng=0)
    assert not [k for k in syn.attrs["geoldp"] if "outside" in k]  # the count is not released


def test_synthesize_rejects_bad_epsilon(trips):
    with pytest.raises(ValueError, match="epsilon"):
        geoldp.synthesize(trips, epsilon=0.0, bounds=(0, 0, 4, 4))


def test_synthesize_default_draws_from_the_os_csprng(trips):
    syn = geoldp.synthesize(trips, epsilon=1.0, bounds=(0, 0, 4, 4))
    assert syn.attrs["geoldp"]["rng"] == "os-csprng"


def test_every_user_sends_the_same_number_of_reports(monkeypatch):
    # the padding: with the same L, short and long trajectories give the collector the same report counts
    seen = []
    real = ldptrace.oue_counts

    def spy(true_counts, n_reports, epsilon, *, rng=None):
        seen.append((int(np.sum(true_counts)), int(n_reports), float(epsilon)))
        return real(true_counts, n_reports, epsilon, rng=rng)

    monkeypatch.setattr(ldptrace, "oue_counts", spy)
    monkeypatch.setattr(ldptrace, "_length_quantile", lambda counts, quantile: 4)
    grid = ldptrace.Grid(0.0, 0.0, 4.0, 4.0, n=4)
    calls = []
    for xs in ([0.5, 0.5], [0.5, 1.5, 2.5, 3.5]):  # one cell vs four cells, 100 users each
        seen.clear()
        x = np.tile(xs, 100)
        offsets = np.arange(0, x.size + 1, len(xs))
        cells, offs = ldptrace.cell_sequences(x, np.full(x.size, 0.5), offsets, grid)
        ldptrace.collect(cells, offs, grid, 2.0, rng=0)
        calls.append([(n, e) for _, n, e in seen])
        assert [t for t, _, _ in seen][-1] == (0 if len(xs) == 2 else 300)  # the real transitions differ
    assert calls[0] == calls[1]
    assert calls[0][-1][0] == 100 * 3  # L - 1 = 3 transition reports per user, padded


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ([5.0, 3.0, 2.0], 3),  # cumulative 5, 8, 10: 90 % of 10 is first reached at l = 3
        ([9.5, 0.0, 0.5], 1),
        ([-3.0, 1.0, -2.0], 1),  # a negative noisy total: the threshold -3.6 is met at once (as published)
        ([1.0, -5.0, 2.0], 1),
    ],
)
def test_length_quantile_follows_the_published_rule(counts, expected):
    assert ldptrace._length_quantile(np.array(counts), 0.9) == expected
