"""TP — trajectory perturbation by pivot sampling (Zhang et al., PVLDB 2023, Algorithms 1–3; ALGORITHM §5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Real
from typing import ClassVar

from geoldp._core.validation import check_epsilon, check_option
from geoldp.budget import Ledger
from geoldp.trajectory._base import (
    SamplerPlan,
    check_stage_budget,
    fraction_str,
    warn_large_epsilon,
)
from geoldp.trajectory.granularity import (
    DEFAULT_CANDIDATES,
    DEFAULT_EPSILON_FRACTION,
    check_g,
    choose_granularity,
    normalise_lookup_table,
)
from geoldp.trajectory.split import COPIES, TP_FRACTIONS, CopyBudgets, build_ledger, copy_budgets


@dataclass(frozen=True, kw_only=True)
class TwoCopyMechanism:
    """Options shared by TP and ATP (validated on construction)."""

    epsilon: float
    granularity: object = "auto"
    granularity_reading: str = "C"
    granularity_candidates: tuple = DEFAULT_CANDIDATES
    epsilon_fraction: Fraction = DEFAULT_EPSILON_FRACTION
    sector_convention: str = "centred"
    split: str = "uniform"
    fallback: str = "neighbours"
    tie_break: str = "balanced"
    _g: int = field(init=False, repr=False, compare=False)
    _plan: SamplerPlan = field(init=False, repr=False, compare=False)

    name: ClassVar[str] = ""
    # the plain string options and their choices, validated and listed by options() in this order
    _choices: ClassVar[dict[str, tuple[str, ...]]] = {
        "sector_convention": ("centred", "floor"),
        "split": ("uniform", "grouped"),
        "fallback": ("neighbours", "region"),
        "tie_break": ("balanced", "index"),
    }
    #: Whether each copy starts with an anchor EM and a radius SW and restricts its EMs to the region.
    anchor_region: ClassVar[bool] = False

    def __post_init__(self) -> None:
        caller = type(self).__name__
        set_ = object.__setattr__
        set_(self, "epsilon", check_epsilon(self.epsilon, caller=caller))
        gran = self.granularity
        if isinstance(gran, str):
            gran = check_option(gran, "granularity", ("auto",), caller, case_insensitive=True)
        elif isinstance(gran, (Mapping, list, tuple)):
            gran = normalise_lookup_table(gran, caller=caller)
        else:
            gran = check_g(gran, caller=caller, name="granularity")
        set_(self, "granularity", gran)
        set_(
            self,
            "granularity_reading",
            check_option(
                self.granularity_reading, "granularity_reading", ("C", "A"), caller, case_insensitive=True
            ),
        )
        cands = self.granularity_candidates
        if isinstance(cands, (str, bytes)) or not isinstance(cands, Sequence) or len(cands) == 0:
            raise TypeError(
                f"The 'granularity_candidates' parameter of {caller} must be a non-empty sequence of ints."
            )
        cands = tuple(sorted({check_g(c, caller=caller, name="granularity_candidates") for c in cands}))
        set_(self, "granularity_candidates", cands)
        frac = self.epsilon_fraction
        if isinstance(frac, bool) or not isinstance(frac, Real):
            raise TypeError(
                f"The 'epsilon_fraction' parameter of {caller} must be a real number (a fractions.Fraction "
                f"such as Fraction(3, 8)). Got {type(frac).__name__} instead."
            )
        parsed: Fraction | None
        try:
            parsed = Fraction(frac)
        except (ValueError, OverflowError):
            parsed = None
        if parsed is None or not (0 < parsed <= 1):
            raise ValueError(
                f"The 'epsilon_fraction' parameter of {caller} must be in the range (0, 1]. "
                f"Got {self.epsilon_fraction!r} instead."
            )
        set_(self, "epsilon_fraction", parsed)
        self._check_choices(TwoCopyMechanism._choices, caller)
        self._validate_extra(caller)
        set_(
            self,
            "_g",
            choose_granularity(
                self.epsilon,
                self.granularity,
                reading=self.granularity_reading,
                candidates=self.granularity_candidates,
                epsilon_fraction=self.epsilon_fraction,
            ),
        )
        set_(self, "_plan", self._compile_plan())
        warn_large_epsilon(self.epsilon, caller, stacklevel=4)

    def _check_choices(self, choices: dict[str, tuple[str, ...]], caller: str) -> None:
        for name, valid in choices.items():
            object.__setattr__(self, name, check_option(getattr(self, name), name, valid, caller))

    def _validate_extra(self, caller: str) -> None:
        """Hook for subclass options."""

    def _compile_plan(self) -> SamplerPlan:
        """The sampler plan of the options shared by TP and ATP (subclasses add theirs)."""
        return SamplerPlan(
            two_copies=True,
            granularity=self._g,
            centred=self.sector_convention == "centred",
            balanced=self.tie_break == "balanced",
            neighbour_fallback=self.fallback == "neighbours",
        )

    @property
    def sampler_plan(self) -> SamplerPlan:
        """What the samplers need from this mechanism, compiled once from its options."""
        return self._plan

    # -- public helpers -----------------------------------------------------------------------------------
    @property
    def granularity_value(self) -> int:
        """The direction granularity g (number of sectors), a function of ε and the options only."""
        return self._g

    @property
    def budget_fractions(self) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        """(anchor, radius, directions, points) fractions of each copy's budget ε/2."""
        return TP_FRACTIONS

    def single_budget(self, n: int) -> float:
        """EM budget of each point when run as a single copy (only n = 1 here): the full ε."""
        return float(self.epsilon)

    def copy_budgets(self, n: int, copy: str) -> CopyBudgets:
        """Stage budgets of ``copy`` ("A" or "B") for a trajectory of length ``n`` ≥ 2."""
        return copy_budgets(self.epsilon, int(n), copy, self.budget_fractions, self.split)

    def ledger(self, n: int) -> Ledger:
        """The budget ledger of one trajectory of length ``n``: one entry per stage, in transcript order.

        Its exact sum ``ledger(n).total()`` never exceeds ``Fraction(epsilon)``.
        """
        n = check_length(n, type(self).__name__)
        return build_ledger(self.epsilon, n, self.budget_fractions, self.split, anchor=self.anchor_region)

    def check_budgets(self, n: int, m: int) -> None:
        """Validate every derived stage budget for length ``n`` and |P| = ``m`` (ALGORITHM §3.4).

        Raises
        ------
        ValueError
            Naming the stage whose budget breaks its primitive's limit.
        """
        caller = type(self).__name__
        if n == 1:
            check_stage_budget("point_em", self.epsilon, m, caller)
            return
        for copy in COPIES:
            bud = self.copy_budgets(n, copy)
            if self.anchor_region:
                check_stage_budget("anchor_em", bud.anchor, m, caller)
                check_stage_budget("radius_sw", bud.radius, m, caller)
            check_stage_budget("direction_krr", bud.direction, m, caller)
            check_stage_budget("pivot_em", bud.point_pivot, m, caller)
            check_stage_budget("point_em", bud.point_nonpivot, m, caller)

    def options(self) -> dict:
        """JSON-able description of the mechanism and every option (for provenance)."""
        gran = self.granularity
        if isinstance(gran, tuple):
            gran = [[b, g] for b, g in gran]
        return {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "granularity": gran,
            "granularity_value": self.granularity_value,
            "granularity_reading": self.granularity_reading,
            "granularity_candidates": list(self.granularity_candidates),
            "epsilon_fraction": fraction_str(self.epsilon_fraction),
            **{name: getattr(self, name) for name in TwoCopyMechanism._choices},
        }


def check_length(n: object, caller: str) -> int:
    """Return the trajectory length ``n`` as an int ≥ 1, or raise naming ``caller``'s ``ledger``."""
    if isinstance(n, bool) or not isinstance(n, int) and not hasattr(n, "__index__"):
        raise TypeError(f"The trajectory length passed to {caller}.ledger must be an int.")
    n = int(n)
    if n < 1:
        raise ValueError(f"The trajectory length passed to {caller}.ledger must be >= 1. Got {n} instead.")
    return n


@dataclass(frozen=True, kw_only=True)
class TP(TwoCopyMechanism):
    """TP: pivot sampling with absolute direction sectors (Zhang et al. 2023, Algorithms 1–3).

    Two copies of the trajectory are perturbed independently, each with budget ε/2. In copy A the even
    positions are pivots, in copy B the odd ones. Pivots are perturbed by the exponential mechanism (EM)
    over P; each non-pivot reports, by k-RR, the sector of its direction from each neighbouring
    *perturbed* pivot, and is then perturbed by EM over the intersection of the reported sectors. The two
    copies are merged position by position.

    Parameters
    ----------
    epsilon : float
        Total privacy budget of one trajectory (> 0). ε > 10 emits a :class:`~geoldp.PrivacyWarning`.
    granularity : "auto", int or mapping, default "auto"
        Number of direction sectors g: ``"auto"`` (Eq. 7 reading C at ε_eff = 3ε/8 over {2, 4, 6, 12}),
        a fixed int in [2, 12], or a lookup table ``{epsilon_upper_bound: g}``.
    granularity_reading : {"C", "A"}, default "C"
        Score used by ``"auto"``.
    granularity_candidates : tuple of int, default (2, 4, 6, 12)
        Candidate set used by ``"auto"``.
    epsilon_fraction : Fraction, default Fraction(3, 8)
        ε_eff = ``epsilon_fraction`` · ε for ``"auto"``.
    sector_convention : {"centred", "floor"}, default "centred"
        Sector d = [(2d−1)π/g, (2d+1)π/g) (centred) or [2dπ/g, 2(d+1)π/g) (floor, the authors' code).
    split : {"uniform", "grouped"}, default "uniform"
        Point-budget split between pivots and non-pivots.
    fallback : {"neighbours", "region"}, default "neighbours"
        Domain when the sector intersection is empty: left set, right set, then P; or P directly.
    tie_break : {"balanced", "index"}, default "balanced"
        Merge tie-break.

    Raises
    ------
    TypeError
        ``epsilon`` or an option of the wrong type.
    ValueError
        ``epsilon`` not finite and > 0, or an invalid option (the message lists the valid choices).

    Notes
    -----
    Budget (per copy, ε_c = ε/2, n ≥ 2): each point EM ε_c/(4n), each of the n − 1 k-RRs 3ε_c/(4(n−1)).
    Every stage's parameters depend only on public data and earlier released outputs, so adaptive
    sequential composition gives ε-LDP for the whole trajectory (ALGORITHM §9). A trajectory of length 1
    gets one EM with the full ε. Runtime: O(n·|P|) per trajectory on the reference path.

    References
    ----------
    Y. Zhang, Q. Ye, R. Chen, H. Hu, Q. Han. Trajectory Data Collection with Local Differential Privacy.
    PVLDB 16(10), 2023. https://arxiv.org/abs/2307.09339

    Examples
    --------
    >>> from geoldp import TP
    >>> TP(epsilon=2.0).granularity_value
    2
    >>> float(TP(epsilon=1.0).ledger(5).total())
    1.0
    """

    name: ClassVar[str] = "tp"
