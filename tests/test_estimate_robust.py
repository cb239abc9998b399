"""Robustness of geoldp.estimate: long trajectories, reproducibility, model selection against baselines.

- Long trajectories: the per-trajectory likelihood of a 1,000-point trajectory spans thousands of nats, so
  ``exp`` of it underflows in any floating-point type; the fit must work in log space.
- Reproducibility: answers depend only on the release, P, the configuration and ``rng`` (not on how many
  bootstrap replicates the interval uses), and both spellings of ``denoise`` agree.
- Model selection never picks a model whose held-out likelihood is below that of the raw release or of a
  no-data population (uniform draws from P, the constant at P's 1-median).
"""

from __future__ import annotations

import numpy as np
import pytest

from geoldp import PointSet, estimate, perturb_trajectories

GRID = np.linspace(0.0, 0.2, 12)
LON, LAT = (a.ravel() for a in np.meshgrid(GRID, GRID))
P = PointSet(LON, LAT)


def walks(seed: int, lengths) -> list[np.ndarray]:
    """Random walks on the 12 x 12 grid (steps to a 4-neighbour, clipped at the border)."""
    gen = np.random.default_rng(seed)
    out = []
    for n in lengths:
        ij = np.empty((n, 2), dtype=np.int64)
        ij[0] = gen.integers(0, 12, size=2)
        steps = gen.integers(-1, 2, size=(n - 1, 2))
        for i in range(1, n):
            ij[i] = np.clip(ij[i - 1] + steps[i - 1], 0, 11)
        out.append(ij[:, 1] * 12 + ij[:, 0])
    return out


def test_thousand_point_trajectory_has_a_posterior():
    """A single-trajectory length group of 1,000 points (TP): the best proposal candidate explains the
    release hundreds of nats better than the release itself, so exp(ℓ − max ℓ) of every weighted candidate
    underflows; the posterior must still be a distribution, the interval finite and denoise work."""
    trajs = walks(0, [1000])
    rel = perturb_trajectories(trajs, P, mechanism="tp", epsilon=8.0, rng=1)
    pop = estimate.fit(rel, P, mechanism="tp", epsilon=8.0, rng=2, n_candidates=200, n_sims=2, n_boot=3)
    v = pop.visit_counts()
    assert np.isfinite(v[["estimate", "lower", "upper"]].to_numpy()).all()
    for g in pop._state.model().groups:
        np.testing.assert_allclose(g.posterior().sum(axis=1), 1.0, rtol=1e-9)
    # one trajectory visits at least one and at most |P| points
    assert 1.0 - 1e-9 <= float(v["estimate"].sum()) <= P.size
    den = pop.denoise()
    assert [d.shape for d in den] == [r.shape for r in rel]


def several_lengths(seed: int = 0, n: int = 240) -> list[np.ndarray]:
    gen = np.random.default_rng(seed)
    return walks(seed, gen.integers(2, 7, size=n))


@pytest.mark.parametrize("mech", ["pointem", "atp"])
def test_estimate_does_not_depend_on_n_boot(mech):
    trajs = several_lengths()
    rel = perturb_trajectories(trajs, P, mechanism=mech, epsilon=4.0, rng=3)
    kw = dict(mechanism=mech, epsilon=4.0, rng=7, n_candidates=300, n_sims=4)
    a = estimate.visit_counts(rel, P, n_boot=0, **kw)
    for n_boot in (2, 9):
        b = estimate.visit_counts(rel, P, n_boot=n_boot, **kw)
        np.testing.assert_array_equal(a["estimate"].to_numpy(), b["estimate"].to_numpy())


@pytest.mark.parametrize("mech", ["pointem", "atp"])
def test_denoise_and_fit_denoise_agree(mech):
    """``denoise(...)`` and ``fit(...).denoise()`` with the same rng are the same answer (any n_boot)."""
    trajs = several_lengths(1)
    rel = perturb_trajectories(trajs, P, mechanism=mech, epsilon=4.0, rng=4)
    kw = dict(mechanism=mech, epsilon=4.0, rng=8, n_candidates=300, n_sims=4)
    direct = estimate.denoise(rel, P, **kw)
    for n_boot in (30, 3):
        via_fit = estimate.fit(rel, P, n_boot=n_boot, **kw).denoise()
        for x, y in zip(direct, via_fit, strict=True):
            np.testing.assert_array_equal(x, y)


# ----------------------------------------------------------------------------------------------------------
# model selection against the baselines; the support flag
# ----------------------------------------------------------------------------------------------------------

STARTS = ("released", "mixed", "uniform", "proposal", "constant")
CHECKS = (0, 4)


def beaten_by_a_baseline(per_row: np.ndarray, s: int, j: int) -> bool:
    """Whether a baseline's held-out score beats model (s, j) by more than one paired standard error and
    by more than the evidence margin (a likelihood ratio of e^3 over the held-out rows)."""
    from geoldp.estimate import _model

    for st, it in _model.BASELINES:
        d = per_row[STARTS.index(st), CHECKS.index(it)] - per_row[s, j]
        if d.sum() > max(d.std(ddof=1) * np.sqrt(d.size), _model.EVIDENCE_NATS):
            return True
    return False


def test_selection_never_returns_a_model_a_baseline_clearly_beats():
    """The raw release is within one standard error of the best (a noisy model) and first in the order of
    preference, but the uniform no-data population beats it on almost every held-out row: raw is out."""
    from geoldp.estimate import _model

    gen = np.random.default_rng(0)
    n = 200
    raw = gen.normal(-5.0, 1.0, n)
    per_row = np.empty((len(STARTS), len(CHECKS), n))
    per_row[:] = raw - 1.0  # every other model: clearly worse
    per_row[0, 0] = raw  # released, 0 iterations: the raw release
    per_row[1, 0] = raw + 0.05 + gen.normal(0.0, 3.0, n)  # mixed: best in total, very noisy
    per_row[1, 0] += (0.05 * n - (per_row[1, 0] - raw).sum()) / n  # exactly +0.05 a row on average
    per_row[2, 0] = raw + 0.02 + gen.normal(0.0, 0.01, n)  # uniform: a little better on every row
    (start, it), plausible = _model.select(per_row, STARTS, CHECKS)
    assert ("released", 0) in plausible  # the raw release is not rejected ...
    assert (start, it) != ("released", 0)  # ... but a baseline clearly beats it, so it is not chosen
    assert not beaten_by_a_baseline(per_row, STARTS.index(start), CHECKS.index(it))
    # random held-out scores: whatever is chosen, no baseline clearly beats it
    for _ in range(200):
        per_row = gen.normal(0.0, 1.0, (len(STARTS), len(CHECKS), 60)) + gen.normal(0, 0.3, (5, 2, 1))
        (start, it), plausible = _model.select(per_row, STARTS, CHECKS)
        assert (start, it) in plausible
        assert not beaten_by_a_baseline(per_row, STARTS.index(start), CHECKS.index(it))


def test_the_support_flag_marks_what_a_release_cannot_tell_from_no_data():
    """PointEM at ε = 0.2 says nothing: (nearly) every zone is flagged; at ε = 8 on a concentrated
    population, the corner zone that holds most trajectories is not, and every zone left unflagged has an
    interval that covers the truth (the other zones' counts the channel hardly shows at this ε)."""
    import geopandas as gpd
    import shapely

    starts = (-0.001, 0.049, 0.099, 0.149)
    zones = gpd.GeoDataFrame(
        geometry=[shapely.box(x, y, x + 0.052, y + 0.052) for x in starts for y in starts], crs="EPSG:4326"
    )
    from geoldp.estimate import _inputs

    zone_of = _inputs.zone_of_points(zones, P, caller="test")[0]
    gen = np.random.default_rng(5)
    corner = np.flatnonzero((LON < 0.07) & (LAT < 0.07))
    trajs = [gen.choice(corner if gen.random() < 0.8 else np.arange(P.size), size=2) for _ in range(400)]
    kw = dict(zones=zones, n_boot=5, n_candidates=300, rng=1)
    flat = perturb_trajectories(trajs, P, mechanism="pointem", epsilon=0.2, rng=2)
    v0 = estimate.visit_counts(flat, P, mechanism="pointem", epsilon=0.2, **kw)
    sharp = perturb_trajectories(trajs, P, mechanism="pointem", epsilon=8.0, rng=3)
    v8 = estimate.visit_counts(sharp, P, mechanism="pointem", epsilon=8.0, **kw)
    assert v0["supported"].sum() <= 1, v0  # of 16 zones
    assert v8["supported"].sum() >= v0["supported"].sum() + 1, (v0, v8)
    assert bool(v8["supported"].iloc[0])  # the corner zone holding 80 % of the trajectories
    truth = np.zeros(len(zones))
    for t in trajs:
        truth[np.unique(zone_of[t])] += 1
    sup = v8["supported"].to_numpy()
    assert ((truth >= v8["lower"].to_numpy()) & (truth <= v8["upper"].to_numpy()))[sup].all(), (truth, v8)
