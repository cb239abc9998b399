"""Direction granularity (ALGORITHM §7, TESTING N8)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from trajectory_support import make

from geoldp.trajectory import ATP, TP
from geoldp.trajectory.granularity import (
    choose_granularity,
    granularity_argmax,
    granularity_reading_c_default,
    score_c,
)


@pytest.mark.parametrize(("eps", "g"), [(0.5, 2), (1, 2), (2, 2), (4, 4), (6, 6), (8, 6), (10, 12)])
def test_golden_table(eps, g):
    assert make(TP, epsilon=eps).granularity_value == g
    assert make(ATP, epsilon=eps).granularity_value == g


@pytest.mark.parametrize(
    ("x", "lower", "upper"), [(math.log(3), 2, 4), (math.log(9), 4, 6), (math.log(37), 6, 12)]
)
def test_switch_points(x, lower, upper):
    eps = x * 8 / 3
    assert make(TP, epsilon=eps - 1e-9).granularity_value == lower
    assert make(TP, epsilon=eps + 1e-9).granularity_value == upper
    assert granularity_reading_c_default(x) == lower  # ties go to the smaller g


def test_switch_points_in_total_epsilon():
    for eps, g in [(2.9296, 2), (2.9297, 4), (5.8592, 4), (5.8594, 6), (9.6291, 6), (9.6292, 12)]:
        assert make(TP, epsilon=eps).granularity_value == g


def test_c_coefficients():
    # c_2 = 1/2, c_4 = 3/4, c_6 = 7/8, c_12 = 1: score at x → ∞ tends to c_g
    for g, c in [(2, 0.5), (4, 0.75), (6, 0.875), (12, 1.0)]:
        assert score_c(g, 800.0) == pytest.approx(c, rel=1e-12)


def test_closed_form_equals_generic_argmax_on_fine_grid():
    for x in np.linspace(1e-6, 12.0, 20001):
        assert granularity_reading_c_default(x) == granularity_argmax(x)


@pytest.mark.parametrize(("x", "lower", "upper"), [(math.log(5), 4, 6), (math.log(25), 6, 12)])
def test_reading_a_switch_points(x, lower, upper):
    assert granularity_argmax(x - 1e-9, reading="A") == lower
    assert granularity_argmax(x + 1e-9, reading="A") == upper
    eps = x * 8 / 3
    assert make(TP, epsilon=eps + 1e-8, granularity_reading="A").granularity_value == upper


def test_reading_a_never_selects_two():
    assert {granularity_argmax(x, reading="A") for x in np.linspace(1e-6, 20, 2001)} == {4, 6, 12}


@pytest.mark.parametrize("g", [2, 3, 4, 6, 12])
def test_fixed_integer_overrides(g):
    assert make(TP, epsilon=0.5, granularity=g).granularity_value == g
    assert make(ATP, epsilon=40.0, granularity=g).granularity_value == g


def test_custom_epsilon_fraction_and_candidates():
    # ε_eff = ε/2 at ε = 2.5 → x = 1.25 > ln 3 → 4 (3ε/8 would give 2)
    assert make(TP, epsilon=2.5).granularity_value == 2
    assert make(TP, epsilon=2.5, epsilon_fraction=Fraction(1, 2)).granularity_value == 4
    assert make(TP, epsilon=40.0, granularity_candidates=(2, 4)).granularity_value == 4
    assert choose_granularity(40.0, "auto", candidates=(2, 4, 8, 12)) == granularity_argmax(
        15.0, (2, 4, 8, 12)
    )


def test_lookup_table():
    table = {2.0: 2, 5.0: 4, math.inf: 6}
    assert make(TP, epsilon=1.0, granularity=table).granularity_value == 2
    assert make(TP, epsilon=5.0, granularity=table).granularity_value == 4
    assert make(TP, epsilon=50.0, granularity=table).granularity_value == 6
    assert make(TP, epsilon=3.0, granularity=[(5.0, 6), (2.0, 2)]).granularity_value == 6
    with pytest.raises(ValueError, match="no entry for epsilon"):
        TP(epsilon=3.0, granularity={2.0: 2})


@pytest.mark.parametrize(
    ("value", "exc", "match"),
    [
        (1, ValueError, r"range \[2, 12\]"),
        (13, ValueError, r"range \[2, 12\]"),
        (2.0, TypeError, "must be an int"),
        (True, TypeError, "must be an int"),
        ("fast", ValueError, "granularity"),
        ({2.0: 1}, ValueError, "range"),
        ({-1.0: 2}, ValueError, "epsilon bounds"),
    ],
)
def test_invalid_granularity(value, exc, match):
    with pytest.raises(exc, match=match):
        TP(epsilon=1.0, granularity=value)


def test_invalid_reading_and_fraction():
    with pytest.raises(ValueError, match="granularity_reading"):
        TP(epsilon=1.0, granularity_reading="B")
    with pytest.raises(ValueError, match=r"epsilon_fraction.*\(0, 1\]"):
        TP(epsilon=1.0, epsilon_fraction=Fraction(3, 2))
    with pytest.raises(TypeError, match="epsilon_fraction"):
        TP(epsilon=1.0, epsilon_fraction="3/8")
    with pytest.raises(ValueError, match="granularity_candidates"):
        TP(epsilon=1.0, granularity_candidates=(1, 4))
