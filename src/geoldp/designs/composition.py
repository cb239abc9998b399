"""Compositions: a trajectory release and a report of every trajectory under one budget.

Sequential composition: the two releases of a row together spend at most the row's ε (their ledgers
add up: :meth:`Composition.ledger`). The answers of the two parts are combined cell by cell, either
weighted by their shares of ε (``blend``) or by the inverse of their variances (``ivw``, through
:func:`geoldp.combine`, with its interval).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from geoldp import hybrids
from geoldp.designs import combine as combined
from geoldp.designs._counts import zone_index
from geoldp.designs.base import Design, answer_table, register_kind
from geoldp.designs.report import ReportDesign
from geoldp.designs.trajectory import TrajectoryDesign
from geoldp.questions import ALL, Question
from geoldp.shrinkage import blend

_COMBINERS = ("blend", "ivw")
#: Visited zones the inverse-variance composition pads its report to (ℓ = 3 estimates visit counts).
_IVW_PAD = 3


@dataclass(frozen=True)
class Composition(Design):
    """A trajectory release and a report of every trajectory, ``report_share`` of ε to the report.

    Parameters
    ----------
    mechanism : {"tp", "atp", "pointem"}, default "atp"
    report_share : float in (0, 1), default 0.5
    combiner : {"blend", "ivw"}, default "blend"
    statistic : {"visited_zone", "od"}, default "visited_zone"
        What every trajectory reports (``od`` for OD flows).
    """

    kind: ClassVar[str] = "composition"
    mechanism: str = "atp"
    report_share: float = 0.5
    combiner: str = "blend"
    statistic: str = "visited_zone"

    def __post_init__(self) -> None:
        TrajectoryDesign(self.mechanism)  # validates the mechanism
        if not 0.0 < float(self.report_share) < 1.0:
            raise ValueError(f"report_share must be in (0, 1); got {self.report_share!r}")
        if self.combiner not in _COMBINERS:
            raise ValueError(f"combiner must be one of {_COMBINERS}; got {self.combiner!r}")

    @property
    def name(self) -> str:  # noqa: D102
        how = ":ivw" if self.combiner == "ivw" else ""
        return f"hybrid:{self.mechanism}+report{how}@{self.report_share:g}"

    @property
    def questions(self) -> tuple[Question, ...]:  # noqa: D102
        return (Question.OD_FLOWS,) if self.statistic == "od" else tuple(q for q in ALL if not q.is_od)

    @property
    def report_part(self) -> ReportDesign:
        """The report every trajectory makes."""
        pad = _IVW_PAD if self.combiner == "ivw" and self.statistic == "visited_zone" else 1
        return ReportDesign(self.statistic, pad, "shrunk" if self.combiner == "blend" else "projected")

    def ledger(self, epsilon: float) -> dict[str, float]:  # noqa: D102
        eps_traj, eps_rep = hybrids.split_epsilon(float(epsilon), 1.0 - float(self.report_share))
        return {self.mechanism: eps_traj, self.report_part.name: eps_rep}

    def release(  # noqa: D102
        self,
        trips: Any,
        *,
        epsilon: float,
        points: Any = None,
        zones: Any = None,
        rng: Any = None,
        accountant: Any = None,
        user_col: Any = None,
    ) -> Any:
        if points is None or zones is None:
            raise ValueError(f"The design {self.name!r} needs the public points and zones: pass both.")
        part = self.report_part
        return hybrids.hybrid(
            trips,
            points,
            zones,
            epsilon=epsilon,
            fraction=1.0 - float(self.report_share),
            mechanism=self.mechanism,
            statistic=self.statistic,
            rng=rng,
            accountant=accountant,
            user_col=user_col,
            report_options={"pad_length": part.pad_length},
        )

    def answer(  # noqa: D102
        self, released: Any, question: Any, *, points: Any = None, zones: Any = None
    ) -> pd.DataFrame:
        q = self._question(question)
        trajectory, reports = released
        if self.combiner == "ivw":
            table = combined.combine(
                [trajectory, reports], zones, question=_combine_question(q), points=points
            )
            # a count lies in [0, n] (n the trajectories released): the interval clipped to it still
            # covers it, and the answer is kept inside its own interval
            n = float(len(reports))
            lower = np.clip(table["lower"].to_numpy(np.float64), 0.0, n)
            upper = np.clip(table["upper"].to_numpy(np.float64), lower, n)
            value = np.clip(table["estimate"].to_numpy(np.float64), lower, upper)
            return answer_table(
                zone_index(zones, od=q.is_od, caller=f"the answer of design {self.name!r}"),
                value,
                lower=lower,
                upper=upper,
                std_error=table.get("std_error"),
                raw=table["estimate"],
                question=q,
                design=self.name,
                covers="95 % interval of each cell's count, inverse-variance combined (cell by cell)",
            )
        rep = self.report_part.answer(reports, q, points=points, zones=zones)
        traj = TrajectoryDesign(self.mechanism).answer(trajectory, q, points=points, zones=zones)
        values = blend(
            rep["estimate"].to_numpy(np.float64), traj["estimate"].to_numpy(np.float64), self.report_share
        )
        return answer_table(
            rep.index,
            values,
            raw=traj["raw"],
            question=q,
            design=self.name,
            covers="no interval: a blend of a shrunk report and the released trajectories' counts",
        )


def _combine_question(q: Question) -> str:
    return "od_flows" if q.is_od else "range_counts" if q is Question.RANGE_COUNTS else "zone_visits"


def _parse(words: list[str], question: Question | None) -> Design:
    # "hybrid:atp+report@0.5" or "hybrid:atp+report:ivw@0.75"
    text = ":".join(words[1:])
    body, _, share = text.partition("@")
    mechanism, _, rest = body.partition("+")
    if not rest.startswith("report"):
        raise ValueError("a hybrid is 'hybrid:<mechanism>+report[:ivw]@<report share>'")
    combiner = "ivw" if rest == "report:ivw" else "blend"
    statistic = "od" if question is not None and question.is_od else "visited_zone"
    return Composition(mechanism, float(share or 0.5), combiner, statistic)


register_kind("hybrid", _parse)
