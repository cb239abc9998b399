"""Ledger completeness through a counting proxy (L4), true-sector conformance (N15) and the fallback order
(N12), with their mutants (M9, M15)."""

from __future__ import annotations

import mutants
import numpy as np
import pytest
from trajectory_support import audit, city, make, true_sector_problems

from geoldp import PointSet
from geoldp.trajectory import ATP, TP, PointEM
from geoldp.trajectory import _reference as _ref


@pytest.mark.parametrize(
    "mech",
    [
        make(TP, epsilon=4.0),
        make(TP, epsilon=40.0, split="grouped"),
        make(ATP, epsilon=4.0, sw_buckets=32),
        make(ATP, epsilon=1.0),
        PointEM(epsilon=2.0),
    ],
    ids=["tp", "tp-grouped", "atp-M32", "atp", "pointem"],
)
@pytest.mark.parametrize("traj", [[0], [1, 4], [0, 5, 2], [6, 1, 3, 2, 0]])
def test_l4_every_primitive_call_matches_one_ledger_entry(monkeypatch, mech, traj):
    problems, records, _ = audit(monkeypatch, mech, city(7), np.array(traj))
    assert problems == []
    assert len(records) == len(mech.ledger(len(traj)))


def test_l4_catches_sw_missing_from_ledger(monkeypatch):
    """M9: the SW stage is not recorded in the ledger; the counting proxy finds the unaccounted call."""
    mutants.ledger_without_sw(monkeypatch)
    problems, _, _ = audit(monkeypatch, make(ATP, epsilon=4.0), city(7), np.array([0, 5, 2]))
    assert any("ledger entries" in p for p in problems)


def test_l4_catches_budget_mismatch(monkeypatch):
    with mutants.installed(monkeypatch, mutants.CopyAFullEpsilon):
        problems, _, _ = audit(monkeypatch, make(TP, epsilon=4.0), city(7), np.array([0, 5, 2]))
    assert any("budget other than" in p for p in problems)


@pytest.mark.parametrize("convention", ["centred", "floor"])
@pytest.mark.parametrize("mechanism", [TP, ATP])
def test_n15_true_sector_recomputed_from_transcript(monkeypatch, mechanism, convention):
    gen = np.random.default_rng(5)
    pts = city(7)
    for seed in range(15):
        traj = gen.integers(0, 7, size=int(gen.integers(2, 7)))
        mech = make(
            mechanism, epsilon=float(gen.choice([1.0, 4.0, 10.0, 40.0])), sector_convention=convention
        )
        assert true_sector_problems(monkeypatch, mech, pts, traj, seed) == []


def test_n15_catches_krr_input_from_true_neighbour(monkeypatch):
    """M15: privacy still holds, but the recorded k-RR inputs do not match the specification."""
    pts = city(7)
    found = False
    with mutants.installed(monkeypatch, mutants.KrrInputFromTrueNeighbour):
        for seed in range(10):
            traj = np.array([0, 6, 3, 1, 4])
            found |= bool(true_sector_problems(monkeypatch, make(TP, epsilon=40.0), pts, traj, seed))
    assert found


# ------------------------------------------------------------------------------------------ N12
def _domain_after(pts, pivots, reported, fallback="neighbours", g=4):
    """Copy B of n = 3: force â_1, â_3 and the reported sectors; return (branch, domain) of the EM at 2."""
    mech = make(TP, epsilon=40.0, granularity=g, fallback=fallback)
    ctx = _ref.Context(mech, pts, 3)
    traj = np.array([0, 0, 0])
    run = _ref._CopyRun(ctx, _ref.Private(ctx, pts.lam[traj][None], pts.phi[traj][None]), "B")
    for y in list(pivots) + list(reported):
        run.advance(y, run.stage())
    st = run.stage()
    return _ref.FALLBACK_NAMES[int(st.public["fallback"][0])], np.flatnonzero(st.public["domain"][0]).tolist()


@pytest.mark.parametrize("fallback", ["neighbours", "region"])
def test_n12_fallback_order_exhaustive(fallback):
    """Every reported sector pair on a cross-shaped P: the domain follows §5.5 exactly, all branches occur."""
    pts = PointSet([0.0, 0.0, 1.0, 0.0, -1.0, 0.4], [0.0, 1.0, 0.0, -1.0, 0.0, 0.3])
    g = 4
    seen = set()
    for a1, a3 in [(1, 3), (0, 2), (2, 4)]:
        ctx = _ref.Context(make(TP, epsilon=40.0, granularity=g), pts, 3)
        sec1, sec3 = ctx.sectors_from(a1), ctx.sectors_from(a3)
        for d1 in range(g):
            for d3 in range(g):
                left = set(np.flatnonzero(sec1 == d1).tolist())
                right = set(np.flatnonzero(sec3 == d3).tolist())
                if left & right:
                    expected = ("intersection", sorted(left & right))
                elif fallback == "neighbours" and left:
                    expected = ("left", sorted(left))
                elif fallback == "neighbours" and right:
                    expected = ("right", sorted(right))
                else:
                    expected = ("region", list(range(pts.size)))
                got = _domain_after(pts, (a1, a3), (d1, d3), fallback, g)
                assert got == expected, (a1, a3, d1, d3)
                seen.add(got[0])
    if fallback == "neighbours":
        assert seen == {"intersection", "left", "right", "region"}
    else:
        assert seen == {"intersection", "region"}


def test_n12_origin_belongs_to_sector_zero():
    pts = city(7)
    ctx = _ref.Context(make(TP, epsilon=4.0, granularity=6), pts, 2)
    for o in range(pts.size):
        assert ctx.sectors_from(o)[o] == 0


def test_n12_fallbacks_counted_in_diagnostics():
    from geoldp import perturb_trajectories

    pts = PointSet([0.0, 0.0, 1.0, 0.0, -1.0], [0.0, 1.0, 0.0, -1.0, 0.0])
    _, diag = perturb_trajectories(
        [np.array([1, 0, 3])] * 200,
        pts,
        mechanism="tp",
        epsilon=8.0,
        granularity=4,
        rng=0,
        return_diagnostics=True,
    )
    assert sum(diag["fallback"].values()) == 600
    assert diag["fallback"]["intersection"] > 0 and diag["fallback"]["left"] + diag["fallback"]["right"] > 0
