"""The per-user client's trajectory reports against the exact merged-output pmf (TESTING §3: S4, S5).

The client runs geoldp's compiled kernels on a campaign's public arrays; here its reports of one
trajectory (N seeded calls, one child seed each, as N devices would draw) must fit the exact pmf of the
mechanism the campaign names (χ² at α = 1e−6), and must not fit the pmf of a domain mutant (the power
precondition, λ ≥ 3 × the critical value, checked first).
"""

from __future__ import annotations

import collections

import exact_enumeration as exact
import mutants
import numpy as np
import pytest
from trajectory_support import chi_square, city, make, noncentrality

from geoldp import client
from geoldp.field.campaign import Campaign
from geoldp.trajectory import ATP, TP

pytestmark = pytest.mark.filterwarnings("ignore::geoldp.PrivacyWarning")


def _exact_pmf(mech, pts, x, run_cls=None) -> dict:
    dists = exact.full_distributions(mech, pts, np.array([x]), run_cls=run_cls)
    seqs, p = exact.merged_distribution(mech, pts, dists)
    return {tuple(s): float(v) for s, v in zip(seqs.tolist(), p[0], strict=True) if v > 0}


def _client_sample(name: str, eps: float, x: tuple, N: int) -> collections.Counter:
    pts = city(6)
    device = client.Client(Campaign.create(name, epsilon=eps, points=pts, max_points=4))
    xy = np.column_stack([np.asarray(pts.lon)[list(x)], np.asarray(pts.lat)[list(x)]])
    seeds = np.random.SeedSequence(2026).spawn(N)
    return collections.Counter(tuple(device.respond(xy, user="u", rng=s)["report"]["points"]) for s in seeds)


@pytest.mark.parametrize(
    ("cls", "name", "x", "mutant"),
    [
        (TP, "tp", (1, 4, 2), mutants.RelativeSectors),
        # ATP's exact pmf at the default 1,024 SW buckets (a campaign's options) takes minutes
        pytest.param(ATP, "atp", (1, 4), mutants.RegionOnTrueAnchor, marks=pytest.mark.slow),
    ],
)
def test_client_reports_fit_the_exact_pmf(cls, name, x, mutant):
    eps, N = 30.0, 2000
    pts = city(6)
    p = _exact_pmf(make(cls, epsilon=eps), pts, x)
    counts = _client_sample(name, eps, x, N)
    x2, crit, df = chi_square(counts, p, N)
    assert x2 < crit, f"client {name}: X2={x2:.1f} >= {crit:.1f} (df={df}, N={N})"
    p_mut = _exact_pmf(make(cls, epsilon=eps), pts, x, mutant)
    assert noncentrality(p_mut, p, N) >= 3 * crit  # the test could see that mutant
    mx2, mcrit, _ = chi_square(counts, p_mut, N)
    assert mx2 >= mcrit, f"the client's sample fits the {mutant.__name__} mutant's pmf"
