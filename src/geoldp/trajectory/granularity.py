"""Direction granularity g (ALGORITHM §7, option C3).

The granularity is the number of direction sectors used by TP and ATP. It depends only on the total budget
ε and on public options, never on data. :doc:`/algorithm` §7 states the rules: ``"auto"`` (reading C of
the paper's Eq. 7 at ε_eff = ``epsilon_fraction``·ε, the exact thresholds of
:func:`granularity_reading_c_default` for the default candidates, :func:`granularity_argmax` otherwise,
ties to the smaller g), reading A (``granularity_reading="A"``), a fixed integer in [2, 12], or a lookup
table ``{epsilon_upper_bound: g}`` (also a sequence of pairs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from numbers import Integral, Real
from typing import Any, cast

from geoldp.mechanisms.krr import krr_constants

#: The paper's candidate granularities D_c.
DEFAULT_CANDIDATES: tuple[int, ...] = (2, 4, 6, 12)
#: ε_eff = 3ε/8: the direction share (3/4) of one copy (ε/2).
DEFAULT_EPSILON_FRACTION = Fraction(3, 8)
#: Accepted range for any granularity value.
G_MIN, G_MAX = 2, 12

_LN3 = math.log(3.0)
_LN9 = math.log(9.0)
_LN37 = math.log(37.0)
# Relative tolerance under which two scores count as tied (ties go to the smaller g).
_TIE_RTOL = 1e-15


def score_c(g: int, x: float, candidates: Sequence[int] = DEFAULT_CANDIDATES) -> float:
    """Reading-C score of granularity ``g`` at ε_eff = ``x`` (ALGORITHM §7).

    ``score_C(g; x) = c_g · e^x/(g − 1 + e^x)`` with ``c_g = mean_{g'∈D_c} min(1, g/g')``.
    """
    c_g = sum(min(1.0, g / gp) for gp in candidates) / len(candidates)
    return c_g * krr_constants(g, x)[0]  # k-RR's probability of the true sector


def score_a(g: int, x: float, candidates: Sequence[int] = DEFAULT_CANDIDATES) -> float:
    """Reading-A score: every sector weighted by its k-RR probability (ALGORITHM §7).

    ``score_A = mean_θ [ q·φ₀(θ) + q̄·(θg/π − φ₀(θ)) ]`` over θ = π/g′, g′ ∈ D_c, with
    ``φ₀(θ) = min(1, θg/π)``.
    """
    q, qbar, _ = krr_constants(g, x)  # k-RR's probabilities of the true sector and of one other
    total = 0.0
    for gp in candidates:
        cover = g / gp  # θg/π with θ = π/g′
        phi0 = min(1.0, cover)
        total += q * phi0 + qbar * (cover - phi0)
    return total / len(candidates)


def granularity_argmax(x: float, candidates: Sequence[int] = DEFAULT_CANDIDATES, reading: str = "C") -> int:
    """Generic argmax of the reading-C (or reading-A) score over ``candidates``; ties → the smaller g.

    Parameters
    ----------
    x : float
        ε_eff, the budget the score is evaluated at.
    candidates : sequence of int
        Candidate granularities (the query ranges are π/g′ for the same set).
    """
    score = score_c if reading == "C" else score_a
    best_g: int | None = None
    best = -math.inf
    for g in sorted(candidates):
        s = score(g, x, candidates)
        # strict improvement beyond a relative tie tolerance; ties keep the smaller g
        if best_g is None or s > best + _TIE_RTOL * abs(best):
            best_g, best = g, s
    return int(cast(int, best_g))  # None only without candidates: int() raises TypeError, as before


def granularity_reading_c_default(x: float) -> int:
    """Closed-form reading C over {2, 4, 6, 12}: thresholds ln 3, ln 9, ln 37 on ε_eff = ``x``."""
    if x <= _LN3:
        return 2
    if x <= _LN9:
        return 4
    if x <= _LN37:
        return 6
    return 12


def normalise_lookup_table(table: Any, *, caller: str) -> tuple[tuple[float, int], ...]:
    """Validate a granularity lookup table and return it as sorted ``((eps_upper, g), ...)`` pairs.

    ``table`` is a mapping ``{epsilon_upper_bound: g}`` or a sequence of ``(epsilon_upper_bound, g)`` pairs.
    Bounds must be positive reals (``inf`` allowed) and distinct; every g an integer in [2, 12].
    """
    items = list(table.items()) if isinstance(table, Mapping) else list(table)
    if not items:
        raise ValueError(f"The 'granularity' lookup table of {caller} must not be empty.")
    pairs = []
    for item in items:
        try:
            bound, g = item
        except (TypeError, ValueError):
            raise TypeError(
                f"The 'granularity' lookup table of {caller} must map epsilon upper bounds to integers. "
                f"Got an entry of type {type(item).__name__} instead."
            ) from None
        if isinstance(bound, bool) or not isinstance(bound, Real):
            raise TypeError(
                f"The 'granularity' lookup table of {caller} must have real epsilon bounds. "
                f"Got {type(bound).__name__} instead."
            )
        bound = float(bound)
        if not (bound > 0.0):
            raise ValueError(
                f"The 'granularity' lookup table of {caller} must have epsilon bounds in (0, inf]. "
                f"Got {bound!r} instead."
            )
        pairs.append((bound, check_g(g, caller=caller, name="granularity")))
    pairs.sort()
    bounds = [b for b, _ in pairs]
    if len(set(bounds)) != len(bounds):
        raise ValueError(f"The 'granularity' lookup table of {caller} has duplicate epsilon bounds.")
    return tuple(pairs)


def check_g(g: object, *, caller: str, name: str) -> int:
    """Return ``g`` as an int in ``[G_MIN, G_MAX]``, or raise naming ``name`` and ``caller``."""
    if isinstance(g, bool) or not isinstance(g, Integral):
        raise TypeError(
            f"The '{name}' parameter of {caller} must be an int in the range [{G_MIN}, {G_MAX}]. "
            f"Got {type(g).__name__} instead."
        )
    g = int(g)
    if not (G_MIN <= g <= G_MAX):
        raise ValueError(
            f"The '{name}' parameter of {caller} must be an int in the range [{G_MIN}, {G_MAX}]. "
            f"Got {g} instead."
        )
    return g


def choose_granularity(
    epsilon: float,
    granularity: Any = "auto",
    *,
    reading: str = "C",
    candidates: Sequence[int] = DEFAULT_CANDIDATES,
    epsilon_fraction: Fraction = DEFAULT_EPSILON_FRACTION,
) -> int:
    """Granularity g for total budget ``epsilon`` under the rule selected by the options (ALGORITHM §7).

    Parameters
    ----------
    epsilon : float
        Total budget of one trajectory (already validated).
    granularity : "auto", int or tuple of (float, int) pairs
        The rule: ``"auto"`` (reading C or A), a fixed g, or a normalised lookup table
        (:func:`normalise_lookup_table`).
    reading : {"C", "A"}
        Score for ``"auto"``.
    candidates : tuple of int
        Candidate set for ``"auto"``.
    epsilon_fraction : Fraction
        ε_eff = ``epsilon_fraction`` · ε for ``"auto"``.

    Returns
    -------
    int
        g in [2, 12]. Depends on public values only.
    """
    if isinstance(granularity, str):
        x = float(Fraction(epsilon) * Fraction(epsilon_fraction))
        if reading == "C" and tuple(sorted(candidates)) == DEFAULT_CANDIDATES:
            return granularity_reading_c_default(x)
        return granularity_argmax(x, candidates, reading)
    if isinstance(granularity, tuple):
        for bound, g in granularity:
            if epsilon <= bound:
                return g
        raise ValueError(
            f"The 'granularity' lookup table has no entry for epsilon={epsilon!r}; its largest bound is "
            f"{granularity[-1][0]!r}. Add an entry with bound inf."
        )
    return int(granularity)
