"""geoldp.testing: the enumeration driver and the exact LDP criteria themselves."""

from __future__ import annotations

import math

import numpy as np
import pytest

from geoldp.mechanisms import KRR
from geoldp.testing import EnumeratingSource, assert_ldp, exact_distribution, ldp_tolerance, max_log_ratio


def test_max_log_ratio():
    assert max_log_ratio([[0.5, 0.5], [0.25, 0.75]]) == pytest.approx(math.log(2))
    assert max_log_ratio([[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]]) == pytest.approx(
        math.log(2)
    )  # all-zero column ignored
    assert max_log_ratio([[1.0, 0.0], [0.5, 0.5]]) == math.inf
    with pytest.raises(ValueError, match="2-D"):
        max_log_ratio([0.5, 0.5])


def test_assert_ldp_criteria():
    assert assert_ldp([[0.5, 0.5], [0.25, 0.75]], math.log(2)) == pytest.approx(math.log(2))
    with pytest.raises(AssertionError, match=r"\(a\)"):
        assert_ldp([[0.5, 0.4]], 1.0)
    with pytest.raises(AssertionError, match=r"\(b\)"):
        assert_ldp([[1.0, 0.0], [0.5, 0.5]], 100.0)
    with pytest.raises(AssertionError, match=r"\(c\)"):
        assert_ldp([[0.5, 0.5], [0.25, 0.75]], math.log(2) * (1 - 1e-6))
    assert ldp_tolerance(1.0) == 1e-9 + 1e-14


def test_enumerating_source():
    src = EnumeratingSource([1, 2])
    assert src.bernoulli(0.25) is True
    assert src.integers(3) == 2
    assert src.weight == pytest.approx(0.25 / 3)
    assert src.arity == [2, 3]
    assert src.categorical([0.0, 0.5, 0.5]) == 1  # script extended with 0 -> first positive-mass index
    assert src.bernoulli(1.0) is True and src.arity[-1] == 1  # zero-probability branches are never enumerated
    with pytest.raises(NotImplementedError, match="continuous"):
        src.uniform()
    with pytest.raises(NotImplementedError, match="stream key"):
        src.stream_key()


def test_exact_distribution_krr_and_vectorised():
    mech = KRR(epsilon=1.0, k=4)
    dist = exact_distribution(lambda x, rng: mech.perturb(x, rng=rng), 2)
    assert np.allclose([dist[y] for y in range(4)], mech.probabilities(2), rtol=1e-14)
    joint = exact_distribution(lambda x, rng: mech.perturb(x, rng=rng), np.array([0, 3]))
    assert len(joint) == 16 and sum(joint.values()) == pytest.approx(1.0, abs=1e-14)
    assert joint[(0, 3)] == pytest.approx(mech.probabilities(0)[0] * mech.probabilities(3)[3])
    with pytest.raises(RuntimeError, match="paths"):
        exact_distribution(lambda x, rng: mech.perturb(x, rng=rng), np.array([0, 3]), max_paths=3)
