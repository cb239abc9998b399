"""Common checks for every primitive mechanism (STYLE §9)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from geoldp._core.pointset import PointSet
from geoldp.mechanisms import KRR, ExponentialMechanism, SquareWave

PS = PointSet([116.30, 116.35, 116.41, 116.44, 116.50], [39.90, 39.95, 39.91, 39.99, 39.93])


def _cases():
    yield "krr", KRR(epsilon=1.0, k=5), (np.array([0, 4, 2, 2, 1]),)
    yield "em", ExponentialMechanism(epsilon=2.0, points=PS), (PS.lon + 0.001, PS.lat)
    yield "em-domain", ExponentialMechanism(epsilon=2.0, points=PS, domain=[1, 3]), (PS.lon, PS.lat - 0.001)
    yield "sw", SquareWave(epsilon=1.0, buckets=16), (np.array([0.0, 0.2, 0.5, 0.9, 1.0]),)
    yield "sw-cont", SquareWave(epsilon=1.0, continuous=True), (np.array([0.0, 0.2, 0.5, 0.9, 1.0]),)


CASES = list(_cases())


@pytest.mark.parametrize(("name", "mech", "args"), CASES, ids=[c[0] for c in CASES])
def test_common(name, mech, args):
    y = mech.perturb(*args, rng=0)
    assert y.shape == args[0].shape
    assert np.array_equal(y, mech.perturb(*args, rng=0))  # rng=int repeats
    g = np.random.default_rng(1)
    draws = [mech.perturb(*[np.tile(a, 40) for a in args], rng=g) for _ in range(2)]
    assert not np.array_equal(draws[0], draws[1])  # a shared Generator advances
    # vectorised = per-element reference: EM and bucketed SW consume one uniform per element, in order, so the
    # array call equals element-by-element calls on one shared source (k-RR documents a different order)
    if name.startswith("em") or name == "sw":
        vec = mech.perturb(*args, rng=np.random.default_rng(5))
        src = np.random.default_rng(5)
        per = np.array([mech.perturb(*[a[i : i + 1] for a in args], rng=src)[0] for i in range(args[0].size)])
        assert np.array_equal(vec, per)
    # output stays in the domain
    if name == "krr":
        assert y.dtype == np.int64 and np.all((y >= 0) & (y < mech.k))
    elif name.startswith("em"):
        assert y.dtype == np.int64 and set(y.tolist()) <= set(mech.support.tolist())
    else:
        assert np.all((y >= -mech.b) & (y <= 1 + mech.b))
    # immutable, picklable, unchanged by use
    before = pickle.dumps(mech)
    mech.perturb(*args, rng=3)
    assert pickle.dumps(mech) == before
    assert pickle.loads(before) == mech
    with pytest.raises(AttributeError, match="immutable|cannot assign"):
        mech.epsilon = 5.0
    # probabilities are rows that sum to 1
    P = mech.probabilities(*args)
    assert np.allclose(P.sum(axis=-1), 1.0, atol=1e-12)


@pytest.mark.parametrize(
    "cls_kwargs", [(KRR, {"k": 3}), (ExponentialMechanism, {"points": PS}), (SquareWave, {})]
)
@pytest.mark.parametrize("eps", [0, -1.0, float("nan"), float("inf")])
def test_epsilon_value_errors(cls_kwargs, eps):
    cls, kwargs = cls_kwargs
    with pytest.raises(ValueError, match=f"'epsilon' parameter of {cls.__name__}"):
        cls(epsilon=eps, **kwargs)


@pytest.mark.parametrize(
    "cls_kwargs", [(KRR, {"k": 3}), (ExponentialMechanism, {"points": PS}), (SquareWave, {})]
)
@pytest.mark.parametrize("eps", [True, "1", None, 1j])
def test_epsilon_type_errors(cls_kwargs, eps):
    cls, kwargs = cls_kwargs
    with pytest.raises(TypeError, match=f"'epsilon' parameter of {cls.__name__}"):
        cls(epsilon=eps, **kwargs)


def test_pmf_finite_across_budget_range():
    for eps in (5e-324, 1e-300, 1e-12, 1e-6, 1.0, 10.0, 700.0):
        assert np.isfinite(KRR(epsilon=eps, k=7).probabilities(np.arange(7))).all()
        assert np.isfinite(SquareWave(epsilon=eps, buckets=8).probabilities([0.0, 1.0])).all()
        if eps < 30:
            P = ExponentialMechanism(epsilon=eps, points=PS).probabilities(PS.lon, PS.lat)
            assert np.isfinite(P).all() and np.allclose(P.sum(axis=1), 1.0, atol=1e-12)
