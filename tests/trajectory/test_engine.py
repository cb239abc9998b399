"""Engine entry point: public contract of perturb_trajectories, run/run_with_key, D6 transcript."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest
from trajectory_support import city, make, perturb_with_transcript

from geoldp import ATP, TP, Ledger, PointEM, perturb_trajectories
from geoldp._core.randomness import NumpyRandomSource
from geoldp.trajectory import engine

MECHS = ["tp", "atp", "pointem"]


@pytest.fixture
def pts():
    return city(7)


def _trajs():
    return [np.array([0]), np.array([1, 2]), np.array([3, 4, 5]), np.array([6, 0, 1, 2, 3, 4, 5, 6])]


@pytest.mark.parametrize("mechanism", MECHS)
def test_outputs_same_lengths_and_in_range(pts, mechanism):
    out = perturb_trajectories(_trajs(), pts, mechanism=mechanism, epsilon=2.0, rng=1)
    assert [o.shape for o in out] == [t.shape for t in _trajs()]
    for o in out:
        assert o.dtype == np.int64 and o.min() >= 0 and o.max() < pts.size


@pytest.mark.parametrize("mechanism", MECHS)
@pytest.mark.parametrize("sampler", ["fast", "reference"])
def test_seeded_runs_repeat_and_generators_advance(pts, mechanism, sampler):
    mech = engine.resolve_mechanism(mechanism, 2.0, {}, caller="test")
    trajs = _trajs() * 5

    def go(rng):
        return engine.run(trajs, pts, mech, rng=rng, sampler=sampler)

    a = go(NumpyRandomSource(np.random.default_rng(3)))
    b = go(NumpyRandomSource(np.random.default_rng(3)))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    gen = NumpyRandomSource(np.random.default_rng(3))
    c, d = go(gen), go(gen)
    assert not all(np.array_equal(x, y) for x, y in zip(c, d, strict=True))


def test_public_seeding_and_os_default(pts):
    a = perturb_trajectories(_trajs(), pts, mechanism="atp", epsilon=1.0, rng=11)
    b = perturb_trajectories(_trajs(), pts, mechanism="atp", epsilon=1.0, rng=np.random.SeedSequence(11))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    out = perturb_trajectories(_trajs(), pts, mechanism="atp", epsilon=1.0)
    assert [o.shape for o in out] == [t.shape for t in _trajs()]


def test_global_random_state_untouched(pts):
    np_state = np.random.get_state()
    py_state = random.getstate()
    perturb_trajectories(_trajs(), pts, mechanism="tp", epsilon=1.0, rng=0)
    perturb_trajectories(_trajs(), pts, mechanism="atp", epsilon=1.0, rng=0, return_diagnostics=True)
    assert random.getstate() == py_state
    after = np.random.get_state()
    assert after[0] == np_state[0] and np.array_equal(after[1], np_state[1]) and after[2:] == np_state[2:]


@pytest.mark.parametrize("mechanism", MECHS)
def test_return_ledger(pts, mechanism):
    out, ledgers = perturb_trajectories(
        _trajs(), pts, mechanism=mechanism, epsilon=3.0, rng=0, return_ledger=True
    )
    assert len(out) == len(ledgers) == 4
    for traj, led in zip(_trajs(), ledgers, strict=True):
        assert isinstance(led, Ledger) and led.epsilon == 3.0
        assert led.total() <= 3 and float(led.total()) == pytest.approx(3.0, rel=1e-15)
        positions = {p for e in led for p in e.positions}
        assert positions == set(range(1, len(traj) + 1))


def test_return_diagnostics(pts):
    out, ledgers, diag = perturb_trajectories(
        _trajs(), pts, mechanism="atp", epsilon=3.0, rng=0, return_ledger=True, return_diagnostics=True
    )
    assert diag["trajectories"] == 4
    # every non-pivot EM of the 3 trajectories with n ≥ 2 is counted once: per copy n − |I| non-pivots
    n_nonpivot = sum(len(t) for t in _trajs() if len(t) > 1)
    assert sum(diag["fallback"].values()) == n_nonpivot
    assert len(diag["region_sizes"]) == 2 * 3 and all(1 <= s <= pts.size for s in diag["region_sizes"])
    out2, diag2 = perturb_trajectories(
        _trajs(), pts, mechanism="tp", epsilon=3.0, rng=0, return_diagnostics=True
    )
    assert diag2["region_sizes"] == []


def test_mechanism_objects_and_names(pts):
    mech = ATP(epsilon=2.0, sw_buckets=64)
    before = pickle.dumps(mech)
    out = perturb_trajectories(_trajs(), pts, mechanism=mech, rng=0)
    assert len(out) == 4 and pickle.dumps(mech) == before  # O7: the object keeps no data
    perturb_trajectories(_trajs(), pts, mechanism=mech, epsilon=2.0, rng=0)  # same ε is fine
    perturb_trajectories(_trajs(), pts, mechanism="TP", epsilon=2.0, rng=0, granularity=4)
    perturb_trajectories(_trajs(), pts, mechanism="PointEM", epsilon=2.0, rng=0)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (
            {"mechanism": "geo-ind", "epsilon": 1.0},
            ValueError,
            r"must be one of \('tp', 'atp', 'pointem', 'tracs-d', 'tracs-c'\)",
        ),
        ({"mechanism": 3, "epsilon": 1.0}, TypeError, "'mechanism' parameter"),
        ({"mechanism": "tp"}, TypeError, "'epsilon' parameter of perturb_trajectories is required"),
        (
            {"mechanism": "tp", "epsilon": float("nan")},
            ValueError,
            "'epsilon' parameter of perturb_trajectories",
        ),
        ({"mechanism": "tp", "epsilon": "1"}, TypeError, "'epsilon' parameter of perturb_trajectories"),
        (
            {"mechanism": "tp", "epsilon": 1.0, "colour": "red"},
            TypeError,
            r"unknown option\(s\) \['colour'\]",
        ),
        ({"mechanism": "tp", "epsilon": 1.0, "split": "half"}, ValueError, "split"),
        ({"mechanism": "tp", "epsilon": 1.0, "rng": "seed"}, TypeError, "rng"),
    ],
)
def test_parameter_errors(pts, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        perturb_trajectories(_trajs(), pts, **kwargs)


def test_mechanism_object_conflicts(pts):
    mech = TP(epsilon=1.0)
    with pytest.raises(ValueError, match="conflicts with the mechanism object's epsilon"):
        perturb_trajectories(_trajs(), pts, mechanism=mech, epsilon=2.0, rng=0)
    with pytest.raises(TypeError, match="together with a mechanism object"):
        perturb_trajectories(_trajs(), pts, mechanism=mech, rng=0, split="grouped")


def test_points_must_be_a_pointset():
    with pytest.raises(TypeError, match="'points' parameter"):
        perturb_trajectories(_trajs(), np.zeros((7, 2)), mechanism="tp", epsilon=1.0)


@pytest.mark.parametrize(
    ("trajs", "exc", "match"),
    [
        (5, TypeError, "'trajectories' parameter"),
        ("abc", TypeError, "'trajectories' parameter"),
        ([np.array([0, 1]), np.array([], dtype=np.int64)], ValueError, "Trajectory 1 .* is empty"),
        ([[0, 1], []], ValueError, "Trajectory 1 .* is empty"),
        ([np.array([0, 1]), np.array([0.0, 1.0])], TypeError, "Trajectory 1 .* integer"),
        ([np.array([True, False])], TypeError, "Trajectory 0 .* integer"),
        ([np.array([[0, 1]])], ValueError, "Trajectory 0 .* 1-D"),
        (
            [np.array([0, 1]), np.array([0, 1]), np.array([0, 7])],
            ValueError,
            r"Trajectory 2 .* out of range.*\[0, 7\)",
        ),
        ([np.array([-1])], ValueError, "Trajectory 0 .* out of range"),
        (["ab"], TypeError, "Trajectory 0"),
    ],
)
def test_trajectory_errors_name_the_position(pts, trajs, exc, match):
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    with pytest.raises(exc, match=match):
        perturb_trajectories(trajs, pts, mechanism="atp", epsilon=1.0, rng=gen)
    assert gen.bit_generator.state == state  # validation happens before any draw


def test_out_of_range_message_has_no_values(pts):
    with pytest.raises(ValueError, match="out of range") as info:
        perturb_trajectories([np.array([0, 123456])], pts, mechanism="tp", epsilon=1.0, rng=0)
    assert "123456" not in str(info.value)


def test_accepted_trajectory_containers(pts):
    out = perturb_trajectories(
        [[0, 1, 2], (3,), np.array([4, 5], dtype=np.uint8)], pts, mechanism="tp", epsilon=1.0, rng=0
    )
    assert [len(o) for o in out] == [3, 1, 2]
    rows = perturb_trajectories(np.array([[0, 1], [2, 3]]), pts, mechanism="tp", epsilon=1.0, rng=0)
    assert [len(o) for o in rows] == [2, 2]
    assert perturb_trajectories([], pts, mechanism="tp", epsilon=1.0, rng=0) == []


@pytest.mark.parametrize("sampler", ["fast", "reference"])
def test_run_with_key_is_chunk_invariant(pts, sampler):
    mech = make(ATP, epsilon=4.0)
    trajs = [np.array([i % 7, (3 * i) % 7, (5 * i + 1) % 7]) for i in range(12)]
    key = np.arange(8, dtype=np.uint32)
    whole = engine.run_with_key(trajs, pts, mech, key=key, offset=0, sampler=sampler)
    parts = engine.run_with_key(
        trajs[:5], pts, mech, key=key, offset=0, sampler=sampler
    ) + engine.run_with_key(trajs[5:], pts, mech, key=key, offset=5, sampler=sampler)
    assert all(np.array_equal(a, b) for a, b in zip(whole, parts, strict=True))


def test_run_rejects_unknown_sampler(pts):
    with pytest.raises(ValueError, match="sampler"):
        engine.run(_trajs(), pts, TP(epsilon=1.0), rng=0, sampler="turbo")


@pytest.mark.parametrize("mechanism", [TP, ATP])
def testperturb_with_transcript(pts, mechanism):
    mech = make(mechanism, epsilon=4.0)
    out, transcript, ledger, diag = perturb_with_transcript(np.array([0, 3, 5, 6]), pts, mech, rng=0)
    assert out.shape == (4,)
    # one transcript entry per ledger entry, same order, same stage and same budget
    assert [(c, k, p, e) for c, k, p, e, _ in transcript] == [
        (e.copy, e.kind, e.positions, e.epsilon) for e in ledger
    ]
    assert set(diag["fallback"]) == {"intersection", "left", "right", "region"}


def test_length_one_and_two_everywhere(pts):
    for mech in (make(TP, epsilon=40.0), make(ATP, epsilon=40.0), PointEM(epsilon=1.0)):
        for n in (1, 2):
            out = perturb_trajectories([np.arange(n)], pts, mechanism=mech, rng=0)
            assert out[0].shape == (n,)


def test_continuous_sw_option_runs(pts):
    out, diag = perturb_trajectories(
        _trajs(), pts, mechanism="atp", epsilon=2.0, sw_output="continuous", rng=0, return_diagnostics=True
    )
    assert [len(o) for o in out] == [1, 2, 3, 8]


def test_o10_diagnostics_recomputed_from_transcript_alone(pts):
    """Perturbed anchors, R̃ and region sizes follow from the released transcript by post-processing."""
    from geoldp.mechanisms import sw_half_width
    from geoldp.trajectory import calibration as cal

    mech = make(ATP, epsilon=6.0, sw_buckets=64)
    for seed in range(5):
        _, transcript, ledger, diag = perturb_with_transcript(np.array([0, 4, 2, 6]), pts, mech, rng=seed)
        for copy in "AB":
            entries = {
                k: (e, y) for c, k, _, e, y in transcript if c == copy and k in ("anchor_em", "radius_sw")
            }
            anchor = entries["anchor_em"][1]
            eps_r, bucket = entries["radius_sw"]
            dist = np.ascontiguousarray(pts.distances_m(anchor))
            b = sw_half_width(eps_r)
            r_hat = cal.sw_bucket_midpoint(bucket, b, 64)
            delta_r = float(dist.max())
            eta, _ = cal.calibration_centre(dist, r_hat, b, eps_r, delta_r, False)
            r_tilde = cal.calibrate(cal.sw_estimate(r_hat, b, delta_r), eta, delta_r, eps_r)
            got = diag["copies"][copy]
            assert got["anchor"] == anchor
            assert got["r_tilde_m"] == pytest.approx(r_tilde, rel=1e-12)
            assert got["region_size"] == len(cal.region_indices(dist, r_tilde))


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", MECHS)
def test_n14_long_trajectory(pts, mechanism):
    traj = np.arange(100_000) % pts.size
    out, (led,) = perturb_trajectories(
        [traj], pts, mechanism=mechanism, epsilon=1.0, rng=0, return_ledger=True
    )
    assert out[0].shape == traj.shape and led.total() <= 1


@pytest.mark.parametrize("mechanism", MECHS)
def test_mechanism_memo_keeps_public_configuration_only_and_every_large_epsilon_warns(pts, mechanism):
    perturb_trajectories(_trajs(), pts, mechanism=mechanism, epsilon=2.0, rng=1)  # kept once it returns
    first = engine.resolve_mechanism(mechanism, 2.0, {}, caller="test")
    assert engine.resolve_mechanism(mechanism, 2.0, {}, caller="test") is first
    as_int = engine.resolve_mechanism(mechanism, 2, {}, caller="test")
    assert type(as_int.epsilon) is type(engine.MECHANISMS[mechanism](epsilon=2).epsilon)
    for _ in range(2):  # above the warning threshold nothing is memoised: each call warns
        with pytest.warns(UserWarning):
            perturb_trajectories(_trajs(), pts, mechanism=mechanism, epsilon=12.0, rng=1)
    with pytest.raises((TypeError, ValueError), match="no_such_option"):
        engine.resolve_mechanism(mechanism, 2.0, {"no_such_option": 1}, caller="test")
