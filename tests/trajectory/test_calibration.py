"""ATP calibration, region, anchor and merge helpers (ALGORITHM §5.6, §8; TESTING N9, N10, N13)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from geoldp import PointSet
from geoldp.mechanisms import sw_half_width
from geoldp.trajectory import _reference as _ref
from geoldp.trajectory.calibration import (
    BRANCH_C_EMPTY,
    BRANCH_K_EMPTY,
    BRANCH_WEIGHTED,
    atp_radius_input,
    calibrate,
    calibration_centre,
    region_indices,
    sw_estimate,
)
from geoldp.trajectory.merge import merge_choice

DIST = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
B05 = 0.358155424611167


def _row(r_hat, *, eps_r=0.5, mapping_input=False, decay=None, dist=DIST):
    b = sw_half_width(eps_r)
    delta_r = float(dist.max())
    r_est = sw_estimate(r_hat, b, delta_r)
    eta, branch = calibration_centre(dist, r_hat, b, eps_r, delta_r, mapping_input)
    r_tilde = calibrate(r_est, eta, delta_r, eps_r if decay is None else decay)
    return r_est, eta, branch, r_tilde, region_indices(dist, r_tilde)


def test_b_of_half():
    assert sw_half_width(0.5) == pytest.approx(B05, rel=1e-12)


@pytest.mark.parametrize(
    ("r_hat", "r_est", "eta", "branch", "r_tilde", "omega"),
    [
        (0.25, 1.417354962, 1.896986552, BRANCH_WEIGHTED, 1.571992572, [0, 1]),
        (0.9, 2.932232061, 2.114843916, BRANCH_WEIGHTED, 2.657581050, [0, 1, 2]),
        (1.3, 3.864464122, 2.5, BRANCH_C_EMPTY, 3.358157432, [0, 1, 2, 3]),
    ],
)
def test_worked_calibration_rows(r_hat, r_est, eta, branch, r_tilde, omega):
    got = _row(r_hat)
    assert got[0] == pytest.approx(r_est, rel=1e-9)
    assert got[1] == pytest.approx(eta, rel=1e-9)
    assert got[2] == branch
    assert got[3] == pytest.approx(r_tilde, rel=1e-9)
    assert got[4].tolist() == omega


def test_beta_values_of_worked_rows():
    # β of Eq. 12 recomputed from R̂ and η: 0.252838687, 0.433591760, 0.909642748
    for r_hat, beta in [(0.25, 0.252838687), (0.9, 0.433591760), (1.3, 0.909642748)]:
        r_est, eta, *_ = _row(r_hat)
        got = (eta - r_est) / eta if r_est < eta else (r_est - eta) / (4.0 - eta)
        assert got == pytest.approx(beta, rel=1e-8)


def test_k_empty_fallback():
    # ε_R = 10: 2b ≈ 4e-4 < 0.1, so r̂ = 0.05 is covered by no test value
    r_est, eta, branch, r_tilde, omega = _row(0.05, eps_r=10.0)
    assert branch == BRANCH_K_EMPTY
    assert eta == pytest.approx(DIST.sum() / 4)
    assert 0 in omega.tolist()


def test_input_mapping_changes_candidates():
    # C6 "input": D = v·ΔR; with r̂ = 0.25, v ∈ 0…0.6 → C = distances in [0, 2.4] = {0, 1, 2}
    _, eta_in, branch, *_ = _row(0.25, mapping_input=True)
    low = math.exp(-0.5)
    assert branch == BRANCH_WEIGHTED
    assert eta_in == pytest.approx((0 + 1 + 2 + low * 7) / (3 + 2 * low), rel=1e-12)


def test_decay_option():
    r_est, eta, _, r_default, _ = _row(0.25)
    *_, r_total, _ = _row(0.25, decay=4.0)
    assert abs(r_total - r_est) < abs(r_default - r_est)


def test_guards_eta_zero_and_delta_r_equal_eta():
    # η = 0 and R̂ < η cannot happen together; β guards keep R̃ finite
    assert calibrate(0.0, 0.0, 1.0, 0.5) == 0.0
    assert math.isfinite(calibrate(2.0, 1.0, 1.0, 0.5))  # ΔR − η = 0
    assert calibrate(2.0, 1.0, 1.0, 0.5) >= 1.0


def test_random_calibrations_nonnegative_and_contain_anchor():
    gen = np.random.default_rng(7)
    for _ in range(10_000):
        m = int(gen.integers(2, 30))
        dist = np.concatenate([[0.0], gen.random(m - 1) * 1e4])
        eps_r = float(np.exp(gen.uniform(-5, 5)))
        b = sw_half_width(eps_r)
        r_hat = float(gen.uniform(-b, 1 + b))
        delta_r = float(dist.max())
        eta, _ = calibration_centre(dist, r_hat, b, eps_r, delta_r, bool(gen.integers(2)))
        r_tilde = calibrate(sw_estimate(r_hat, b, delta_r), eta, delta_r, eps_r)
        assert r_tilde >= 0.0
        assert 0 in region_indices(dist, r_tilde)


def test_radius_input_clip():
    assert atp_radius_input(5.0, 4.0) == 1.0
    assert atp_radius_input(1.0, 4.0) == 0.25
    assert atp_radius_input(1.0, 0.0) == 0.0


# ------------------------------------------------------------------------------------------ N10 merge
def _merge(pts, ya, yb, balanced):
    d_a = pts.distances_m(ya)
    d_b = pts.distances_m(yb)
    return int(
        merge_choice(
            ya, yb, np.ascontiguousarray(d_a), np.ascontiguousarray(d_b), 1e-12 * pts.diameter_m, balanced
        )
    )


def test_merge_same_output():
    pts = PointSet([0.0, 1.0, 2.0], [0.0, 0.5, 0.0])
    for y in range(3):
        assert _merge(pts, y, y, True) == y and _merge(pts, y, y, False) == y


def test_merge_no_point_on_arc_returns_lower_index():
    pts = PointSet([0.0, 1.0, 2.0], [0.0, 0.5, 0.0])
    assert _merge(pts, 2, 0, True) == 0 and _merge(pts, 2, 0, False) == 0
    assert _merge(pts, 1, 2, True) == 1 and _merge(pts, 2, 1, False) == 1


def test_merge_point_on_equator_arc():
    # P_2 lies exactly on the great-circle arc (equator) between P_0 and P_1
    pts = PointSet([0.0, 2.0, 1.0, 5.0], [0.0, 0.0, 0.0, 3.0])
    assert _merge(pts, 0, 1, True) == 2  # balanced: the central point
    assert _merge(pts, 0, 1, False) == 0  # index: lower of y_A, y_B (2 has a higher index)
    # deterministic
    assert {_merge(pts, 1, 0, True) for _ in range(5)} == {2}


def test_merge_index_prefers_lower_indexed_arc_point():
    pts = PointSet([1.0, 0.0, 2.0], [0.0, 0.0, 0.0])
    assert _merge(pts, 1, 2, False) == 0
    assert _merge(pts, 1, 2, True) == 0


# ------------------------------------------------------------------------------------------ N13 anchor
def test_anchor_arithmetic_mean_hand_computed():
    pts = PointSet([0.0, 1.0, 2.0, 0.9], [0.0, 0.0, 0.0, 0.3])
    lam, phi = pts.lam[[0, 2, 2]], pts.phi[[0, 2, 2]]
    # mean lon = 4/3 ≈ 1.333, lat 0 → nearest public point is P_1 (lon 1)
    lam_a, phi_a = _ref.anchor_location(lam, phi, False)
    assert math.degrees(lam_a) == pytest.approx(4 / 3) and phi_a == 0.0
    from trajectory_support import make

    from geoldp.trajectory import ATP

    ctx = _ref.Context(make(ATP, epsilon=1.0), pts, 3)
    priv = _ref.Private(ctx, lam[None], phi[None])
    assert priv.anchor().tolist() == [1]


def test_anchor_vector_mean_across_antimeridian():
    pts = PointSet([179.5, -179.5, 0.0, 179.9], [0.0, 0.0, 0.0, 0.1])
    lam, phi = pts.lam[[0, 1]], pts.phi[[0, 1]]
    lam_arith, _ = _ref.anchor_location(lam, phi, False)
    lam_vec, _ = _ref.anchor_location(lam, phi, True)
    assert abs(math.degrees(lam_arith)) < 1e-9  # arithmetic mean: near 0°, wrong
    assert abs(abs(math.degrees(lam_vec)) - 180.0) < 1e-9  # vector mean: near 180°
    from trajectory_support import make

    from geoldp.trajectory import ATP

    for mean, expected in [("arithmetic", 2), ("vector", 3)]:
        ctx = _ref.Context(make(ATP, epsilon=1.0, anchor_mean=mean), pts, 2)
        assert _ref.Private(ctx, lam[None], phi[None]).anchor().tolist() == [expected]


def test_anchor_ties_go_to_lowest_index():
    pts = PointSet([-1.0, 1.0, 5.0], [0.0, 0.0, 0.0])
    from trajectory_support import make

    from geoldp.trajectory import ATP

    ctx = _ref.Context(make(ATP, epsilon=1.0), pts, 2)
    lam, phi = pts.lam[[0, 1]], pts.phi[[0, 1]]  # mean (0, 0): equidistant from P_0 and P_1
    assert _ref.Private(ctx, lam[None], phi[None]).anchor().tolist() == [0]
