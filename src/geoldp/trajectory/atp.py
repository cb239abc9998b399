"""ATP — anchor-based trajectory perturbation (Zhang et al., PVLDB 2023, Algorithms 4–5; ALGORITHM §8)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from geoldp._core.validation import check_int_range
from geoldp.budget import check_fractions, exact_share
from geoldp.mechanisms._base import MAX_SW_BUCKETS
from geoldp.trajectory._base import SamplerPlan, fraction_str
from geoldp.trajectory.split import ATP_FRACTIONS
from geoldp.trajectory.tp import TwoCopyMechanism


@dataclass(frozen=True, kw_only=True)
class ATP(TwoCopyMechanism):
    """ATP: TP restricted to a privately calibrated circular region (Zhang et al. 2023, Algorithms 4–5).

    Per copy, the trajectory's anchor (the public point nearest to its mean location) is perturbed by EM,
    the trajectory's radius around the *perturbed* anchor by Square-Wave, the radius is calibrated (Eqs.
    9–12), and TP's copy runs with every EM restricted to the region Ω = {p : d(â_α, p) ≤ R̃}. The merge
    runs over the full P.

    Parameters
    ----------
    epsilon : float
        Total privacy budget of one trajectory (> 0). ε > 10 emits a :class:`~geoldp.PrivacyWarning`.
    fractions : tuple of 4 Fraction, default (1/16, 3/16, 9/16, 3/16)
        (anchor, radius, directions, points) fractions of each copy's budget ε/2; non-negative, summing to
        exactly 1 as rationals (else :class:`~geoldp.BudgetError`). Every stage needs a positive share.
    sw_buckets : int, default 1024
        Number M of public Square-Wave output buckets, 2 ≤ M ≤ 10⁶ (``MAX_SW_BUCKETS``).
    sw_output : {"bucketed", "continuous"}, default "bucketed"
        Square-Wave output; continuous output leaks through reachable floats (documented limitation).
    distance_mapping : {"output", "input"}, default "output"
        Mapping of test values to distances in Eq. 9.
    decay_epsilon : {"radius", "copy", "total"}, default "radius"
        The ε of the decay factor e^{−ε} in Eq. 10: ε_R, ε/2 or ε.
    anchor_mean : {"arithmetic", "vector"}, default "arithmetic"
        Mean of the trajectory's locations (Eq. 8), or the 3-D unit-vector mean (antimeridian-safe).
    **TP options
        ``granularity``, ``granularity_reading``, ``granularity_candidates``, ``epsilon_fraction``,
        ``sector_convention``, ``split``, ``fallback``, ``tie_break``: see :class:`TP`.

    Raises
    ------
    TypeError
        ``epsilon`` or an option of the wrong type.
    ValueError
        ``epsilon`` not finite and > 0, or an invalid option (the message lists the valid choices).
    BudgetError
        ``fractions`` negative, not 4 values, or not summing to exactly 1 (a :class:`ValueError`).

    Notes
    -----
    Budget per copy (ε_c = ε/2, n ≥ 2): anchor EM ε_c/16, radius SW 3ε_c/16, each of the n − 1 k-RRs
    9ε_c/(16(n−1)), each point EM 3ε_c/(16n). Region, calibration and merge are post-processing of
    released values. A trajectory of length 1 gets one EM over P with the full ε.

    References
    ----------
    Y. Zhang, Q. Ye, R. Chen, H. Hu, Q. Han. Trajectory Data Collection with Local Differential Privacy.
    PVLDB 16(10), 2023. https://arxiv.org/abs/2307.09339

    Examples
    --------
    >>> from geoldp import ATP
    >>> ATP(epsilon=4.0).granularity_value
    4
    >>> sorted(ATP(epsilon=1.0).ledger(3).by_kind())
    ['anchor_em', 'direction_krr', 'pivot_em', 'point_em', 'radius_sw']
    """

    fractions: tuple = ATP_FRACTIONS
    sw_buckets: int = 1024
    sw_output: str = "bucketed"
    distance_mapping: str = "output"
    decay_epsilon: str = "radius"
    anchor_mean: str = "arithmetic"

    name: ClassVar[str] = "atp"
    anchor_region: ClassVar[bool] = True
    _choices: ClassVar[dict[str, tuple[str, ...]]] = {
        "sw_output": ("bucketed", "continuous"),
        "distance_mapping": ("output", "input"),
        "decay_epsilon": ("radius", "copy", "total"),
        "anchor_mean": ("arithmetic", "vector"),
    }

    def _validate_extra(self, caller: str) -> None:
        set_ = object.__setattr__
        fr = check_fractions(self.fractions, caller)
        if len(fr) != 4:
            from geoldp._core.errors import BudgetError

            raise BudgetError(
                f"The 'fractions' parameter of {caller} must have 4 entries (anchor, radius, directions, "
                f"points). Got {len(fr)} instead."
            )
        set_(self, "fractions", fr)
        buckets = check_int_range(
            self.sw_buckets, "sw_buckets", caller=caller, minimum=2, maximum=MAX_SW_BUCKETS
        )
        set_(self, "sw_buckets", buckets)
        self._check_choices(self._choices, caller)

    def _compile_plan(self) -> SamplerPlan:
        return dataclasses.replace(
            super()._compile_plan(),
            anchor_region=True,
            sw_buckets=self.sw_buckets,
            continuous_sw=self.sw_output == "continuous",
            input_mapping=self.distance_mapping == "input",
            vector_mean=self.anchor_mean == "vector",
        )

    @property
    def budget_fractions(self) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        """(anchor, radius, directions, points) fractions of each copy's budget ε/2."""
        return self.fractions

    def decay_budget(self, n: int, copy: str) -> float:
        """The ε used in the decay factor of Eq. 10 (option C7)."""
        if self.decay_epsilon == "radius":
            return self.copy_budgets(n, copy).radius
        if self.decay_epsilon == "copy":
            return exact_share(self.epsilon, Fraction(1, 2))
        return self.epsilon

    def options(self) -> dict:
        """JSON-able description of the mechanism and every option (for provenance)."""
        out = super().options()
        out.update(
            {
                "fractions": [fraction_str(f) for f in self.fractions],
                "sw_buckets": self.sw_buckets,
                **{name: getattr(self, name) for name in self._choices},
            }
        )
        return out
