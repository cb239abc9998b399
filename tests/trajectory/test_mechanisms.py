"""TP, ATP and PointEM objects: validation, immutability, provenance (STYLE §3, §5; TESTING N1, L6, O7)."""

from __future__ import annotations

import dataclasses
import json
import pickle
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from trajectory_support import make

from geoldp import PrivacyWarning
from geoldp.trajectory import ATP, TP, PointEM

CLASSES = [TP, ATP, PointEM]


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(
    "eps", [5e-324, 1e-300, 1e-12, 1.0, 10.0, np.float32(1), np.int64(2), Fraction(1, 2)]
)
def test_valid_epsilon(cls, eps):
    mech = cls(epsilon=eps)
    assert isinstance(mech.epsilon, float) and mech.epsilon == float(eps)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("eps", [0, -0.0, -1, float("nan"), float("inf"), -float("inf")])
def test_epsilon_value_errors(cls, eps):
    with pytest.raises(ValueError, match=f"'epsilon' parameter of {cls.__name__}"):
        cls(epsilon=eps)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("eps", [True, "1", None, 1j, Decimal("1")])
def test_epsilon_type_errors(cls, eps):
    with pytest.raises(TypeError, match=f"'epsilon' parameter of {cls.__name__}"):
        cls(epsilon=eps)


@pytest.mark.parametrize("cls", CLASSES)
def test_privacy_warning_above_ten(cls):
    with pytest.warns(PrivacyWarning, match="above 10"):
        cls(epsilon=10.5)


@pytest.mark.parametrize("cls", CLASSES)
def test_keyword_only_frozen_picklable(cls):
    with pytest.raises(TypeError, match="positional"):
        cls(1.0)
    mech = make(cls, epsilon=2.0)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign"):
        mech.epsilon = 3.0
    again = pickle.loads(pickle.dumps(mech))
    assert again == mech and hash(again) == hash(mech)
    assert again.ledger(3) == mech.ledger(3)
    assert eval(repr(mech), {"TP": TP, "ATP": ATP, "PointEM": PointEM, "Fraction": Fraction}) == mech


@pytest.mark.parametrize(
    ("option", "value"),
    [("sector_convention", "north"), ("split", "even"), ("fallback", "left"), ("tie_break", "random")],
)
def test_option_errors_list_choices(option, value):
    with pytest.raises(ValueError, match=f"Got {option}='{value}'.*must be one of"):
        TP(epsilon=1.0, **{option: value})


@pytest.mark.parametrize(
    ("option", "value", "exc"),
    [
        ("sw_buckets", 1, ValueError),
        ("sw_buckets", 8.0, TypeError),
        ("sw_output", "float", ValueError),
        ("distance_mapping", "both", ValueError),
        ("decay_epsilon", "anchor", ValueError),
        ("anchor_mean", "median", ValueError),
    ],
)
def test_atp_option_errors(option, value, exc):
    with pytest.raises(exc, match=option):
        ATP(epsilon=1.0, **{option: value})


def test_every_configurable_option_c1_to_c11():
    atp = ATP(
        epsilon=1.0,
        sector_convention="floor",
        split="grouped",
        granularity=6,
        fallback="region",
        tie_break="index",
        distance_mapping="input",
        decay_epsilon="total",
        sw_output="continuous",
        anchor_mean="vector",
        fractions=(Fraction(1, 8), Fraction(1, 8), Fraction(1, 2), Fraction(1, 4)),
        sw_buckets=16,
    )
    opts = atp.options()
    assert opts["sector_convention"] == "floor" and opts["split"] == "grouped"
    assert opts["granularity_value"] == 6 and opts["fallback"] == "region" and opts["tie_break"] == "index"
    assert opts["distance_mapping"] == "input" and opts["decay_epsilon"] == "total"
    assert opts["sw_output"] == "continuous" and opts["anchor_mean"] == "vector"
    assert opts["fractions"] == ["1/8", "1/8", "1/2", "1/4"] and opts["sw_buckets"] == 16


@pytest.mark.parametrize("cls", CLASSES)
def test_l6_options_are_json_and_exact(cls):
    mech = make(cls, epsilon=4.0)
    opts = mech.options()
    assert json.loads(json.dumps(opts)) == opts
    assert opts["mechanism"] == mech.name and opts["epsilon"] == 4.0
    if cls is not PointEM:
        assert opts["granularity_value"] == mech.granularity_value == 4
        assert opts["epsilon_fraction"] == "3/8"


def test_names_and_budget_accessors():
    assert (TP.name, ATP.name, PointEM.name) == ("tp", "atp", "pointem")
    assert PointEM(epsilon=1.0).granularity_value is None
    bud = ATP(epsilon=1.0).copy_budgets(5, "A")
    assert (bud.anchor, bud.radius, bud.direction) == (0.03125, 0.09375, 0.0703125)
    assert ATP(epsilon=1.0).decay_budget(5, "A") == bud.radius
    assert ATP(epsilon=1.0, decay_epsilon="copy").decay_budget(5, "A") == 0.5
    assert ATP(epsilon=1.0, decay_epsilon="total").decay_budget(5, "B") == 1.0


def test_ledger_length_validation():
    with pytest.raises(ValueError, match=">= 1"):
        TP(epsilon=1.0).ledger(0)
    with pytest.raises(TypeError, match="must be an int"):
        PointEM(epsilon=1.0).ledger(2.5)
