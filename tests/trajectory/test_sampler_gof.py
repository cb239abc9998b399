"""Chi-square goodness of fit of the reference sampler against the exact merged-output pmf (TESTING §3: S4,
S5), with the power precondition and the mutants each configuration must reject.

Tier F uses one seed and a small N (the reference sampler is pure Python); every configuration first
asserts that each listed mutant's non-centrality λ is ≥ 3 × the critical value at that N, then that the
mutant's sample (same seed, same N) fails. Tier S repeats with N = 10⁵, three seeds and the weaker
mutants (ε × 1.25 in every stage, SW budget × 2), whose power needs the larger N.
"""

from __future__ import annotations

import collections

import exact_enumeration as exact
import mutants
import numpy as np
import pytest
from trajectory_support import chi_square, city, make, noncentrality

from geoldp._core.randomness import NumpyRandomSource
from geoldp.trajectory import ATP, TP, engine


def _exact_pmf(mech, pts, x, run_cls=None) -> dict:
    dists = exact.full_distributions(mech, pts, np.array([x]), run_cls=run_cls)
    seqs, p = exact.merged_distribution(mech, pts, dists)
    return {tuple(s): float(v) for s, v in zip(seqs.tolist(), p[0], strict=True) if v > 0}


def _sample(mech, pts, x, N, seed) -> collections.Counter:
    src = NumpyRandomSource(np.random.default_rng(seed))
    outs = engine.run([np.array(x)] * N, pts, mech, rng=src, sampler="reference")
    return collections.Counter(tuple(o.tolist()) for o in outs)


def _gof(monkeypatch, mech, x, N, seed, mutant_classes):
    pts = city(6)
    p = _exact_pmf(mech, pts, x)
    counts = _sample(mech, pts, x, N, seed)
    x2, crit, df = chi_square(counts, p, N)
    assert x2 < crit, (
        f"{mech.name} eps={mech.epsilon} |P|=6 x={x}: X2={x2:.1f} >= critical {crit:.1f} "
        f"(df={df}, seed={seed}, N={N})"
    )
    for cls in mutant_classes:
        lam = noncentrality(_exact_pmf(mech, pts, x, cls), p, N)
        assert lam >= 3 * crit, f"power precondition: {cls.__name__} λ={lam:.1f} < 3×{crit:.1f} at N={N}"
        with mutants.installed(monkeypatch, cls):
            bad = _sample(mech, pts, x, N, seed)
        bx2, bcrit, _ = chi_square(bad, p, N)
        assert bx2 >= bcrit, f"mutant {cls.__name__} not rejected: X2={bx2:.1f} < {bcrit:.1f}"


def test_s4_tp_merged_output(monkeypatch):
    # g = 4 keeps the exact tree small in tier F; the slow tier uses "auto" (g = 12 at ε = 40)
    mech = make(TP, epsilon=40.0, granularity=4)
    _gof(monkeypatch, mech, (1, 4, 2), 2000, 0, [mutants.RelativeSectors, mutants.TrueNeighbourOrigin])


def test_s5_atp_merged_output(monkeypatch):
    mech = make(ATP, epsilon=40.0, sw_buckets=8)
    _gof(monkeypatch, mech, (1, 4), 2000, 0, [mutants.RelativeSectors, mutants.RegionOnTrueAnchor])


@pytest.mark.slow
def test_s4_tp_slow(monkeypatch):
    muts = [mutants.RelativeSectors, mutants.TrueNeighbourOrigin, mutants.AllStagesEpsTimes125]
    _gof(monkeypatch, make(TP, epsilon=40.0), (1, 4, 2), 100_000, 0, muts)


@pytest.mark.slow
def test_s5_atp_slow(monkeypatch):
    muts = [mutants.RelativeSectors, mutants.RegionOnTrueAnchor, mutants.RadiusBudgetTimes2]
    _gof(monkeypatch, make(ATP, epsilon=40.0, sw_buckets=8), (1, 4), 50_000, 0, muts)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(
    ("mechanism", "eps", "x"), [(TP, 10.0, (1, 4, 2)), (ATP, 10.0, (1, 4)), (ATP, 40.0, (1, 4, 2))]
)
def test_s4_s5_more_seeds_and_budgets(monkeypatch, seed, mechanism, eps, x):
    mech = make(mechanism, epsilon=eps) if mechanism is TP else make(mechanism, epsilon=eps, sw_buckets=8)
    _gof(monkeypatch, mech, x, 50_000, seed, [])
