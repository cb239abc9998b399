"""The report estimators: unbiasedness and interval coverage (fixed seeds, tolerances from the variances)."""

from __future__ import annotations

import functools

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from shapely.geometry import LineString

from geoldp import zone_grid
from geoldp.reports import estimate_counts, project_simplex, report, true_counts
from geoldp.reports.estimators import Z95

# Small report tables are below the no-data noise level on purpose; that warning has its own tests.
pytestmark = pytest.mark.filterwarnings("ignore:.*told from no data:geoldp.GeoLDPWarning")

ZONES = zone_grid((0.0, 0.0, 2.0, 2.0), cells=2)
C = [(0.5, 0.5), (1.5, 0.5), (0.5, 1.5), (1.5, 1.5)]


@functools.lru_cache(maxsize=4)
def population(n=3000, max_len=3, seed=0):
    """Skewed trips over the 4 zones; at most ``max_len`` vertices (so at most that many visited zones)."""
    rng = np.random.default_rng(seed)
    w = np.array([0.55, 0.25, 0.15, 0.05])
    lines = []
    for _ in range(n):
        m = rng.integers(2, max_len + 1)
        lines.append(LineString([C[i] for i in rng.choice(4, size=m, p=w)]))
    return gpd.GeoDataFrame(geometry=lines, crs="EPSG:4326")


CASES = [
    ("od", "krr", 1, 2.0),
    ("od", "oue", 1, 1.0),
    ("od", "olh", 1, 2.0),
    ("visited_zone", "krr", 3, 2.0),  # every trip visits at most 3 zones: unbiased with ℓ = 3
    ("visited_zone", "oue", 3, 4.0),
    ("transitions", "oue", 2, 2.0),  # at most 2 transitions with 3 vertices
    ("transitions", "olh", 2, 4.0),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_unbiased_and_intervals_cover(case):
    statistic, oracle, pad, eps = case
    gdf = population()
    truth = true_counts(gdf, ZONES, statistic=statistic)
    reps = 10
    ests, covered, ses = [], [], []
    for seed in range(reps):
        rep = report(
            gdf, ZONES, statistic=statistic, epsilon=eps, oracle=oracle, pad_length=pad, rng=100 + seed
        )
        est = estimate_counts(rep, ZONES)
        assert est.index.equals(truth.index)
        ests.append(est["estimate"].to_numpy())
        ses.append(est["std_error"].to_numpy())
        covered.append(((est["lower"] <= truth) & (truth <= est["upper"])).to_numpy())
    ests, ses = np.array(ests), np.array(ses)
    # unbiased: the mean over seeds is within 4.5 standard errors of the mean (Bonferroni over the cells)
    err = np.abs(ests.mean(axis=0) - truth.to_numpy())
    assert np.all(err <= 4.5 * ses.mean(axis=0) / np.sqrt(reps)), (err, ses.mean(axis=0))
    # 95 % intervals: at least 90 % of the (cell, seed) intervals cover the truth
    assert np.mean(covered) >= 0.90, np.mean(covered)


def test_padding_scales_the_counts():
    # with ℓ = 1 each trip is split over its visited zones: the sum of the estimates is about n
    gdf = population(2000)
    est = estimate_counts(report(gdf, ZONES, epsilon=4.0, oracle="krr", rng=0), ZONES)
    assert abs(est["estimate"].sum() - 2000) < 4 * np.sqrt((est["std_error"] ** 2).sum())
    est3 = estimate_counts(report(gdf, ZONES, epsilon=4.0, oracle="krr", pad_length=3, rng=0), ZONES)
    truth = true_counts(gdf, ZONES)
    assert truth.sum() > 2200  # more visits than trips: only ℓ = 3 counts them all
    assert abs(est3["estimate"].sum() - truth.sum()) < 4 * np.sqrt((est3["std_error"] ** 2).sum())


def test_projection_is_non_negative_and_on_the_simplex():
    gdf = population(300)
    rep = report(gdf, ZONES, statistic="od", epsilon=0.5, oracle="krr", rng=2)
    est = estimate_counts(rep, ZONES, include_outside=True)
    assert (est["projected"] >= 0).all()
    assert est["projected"].sum() == pytest.approx(300)
    assert (est["estimate"] < 0).any()  # the unbiased estimate is not projected
    v = np.array([0.2, -0.3, 5.0, 1.0])
    p = project_simplex(v, 3.0)
    assert p.min() >= 0 and p.sum() == pytest.approx(3.0)
    # the projection is the closest point: no random simplex point is closer
    rng = np.random.default_rng(0)
    for _ in range(200):
        w = rng.dirichlet(np.ones(4)) * 3.0
        assert np.linalg.norm(v - p) <= np.linalg.norm(v - w) + 1e-12


def test_zones_must_match_and_geometry_option():
    gdf = population(100)
    rep = report(gdf, ZONES, epsilon=1.0, rng=0)
    with pytest.raises(ValueError, match="not the zones"):
        estimate_counts(rep, zone_grid((0.0, 0.0, 3.0, 3.0), cells=2))
    with pytest.raises(TypeError, match="geoldp.report"):
        estimate_counts([1, 2])
    with pytest.raises(ValueError, match="ledger"):
        estimate_counts(pd.DataFrame({"report": [1]}))
    g = estimate_counts(rep, ZONES, geometry=True)
    assert isinstance(g, gpd.GeoDataFrame) and g.crs == ZONES.crs
    # a slice keeps the ledger (post-processing)
    assert len(estimate_counts(rep.iloc[:50])) == 4


# --------------------------------------------------------------------------------------------------
# padded visit counts: the interval covers the visit count when trajectories visit more than ℓ zones
# --------------------------------------------------------------------------------------------------

GRID9 = zone_grid((0.0, 0.0, 3.0, 3.0), cells=3)  # 9 zones + outside: a trajectory's set has ≤ 10 values
C9 = [(x + 0.5, y + 0.5) for y in range(3) for x in range(3)]


@functools.lru_cache(maxsize=2)
def big_sets(n=1500, seed=1):
    """Trips visiting 1 to 6 distinct zones (most more than 2), skewed towards the first zones."""
    rng = np.random.default_rng(seed)
    w = np.linspace(3.0, 1.0, 9)
    w /= w.sum()
    lines = []
    for _ in range(n):
        m = rng.choice([1, 2, 4, 5, 6], p=[0.1, 0.1, 0.3, 0.3, 0.2])
        cells = rng.choice(9, size=m, replace=False, p=w)
        pts = [C9[i] for i in cells]
        lines.append(LineString(pts if m > 1 else pts * 2))
    return gpd.GeoDataFrame(geometry=lines, crs="EPSG:4326")


def _coverage_floor(k: int, nominal: float = 0.95) -> float:
    """Nominal rate minus 3 binomial standard errors over ``k`` intervals."""
    return nominal - 3.0 * np.sqrt(nominal * (1.0 - nominal) / k)


@pytest.mark.parametrize("oracle", ["krr", "oue"])
def test_padded_interval_covers_large_sets(oracle):
    gdf = big_sets()
    truth = true_counts(gdf, GRID9).to_numpy()
    old, new = [], []
    reps = 12
    for seed in range(reps):
        rep = report(gdf, GRID9, epsilon=4.0, oracle=oracle, pad_length=2, rng=200 + seed)
        est = estimate_counts(rep, GRID9)
        e, se = est["estimate"].to_numpy(), est["std_error"].to_numpy()
        old.append((e - Z95 * se <= truth) & (truth <= e + Z95 * se))
        new.append((est["lower"].to_numpy() <= truth) & (truth <= est["upper"].to_numpy()))
        # only the upper end moves (the lower one is clipped at 0: a count is never negative)
        assert np.array_equal(est["lower"].to_numpy(), np.clip(e - Z95 * se, 0, len(gdf)))
        assert (est["upper"] <= len(gdf)).all() and (est["upper"] >= est["lower"]).all()
    k = reps * truth.size
    # the symmetric interval around the padded estimand misses most visit counts here...
    assert np.mean(old) < 0.5, np.mean(old)
    # ...the widened one covers them at the nominal rate (3 binomial standard errors below 95 %)
    assert np.mean(new) >= _coverage_floor(k), (np.mean(new), _coverage_floor(k))


def test_padded_large_set_count_from_the_dummies():
    # n − ℓ·f̂(dummy 0) is unbiased for the trajectories with at least ℓ zones (the bound's N)
    from geoldp.reports.estimators import debiased, support_counts
    from geoldp.reports.release import report_ledger, scheme_of

    gdf = big_sets()
    sizes = _set_sizes(gdf)
    for ell in (2, 5):
        vals, ses = [], []
        for seed in range(10):
            rep = report(gdf, GRID9, epsilon=2.0, oracle="krr", pad_length=ell, rng=300 + seed)
            des = scheme_of(report_ledger(rep, caller="test"))
            counts, n = support_counts(rep, des)
            f, var = debiased(counts, n, des.oracle, single=False)
            vals.append(n - ell * f[des.base])
            ses.append(ell * np.sqrt(var[des.base]))
        n_big = int(np.count_nonzero(sizes >= ell))
        assert abs(np.mean(vals) - n_big) <= 4.0 * np.mean(ses) / np.sqrt(10), (ell, np.mean(vals), n_big)


def _set_sizes(gdf):
    """Number of distinct zones (the outside category included) each trip visits (the private sizes)."""
    from geoldp._core import frames as _frames
    from geoldp.reports.release import statistic_items
    from geoldp.zones import check_zones, zone_of_vertices

    z = check_zones(GRID9, caller="test")
    ft = _frames.extract(gdf, caller="test")
    set_offsets, _ = statistic_items("visited_zone", zone_of_vertices(z, ft.lon, ft.lat), ft.offsets, z.size)
    return np.diff(set_offsets)


def test_padded_public_set_size_bound():
    gdf = big_sets()
    truth = true_counts(gdf, GRID9, include_outside=True).to_numpy()
    rep = report(gdf, GRID9, epsilon=4.0, oracle="krr", pad_length=2, rng=5)
    wide = estimate_counts(rep, GRID9, include_outside=True)
    tight = estimate_counts(rep, GRID9, include_outside=True, max_set_size=6)  # true: at most 6 zones
    assert np.array_equal(wide["lower"], tight["lower"]) and np.array_equal(
        wide["estimate"], tight["estimate"]
    )
    assert (tight["upper"] <= wide["upper"]).all() and (tight["upper"] < wide["upper"]).any()
    assert ((tight["lower"] <= truth) & (truth <= tight["upper"])).mean() >= 0.8
    # a bound of at most ℓ says the counts are unbiased: the symmetric interval; above the domain: clipped
    sym = estimate_counts(rep, GRID9, max_set_size=2)
    n = len(gdf)
    assert np.array_equal(sym["upper"], np.clip(sym["estimate"] + Z95 * sym["std_error"], sym["lower"], n))
    assert estimate_counts(rep, GRID9, max_set_size=10**6).equals(estimate_counts(rep, GRID9))
    with pytest.raises(ValueError, match="max_set_size"):
        estimate_counts(rep, GRID9, max_set_size=0)
    with pytest.raises(TypeError, match="max_set_size"):
        estimate_counts(rep, GRID9, max_set_size=2.0)
    od = report(gdf, GRID9, statistic="od", epsilon=4.0, rng=5)
    with pytest.raises(ValueError, match="max_set_size.*visited_zone"):
        estimate_counts(od, GRID9, max_set_size=3)


def test_pair_intervals_are_symmetric_and_clipped_to_the_reports():
    # one pair per trajectory: no missing mass to bound; estimate ± 1.96·std_error within [0, n]
    gdf = big_sets()
    rep = report(gdf, GRID9, statistic="od", epsilon=2.0, rng=9)
    est = estimate_counts(rep, GRID9, include_outside=True)
    e, se, n = est["estimate"].to_numpy(), est["std_error"].to_numpy(), len(gdf)
    assert np.array_equal(est["lower"].to_numpy(), np.clip(e - Z95 * se, 0, n))
    assert np.array_equal(est["upper"].to_numpy(), np.clip(e + Z95 * se, np.clip(e - Z95 * se, 0, n), n))


@pytest.mark.parametrize("statistic", ["visited_zone", "od"])
def test_answers_lie_within_their_own_bounds(statistic):
    # the point estimate of the count inside its interval, and everything within [0, number of reports],
    # for small n too (where an unclipped interval could lie wholly above n)
    gdf = big_sets().iloc[:30]
    for pad in (1, 2, 5) if statistic == "visited_zone" else (1,):
        for seed in range(5):
            rep = report(gdf, GRID9, statistic=statistic, epsilon=1.0, pad_length=pad, rng=seed)
            est = estimate_counts(rep, GRID9)
            lo, hi, pr = (est[c].to_numpy() for c in ("lower", "upper", "projected"))
            assert ((0 <= lo) & (lo <= pr) & (pr <= hi) & (hi <= len(gdf))).all()


def test_one_zone_interval_covers_the_visit_count():
    # ℓ = 1 estimates each trajectory's share 1/|S| of a zone; the interval bounds the visit count itself
    gdf = big_sets()
    truth = true_counts(gdf, GRID9).to_numpy()
    covered = []
    for seed in range(10):
        est = estimate_counts(report(gdf, GRID9, epsilon=4.0, pad_length=1, rng=300 + seed), GRID9)
        covered.append((est["lower"].to_numpy() <= truth) & (truth <= est["upper"].to_numpy()))
    assert np.mean(covered) >= _coverage_floor(np.size(covered)), np.mean(covered)


def test_padded_transition_interval_covers_many_transitions():
    # the same bound for the transitions a trajectory makes: most trips here make 3 to 5 distinct ones
    gdf = big_sets()
    truth = true_counts(gdf, GRID9, statistic="transitions").to_numpy()
    old, new = [], []
    reps = 8
    for seed in range(reps):
        rep = report(gdf, GRID9, statistic="transitions", epsilon=4.0, pad_length=2, rng=500 + seed)
        est = estimate_counts(rep, GRID9, max_set_size=5)  # at most 6 zones visited: 5 transitions
        e, se = est["estimate"].to_numpy(), est["std_error"].to_numpy()
        old.append((e - Z95 * se <= truth) & (truth <= e + Z95 * se))
        new.append((est["lower"].to_numpy() <= truth) & (truth <= est["upper"].to_numpy()))
        assert np.array_equal(est["lower"].to_numpy(), np.clip(e - Z95 * se, 0, len(gdf)))  # upper moves
    busy = truth >= 20  # transitions made often enough for the padding's loss to show
    old_busy = np.mean(np.asarray(old)[:, busy])
    assert old_busy < _coverage_floor(reps * int(busy.sum())), old_busy  # the symmetric one fails there
    assert np.mean(new) >= _coverage_floor(reps * truth.size), np.mean(new)


def test_padded_upper_end_is_tight_in_the_worst_case():
    # every trip visits exactly M = 5 zones (a true public bound): the visit count is M/ℓ times the
    # padded estimand, the most the bound allows, so the upper end has no slack beyond its own noise
    rng = np.random.default_rng(4)
    w = np.linspace(3.0, 1.0, 9) / np.linspace(3.0, 1.0, 9).sum()
    lines = [LineString([C9[i] for i in rng.choice(9, size=5, replace=False, p=w)]) for _ in range(1500)]
    gdf = gpd.GeoDataFrame(geometry=lines, crs="EPSG:4326")
    truth = true_counts(gdf, GRID9).to_numpy()
    covered, slack = [], []
    reps = 12
    for seed in range(reps):
        rep = report(gdf, GRID9, epsilon=4.0, oracle="krr", pad_length=2, rng=400 + seed)
        est = estimate_counts(rep, GRID9, max_set_size=5)
        covered.append((est["lower"].to_numpy() <= truth) & (truth <= est["upper"].to_numpy()))
        slack.append((est["upper"].to_numpy() - truth) / (2.5 * est["std_error"].to_numpy()))
    assert np.mean(covered) >= _coverage_floor(reps * truth.size), np.mean(covered)
    # upper − truth is 2.5·(z·se − (estimate − estimand)): on average z ≈ 2.24 standard errors
    assert 1.5 < np.mean(slack) < 3.0, np.mean(slack)
