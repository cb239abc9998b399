"""Meta-test of the H2 mutant catalogue (TESTING §0.2, §10): every mutant is caught by each check listed
for it. Each check is the same function the regular tests use, run on one small configuration."""

from __future__ import annotations

import mutants
import numpy as np
import pytest
from trajectory_support import (
    all_inputs,
    audit,
    bound,
    city,
    exact_report,
    make,
    passes,
    true_sector_problems,
)

from geoldp.trajectory import ATP, TP, _reference


def _e5(run_cls):
    """E5 (a)(b)(c) on TP, n = 2, m = 6: returns True if the mutant is rejected."""
    rep = exact_report(make(TP, epsilon=40.0, granularity=4), city(6), all_inputs(6, 2), run_cls=run_cls)
    return not (
        rep["rows_ok"]
        and rep["support_ok"]
        and rep["total_lr"] <= bound(rep["claim"])
        and all(lr <= bound(c) for lr, c in zip(rep["copy_lr"], rep["copy_claim"], strict=True))
    )


def _e6(run_cls):
    rep = exact_report(make(ATP, epsilon=10.0, sw_buckets=8), city(5), all_inputs(5, 2), run_cls=run_cls)
    return not (rep["support_ok"] and rep["total_lr"] <= bound(rep["claim"]))


def _e7_tp(run_cls):
    rep = exact_report(
        make(TP, epsilon=10.0, granularity=4), city(6), all_inputs(6, 2), run_cls=run_cls, merged=False
    )
    return bool(rep["public"])


def _e7_atp(run_cls):
    rep = exact_report(
        make(ATP, epsilon=10.0, sw_buckets=8), city(5), all_inputs(5, 2), run_cls=run_cls, merged=False
    )
    return bool(rep["public"])


def _l4(monkeypatch, run_cls=None, patch=None):
    if patch is not None:
        patch(monkeypatch)
    with mutants.installed(monkeypatch, run_cls or _reference._CopyRun):
        problems, _, _ = audit(monkeypatch, make(ATP, epsilon=4.0), city(7), np.array([0, 5, 2]))
    return bool(problems)


def _n15(monkeypatch, run_cls):
    with mutants.installed(monkeypatch, run_cls):
        return any(
            true_sector_problems(
                monkeypatch, make(TP, epsilon=40.0), city(7), np.array([0, 6, 3, 1, 4]), seed
            )
            for seed in range(10)
        )


CATALOGUE = [
    ("M5b", mutants.DataDependentSensitivity, ["E7"]),
    ("M6", mutants.RelativeSectors, ["E5", "E7"]),
    ("M7", mutants.TrueNeighbourOrigin, ["E5", "E7"]),
    ("M8", mutants.ExcludeTruePoint, ["E5", "E7"]),
    ("M10", mutants.CopyAFullEpsilon, ["E5", "L4"]),
    ("M14", mutants.RegionOnTrueAnchor, ["E6", "E7-ATP"]),
    ("M15", mutants.KrrInputFromTrueNeighbour, ["N15"]),
]


@pytest.mark.parametrize(("mid", "run_cls", "checks"), CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_mutant_is_caught_by_every_listed_check(monkeypatch, mid, run_cls, checks):
    runners = {
        "E5": lambda: _e5(run_cls),
        "E6": lambda: _e6(run_cls),
        "E7": lambda: _e7_tp(run_cls),
        "E7-ATP": lambda: _e7_atp(run_cls),
        "L4": lambda: _l4(monkeypatch, run_cls),
        "N15": lambda: _n15(monkeypatch, run_cls),
    }
    missed = [c for c in checks if not runners[c]()]
    assert not missed, f"{mid} not caught by {missed}"


def test_m9_sw_missing_from_ledger_caught_by_l4(monkeypatch):
    assert _l4(monkeypatch, patch=mutants.ledger_without_sw)


def test_conforming_code_passes_every_check(monkeypatch):
    """Sanity: the same checks accept the conforming implementation (so a catch above is meaningful)."""
    conforming = _reference._CopyRun
    assert not _e5(conforming) and not _e6(conforming)
    assert not _e7_tp(conforming) and not _e7_atp(conforming)
    assert not _l4(monkeypatch) and not _n15(monkeypatch, conforming)
    assert passes(exact_report(make(TP, epsilon=4.0), city(6), all_inputs(6, 2)))
