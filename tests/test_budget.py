"""Exact budget accounting (ALGORITHM §6.3; TESTING L1 for exact_share, L5)."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from geoldp._core.errors import BudgetError
from geoldp.budget import Ledger, LedgerEntry, check_fractions, exact_share

EPSILONS = [1e-6, 0.1, 1 / 3, 1.0, 3.0, 10.0, 100.0]
NS = [1, 2, 3, 10, 1000]


def _shares(n):
    """Fractions of ε used by the TP-uniform and ATP splits for length n (each copy is half)."""
    if n == 1:
        return [Fraction(1)]
    half = Fraction(1, 2)
    tp = [half * Fraction(1, 4 * n)] * n + [half * Fraction(3, 4 * (n - 1))] * (n - 1)
    atp = (
        [half / 16, half * 3 / 16]
        + [half * Fraction(9, 16 * (n - 1))] * (n - 1)
        + [half * Fraction(3, 16 * n)] * n
    )
    custom = (
        [half / 8, half / 8] + [half * Fraction(1, 2 * (n - 1))] * (n - 1) + [half * Fraction(1, 4 * n)] * n
    )
    return tp * 2, atp * 2, custom * 2


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("n", NS)
def test_ledger_sum_bound(eps, n):
    splits = _shares(n)
    if n == 1:
        splits = [splits]
    for shares in splits:
        assert sum(shares) == 1
        values = [exact_share(eps, s) for s in shares]
        for v, s in zip(values, shares, strict=True):
            exact = Fraction(eps) * s
            assert Fraction(v) <= exact
            assert Fraction(math.nextafter(v, math.inf)) > exact  # at most one ulp below
        assert sum(Fraction(v) for v in values) <= Fraction(eps)


def test_exact_share_examples():
    assert exact_share(1.0, Fraction(1, 2)) == 0.5
    v = exact_share(1.0, Fraction(1, 3))
    assert Fraction(v) < Fraction(1, 3)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        eps = float(rng.uniform(1e-6, 100))
        s = Fraction(int(rng.integers(1, 1000)), int(rng.integers(1000, 100000)))
        v = exact_share(eps, s)
        assert Fraction(v) <= Fraction(eps) * s < Fraction(math.nextafter(v, math.inf))


def test_check_fractions_ok():
    f = check_fractions((Fraction(1, 16), Fraction(3, 16), Fraction(9, 16), Fraction(3, 16)), "ATP")
    assert f == (Fraction(1, 16), Fraction(3, 16), Fraction(9, 16), Fraction(3, 16))
    assert check_fractions([0.5, 0.25, 0.25, 0], "ATP") == (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4), 0)
    assert check_fractions([1], "x") == (Fraction(1),)
    assert check_fractions(np.array([0.5, 0.5]), "x") == (Fraction(1, 2), Fraction(1, 2))


@pytest.mark.parametrize(
    ("fracs", "match"),
    [
        ((0.1, 0.2, 0.7), r"sum to exactly 1 .*fractions\.Fraction"),
        ((Fraction(1, 2), Fraction(1, 2), Fraction(1, 4)), "sum to exactly 1"),
        ((Fraction(-1, 4), Fraction(5, 4)), "non-negative"),
        ((float("nan"), 1.0), "finite"),
        (("1/2", "1/2"), r"real numbers.*fractions\.Fraction"),
        ((True, 0), "real numbers"),
        ((), "empty"),
        ("abc", "sequence"),
    ],
)
def test_check_fractions_bad(fracs, match):
    with pytest.raises(BudgetError, match=match):
        check_fractions(fracs, "ATP")
    assert issubclass(BudgetError, ValueError)


def test_ledger():
    e1 = LedgerEntry("A", "anchor_em", (1, 2), 0.03125, Fraction(1, 32))
    e2 = LedgerEntry("B", "point_em", (1,), 0.25, Fraction(1, 4))
    e3 = LedgerEntry("B", "point_em", (2,), 0.25, Fraction(1, 4))
    led = Ledger((e1, e2, e3), 1.0)
    assert len(led) == 3
    assert list(led) == [e1, e2, e3]
    assert led.total() == Fraction(1, 32) + Fraction(1, 2)
    assert led.by_kind() == {"anchor_em": 0.03125, "point_em": 0.5}
    d = led.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["entries"][0] == {
        "copy": "A",
        "kind": "anchor_em",
        "positions": [1, 2],
        "epsilon": 0.03125,
        "share": "1/32",
    }
    with pytest.raises(AttributeError, match="cannot assign"):
        led.epsilon = 2.0  # frozen


# ------------------------------------------ the cached split is the exact one; exact_share's arithmetic


def test_cached_budget_split_is_the_exact_one_and_read_only():
    # the split is cached per (configuration, ε, length): a hit must give what a fresh computation gives
    from fractions import Fraction

    from geoldp.budget import exact_share, release_scope
    from geoldp.trajectory import split

    for eps, n, copy in [(4.0, 5, "A"), (4, 5, "A"), (0.1, 17, "B"), (Fraction(1, 3), 2, "B")]:
        fresh = split._copy_budgets(eps, n, copy, split.ATP_FRACTIONS, "grouped")
        with release_scope():
            assert split.copy_budgets(eps, n, copy, list(split.ATP_FRACTIONS), "grouped") == fresh
        assert split.copy_budgets(eps, n, copy, split.ATP_FRACTIONS, "grouped") == fresh
        for share in fresh.shares.values():
            assert Fraction(exact_share(eps, share)) <= Fraction(eps) * share
    with pytest.raises(TypeError):
        split.copy_budgets(4.0, 5, "A", split.ATP_FRACTIONS, "uniform").shares["pivot_em"] = Fraction(1)
    with release_scope():
        ledger = split.build_ledger(4.0, 5, split.ATP_FRACTIONS, "uniform", anchor=True)
    assert ledger.total() <= Fraction(4) and ledger is split.build_ledger(
        4.0, 5, split.ATP_FRACTIONS, "uniform", anchor=True
    )


def test_exact_share_is_the_exact_rounded_down_product():
    # the integer arithmetic of exact_share against Fraction arithmetic, on awkward values
    import math
    from fractions import Fraction

    import numpy as np

    from geoldp.budget import exact_share

    rng = np.random.default_rng(0)
    values = [1e-300, 5e-324, 0.1, 1.0, 3.0, 7.25, 1e300, Fraction(1, 3), 4, np.float64(0.3)]
    values += [float(x) for x in rng.uniform(0.001, 50.0, 200)]
    shares = [Fraction(0), Fraction(1), Fraction(1, 3), Fraction(3, 64), Fraction(9, 16 * 999), 0.5, 1]
    shares += [Fraction(int(a), int(b)) for a, b in rng.integers(1, 10**6, (200, 2))]
    for eps in values:
        for share in shares:
            exact = Fraction(eps) * Fraction(share)
            value = float(exact)
            if Fraction(value) > exact:
                value = math.nextafter(value, 0.0)
            got = exact_share(eps, share)
            assert got == value and type(got) is float, (eps, share)
