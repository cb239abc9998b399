"""Exact privacy-budget accounting (ALGORITHM §6.3), the per-trajectory ledger and the budget-split cache.

Stage budgets are computed from ε and an exact rational fraction and rounded *down*, so that the ledger
satisfies Σ Fraction(ε_stage) ≤ Fraction(ε) exactly.

The budget split of a trajectory depends on its length (and, with a per-user budget, ε depends on a user's
number of trips), so a cache of splits is keyed by values of the input. :class:`ReleaseCache` keeps such an
entry beyond a call only once that call has returned its release (whose lengths and ε it then holds): a
public entry point runs inside :func:`release_scope`, and a call that raises leaves every cache as it was.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import numbers
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

import numpy as np

from geoldp._core.errors import BudgetError

#: The stage kinds a ledger entry may carry.
KINDS = (
    "anchor_em",
    "radius_sw",
    "pivot_em",
    "direction_krr",
    "point_em",
    "direction_pw",
    "distance_pw",
    "coordinate_pw",
)


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
    num, den = _ratio(epsilon)
    f_num, f_den = _ratio(fraction)
    num *= f_num
    den *= f_den
    # int / int is correctly rounded in Python, as float(Fraction) is (it divides the same two ints)
    value = num / den
    v_num, v_den = value.as_integer_ratio()
    if v_num * den > num * v_den:  # Fraction(value) > exact (both denominators are positive)
        value = math.nextafter(value, 0.0)
    return value


def _ratio(x: Any) -> tuple[int, int]:
    """The exact value of ``x`` as (numerator, denominator > 0), without building a Fraction if possible."""
    if type(x) is float or type(x) is int:
        return x.as_integer_ratio()
    if type(x) is Fraction:
        return x.numerator, x.denominator
    return Fraction(x).as_integer_ratio()  # other number types (numpy scalars, Decimal ...): exactly


# ---------------------------------------------------------------------------------------------------------
# the budget-split cache: entries of a call outlive it only if the call returned its release
# ---------------------------------------------------------------------------------------------------------


class _Scope:
    """The entries computed inside one :func:`release_scope`, per cache, not yet kept."""

    __slots__ = ("parent", "pending")

    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.pending: dict[ReleaseCache, dict[Hashable, Any]] = {}


_SCOPE: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar("geoldp_release_scope", default=None)


@contextlib.contextmanager
def release_scope() -> Iterator[None]:
    """Run a public entry point so that its :class:`ReleaseCache` entries are kept only if it returns.

    Inside the scope a cache miss is computed and held for the scope; when the block ends normally the
    entries join the caches (or the enclosing scope), and when it raises they are dropped. Outside any scope
    nothing is cached. The scope belongs to the current thread (a context variable).
    """
    scope = _Scope(_SCOPE.get())
    token = _SCOPE.set(scope)
    try:
        yield
    finally:  # on an exception nothing below runs: the scope's entries are dropped
        _SCOPE.reset(token)
    if scope.parent is not None:
        for cache, entries in scope.pending.items():
            scope.parent.pending.setdefault(cache, {}).update(entries)
    else:
        for cache, entries in scope.pending.items():
            cache._keep(entries)


class ReleaseCache:
    """A bounded memo of a pure function whose keys come from a release (its lengths, its ε).

    ``cache.get(key, compute, *args)`` returns ``compute(*args)`` for ``key``, from the memo when an earlier
    call that returned kept it; see :func:`release_scope`. The values must be immutable (they are shared).

    Parameters
    ----------
    maxsize : int
        Entries kept at most (the oldest go first).
    """

    def __init__(self, maxsize: int) -> None:
        self._maxsize = int(maxsize)
        # insertion order: the oldest entries go first (no reordering on a hit, which would hash the key
        # a second time: keys hold Fractions and mechanism objects, whose hashes are computed in Python)
        self._store: dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[..., Any], *args: Any) -> Any:
        """The value of ``compute(*args)`` for ``key`` (an unhashable key is computed without the memo)."""
        try:
            return self._store[key]
        except KeyError:
            pass
        except TypeError:  # an unhashable key
            return compute(*args)
        scope = _SCOPE.get()
        if scope is None:
            return compute(*args)
        pending = scope.pending.setdefault(self, {})
        try:
            return pending[key]
        except KeyError:
            value = pending[key] = compute(*args)
            return value

    def _keep(self, entries: dict[Hashable, Any]) -> None:
        with self._lock:  # one writer at a time (a read is one dictionary operation: atomic)
            store = dict(self._store)
            store.update(entries)
            if len(store) > self._maxsize:
                store = dict(list(store.items())[-self._maxsize :])
            self._store = store  # readers see the old or the new dictionary, never one being changed

    def keys(self) -> list[Hashable]:
        """The kept keys, oldest first (for tests)."""
        with self._lock:
            return list(self._store)

    def clear(self) -> None:
        """Forget every kept entry."""
        with self._lock:
            self._store = {}


def check_fractions(fracs: Iterable[Any], caller: str) -> tuple[Fraction, ...]:
    """Validate budget fractions: each a non-negative real number, summing to exactly 1 as rationals.

    Floats are converted exactly (``Fraction(0.1)`` is not 1/10), so ``(0.1, 0.2, 0.7)`` is rejected:
    pass :class:`fractions.Fraction` values instead.

    A ``BudgetError`` otherwise.

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
        One of ``"anchor_em"``, ``"radius_sw"``, ``"pivot_em"``, ``"direction_krr"``, ``"point_em"``, and
        for TraCS the piecewise stages ``"direction_pw"``, ``"distance_pw"``, ``"coordinate_pw"``.
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
