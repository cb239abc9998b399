"""Tests of the large-release path of geoldp.estimate: a length with more releases than ``fit_rows``.

The population: a public 12 x 12 grid over ~22 km and trajectories of 2 to 4 points, 70 % inside one
corner and 30 % anywhere (a strongly non-uniform truth); zones are a 4 x 4 grid. The sampled fit is forced
by a lowered ``fit_rows`` and compared with the full fit of the same release and ``rng``.
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pytest
import shapely
from scipy.special import ndtri

from geoldp import PointSet, estimate, perturb_trajectories
from geoldp.estimate import _inputs, _model

GRID = np.linspace(0.0, 0.2, 12)
LON, LAT = (a.ravel() for a in np.meshgrid(GRID, GRID))
P = PointSet(LON, LAT)
_STARTS = (-0.001, 0.049, 0.099, 0.149)
ZONES = gpd.GeoDataFrame(
    geometry=[shapely.box(x, y, x + 0.052, y + 0.052) for x in _STARTS for y in _STARTS], crs="EPSG:4326"
)
ZONE_OF = _inputs.zone_of_points(ZONES, P, caller="test")[0]
OPTS = dict(mechanism="atp", epsilon=4.0, n_candidates=300, n_sims=8)


def population(seed: int, n: int) -> list[np.ndarray]:
    gen = np.random.default_rng(seed)
    corner = np.flatnonzero((LON < 0.07) & (LAT < 0.07))
    everywhere = np.arange(P.size)
    lengths = gen.integers(2, 5, size=n)
    return [gen.choice(corner if gen.random() < 0.7 else everywhere, size=k) for k in lengths]


def zone_truth(trajs) -> np.ndarray:
    out = np.zeros(len(ZONES))
    for t in trajs:
        out[np.unique(ZONE_OF[t])] += 1
    return out


def test_fit_rows_at_or_above_every_length_is_the_full_fit():
    """Up to ``fit_rows`` releases of a length every row is fitted: the answer does not depend on it."""
    rel = perturb_trajectories(population(0, 300), P, mechanism="atp", epsilon=4.0, rng=1)
    kw = dict(OPTS, rng=2, n_boot=3)
    a = estimate.visit_counts(rel, P, zones=ZONES, **kw)
    b = estimate.visit_counts(rel, P, zones=ZONES, fit_rows=max(len(rel), 10), **kw)
    assert a.equals(b)
    assert all(g.fit_rows is None for g in estimate.fit(rel, P, **kw)._state.model().groups)


def test_fitted_rows_are_a_uniform_sample_chosen_by_the_key_alone():
    """Which rows are fitted depends on the key, the length and the number of rows, never on values."""
    key = np.arange(8, dtype=np.uint32)
    s = _model.fit_sample(1000, 100, key, 3)
    assert s is not None and s.size == 100 and np.all(np.diff(s) > 0) and 0 <= s[0] and s[-1] < 1000
    assert np.array_equal(s, _model.fit_sample(1000, 100, key, 3))
    assert not np.array_equal(s, _model.fit_sample(1000, 100, key, 4))
    assert _model.fit_sample(100, 100, key, 3) is None
    # two different releases with the same lengths: the same fitted rows
    kw = dict(OPTS, rng=5, n_boot=0, fit_rows=40)
    fits = []
    for seed in (0, 1):
        trajs = [t[:2] for t in population(seed, 120)]
        rel = perturb_trajectories(trajs, P, mechanism="atp", epsilon=4.0, rng=seed)
        (g,) = estimate.fit(rel, P, **kw)._state.model().groups
        fits.append(g.fit_rows)
    assert np.array_equal(fits[0], fits[1])
    # positions of a 1000-row sample of 100: every position equally likely (chi-square over 10 bins)
    hits = np.concatenate([_model.fit_sample(1000, 100, key + i, 3) for i in range(200)]) // 100
    counts = np.bincount(hits, minlength=10)
    chi2 = float(((counts - 2000) ** 2 / 2000).sum())
    assert chi2 < 27.9  # the 0.1 % quantile of chi-square with 9 degrees of freedom


@pytest.fixture(scope="module")
def fits():
    trajs = population(3, 3000)  # about 1,000 releases of each length 2, 3, 4
    rel = perturb_trajectories(trajs, P, mechanism="atp", epsilon=4.0, rng=4)
    out = {}
    for name, rows in (("full", 5000), ("sampled", 200)):
        out[name] = estimate.fit(rel, P, rng=6, n_boot=20, fit_rows=rows, **OPTS)
    return trajs, rel, out


def test_sampled_fit_agrees_with_the_full_fit(fits):
    """Each zone's estimate from 200 of ~1,000 rows per length lies within the sampled fit's own standard
    error of the full fit's; the sampling adds variance (larger sd), and denoise still covers every row."""
    trajs, rel, pops = fits
    values = estimate._visit_matrix(ZONE_OF, len(ZONES))
    full, sampled = pops["full"]._state.model(), pops["sampled"]._state.model()
    assert all(g.fit_rows is not None and g.fit_rows.size == 200 for g in sampled.groups)
    e_full = full.estimate(values)[0]
    e_sub = sampled.estimate(values)[0]
    sd_sub, sd_full = sampled.sd(values), full.sd(values)
    # the full fit uses the sampled rows too, so Var(sub - full) <= Var(sub): |z| is conservative;
    # 3.42 is the two-sided 5 % bound for the largest of 16 normal deviates (Bonferroni)
    z = (e_sub - e_full) / sd_sub
    assert np.max(np.abs(z)) < float(ndtri(1 - 0.025 / 16)) + 0.4, z
    assert np.mean(sd_sub > sd_full) >= 0.75
    assert abs(e_sub.sum() - e_full.sum()) < 4.0 * float(np.sqrt(np.sum(sd_sub**2)))
    den = pops["sampled"].denoise()
    assert [d.shape for d in den] == [r.shape for r in rel]
    assert all(np.all((d >= 0) & (d < P.size)) for d in den)


def test_sampled_intervals_cover_like_the_full_ones(fits):
    """The truth's coverage by the sampled fit's 95 % intervals is at least the full fit's, less two
    binomial standard errors over the 16 zones."""
    trajs, _, pops = fits
    truth = zone_truth(trajs)
    cover = {}
    for name, pop in pops.items():
        v = pop.visit_counts(ZONES)
        cover[name] = float(np.mean((v["lower"] <= truth) & (truth <= v["upper"])))
        tot = v.attrs["total"]
        assert tot["lower"] <= tot["estimate"] <= tot["upper"]
    c = cover["full"]
    assert cover["sampled"] >= c - 2.0 * np.sqrt(max(c * (1 - c), 1 / 16) / 16), cover
