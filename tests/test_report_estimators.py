"""The report estimators: unbiasedness and interval coverage (fixed seeds, tolerances from the variances)."""

from __future__ import annotations

import functools

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from shapely.geometry import LineString

from geoldp.reports import estimate_counts, project_simplex, report, true_counts, zone_grid

# Small report tables are below the no-data noise level on purpose; that warning has its own tests.
pytestmark = pytest.mark.filterwarnings("ignore:.*told from no data:geoldp.errors.GeoLDPWarning")

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
