"""Tests of the large-release path of geoldp.estimate: a length with more releases than ``fit_rows``.

The population: a public 12 x 12 grid over ~22 km and trajectories of 2 to 4 points, 70 % inside one
corner and 30 % anywhere (a strongly non-uniform truth); zones are a 4 x 4 grid. The sampled fit is forced
by a lowered ``fit_rows`` and compared with the full fit of the same release and ``rng``.
"""

from __future__ import annotations

import functools

import geopandas as gpd
import numpy as np
import pytest
import shapely
from scipy.stats import chi2

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
# fit_rows >= n_candidates below: the library holds as many released copies in both fits, as at the defaults
OPTS = dict(n_candidates=150, n_sims=8)
FIT_ROWS = 1000
#: (mechanism, ε): ATP in the default tier; PointEM (exact channel, slower likelihood) is a slow audit
CASES = [("atp", 4.0), pytest.param("pointem", 8.0, marks=pytest.mark.slow)]


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
    kw = dict(OPTS, mechanism="atp", epsilon=4.0, rng=2, n_boot=3)
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
    kw = dict(OPTS, mechanism="atp", epsilon=4.0, rng=5, n_boot=0, fit_rows=40)
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


@functools.cache
def fits(mech: str, eps: float):
    """One release of about 3,000 trajectories of each length 2, 3, 4; four full fits (rng 6-9) and a fit
    on 1,000 of the rows of each length (rng 6)."""
    trajs = population(3, 9000)
    rel = perturb_trajectories(trajs, P, mechanism=mech, epsilon=eps, rng=4)
    kw = dict(OPTS, mechanism=mech, epsilon=eps, n_boot=20)
    full = [estimate.fit(rel, P, rng=seed, **kw) for seed in (6, 7, 8, 9)]
    sampled = estimate.fit(rel, P, rng=6, fit_rows=FIT_ROWS, **kw)
    return trajs, rel, full, sampled


@pytest.mark.parametrize(("mech", "eps"), CASES)
def test_sampled_fit_agrees_with_the_full_fit(mech, eps):
    """Each zone's estimate from 1,000 of ~3,000 rows per length differs from the full fit's (same rng) by
    no more than the statistics allow: the sampled fit's own standard error (sampling, posterior,
    bootstrap) and the full fit's Monte-Carlo spread over rng seeds (which released rows enter the
    library, the simulations, the folds: present in either fit). The sampling adds variance (a larger
    sd than the full fit's), and denoise still covers every row."""
    trajs, rel, full, sampled = fits(mech, eps)
    values = estimate._visit_matrix(ZONE_OF, len(ZONES))
    models = [p._state.model() for p in full]
    sub = sampled._state.model()
    assert all(g.fit_rows is not None and g.fit_rows.size == FIT_ROWS for g in sub.groups)
    assert all(g.fit_rows is None for g in models[0].groups)
    e_full = np.array([m.estimate(values)[0] for m in models])
    e_sub, sd_sub = sub.estimate(values)[0], sub.sd(values)
    z = (e_sub - e_full[0]) / np.sqrt(sd_sub**2 + e_full.var(axis=0, ddof=1))
    # mean of 16 squared deviates, each at most standard normal: below chi-square(16)'s 0.1 % tail / 16
    assert float(np.mean(z**2)) < float(chi2.ppf(0.999, len(ZONES))) / len(ZONES), z
    assert np.mean(sd_sub > models[0].sd(values)) >= 0.75
    if mech == "atp":  # denoise on the rows the fit did not use (one mechanism is enough)
        den = sampled.denoise()
        assert [d.shape for d in den] == [r.shape for r in rel]
        assert all(np.all((d >= 0) & (d < P.size)) for d in den)


@pytest.mark.parametrize(("mech", "eps"), CASES)
def test_sampled_intervals_cover_like_the_full_ones(mech, eps):
    """The truth's coverage by the sampled fit's 95 % intervals is at least the full fit's (same rng), less
    two binomial standard errors over the 16 zones."""
    trajs, _, full, sampled = fits(mech, eps)
    truth = zone_truth(trajs)
    cover = {}
    for name, pop in (("full", full[0]), ("sampled", sampled)):
        v = pop.visit_counts(ZONES)
        cover[name] = float(np.mean((v["lower"] <= truth) & (truth <= v["upper"])))
        tot = v.attrs["total"]
        assert tot["lower"] <= tot["estimate"] <= tot["upper"]
    c = cover["full"]
    assert cover["sampled"] >= c - 2.0 * np.sqrt(max(c * (1 - c), 1 / 16) / 16), cover


@pytest.mark.parametrize(("mech", "eps"), [("atp", 4.0), ("pointem", 8.0)])
@pytest.mark.parametrize("dense", [False, True])
def test_denoise_of_a_sampled_length_is_the_exact_median_up_to_pooling(mech, eps, dense):
    """A length fitted on a sample pools each position's candidate points by cells of side Δ/64 before
    the Weiszfeld iterations. On the 12 x 12 grid (2 km apart, cells of 0.5 km) every cell holds one
    public point and the pooling only merges candidates at the same point: the output is the exact
    iterations'. On a dense P (about 9 points per cell) it is an approximation: most positions snap to
    the same point, and the others to a point close by."""
    from geoldp.estimate import _denoise

    gen = np.random.default_rng(11)
    ps = PointSet(gen.uniform(0.0, 0.2, 6000), gen.uniform(0.0, 0.2, 6000)) if dense else P
    trajs = [gen.integers(0, ps.size, size=k) for k in gen.integers(2, 5, size=900)]
    rel = perturb_trajectories(trajs, ps, mechanism=mech, epsilon=eps, rng=4)
    pop = estimate.fit(rel, ps, mechanism=mech, epsilon=eps, rng=5, n_boot=0, fit_rows=150, **OPTS)
    den = pop.denoise()
    xyz = np.asarray(ps.xyz)
    same, shift = [], []
    for g in pop._state.model().groups:
        assert g.fit_rows is not None
        post = _denoise._log_posterior(g.row_loglik(g.released), g.w)
        for i in range(g.n):
            lon, lat = _denoise._lonlat(_denoise._geometric_median(post, xyz[g.cand[:, i]]))
            exact = np.asarray(ps.nearest(lon, lat)[0]).reshape(-1)
            pooled = np.array([den[r][i] for r in g.rows])
            same.append(exact == pooled)
            shift.append(np.arccos(np.clip((xyz[exact] * xyz[pooled]).sum(axis=1), -1.0, 1.0)) * 6371.0)
    same, shift = np.concatenate(same), np.concatenate(shift)
    side = ps.diameter_km / _denoise.MEDIAN_CELLS
    if not dense:
        assert same.all()
    else:
        assert same.mean() >= 0.75, same.mean()
        assert shift.mean() < side / 2 and shift.max() < 8 * side, (shift.mean(), shift.max(), side)
