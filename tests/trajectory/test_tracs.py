"""TraCS-D and TraCS-C on planar coordinates: ledger, exact per-location privacy, sampler, randomness.

Exact per location: the released stage values (direction and normalised distance for TraCS-D, the two
normalised coordinates for TraCS-C) are independent given the public reference, so the probability of a
product cell is the product of the primitives' exact bucket masses, at the inputs the mechanism itself
derives (:func:`direction_and_distance`), for locations on the box's edges and corners, at the reference,
outside the box (clipped) and inside; references at the centre, on an edge and in a corner. The location's
output is a function of these released values and the public box (post-processing).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats

from geoldp import PointSet
from geoldp._core import randomness as _random
from geoldp.mechanisms import PiecewiseCircular, PiecewiseLinear
from geoldp.testing import assert_ldp
from geoldp.trajectory import TraCSC, TraCSD, perturb_coordinates, perturb_trajectories
from geoldp.trajectory.tracs import DEFAULT_DIRECTION_SHARE, direction_and_distance, edge_distance

BOX = (0.0, 0.0, 4000.0, 2000.0)
# large budgets are tested on purpose (they still add noise); their warning is tested in test_mechanisms
pytestmark = pytest.mark.filterwarnings("ignore::geoldp.PrivacyWarning")


def box_points() -> np.ndarray:
    x0, y0, x1, y1 = BOX
    corners = [(x0, y0), (x1, y0), (x0, y1), (x1, y1)]
    edges = [(x0, 700.0), (x1, 1500.0), (1234.0, y0), (3000.0, y1)]
    inside = [(2000.0, 1000.0), (10.0, 10.0), (3999.0, 1999.5), (1e-9, 1000.0)]
    outside = [(-50.0, 500.0), (5000.0, 3000.0)]  # clipped to the box first
    return np.array(corners + edges + inside + outside, dtype=np.float64)


def clip(p):
    return min(max(p[0], BOX[0]), BOX[2]), min(max(p[1], BOX[1]), BOX[3])


# ---- ledger ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [TraCSD, TraCSC])
@pytest.mark.parametrize("eps", [1e-3, 0.1, 1.0, 1 / 3, 4.0, 10.0])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 1000])
def test_ledger_sums_to_at_most_epsilon(cls, eps, n):
    mech = cls(epsilon=eps, bounds=BOX)
    led = mech.ledger(n)
    assert len(led) == 2 * n
    assert led.total() <= Fraction(eps)
    assert float(led.total()) == pytest.approx(eps, rel=1e-12)
    assert sorted({e.positions for e in led}) == [(i,) for i in range(1, n + 1)]
    a, b = mech.stage_budgets(n)
    assert Fraction(a) + Fraction(b) <= Fraction(eps) / n


def test_direction_share_default_and_kinds():
    m = TraCSD(epsilon=2.0, bounds=BOX)
    assert float(m.direction_share) == pytest.approx(math.pi / (math.pi + 1))
    assert m.direction_share == DEFAULT_DIRECTION_SHARE
    a, b = m.stage_budgets(1)
    assert a == pytest.approx(2.0 * math.pi / (math.pi + 1)) and a + b == pytest.approx(2.0)
    assert [e.kind for e in m.ledger(1)] == ["direction_pw", "distance_pw"]
    c = TraCSC(epsilon=2.0, bounds=BOX, x_share=0.25)
    assert c.stage_budgets(2) == (0.25, 0.75)


def test_validation_names_the_parameter():
    for bad in [(0, 0, 0, 1), (0, 0, 1), (1, 0, 0, 1), (0, 0, math.inf, 1), (0, 0, math.nan, 1)]:
        with pytest.raises((ValueError, TypeError), match="bounds"):
            TraCSD(epsilon=1.0, bounds=bad)
    with pytest.raises(TypeError, match="bounds"):
        TraCSC(epsilon=1.0, bounds="box")
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match="direction_share"):
            TraCSD(epsilon=1.0, bounds=BOX, direction_share=bad)
    with pytest.raises(ValueError, match="x_share"):
        TraCSC(epsilon=1.0, bounds=BOX, x_share=1.0)
    with pytest.raises(ValueError, match="origin"):
        TraCSD(epsilon=1.0, bounds=BOX, origin="middle")
    with pytest.raises(ValueError, match="epsilon"):
        TraCSD(epsilon=0.0, bounds=BOX)
    with pytest.raises(ValueError, match="limit"):
        TraCSD(epsilon=200.0, bounds=BOX).check_budgets(1)
    with pytest.raises(ValueError, match="Trajectory 1"):
        perturb_coordinates([np.zeros((2, 2)), np.full((2, 2), np.nan)], epsilon=1.0, bounds=BOX, rng=0)
    with pytest.raises(ValueError, match="perturb_coordinates"):
        perturb_trajectories(
            [np.array([0])], PointSet([0.0, 1.0], [0.0, 1.0]), mechanism="tracs-d", epsilon=1.0, bounds=BOX
        )


# ---- the private inputs the mechanism derives ---------------------------------------------------------
REFS = [(2000.0, 1000.0), (0.0, 1000.0), (4000.0, 2000.0), (1234.0, 0.0)]


@pytest.mark.parametrize("ref", REFS)
def test_direction_and_distance_are_in_domain(ref):
    for p in box_points():
        px, py = clip(p)
        theta, v = direction_and_distance(px, py, ref[0], ref[1], *BOX)
        assert 0.0 <= theta < 2 * math.pi and 0.0 <= v <= 1.0
        if (px, py) == ref:
            assert (theta, v) == (0.0, 0.0)
        else:
            d = edge_distance(ref[0], ref[1], theta, *BOX)
            assert math.hypot(px - ref[0], py - ref[1]) == pytest.approx(v * d, rel=1e-9, abs=1e-6)


@pytest.mark.parametrize("ref", REFS)
@pytest.mark.parametrize("eps", [0.5, 2.0, 10.0, 40.0])
def test_tracs_d_location_exact(ref, eps):
    """P[(θ′, v′) ∈ cell | location] over a 32 × 32 grid: (a)(b)(c) against ε for every input location."""
    mech = TraCSD(epsilon=eps, bounds=BOX)
    ea, eb = mech.stage_budgets(1)
    circ, lin = PiecewiseCircular(epsilon=ea), PiecewiseLinear(epsilon=eb)
    rows = []
    for p in box_points():
        theta, v = direction_and_distance(*clip(p), ref[0], ref[1], *BOX)
        rows.append(np.outer(circ.probabilities(theta, 32), lin.probabilities(v, 32)).ravel())
    assert_ldp(np.array(rows), eps)


@pytest.mark.parametrize("eps", [0.5, 2.0, 10.0, 40.0])
def test_tracs_c_location_exact(eps):
    mech = TraCSC(epsilon=eps, bounds=BOX)
    ea, eb = mech.stage_budgets(1)
    la, lb = PiecewiseLinear(epsilon=ea), PiecewiseLinear(epsilon=eb)
    rows = []
    for p in box_points():
        x, y = clip(p)
        u, v = (x - BOX[0]) / (BOX[2] - BOX[0]), (y - BOX[1]) / (BOX[3] - BOX[1])
        rows.append(np.outer(la.probabilities(u, 32), lb.probabilities(v, 32)).ravel())
    assert_ldp(np.array(rows), eps)


def test_mutant_full_budget_per_stage_is_caught():
    """A location spending ε on each of its two stages (2ε in all) fails the exact check at ε."""
    eps = 2.0
    circ, lin = PiecewiseCircular(epsilon=eps), PiecewiseLinear(epsilon=eps)
    rows = []
    for p in box_points():
        theta, v = direction_and_distance(*clip(p), 2000.0, 1000.0, *BOX)
        rows.append(np.outer(circ.probabilities(theta, 32), lin.probabilities(v, 32)).ravel())
    with pytest.raises(AssertionError, match="exceeds epsilon"):
        assert_ldp(np.array(rows), eps)


# ---- the sampler releases what the exact model says ---------------------------------------------------
def _stage_values_d(out: np.ndarray, ref) -> tuple[np.ndarray, np.ndarray]:
    dx, dy = out[:, 0] - ref[0], out[:, 1] - ref[1]
    phi = np.mod(np.arctan2(dy, dx), 2 * math.pi)
    d = np.array([edge_distance(ref[0], ref[1], f, *BOX) for f in phi])
    return phi, np.hypot(dx, dy) / d


@pytest.mark.parametrize("origin", ["centre", "corner"])
def test_tracs_d_first_location_matches_the_primitives(origin):
    """The first location's released direction and distance follow the exact CDFs (KS, α = 1e−6)."""
    mech = TraCSD(epsilon=3.0, bounds=BOX, origin=origin)
    ref = mech.origin_point
    loc = np.array([[3000.0, 500.0]])
    out = np.vstack(perturb_coordinates([loc] * 20_000, mechanism=mech, rng=7))
    ea, eb = mech.stage_budgets(1)
    theta, v = direction_and_distance(3000.0, 500.0, ref[0], ref[1], *BOX)
    circ = PiecewiseCircular(epsilon=ea)
    if origin == "centre":
        phi, w = _stage_values_d(out, ref)
        assert scipy.stats.kstest(phi, lambda t: circ.cdf(t, theta)).pvalue > 1e-6
        assert scipy.stats.kstest(w, lambda t: PiecewiseLinear(epsilon=eb).cdf(t, v)).pvalue > 1e-6
    else:  # from the corner every direction outside [0, π/2] has no room: the output is the corner itself
        at_corner = int(np.sum(np.all(out == np.array(ref), axis=1)))
        p_out = 1.0 - float(circ.cdf(math.pi / 2, theta) - circ.cdf(0.0, theta))
        assert scipy.stats.binomtest(at_corner, out.shape[0], p_out).pvalue > 1e-6
    assert np.all(
        (out[:, 0] >= BOX[0]) & (out[:, 0] <= BOX[2]) & (out[:, 1] >= BOX[1]) & (out[:, 1] <= BOX[3])
    )


def test_tracs_d_second_location_uses_the_released_reference():
    """Probability integral transform: the second direction, measured from the first *output*, has the
    circular CDF at the direction from that output (uniform PIT values); measured from the true first
    location (the reference a leaking implementation would use) it does not."""
    mech = TraCSD(epsilon=4.0, bounds=BOX)
    traj = np.array([[1000.0, 500.0], [3000.0, 1500.0]])
    outs = perturb_coordinates([traj] * 5000, mechanism=mech, rng=3)
    circ = PiecewiseCircular(epsilon=mech.stage_budgets(2)[0])

    def pit(ref_of):
        values = []
        for o in outs:
            ref = ref_of(o)
            theta, _ = direction_and_distance(*traj[1], ref[0], ref[1], *BOX)
            phi = math.atan2(o[1, 1] - ref[1], o[1, 0] - ref[0]) % (2 * math.pi)
            values.append(float(circ.cdf(phi, theta)))
        return np.array(values)

    assert scipy.stats.kstest(pit(lambda o: o[0]), "uniform").pvalue > 1e-6
    assert scipy.stats.kstest(pit(lambda o: traj[0]), "uniform").pvalue <= 1e-6


def test_tracs_c_matches_the_primitives():
    mech = TraCSC(epsilon=3.0, bounds=BOX)
    out = np.vstack(perturb_coordinates([np.array([[100.0, 1900.0]])] * 20_000, mechanism=mech, rng=8))
    ea, eb = mech.stage_budgets(1)
    u = (out[:, 0] - BOX[0]) / (BOX[2] - BOX[0])
    v = (out[:, 1] - BOX[1]) / (BOX[3] - BOX[1])
    assert scipy.stats.kstest(u, lambda t: PiecewiseLinear(epsilon=ea).cdf(t, 100 / 4000)).pvalue > 1e-6
    assert scipy.stats.kstest(v, lambda t: PiecewiseLinear(epsilon=eb).cdf(t, 1900 / 2000)).pvalue > 1e-6


@pytest.mark.parametrize("mechanism", ["tracs-d", "tracs-c"])
def test_large_epsilon_adds_noise(mechanism):
    traj = np.array([[1000.0, 500.0], [1200.0, 700.0]])
    outs = perturb_coordinates([traj] * 1000, mechanism=mechanism, epsilon=100.0, bounds=BOX, rng=4)
    flat = np.vstack(outs)
    assert not np.any(np.all(flat == np.tile(traj, (1000, 1)), axis=1))
    assert np.unique(flat[:, 0]).size > 990


# ---- randomness ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", ["tracs-d", "tracs-c"])
def test_seeded_reproducible_chunk_invariant_unseeded_from_os(mechanism, monkeypatch):
    rng = np.random.default_rng(0)
    trajs = [rng.uniform(0, 2000, (k, 2)) for k in (1, 3, 5, 2)]
    a = perturb_coordinates(trajs, mechanism=mechanism, epsilon=2.0, bounds=BOX, rng=9)
    b = perturb_coordinates(trajs, mechanism=mechanism, epsilon=2.0, bounds=BOX, rng=9)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    mech = TraCSD(epsilon=2.0, bounds=BOX) if mechanism == "tracs-d" else TraCSC(epsilon=2.0, bounds=BOX)
    key = np.arange(8, dtype=np.uint32)
    flat = np.vstack(trajs)
    offsets = np.array([0, 1, 4, 9, 11])
    whole = mech.perturb_xy(flat[:, 0], flat[:, 1], offsets, key=key)
    tail = mech.perturb_xy(flat[4:, 0], flat[4:, 1], offsets[2:] - 4, key=key, first_stream=2)
    assert np.array_equal(whole[0][4:], tail[0]) and np.array_equal(whole[1][4:], tail[1])
    calls = []
    real = _random.os.urandom
    monkeypatch.setattr(_random.os, "urandom", lambda n: calls.append(n) or real(n))
    c = perturb_coordinates(trajs, mechanism=mechanism, epsilon=2.0, bounds=BOX)
    d = perturb_coordinates(trajs, mechanism=mechanism, epsilon=2.0, bounds=BOX)
    assert calls and not all(np.array_equal(x, y) for x, y in zip(c, d, strict=True))


# ---- black-box audit -------------------------------------------------------------------------------------
def _cp_lower_bound(k1: int, k2: int, n: int, alpha: float) -> float:
    if k1 == 0:
        return -math.inf
    lo = scipy.stats.beta.ppf(alpha / 2, k1, n - k1 + 1)
    hi = scipy.stats.beta.ppf(1 - alpha / 2, k2 + 1, n - k2)
    return math.log(lo / hi)


def _audit(mechanism: str, eps: float, pairs, n: int, seed: int, *, claim: float) -> float:
    """Largest Clopper–Pearson lower bound ε_lb over pairs, both directions, 16 × 16 output cells."""
    worst = -math.inf
    tests = 2 * len(pairs)
    alpha = 1e-6 / tests
    for i, (p, q) in enumerate(pairs):
        res = []
        for j, loc in enumerate((p, q)):
            # a selection batch and a fresh test batch per side (TESTING.md §4)
            sel, test = (
                np.vstack(
                    perturb_coordinates(
                        [np.array([loc])] * n,
                        mechanism=mechanism,
                        epsilon=eps,
                        bounds=BOX,
                        rng=seed + 10 * i + 2 * j + k,
                    )
                )
                for k in (0, 1)
            )
            res.append((sel, test))

        def cells(out):
            cx = np.minimum((out[:, 0] / BOX[2] * 16).astype(int), 15)
            cy = np.minimum((out[:, 1] / BOX[3] * 16).astype(int), 15)
            return np.bincount(cx * 16 + cy, minlength=256)

        for a, b in ((0, 1), (1, 0)):
            sa, sb = cells(res[a][0]), cells(res[b][0])
            score = np.log((sa + 1) / (sb + 1))
            event = np.argsort(score)[-20:]
            ka = int(cells(res[a][1])[event].sum())
            kb = int(cells(res[b][1])[event].sum())
            worst = max(worst, _cp_lower_bound(ka, kb, n, alpha))
    return worst


PAIRS = [((100.0, 100.0), (3900.0, 1900.0)), ((2000.0, 1000.0), (0.0, 0.0)), ((4000.0, 0.0), (0.0, 2000.0))]


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["tracs-d", "tracs-c"])
def test_black_box_audit(mechanism):
    eps = 2.0
    lb = _audit(mechanism, eps, PAIRS, 200_000, 100, claim=eps)
    assert lb <= eps, f"{mechanism}: ε_lb = {lb:.3f} > ε = {eps}"
    # power: a mechanism spending 2ε (the same call at 2ε) is caught by the same procedure
    lb_mut = _audit(mechanism, 2 * eps, PAIRS, 200_000, 100, claim=eps)
    assert lb_mut > eps, f"{mechanism}: the 2ε mutant was not caught (ε_lb = {lb_mut:.3f})"
