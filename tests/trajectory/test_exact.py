"""Exact enumeration of TP and ATP (TESTING §2: E5, E6, E7, E8) and the mutants they must reject.

The distributions come from the same stage machine the sampler runs (``_reference``), walked for every
candidate input at once (``exact_enumeration``). Each copy is enumerated on its own (the copies draw
independent randomness); the whole-transcript bound is the sum of the per-copy column-wise log-ratios, which
is ≥ the true worst pairwise ratio, so passing it is sufficient.
"""

from __future__ import annotations

import exact_enumeration as exact
import mutants
import numpy as np
import pytest
from trajectory_support import all_inputs, bound, city, exact_report, make, passes

from geoldp.testing import exact_distribution
from geoldp.trajectory import ATP, TP, PointEM

GRANULARITIES = [2, 4, 6, 12, "auto"]


def _assert_pass(rep):
    assert rep["rows_ok"] and rep["support_ok"], rep["copy_lr"]
    assert not rep["public"], rep["public"][:3]
    for lr, claim in zip(rep["copy_lr"], rep["copy_claim"], strict=True):
        assert lr <= bound(claim), (lr, claim)
    assert rep["total_lr"] <= bound(rep["claim"]), (rep["total_lr"], rep["claim"])
    assert rep["merged_rows_ok"] and rep["merged_support_ok"]
    assert rep["merged_lr"] <= bound(rep["claim"]), (rep["merged_lr"], rep["claim"])


# ---------------------------------------------------------------------------------------------- E5 (TP)
@pytest.mark.parametrize("eps", [1.0, 4.0, 10.0, 40.0])
def test_e5_tp_length_one_is_one_em_with_full_epsilon(eps):
    pts = city(6)
    mech = make(TP, epsilon=eps)
    rep = exact_report(mech, pts, all_inputs(6, 1))
    _assert_pass(rep)
    # EM on the full P with ε is tight to within the EM looseness but never above ε
    assert rep["claim"] == eps and len(rep["dists"]) == 1


@pytest.mark.parametrize("convention", ["centred", "floor"])
@pytest.mark.parametrize("granularity", GRANULARITIES)
@pytest.mark.parametrize("eps", [1.0, 4.0, 10.0, 40.0])
def test_e5_tp_length_two_every_option(eps, granularity, convention):
    pts = city(6)
    mech = make(TP, epsilon=eps, granularity=granularity, sector_convention=convention)
    _assert_pass(exact_report(mech, pts, all_inputs(6, 2)))


@pytest.mark.parametrize("eps", [1.0, 4.0, 10.0, 40.0])
def test_e5_tp_length_three_defaults(eps):
    pts = city(6)
    _assert_pass(exact_report(make(TP, epsilon=eps), pts, all_inputs(6, 3)))


@pytest.mark.slow
@pytest.mark.parametrize("split", ["uniform", "grouped"])
@pytest.mark.parametrize("convention", ["centred", "floor"])
@pytest.mark.parametrize("granularity", GRANULARITIES)
@pytest.mark.parametrize("eps", [1.0, 4.0, 10.0, 40.0])
def test_e5_tp_length_three_full_grid(eps, granularity, convention, split):
    pts = city(6)
    mech = make(TP, epsilon=eps, granularity=granularity, sector_convention=convention, split=split)
    _assert_pass(exact_report(mech, pts, all_inputs(6, 3)))


def test_e5_tp_grouped_split_length_three():
    pts = city(6)
    _assert_pass(exact_report(make(TP, epsilon=4.0, split="grouped", granularity=2), pts, all_inputs(6, 3)))


def test_e5_pointem():
    pts = city(6)
    _assert_pass(exact_report(make(PointEM, epsilon=4.0), pts, all_inputs(6, 2)))


# ---------------------------------------------------------------------------------------------- E6 (ATP)
@pytest.mark.parametrize("eps", [1.0, 10.0, 40.0])
def test_e6_atp_length_two_defaults(eps):
    pts = city(5)
    _assert_pass(exact_report(make(ATP, epsilon=eps, sw_buckets=8), pts, all_inputs(5, 2)))


@pytest.mark.parametrize(
    "options",
    [
        {"distance_mapping": "input"},
        {"decay_epsilon": "copy"},
        {"decay_epsilon": "total"},
        {"distance_mapping": "input", "decay_epsilon": "total", "sector_convention": "floor"},
    ],
)
def test_e6_atp_length_two_calibration_options(options):
    pts = city(5)
    _assert_pass(exact_report(make(ATP, epsilon=10.0, sw_buckets=8, **options), pts, all_inputs(5, 2)))


def test_e6_atp_length_three_defaults_tier_f():
    """n = 3 with the defaults at ε = 1; ε = 10 and 40 (≈15 s each) run in the slow tier below."""
    _assert_pass(exact_report(make(ATP, epsilon=1.0, sw_buckets=8), city(5), all_inputs(5, 3)))


@pytest.mark.parametrize("eps", [1.0, 40.0])
def test_e6_atp_length_one(eps):
    pts = city(5)
    _assert_pass(exact_report(make(ATP, epsilon=eps, sw_buckets=8), pts, all_inputs(5, 1)))


@pytest.mark.slow
@pytest.mark.parametrize("decay", ["radius", "copy", "total"])
@pytest.mark.parametrize("mapping", ["output", "input"])
@pytest.mark.parametrize("eps", [1.0, 10.0, 40.0])
def test_e6_atp_length_three(eps, mapping, decay):
    pts = city(5)
    mech = make(ATP, epsilon=eps, sw_buckets=8, distance_mapping=mapping, decay_epsilon=decay)
    _assert_pass(exact_report(mech, pts, all_inputs(5, 3)))


# ---------------------------------------------------------------------------------------------- mutants
def _tp_report(run_cls, *, eps=10.0, g=4, n=2, m=6):
    return exact_report(make(TP, epsilon=eps, granularity=g), city(m), all_inputs(m, n), run_cls=run_cls)


@pytest.mark.parametrize("name", ["M6", "M7", "M8"])
def test_e5_e7_reject_domain_mutants(name):
    """Relative sectors, true-neighbour origin, and a domain excluding the true point: support mismatch."""
    rep = _tp_report(mutants.PRIVACY_MUTANTS[name])
    assert not rep["support_ok"]  # E5 (b): infinite privacy loss
    assert rep["total_lr"] == np.inf
    assert rep["public"], "E7 must flag the private-dependent domain"
    assert not passes(rep)


def test_e7_rejects_data_dependent_sensitivity():
    rep = _tp_report(mutants.DataDependentSensitivity)
    assert any(v[3] == "delta" for v in rep["public"])
    assert not passes(rep)


def test_e5_rejects_copy_a_at_full_epsilon():
    """M10: copy A spends ε while the ledger claims ε/2: the copy bound and the total bound fail."""
    rep = _tp_report(mutants.CopyAFullEpsilon, eps=40.0, g=12)
    assert rep["copy_lr"][0] > bound(rep["copy_claim"][0])
    assert rep["total_lr"] > bound(rep["claim"])
    assert not passes(rep)


def test_e6_e7_reject_region_on_true_anchor():
    """M14: Ω and ΔR centred on p_α make the domains private: support mismatch and E7 flags."""
    rep = exact_report(
        make(ATP, epsilon=10.0, sw_buckets=8), city(5), all_inputs(5, 2), run_cls=mutants.RegionOnTrueAnchor
    )
    assert not rep["support_ok"] or rep["total_lr"] > bound(rep["claim"])
    assert {v[3] for v in rep["public"]} & {"delta_r", "region", "domain"}
    assert not passes(rep)


# ---------------------------------------------------------------------------------------------- E8
def _d3_matches_d4(mech, pts, X):
    n = X.shape[1]
    copies = (None,) if n == 1 else ("A", "B")
    for copy in copies:
        d4 = exact.copy_distribution(mech, pts, X, copy)
        for xi, x in enumerate(X):
            d3 = exact_distribution(lambda x, rng, c=copy: exact.sample_copy(mech, pts, x, c, rng), x)
            col = {t: d4.probs[xi, li] for li, t in enumerate(d4.transcripts)}
            assert set(d3) == set(col), (copy, x)
            diff = max(abs(d3[t] - col[t]) for t in col)
            assert diff <= 1e-12, (copy, x, diff)


@pytest.mark.parametrize("g", [2, 4])
def test_e8_enumerating_source_equals_stage_pmf_tree_tp(g):
    pts = city(5)
    X = all_inputs(5, 2)[::3]
    _d3_matches_d4(make(TP, epsilon=4.0, granularity=g), pts, X)


def test_e8_tp_length_three_and_one():
    pts = city(4)
    _d3_matches_d4(make(TP, epsilon=10.0, granularity=2), pts, all_inputs(4, 3)[::9])
    _d3_matches_d4(make(TP, epsilon=1.0), pts, all_inputs(4, 1))


def test_e8_atp():
    pts = city(4)
    _d3_matches_d4(make(ATP, epsilon=10.0, granularity=2, sw_buckets=8), pts, all_inputs(4, 2)[::5])


def test_next_stage_interface_walks_a_transcript():
    """D4 entry point: stage kinds follow ALGORITHM §5.9 and pmfs sum to 1."""
    pts = city(5)
    mech = make(ATP, epsilon=4.0, sw_buckets=8)
    x = np.array([0, 3, 4])
    prefix = []
    kinds = []
    while (st := exact.next_stage(mech, pts, x, prefix, "B")) is not None:
        kinds.append((st.kind, st.positions))
        assert abs(st.pmf[0].sum() - 1.0) <= 1e-12
        prefix.append(int(st.outputs[int(np.argmax(st.pmf[0]))]))
    assert kinds == [
        ("anchor_em", (1, 2, 3)),
        ("radius_sw", (1, 2, 3)),
        ("pivot_em", (1,)),
        ("pivot_em", (3,)),
        ("direction_krr", (1, 2)),
        ("direction_krr", (3, 2)),
        ("point_em", (2,)),
    ]
