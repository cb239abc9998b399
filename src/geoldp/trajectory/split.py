"""Pivot sets, direction lists and the per-stage budget split of TP and ATP (ALGORITHM §5.2, §5.9, §6).

Everything here depends on public values only: the trajectory length ``n``, ε and the options.

Positions are **1-based** throughout, as in the specification. Copy A (the paper's τ′) has its pivots at the
even positions, copy B (τ*) at the odd positions, so pivots and non-pivots alternate and each copy
perturbs exactly n points and n − 1 directions (one per adjacent pair).

Stage shares are exact :class:`~fractions.Fraction` values of the total ε; the float budget of a stage is
:func:`geoldp.budget.exact_share` of it, i.e. ≤ the exact rational value (ALGORITHM §6.3).

The splits are memoised in :class:`geoldp.budget.ReleaseCache` objects: a length (or an ε) stays in them
only once a release with it has been returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numba

from geoldp._core.aot import Entry
from geoldp.budget import Ledger, LedgerEntry, ReleaseCache, exact_share

if TYPE_CHECKING:
    from geoldp._core.kernels import KernelInt

#: The two copies in transcript order.
COPIES = ("A", "B")
#: TP's split of one copy: (anchor, radius, directions, points) — no anchor and no radius stage.
TP_FRACTIONS = (Fraction(0), Fraction(0), Fraction(3, 4), Fraction(1, 4))
#: ATP's default split of one copy (option C10), from the authors' code.
ATP_FRACTIONS = (Fraction(1, 16), Fraction(3, 16), Fraction(9, 16), Fraction(3, 16))


@numba.njit(cache=True)
def is_pivot(copy: KernelInt, position: KernelInt) -> bool:
    """True if 1-based ``position`` is a pivot of ``copy`` (0 = A: even positions; 1 = B: odd positions)."""
    if copy == 0:
        return position % 2 == 0
    return position % 2 == 1


# from Python: its compiled export when installed
_is_pivot = Entry(is_pivot, {"is_pivot": numba.boolean(numba.int64, numba.int64)})


def pivot_positions(n: int, copy: str) -> tuple[int, ...]:
    """Pivot positions I_A (even) or I_B (odd), ascending, 1-based (ALGORITHM §5.2)."""
    c = COPIES.index(copy)
    return tuple(p for p in range(1, n + 1) if _is_pivot(c, p))


def non_pivot_positions(n: int, copy: str) -> tuple[int, ...]:
    """Non-pivot positions of ``copy``, ascending, 1-based."""
    c = COPIES.index(copy)
    return tuple(p for p in range(1, n + 1) if not _is_pivot(c, p))


def direction_pairs(n: int, copy: str) -> tuple[tuple[int, int], ...]:
    """Directions (pivot k → non-pivot j) of one copy in transcript order: j ascending, left first.

    Exactly n − 1 pairs for n ≥ 2 (one per adjacent pair of positions): the k-RR stages of :func:`stage_plan`.
    """
    return tuple((p[0], p[1]) for kind, p in stage_plan(n, copy, anchor=False) if kind == "direction_krr")


@dataclass(frozen=True)
class CopyBudgets:
    """Stage budgets of one copy (floats, each ≤ its exact share of ε) and their exact shares.

    For TP ``anchor`` and ``radius`` are 0.0 (no such stages). ``shares`` is a read-only mapping (the
    objects are cached and shared: a function of public values only).
    """

    anchor: float
    radius: float
    direction: float
    point_pivot: float
    point_nonpivot: float
    shares: Mapping[str, Fraction]


def copy_shares(n: int, copy: str, fractions: Iterable[Any], split: str) -> dict[str, Fraction]:
    """Exact share of the **total** ε of each single stage of one copy (n ≥ 2).

    Parameters
    ----------
    n : int
        Trajectory length (≥ 2).
    copy : {"A", "B"}
    fractions : tuple of 4 Fraction
        (anchor, radius, directions, points) fractions of the copy budget ε_c = ε/2.
    split : {"uniform", "grouped"}
        Option C2.

    Returns
    -------
    dict
        Keys ``anchor_em``, ``radius_sw``, ``direction_krr``, ``pivot_em``, ``point_em`` (non-pivot).
    """
    fractions = tuple(fractions)
    key = (n, copy, fractions, split)
    return dict(_SHARES.get(key, _copy_shares, *key))


# The budget split is a pure function of its arguments (the mechanism's configuration, ε, the length), so
# it is computed once per key instead of once per call and length. Python's == between numbers is exact, so
# a key that compares equal has the same exact value and gives the same budgets.
_SHARES = ReleaseCache(maxsize=1024)
_BUDGETS = ReleaseCache(maxsize=1024)
_LEDGERS = ReleaseCache(maxsize=1024)


def _copy_shares(n: int, copy: str, fractions: Iterable[Any], split: str) -> tuple[tuple[str, Fraction], ...]:
    f_anchor, f_radius, f_dir, f_pt = (Fraction(f) for f in fractions)
    half = Fraction(1, 2)
    n_piv = len(pivot_positions(n, copy))
    if split == "uniform":
        pivot = nonpivot = half * f_pt / n
    else:  # "grouped": pivots share half of the point budget, non-pivots the other half
        pivot = half * f_pt / 2 / n_piv
        nonpivot = half * f_pt / 2 / (n - n_piv)
    return (
        ("anchor_em", half * f_anchor),
        ("radius_sw", half * f_radius),
        ("direction_krr", half * f_dir / (n - 1)),
        ("pivot_em", pivot),
        ("point_em", nonpivot),
    )


def copy_budgets(epsilon: float, n: int, copy: str, fractions: Iterable[Any], split: str) -> CopyBudgets:
    """Float stage budgets of one copy: :func:`geoldp.budget.exact_share` of :func:`copy_shares`."""
    fractions = tuple(fractions)
    return _BUDGETS.get(
        (epsilon, n, copy, fractions, split), _copy_budgets, epsilon, n, copy, fractions, split
    )


def _copy_budgets(epsilon: float, n: int, copy: str, fractions: tuple[Any, ...], split: str) -> CopyBudgets:
    # read-only: one cached object is shared by every call with this key
    shares = MappingProxyType(copy_shares(n, copy, fractions, split))
    return CopyBudgets(
        anchor=exact_share(epsilon, shares["anchor_em"]),
        radius=exact_share(epsilon, shares["radius_sw"]),
        direction=exact_share(epsilon, shares["direction_krr"]),
        point_pivot=exact_share(epsilon, shares["pivot_em"]),
        point_nonpivot=exact_share(epsilon, shares["point_em"]),
        shares=shares,
    )


def stage_plan(n: int, copy: str, *, anchor: bool) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The stages of one copy in transcript order (ALGORITHM §5.9): ``((kind, positions), ...)``.

    ATP (``anchor=True``): anchor EM and radius SW first (positions = all of 1…n); then the pivot EMs in
    ascending position; then for each non-pivot j ascending its k-RR(s) (positions (k, j), left first) and
    its point EM.
    """
    plan: list[tuple[str, tuple[int, ...]]] = []
    everything = tuple(range(1, n + 1))
    if anchor:
        plan.append(("anchor_em", everything))
        plan.append(("radius_sw", everything))
    for i in pivot_positions(n, copy):
        plan.append(("pivot_em", (i,)))
    for j in non_pivot_positions(n, copy):
        for k in (j - 1, j + 1):
            if 1 <= k <= n:
                plan.append(("direction_krr", (k, j)))
        plan.append(("point_em", (j,)))
    return tuple(plan)


def build_ledger(epsilon: float, n: int, fractions: Iterable[Any], split: str, *, anchor: bool) -> Ledger:
    """Ledger of a two-copy run (TP: ``anchor=False``; ATP: ``anchor=True``); n = 1 → one EM with ε."""
    # a Ledger is immutable (frozen, tuples of frozen entries), so one cached object can be shared
    fractions, anchor = tuple(fractions), bool(anchor)
    return _LEDGERS.get(
        (epsilon, n, fractions, split, anchor), _build_ledger, epsilon, n, fractions, split, anchor
    )


def _build_ledger(epsilon: float, n: int, fractions: tuple[Any, ...], split: str, anchor: bool) -> Ledger:
    if n == 1:
        return Ledger((LedgerEntry(None, "point_em", (1,), float(epsilon), Fraction(1)),), float(epsilon))
    entries = []
    for copy in COPIES:
        shares = copy_shares(n, copy, fractions, split)
        budgets = {kind: exact_share(epsilon, share) for kind, share in shares.items()}
        for kind, positions in stage_plan(n, copy, anchor=anchor):
            entries.append(LedgerEntry(copy, kind, positions, budgets[kind], shares[kind]))
    return Ledger(tuple(entries), float(epsilon))
