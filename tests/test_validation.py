"""Parameter validation (STYLE §5, TESTING N1)."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from geoldp._core.validation import check_epsilon, check_int_range, check_option, check_real

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
    from geoldp._core.validation import check_time_kinds

    series = pd.Series(values, dtype=object)
    if ok:
        check_time_kinds(series, "t", caller="f")
    else:
        with pytest.raises(ValueError, match="The time column 't' passed to f mixes kinds of value"):
            check_time_kinds(series, "t", caller="f")
    check_time_kinds(pd.Series([1, 2]), "t", caller="f")  # not an object column: nothing to check


# -- one ε range for every release kind, and counts bounded before anything is allocated ----------------


def test_release_epsilon_range_is_documented_and_enforced():
    from geoldp._core.validation import MAX_EPSILON, MIN_EPSILON, check_release_epsilon

    assert MIN_EPSILON == 1e-3
    assert MAX_EPSILON == pytest.approx(53 * math.log(2))  # the 2⁻⁵³ grid of Generator.random()
    assert check_release_epsilon(MIN_EPSILON, caller="f") == MIN_EPSILON
    assert check_release_epsilon(MAX_EPSILON, caller="f") == MAX_EPSILON
    assert check_release_epsilon(Fraction(1, 2), caller="f") == 0.5
    for low in (5e-324, 1e-300, 1e-20, np.nextafter(MIN_EPSILON, 0)):
        with pytest.raises(ValueError, match=r"'epsilon' parameter of f .*\[0\.001, 36\.74\].* below"):
            check_release_epsilon(low, caller="f")
    for high in (np.nextafter(MAX_EPSILON, 40), 40, 700, 1e10, 1e308):
        with pytest.raises(ValueError, match=r"\[0\.001, 36\.74\].* above 36\.74 \(53·ln 2\)"):
            check_release_epsilon(high, caller="f")
    for bad in (0, -1.0, math.nan, math.inf, 10**400):
        with pytest.raises(ValueError, match="'epsilon' parameter of f"):
            check_release_epsilon(bad, caller="f")
    with pytest.raises(TypeError, match="real number"):
        check_release_epsilon("4", caller="f")


def test_grid_of_the_uniform_draws_is_where_the_bound_comes_from():
    # Generator.random() returns k·2⁻⁵³: no event drawn as "u < q" has probability in (0, 2⁻⁵³), so
    # e^ε for a ratio p/q of such draws cannot exceed 2⁵³ (the bound's reason, checked on the generator)
    u = np.random.default_rng(0).random(100_000)
    assert np.all(u * 2.0**53 == np.floor(u * 2.0**53))
    from geoldp._core.validation import MAX_EPSILON

    assert math.exp(MAX_EPSILON) == pytest.approx(2.0**53)


def test_check_count_and_check_lengths():
    from geoldp._core.validation import MAX_LENGTH, check_count, check_lengths

    assert check_count(np.int64(5), "n", caller="f") == 5
    assert check_count(0, "n", caller="f", minimum=0, maximum=3) == 0
    with pytest.raises(
        ValueError, match=r"'n' parameter of f must be an int in the range \[1, 100\]; got 101"
    ):
        check_count(101, "n", caller="f", maximum=100)
    with pytest.raises(TypeError, match="'n' parameter of f must be an int"):
        check_count(5.0, "n", caller="f")
    assert check_lengths([2, 3, MAX_LENGTH], caller="f") == [2, 3, MAX_LENGTH]
    for bad in (MAX_LENGTH + 1, [2, 10**9], np.array([3, 10**30], dtype=object), 10**400):
        with pytest.raises(ValueError, match=rf"'lengths' parameter of f holds .* {MAX_LENGTH} points"):
            check_lengths(bad, caller="f")


def _release_calls():
    """Every release kind as ``kind -> call(epsilon)`` on a small public setting (synthetic data)."""
    import geoldp
    from geoldp import estimate, zone_grid
    from geoldp.datasets import synthetic_city

    points, trips = synthetic_city(n_points=40, n_trips=12, max_len=5, seed=1)
    zones = zone_grid(points, cells=3)
    rel = trips.ldp.perturb(points, epsilon=4.0, rng=0)
    rel.attrs = {}  # no ledger: the mechanism and ε are given
    return {
        "perturb": lambda e: trips.ldp.perturb(points, epsilon=e, rng=0),
        "perturb_trajectories": lambda e: geoldp.perturb_trajectories(
            [np.array([0, 1, 2])], geoldp.PointSet.from_geodataframe(points), epsilon=e, rng=0
        ),
        "report": lambda e: geoldp.report(trips, zones, epsilon=e, rng=0),
        "synthesize": lambda e: geoldp.synthesize(trips, epsilon=e, points=points, rng=0),
        "hybrid": lambda e: geoldp.hybrid(trips, points, zones, epsilon=e, rng=0),
        "plan": lambda e: geoldp.plan(points, zones, epsilon=e, n=50, lengths=3, rng=0, designs=["atp"]),
        "estimate": lambda e: estimate.visit_counts(rel, points, mechanism="atp", epsilon=e, n_boot=0, rng=0),
    }


RELEASE_KINDS = ["perturb", "perturb_trajectories", "report", "synthesize", "hybrid", "plan", "estimate"]


@pytest.fixture(scope="module")
def release_calls():
    return _release_calls()


@pytest.mark.parametrize("kind", RELEASE_KINDS)
@pytest.mark.parametrize("epsilon", [5e-324, 1e-300, 1e-20, 0.000999, 36.75, 40.0, 700.0, 1e10, 1e308])
def test_every_release_kind_refuses_an_epsilon_outside_the_one_range(release_calls, kind, epsilon):
    with pytest.raises(ValueError, match=r"'epsilon' parameter of .* range \[0\.001, 36\.74\]"):
        release_calls[kind](epsilon)


@pytest.mark.filterwarnings("ignore::geoldp.PrivacyWarning")
@pytest.mark.filterwarnings("ignore::geoldp.GeoLDPWarning")
@pytest.mark.parametrize("kind", ["perturb", "report", "synthesize", "plan"])
def test_every_release_kind_runs_at_both_ends_of_the_range(release_calls, kind):
    from geoldp._core.validation import MAX_EPSILON, MIN_EPSILON

    for epsilon in (MIN_EPSILON, MAX_EPSILON):
        assert len(release_calls[kind](epsilon)) > 0


def test_hybrid_refuses_a_part_below_the_range(release_calls):
    import geoldp
    from geoldp import zone_grid
    from geoldp.datasets import synthetic_city

    points, trips = synthetic_city(n_points=40, n_trips=12, max_len=5, seed=1)
    with pytest.raises(
        ValueError, match=r"'epsilon' parameter of geoldp.hybrid \(0.0015\) split by fraction"
    ):
        geoldp.hybrid(trips, points, zone_grid(points, cells=3), epsilon=0.0015, rng=0)


def test_counts_that_size_an_allocation_are_bounded_before_allocating():
    import geoldp
    from geoldp import estimate, zone_grid
    from geoldp._core.validation import MAX_PLAN_USERS
    from geoldp.datasets import synthetic_city

    points, trips = synthetic_city(n_points=40, n_trips=12, max_len=5, seed=1)
    zones = zone_grid(points, cells=3)
    with pytest.raises(ValueError, match=r"'n_synthetic' parameter of geoldp.synthesize .*10000000\]"):
        geoldp.synthesize(trips, epsilon=2.0, points=points, n_synthetic=10**12, rng=0)
    with pytest.raises(ValueError, match=rf"'n' parameter of geoldp.plan .*{MAX_PLAN_USERS}\]"):
        geoldp.plan(points, zones, epsilon=2.0, n=10**15, lengths=4, rng=0)
    with pytest.raises(ValueError, match=r"'lengths' parameter of geoldp.plan holds 1000000000"):
        geoldp.plan(points, zones, epsilon=2.0, n=100, lengths=10**9, rng=0)
    with pytest.raises(ValueError, match=r"'lengths' parameter of geoldp.planner.trajectory_rms"):
        geoldp.planner.trajectory_rms(points, zones, epsilon=2.0, n=100, lengths=[2, 10**9], rng=0)
    rel = trips.ldp.perturb(points, epsilon=4.0, rng=0)
    with pytest.raises(ValueError, match=r"'n_boot' parameter of .*\[0, 10000\]"):
        estimate.visit_counts(rel, points, n_boot=10**9, rng=0)
    with pytest.raises(ValueError, match=r"'n_sims' parameter of .*\[1, 1000\]"):
        estimate.visit_counts(rel, points, n_sims=10**9, rng=0)
    with pytest.raises(ValueError, match=r"'length_domain' parameter of geoldp.synthesize .*10000\]"):
        geoldp.synthesize(trips, epsilon=2.0, points=points, length_domain=10**12, rng=0)
    with pytest.raises(ValueError, match=r"'cells' parameter of .*zone_grid asks for .*MAX_ZONES = 1000000"):
        zone_grid(points, cells=10**12)
    with pytest.raises(ValueError, match=r"'cells' parameter of .*zone_grid asks for"):
        zone_grid(points, cells=(1001, 1000))
    assert len(zone_grid(points, cells=(1000, 1))) == 1000
    with pytest.raises(ValueError, match=r"'n_trips' parameter of synthetic_city .*100000000\]"):
        synthetic_city(n_trips=10**12)
    with pytest.raises(ValueError, match=r"'n_points' parameter of synthetic_city .*2000000\]"):
        synthetic_city(n_points=10**12)
    with pytest.raises(ValueError, match=r"synthetic_city: n_trips=10000000 trips of up to max_len=100"):
        synthetic_city(n_trips=10**7, max_len=100)


# -------------------------------------------------------- the smallest epsilon, refused before any draw


@pytest.mark.parametrize("epsilon", [1e-300, 5e-324, 1e-6, 0.000999])
def test_tiny_epsilon_is_refused_before_any_draw(toy_lines, city_points, epsilon):
    from geoldp import BudgetAccountant
    from geoldp.prepare import MIN_EPSILON

    assert epsilon < MIN_EPSILON == 1e-3
    acc = BudgetAccountant(10.0)
    frame = toy_lines.assign(user=range(len(toy_lines)))
    with pytest.raises(
        ValueError, match="'epsilon' parameter of GeoDataFrame.ldp.perturb .* below the smallest"
    ):
        frame.ldp.perturb(city_points, epsilon=epsilon, rng=0, accountant=acc, user_col="user")
    assert acc.remaining(0) == 10.0  # nothing charged


def test_smallest_accepted_epsilon_only_warns(toy_lines, city_points):
    from geoldp._core.errors import PrivacyWarning
    from geoldp.prepare import MIN_EPSILON

    with pytest.warns(PrivacyWarning, match="close to uniform noise"):
        out = toy_lines.ldp.perturb(city_points, epsilon=MIN_EPSILON, rng=0)
    assert len(out) == len(toy_lines)
