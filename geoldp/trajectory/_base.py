"""Shared machinery of the trajectory mechanism objects (TP, ATP, PointEM).

Mechanism objects are immutable configuration (frozen, keyword-only dataclasses validated on construction).
They hold no data and no randomness: ``rng`` is a per-call argument of :func:`geoldp.perturb_trajectories`.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

from geoldp._validation import check_epsilon
from geoldp.errors import PrivacyWarning

__all__ = [
    "KRR_SW_MAX_EPSILON",
    "PRIVACY_WARNING_EPSILON",
    "check_stage_budget",
    "em_limit",
    "warn_large_epsilon",
]

#: ε above which a composite warns (outside the range the paper evaluates, ALGORITHM §3.4).
PRIVACY_WARNING_EPSILON = 10.0
#: Upper limit of a k-RR or SW stage budget (ALGORITHM §3.4).
KRR_SW_MAX_EPSILON = 700.0

_STAGE_NAMES = {
    "anchor_em": "anchor EM",
    "radius_sw": "radius SW",
    "pivot_em": "pivot EM",
    "direction_krr": "direction k-RR",
    "point_em": "point EM",
}


def em_limit(m: int) -> float:
    """Float-margin limit of an EM stage budget for |P| = m (ALGORITHM §3.2): ε′ must be below it."""
    from geoldp.mechanisms import em_epsilon_limit

    return float(em_epsilon_limit(m))


def check_stage_budget(kind: str, epsilon: float, m: int, caller: str) -> None:
    """Validate one derived stage budget against its primitive's limit (ALGORITHM §3.4).

    Raises
    ------
    ValueError
        Naming the stage, e.g. "The point EM budget of ATP (31.2) exceeds the float-margin limit 30.6 for a
        public set of 10000 points."
    """
    stage = _STAGE_NAMES.get(kind, kind)
    if not (epsilon > 0.0 and math.isfinite(epsilon)):
        raise ValueError(
            f"The {stage} budget of {caller} ({epsilon!r}) must be a finite float > 0; check the budget "
            "fractions (a zero fraction gives a stage without budget)."
        )
    if kind.endswith("_em"):
        limit = em_limit(m)
        if not (epsilon < limit):
            raise ValueError(
                f"The {stage} budget of {caller} ({epsilon:.6g}) exceeds the float-margin limit {limit:.6g} "
                f"for a public set of {m} points. Use a smaller epsilon."
            )
    elif not (epsilon <= KRR_SW_MAX_EPSILON):
        raise ValueError(
            f"The {stage} budget of {caller} ({epsilon:.6g}) exceeds the limit {KRR_SW_MAX_EPSILON:g} of the "
            "primitive. Use a smaller epsilon."
        )


def warn_large_epsilon(epsilon: float, caller: str, stacklevel: int) -> None:
    """Emit a :class:`~geoldp.errors.PrivacyWarning` when ε > 10 (outside the paper's evaluated range)."""
    if epsilon > PRIVACY_WARNING_EPSILON:
        warnings.warn(
            f"epsilon={epsilon:g} for {caller} is above {PRIVACY_WARNING_EPSILON:g}, outside the range the "
            "paper evaluates; the privacy guarantee is weak at this budget.",
            PrivacyWarning,
            stacklevel=stacklevel,
        )


def coerce_epsilon(epsilon, caller: str) -> float:
    """Validate ε for a trajectory mechanism (finite real > 0, not bool) and return it as a float."""
    return check_epsilon(epsilon, caller=caller)


def fraction_str(f: Fraction) -> str:
    """A Fraction as a JSON-able string such as ``"3/8"``."""
    return str(Fraction(f))
