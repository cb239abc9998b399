"""Exact privacy-budget accounting (ALGORITHM §6.3) and the per-trajectory ledger.

Stage budgets are computed from ε and an exact rational fraction and rounded *down*, so that the ledger
satisfies Σ Fraction(ε_stage) ≤ Fraction(ε) exactly.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import cast

import numpy as np

from geoldp.errors import BudgetError

__all__ = ["KINDS", "Ledger", "LedgerEntry", "check_fractions", "exact_share"]

#: The stage kinds a ledger entry may carry.
KINDS = ("anchor_em", "radius_sw", "pivot_em", "direction_krr", "point_em")


def exact_share(epsilon: float, fraction: Fraction) -> float:
    """Return the largest-possible float ≤ ``epsilon · fraction`` computed exactly.

    The exact product is rounded to nearest; if that went up, step one ulp towards 0 with
    :func:`math.nextafter` (ALGORITHM §6.3).

    Parameters
    ----------
    epsilon : float
        The total budget (a float; its exact binary value is used).
    fraction : fractions.Fraction
        The exact share (an int or a float is converted exactly).

    Returns
    -------
    float
        A float ``s`` with ``Fraction(s) <= Fraction(epsilon) * fraction`` and at most one ulp below it.

    Examples
    --------
    >>> exact_share(1.0, Fraction(1, 3)) <= 1 / 3
    True
    """
    try:
        return _exact_share(epsilon, fraction)
    except TypeError:  # an unhashable number type: compute without the cache
        return _exact_share.__wrapped__(epsilon, fraction)


# The share is a pure function of two public numbers, and Python's == between int, float and Fraction is
# exact, so equal keys have equal exact values: a cache hit returns the very float a recomputation would.
@functools.lru_cache(maxsize=4096)
def _exact_share(epsilon: float, fraction: Fraction) -> float:
    exact = Fraction(epsilon) * Fraction(fraction)
    value = float(exact)
    if Fraction(value) > exact:
        value = math.nextafter(value, 0.0)
    return value


def check_fractions(fracs, caller: str) -> tuple[Fraction, ...]:
    """Validate budget fractions: each a non-negative real number, summing to exactly 1 as rationals.

    Floats are converted exactly (``Fraction(0.1)`` is not 1/10), so ``(0.1, 0.2, 0.7)`` is rejected:
    pass :class:`fractions.Fraction` values instead.

    Parameters
    ----------
    fracs : iterable of Fraction, int or float
        The fractions.
    caller : str
        Name used in the error message.

    Returns
    -------
    tuple of Fraction

    Raises
    ------
    BudgetError
        A fraction is negative, not finite or not a number, or the sum is not exactly 1.

    Examples
    --------
    >>> check_fractions((Fraction(1, 4), Fraction(3, 4)), "ATP")
    (Fraction(1, 4), Fraction(3, 4))
    """
    if isinstance(fracs, (str, bytes)) or not isinstance(fracs, Iterable):
        raise BudgetError(
            f"The 'fractions' parameter of {caller} must be a sequence of fractions.Fraction values."
        )
    out = []
    for pos, f in enumerate(fracs):
        if isinstance(f, (bool, np.bool_)) or not isinstance(f, (numbers.Real, np.integer, np.floating)):
            raise BudgetError(
                f"The 'fractions' parameter of {caller} must contain real numbers; item {pos} has type "
                f"{type(f).__name__}. Pass fractions.Fraction values."
            )
        if isinstance(f, (float, np.floating)) and not math.isfinite(float(f)):
            raise BudgetError(f"The 'fractions' parameter of {caller} must be finite; item {pos} is not.")
        # Fraction() takes Rationals and floats; NumPy scalars go through their Python value.
        fr = Fraction(f.item() if isinstance(f, np.generic) else cast("numbers.Rational | float", f))
        if fr < 0:
            raise BudgetError(
                f"The 'fractions' parameter of {caller} must be non-negative; item {pos} is {float(fr):g}."
            )
        out.append(fr)
    if not out:
        raise BudgetError(f"The 'fractions' parameter of {caller} must not be empty.")
    total = sum(out, Fraction(0))
    if total != 1:
        raise BudgetError(
            f"The 'fractions' parameter of {caller} must sum to exactly 1 as rationals; they sum to "
            f"{float(total)!r} (exactly {total}). Floats such as 0.1 are not exact: pass fractions.Fraction "
            "values, e.g. (Fraction(1, 16), Fraction(3, 16), Fraction(9, 16), Fraction(3, 16))."
        )
    return tuple(out)


@dataclass(frozen=True)
class LedgerEntry:
    """One privacy-spending stage (or group of identical stages) of one trajectory.

    Attributes
    ----------
    copy : {"A", "B", None}
        The copy the stage belongs to; ``None`` for single-copy mechanisms (PointEM, n = 1).
    kind : str
        One of ``"anchor_em"``, ``"radius_sw"``, ``"pivot_em"``, ``"direction_krr"``, ``"point_em"``.
    positions : tuple of int
        1-based trajectory positions the stage concerns.
    epsilon : float
        Budget spent by this stage.
    share : fractions.Fraction
        Exact fraction of the total ε this stage was derived from.
    """

    copy: str | None
    kind: str
    positions: tuple[int, ...]
    epsilon: float
    share: Fraction

    def to_dict(self) -> dict:
        """Return a JSON-able dict (the share as a string such as ``"1/32"``)."""
        return {
            "copy": self.copy,
            "kind": self.kind,
            "positions": [int(p) for p in self.positions],
            "epsilon": float(self.epsilon),
            "share": str(self.share),
        }


@dataclass(frozen=True)
class Ledger:
    """The budget ledger of one trajectory: every stage and the ε it spent.

    Attributes
    ----------
    entries : tuple of LedgerEntry
    epsilon : float
        The claimed total budget.

    Examples
    --------
    >>> e = LedgerEntry(None, "point_em", (1,), 1.0, Fraction(1))
    >>> led = Ledger((e,), 1.0)
    >>> led.total(), len(led)
    (Fraction(1, 1), 1)
    """

    entries: tuple[LedgerEntry, ...]
    epsilon: float

    def total(self) -> Fraction:
        """Exact sum of the stage budgets, ``Σ Fraction(entry.epsilon)``."""
        return sum((Fraction(e.epsilon) for e in self.entries), Fraction(0))

    def by_kind(self) -> dict[str, float]:
        """Total budget per stage kind (exact sums, converted to float once)."""
        acc: dict[str, Fraction] = {}
        for e in self.entries:
            acc[e.kind] = acc.get(e.kind, Fraction(0)) + Fraction(e.epsilon)
        return {k: float(v) for k, v in acc.items()}

    def to_dict(self) -> dict:
        """Return a JSON-able dict: ``{"epsilon", "total", "entries": [...]}``."""
        return {
            "epsilon": float(self.epsilon),
            "total": float(self.total()),
            "entries": [e.to_dict() for e in self.entries],
        }

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[LedgerEntry]:
        return iter(self.entries)
