"""Compositions: a trajectory release and a report of every trajectory under one budget.

Sequential composition: the two releases of a row together spend at most the row's ε (their ledgers
add up: :meth:`Composition.ledger`). The answers of the two parts are combined cell by cell, either
weighted by their shares of ε (``blend``) or by the inverse of their variances (``ivw``, through
:func:`geoldp.combine`, with its interval).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from geoldp import hybrids
from geoldp._core.validation import MIN_EPSILON
from geoldp.designs import combine as combined
from geoldp.designs._counts import zone_index
from geoldp.designs.base import Design, register_kind
from geoldp.designs.report import ReportDesign
from geoldp.designs.simulation import REPS, Simulated, Simulation, report_answers, with_epsilon
from geoldp.designs.trajectory import TrajectoryDesign, simulated_rms
from geoldp.nodata import random_walks
from geoldp.questions import ALL, Question, answer_table
from geoldp.reports import estimators as rest
from geoldp.shrinkage import blend, inverse_variance

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

    kind: ClassVar[str] = "hybrid"
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

    def for_question(self, question: Question) -> Composition:
        """The composition reporting OD pairs for OD flows, visited zones for every other question."""
        return dataclasses.replace(self, statistic="od" if Question(question).is_od else "visited_zone")

    @property
    def min_epsilon(self) -> float:  # noqa: D102
        return MIN_EPSILON / min(float(self.report_share), 1.0 - float(self.report_share))

    def ledger(self, epsilon: float) -> dict[str, float]:  # noqa: D102
        eps_traj, eps_rep = hybrids.split_epsilon(float(epsilon), 1.0 - float(self.report_share))
        return {self.mechanism: eps_traj, self.report_part.name: eps_rep}

    def _release(self, trips: Any, points: Any, zones: Any, **common: Any) -> Any:
        if points is None or zones is None:
            raise ValueError(f"The design {self.name!r} needs the public points and zones: pass both.")
        return hybrids.hybrid(
            trips,
            points,
            zones,
            fraction=1.0 - float(self.report_share),
            mechanism=self.mechanism,
            statistic=self.statistic,
            report_options={"pad_length": self.report_part.pad_length},
            **common,
        )

    def _answer(self, released: Any, q: Question, points: Any, zones: Any) -> pd.DataFrame:
        trajectory, reports = released
        if self.combiner == "ivw":
            table = combined.combine(
                [trajectory, reports], zones, question=_combine_question(q), points=points
            )
            return answer_table(  # combine's own answer table (within [0, n]), indexed as every design's
                zone_index(zones, od=q.is_od, caller=f"the answer of design {self.name!r}"),
                table["estimate"],
                lower=table["lower"],
                upper=table["upper"],
                std_error=table["std_error"],
                raw=table["raw"],
                question=q,
                design=self.name,
                covers=table.attrs["covers"],
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

    def simulate(self, sim: Simulation, question: str) -> Simulated:
        """Both parts simulated at their shares of ε (the question's statistic: OD pairs for OD flows)."""
        if self.combiner == "ivw":
            return self._simulate_ivw(sim, question), None
        part = self.for_question(Question(question)).report_part
        # a simulation only (no release): the split of geoldp.hybrid.split_epsilon up to an ulp
        eps_rep = sim.epsilon * self.report_share
        reps, _ = report_answers(sim, part.statistic, part.pad_length, eps_rep, estimator="shrunk", reps=REPS)
        traj = TrajectoryDesign(self.mechanism)
        trajs, _ = traj.simulate(with_epsilon(sim, sim.epsilon - eps_rep), question)
        return [blend(r, t, self.report_share) for r, t in zip(reps, trajs, strict=True)], None

    def _simulate_ivw(self, sim: Simulation, question: str) -> list[np.ndarray]:
        """The padded report (the OD report for OD flows) and the trajectory's raw counts, combined per
        cell by the inverse of their squared errors, projected on the non-negative counts with their total.
        The trajectory part is biased: no interval is claimed."""
        part = self.for_question(Question(question)).report_part
        eps_rep = sim.epsilon * self.report_share
        reps, half = report_answers(
            sim, part.statistic, part.pad_length, eps_rep, estimator="unbiased", reps=REPS
        )
        se = half / rest.Z95
        trajectory = with_epsilon(sim, sim.epsilon - eps_rep)
        trajs, _ = TrajectoryDesign(self.mechanism).simulate(trajectory, question)
        # the trajectory part's error as the design computes it before any release (trajectory_rms): on
        # its own random walks over P with the population's lengths, never on the population itself
        walks = random_walks(sim.ps, np.array([q.shape[0] for q in sim.seqs]), sim.rng, population="spread")
        own = Simulation(sim.ps, sim.zone_of_point, sim.n_zones, walks, sim.n, trajectory.epsilon, sim.rng)
        rms = simulated_rms(own, question, self.mechanism)
        out = []
        for rep, traj in zip(reps, trajs, strict=True):
            est, _ = inverse_variance([rep, traj], [se, rms])
            out.append(rest.project_simplex(np.nan_to_num(est), max(float(np.nansum(est)), 0.0)))
        return out


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
