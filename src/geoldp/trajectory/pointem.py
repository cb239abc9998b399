"""PointEM — the paper's point-wise baseline: every point by EM over P with ε/n."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import ClassVar

from geoldp._core.validation import check_epsilon
from geoldp.budget import Ledger, LedgerEntry, exact_share
from geoldp.trajectory._base import SamplerPlan, check_stage_budget, warn_large_epsilon
from geoldp.trajectory.tp import check_length


@dataclass(frozen=True, kw_only=True)
class PointEM:
    """Per-point exponential mechanism: each of the n points independently by EM(x_i; P; ε/n).

    Parameters
    ----------
    epsilon : float
        Total privacy budget of one trajectory (> 0), split equally over its n points (sequential
        composition). ε > 10 emits a :class:`~geoldp.PrivacyWarning`.

    Raises
    ------
    TypeError, ValueError
        ``epsilon`` of the wrong type, or not finite and > 0.

    Notes
    -----
    Each point's output has probability ∝ exp(−(ε/n)·d(x_i, p)/(2Δ)) over P, Δ the diameter of P, so each
    point is ε/n-LDP and the trajectory ε-LDP. It is the paper's point-wise baseline.

    Examples
    --------
    >>> from geoldp import PointEM
    >>> [e.kind for e in PointEM(epsilon=1.0).ledger(2)]
    ['point_em', 'point_em']
    """

    epsilon: float
    _plan: SamplerPlan = field(init=False, repr=False, compare=False)

    name: ClassVar[str] = "pointem"
    anchor_region: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, caller="PointEM"))
        object.__setattr__(self, "_plan", SamplerPlan(two_copies=False))
        warn_large_epsilon(self.epsilon, "PointEM", stacklevel=4)

    @property
    def granularity_value(self) -> None:
        """PointEM uses no directions: always ``None``."""
        return None

    @property
    def sampler_plan(self) -> SamplerPlan:
        """What the samplers need: one EM over P per point, no copies, no directions."""
        return self._plan

    def single_budget(self, n: int) -> float:
        """EM budget of each point (the same as :meth:`point_budget`)."""
        return self.point_budget(n)

    def point_budget(self, n: int) -> float:
        """EM budget of each point: ε/n rounded down (ALGORITHM §6.3)."""
        return exact_share(self.epsilon, Fraction(1, int(n)))

    def ledger(self, n: int) -> Ledger:
        """One ``point_em`` entry per position, each with ε/n."""
        n = check_length(n, "PointEM")
        eps = self.point_budget(n)
        share = Fraction(1, n)
        return Ledger(
            tuple(LedgerEntry(None, "point_em", (i,), eps, share) for i in range(1, n + 1)), self.epsilon
        )

    def check_budgets(self, n: int, m: int) -> None:
        """Validate the per-point EM budget against the float-margin limit for |P| = ``m``."""
        check_stage_budget("point_em", self.point_budget(n), m, "PointEM")

    def options(self) -> dict:
        """JSON-able description (for provenance)."""
        return {"mechanism": self.name, "epsilon": self.epsilon}
