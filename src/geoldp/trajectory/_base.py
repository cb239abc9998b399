"""Shared machinery of the trajectory mechanism objects (TP, ATP, PointEM).

Mechanism objects are immutable configuration (frozen, keyword-only dataclasses validated on construction).
They hold no data and no randomness: ``rng`` is a per-call argument of :func:`geoldp.perturb_trajectories`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from fractions import Fraction

from geoldp._core.errors import PrivacyWarning

__all__ = [
    "KRR_SW_MAX_EPSILON",
    "PRIVACY_WARNING_EPSILON",
    "SamplerPlan",
    "check_stage_budget",
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
        from geoldp.mechanisms import em_epsilon_limit

        limit = float(em_epsilon_limit(m))  # the float-margin limit for |P| = m (ALGORITHM §3.2)
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
    """Emit a :class:`~geoldp.PrivacyWarning` when ε > 10 (outside the paper's evaluated range)."""
    if epsilon > PRIVACY_WARNING_EPSILON:
        warnings.warn(
            f"epsilon={epsilon:g} for {caller} is above {PRIVACY_WARNING_EPSILON:g}, outside the range the "
            "paper evaluates; the privacy guarantee is weak at this budget.",
            PrivacyWarning,
            stacklevel=stacklevel,
        )


def fraction_str(f: Fraction) -> str:
    """A Fraction as a JSON-able string such as ``"3/8"``."""
    return str(Fraction(f))


@dataclass(frozen=True, kw_only=True)
class SamplerPlan:
    """What a sampler needs from a mechanism, compiled once from its options (public configuration only).

    Each mechanism object builds its plan on construction (``mechanism.sampler_plan``); the reference
    sampler, the exact enumerator and the fast path all read this one object instead of testing the
    mechanism's name or translating its options again. Per-length budgets stay methods of the mechanism:
    ``single_budget(n)`` (each point EM of a single-copy run), ``copy_budgets(n, copy)`` and, with an anchor
    region, ``decay_budget(n, copy)``.

    Attributes
    ----------
    two_copies : bool
        Runs copies A and B and merges them (TP, ATP) for n >= 2; otherwise every point is one EM over P.
    anchor_region : bool
        Each copy starts with an anchor EM and a radius SW and restricts its EMs to the region (ATP).
    granularity : int
        Direction granularity g (2, unused, for a mechanism without directions).
    centred, balanced, neighbour_fallback : bool
        Sector convention "centred", merge tie-break "balanced", fallback "neighbours".
    sw_buckets : int
        Square-Wave output buckets M (anchor region only).
    continuous_sw, input_mapping, vector_mean : bool
        SW output "continuous", distance mapping "input", anchor mean "vector" (anchor region only).
    """

    two_copies: bool
    anchor_region: bool = False
    granularity: int = 2
    centred: bool = True
    balanced: bool = True
    neighbour_fallback: bool = True
    sw_buckets: int = 2
    continuous_sw: bool = False
    input_mapping: bool = False
    vector_mean: bool = False

    def single(self, n: int) -> bool:
        """True when a trajectory of length ``n`` is released by one point EM per position."""
        return not self.two_copies or n == 1

    @property
    def kernel_kind(self) -> int:
        """The fast kernel's mechanism code: 0 per-point EM, 1 two copies, 2 two copies with anchor region."""
        return 2 if self.anchor_region else int(self.two_copies)
