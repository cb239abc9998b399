"""Parameter validation (STYLE §5, TESTING N1)."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from geoldp._validation import check_epsilon, check_int_range, check_option, check_real

VALID = [
    5e-324,
    1e-300,
    1e-12,
    1e-6,
    10,
    700,
    700 * (1 + 1e-9),
    709.8,
    710,
    1e308,
    np.float32(1),
    np.int64(2),
    Fraction(1, 2),
    3,
]
BAD_VALUE = [math.inf, -math.inf, math.nan, 0, -0.0, -1, 10**400]
BAD_TYPE = [True, False, np.bool_(True), "1", None, 1j, Decimal("1"), [1.0]]


@pytest.mark.parametrize("eps", VALID)
def test_valid_epsilon(eps):
    out = check_epsilon(eps, caller="TP")
    assert isinstance(out, float)
    assert out == float(eps)


@pytest.mark.parametrize("eps", BAD_VALUE)
def test_bad_value(eps):
    with pytest.raises(ValueError, match=r"The 'epsilon' parameter of TP must be a (finite )?float"):
        check_epsilon(eps, caller="TP")


@pytest.mark.parametrize("eps", BAD_TYPE)
def test_bad_type(eps):
    with pytest.raises(TypeError, match=r"The 'epsilon' parameter of ATP must be a real number"):
        check_epsilon(eps, caller="ATP")


def test_message_grammar():
    with pytest.raises(
        ValueError,
        match=r"^The 'epsilon' parameter of ATP must be a float in the range \(0, inf\)\. Got nan instead\.$",
    ):
        check_epsilon(float("nan"), caller="ATP")
    with pytest.raises(ValueError, match=r"Got -1 instead"):
        check_epsilon(-1, caller="ATP")
    with pytest.raises(ValueError, match=r"'eps_r' parameter of X"):
        check_epsilon(0, caller="X", name="eps_r")


def test_maximum():
    assert check_epsilon(700, caller="KRR", maximum=700) == 700.0
    with pytest.raises(ValueError, match=r"range \(0, 700\]"):
        check_epsilon(700 * (1 + 1e-9), caller="KRR", maximum=700)


def test_check_real():
    assert check_real(np.float32(0.5), "x", caller="f") == 0.5
    with pytest.raises(TypeError, match="'x' parameter of f"):
        check_real("0.5", "x", caller="f")


def test_check_option():
    assert check_option("floor", "sector_convention", ("centred", "floor"), "TP") == "floor"
    assert check_option("ATP", "mechanism", ("tp", "atp"), "f", case_insensitive=True) == "atp"
    with pytest.raises(
        ValueError,
        match=(
            r"Got sector_convention='north' in TP; "
            r"`sector_convention` must be one of \('centred', 'floor'\)"
        ),
    ):
        check_option("north", "sector_convention", ("centred", "floor"), "TP")
    with pytest.raises(ValueError, match="must be one of"):
        check_option("ATP", "mechanism", ("tp", "atp"), "f")
    with pytest.raises(ValueError, match="must be one of"):
        check_option(True, "flag", (1, 2), "f")


def test_check_int_range():
    assert check_int_range(np.int64(4), "g", caller="TP", minimum=2, maximum=12) == 4
    with pytest.raises(TypeError, match="'g' parameter of TP must be an int"):
        check_int_range(4.0, "g", caller="TP")
    with pytest.raises(TypeError, match="'g' parameter of TP must be an int"):
        check_int_range(True, "g", caller="TP")
    with pytest.raises(ValueError, match=r"range \[2, 12\]\. Got 13 instead"):
        check_int_range(13, "g", caller="TP", minimum=2, maximum=12)
    with pytest.raises(ValueError, match=r"range \[-inf, 3\]"):
        check_int_range(4, "g", caller="TP", maximum=3)


@pytest.mark.parametrize(
    "values, ok",
    [
        ([1, 2.5, 3], True),
        (["2020-01-01", "2020-01-02"], True),
        ([pd.Timestamp("2020-01-01"), None], True),
        ([1, "2020-01-01"], False),
        ([1.5, "x"], False),
        ([pd.Timestamp("2020-01-01"), 3], False),
    ],
)
def test_check_time_kinds(values, ok):
    from geoldp._validation import check_time_kinds

    series = pd.Series(values, dtype=object)
    if ok:
        check_time_kinds(series, "t", caller="f")
    else:
        with pytest.raises(ValueError, match="The time column 't' passed to f mixes kinds of value"):
            check_time_kinds(series, "t", caller="f")
    check_time_kinds(pd.Series([1, 2]), "t", caller="f")  # not an object column: nothing to check
