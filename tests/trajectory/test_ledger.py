"""Pivot sets and the budget ledger (ALGORITHM §5.2, §5.9, §6; TESTING N11, L1–L3, L5, L7)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from trajectory_support import city, make

from geoldp import BudgetError, PrivacyWarning, perturb_trajectories
from geoldp.trajectory import ATP, TP, PointEM
from geoldp.trajectory.split import direction_pairs, non_pivot_positions, pivot_positions

F = Fraction


@pytest.mark.parametrize("n", range(1, 9))
def test_n11_pivots_and_directions(n):
    a, b = pivot_positions(n, "A"), pivot_positions(n, "B")
    assert a == tuple(range(2, n + 1, 2)) and b == tuple(range(1, n + 1, 2))
    assert set(a) | set(non_pivot_positions(n, "A")) == set(range(1, n + 1))
    for copy in "AB":
        pairs = direction_pairs(n, copy)
        assert len(pairs) == max(n - 1, 0)
        # exactly one direction per adjacent pair, always pivot → non-pivot
        assert sorted(tuple(sorted(p)) for p in pairs) == [(i, i + 1) for i in range(1, n)]
        assert all(k in pivot_positions(n, copy) for k, _ in pairs)


def test_n11_worked_cases():
    assert direction_pairs(5, "A") == ((2, 1), (2, 3), (4, 3), (4, 5))
    assert direction_pairs(5, "B") == ((1, 2), (3, 2), (3, 4), (5, 4))
    assert direction_pairs(4, "B") == ((1, 2), (3, 2), (3, 4))
    assert direction_pairs(2, "A") == ((2, 1),)


def _mechs(eps):
    return [
        make(TP, epsilon=eps),
        make(TP, epsilon=eps, split="grouped"),
        make(ATP, epsilon=eps),
        make(ATP, epsilon=eps, split="grouped"),
        make(ATP, epsilon=eps, fractions=(F(1, 8), F(1, 8), F(1, 2), F(1, 4))),
        make(PointEM, epsilon=eps),
    ]


@pytest.mark.parametrize("eps", [1e-6, 0.1, 1 / 3, 1.0, 3.0, 10.0, 100.0])
@pytest.mark.parametrize("n", [1, 2, 3, 10, 1000])
def test_l1_sum_never_exceeds_epsilon(n, eps):
    for mech in _mechs(eps):
        led = mech.ledger(n)
        assert led.total() <= F(eps)
        assert led.epsilon == eps
        for value, share in {(e.epsilon, e.share) for e in led}:
            exact = F(eps) * share
            assert F(value) <= exact
            assert value >= math.nextafter(float(exact), 0.0)  # at most one ulp below
        # shares are exact and sum to 1
        assert sum((e.share for e in led), F(0)) == 1


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_l2_counts(n):
    tp, atp = make(TP, epsilon=1.0), make(ATP, epsilon=1.0)
    if n == 1:
        for mech in (tp, atp):
            (entry,) = mech.ledger(1)
            assert (entry.kind, entry.epsilon, entry.copy, entry.positions) == ("point_em", 1.0, None, (1,))
        return
    for copy in "AB":
        kinds = [e.kind for e in tp.ledger(n) if e.copy == copy]
        assert kinds.count("direction_krr") == n - 1
        assert kinds.count("pivot_em") + kinds.count("point_em") == n
        akinds = [e.kind for e in atp.ledger(n) if e.copy == copy]
        assert akinds[:2] == ["anchor_em", "radius_sw"]
        assert len(akinds) == len(kinds) + 2
    assert len(make(PointEM, epsilon=1.0).ledger(n)) == n


def _close_below(value, exact):
    return F(value) <= exact and value >= math.nextafter(float(exact), 0.0)


def test_l3_worked_example():
    tp, atp = TP(epsilon=1.0), ATP(epsilon=1.0)
    for e in tp.ledger(5):
        expected = F(3, 32) if e.kind == "direction_krr" else F(1, 40)  # 0.09375, 0.025
        assert _close_below(e.epsilon, expected)
    expected = {
        "anchor_em": F(1, 32),
        "radius_sw": F(3, 32),
        "direction_krr": F(9, 128),
        "pivot_em": F(3, 160),
        "point_em": F(3, 160),
    }
    for e in atp.ledger(5):
        assert _close_below(e.epsilon, expected[e.kind]), e
    for copy in "AB":
        assert sum(F(e.epsilon) for e in atp.ledger(5) if e.copy == copy) <= F(1, 2)
    assert atp.ledger(5).by_kind()["anchor_em"] == pytest.approx(0.0625)


@pytest.mark.parametrize("n", [2, 4, 6])
def test_l3_grouped_equals_uniform_for_even_n(n):
    for cls in (TP, ATP):
        uni = [e.epsilon for e in cls(epsilon=1.0).ledger(n)]
        grp = [e.epsilon for e in cls(epsilon=1.0, split="grouped").ledger(n)]
        assert uni == grp


def test_grouped_split_odd_n():
    led = TP(epsilon=1.0, split="grouped").ledger(5)
    a_piv = [e.epsilon for e in led if e.copy == "A" and e.kind == "pivot_em"]
    a_non = [e.epsilon for e in led if e.copy == "A" and e.kind == "point_em"]
    assert _close_below(a_piv[0], F(1, 2) * F(1, 8) / 2) and _close_below(a_non[0], F(1, 2) * F(1, 8) / 3)


@pytest.mark.parametrize(
    "fractions",
    [(0.1, 0.2, 0.7, 0.0), (F(-1, 16), F(3, 16), F(11, 16), F(3, 16)), (F(1, 4), F(1, 4), F(1, 4), F(1, 8))],
)
def test_l5_bad_fractions(fractions):
    with pytest.raises(BudgetError, match="non-negative|Fraction"):
        ATP(epsilon=1.0, fractions=fractions)
    with pytest.raises(ValueError, match="fractions"):
        perturb_trajectories(
            [np.array([0, 1])], city(4), mechanism="atp", epsilon=1.0, fractions=fractions, rng=0
        )


def test_l5_wrong_number_of_fractions():
    with pytest.raises(BudgetError, match="4 entries"):
        ATP(epsilon=1.0, fractions=(F(1, 2), F(1, 2)))


@pytest.mark.parametrize(
    ("mechanism", "eps", "n", "options", "stage"),
    [
        ("tp", 1000.0, 2, {}, "pivot EM budget of TP"),
        (
            "atp",
            2000.0,
            2,
            {"fractions": (F(1, 1000), F(9, 10), F(1, 20), F(49, 1000))},
            "radius SW budget of ATP",
        ),
        (
            "atp",
            2000.0,
            2,
            {"fractions": (F(1, 1000), F(1, 1000), F(95, 100), F(48, 1000))},
            "direction k-RR budget of ATP",
        ),
        ("atp", 2000.0, 3, {}, "anchor EM budget of ATP"),
        ("pointem", 200.0, 1, {}, "point EM budget of PointEM"),
        ("tp", 100.0, 1, {}, "point EM budget of TP"),
    ],
)
def test_l7_stage_limits_before_any_draw(mechanism, eps, n, options, stage):
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    # by name, the release range refuses such an ε first; a mechanism object keeps its stages' own limits
    with pytest.raises(ValueError, match="range \\[0.001, 36.74\\]"):
        perturb_trajectories(
            [np.arange(n) % 4], city(4), mechanism=mechanism, epsilon=eps, rng=gen, **options
        )
    kind = {"tp": TP, "atp": ATP, "pointem": PointEM}[mechanism]
    with pytest.warns(PrivacyWarning, match="epsilon"), pytest.raises(ValueError, match=stage):
        perturb_trajectories([np.arange(n) % 4], city(4), mechanism=kind(epsilon=eps, **options), rng=gen)
    assert gen.bit_generator.state == state  # nothing was drawn


def test_l7_zero_fraction_is_a_stage_without_budget():
    mech = ATP(epsilon=1.0, fractions=(F(0), F(1, 4), F(1, 2), F(1, 4)))
    with pytest.raises(ValueError, match="anchor EM budget of ATP"):
        perturb_trajectories([np.array([0, 1])], city(4), mechanism=mech, rng=0)


def test_l7_em_limit_boundary():
    from geoldp.mechanisms import em_epsilon_limit

    limit = em_epsilon_limit(4)
    ok = make(TP, epsilon=limit - 1e-9)
    ok.check_budgets(1, 4)
    with pytest.raises(ValueError, match="float-margin limit"):
        make(TP, epsilon=limit + 1e-9).check_budgets(1, 4)
