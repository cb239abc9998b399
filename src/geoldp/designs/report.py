"""Report designs: one ε-LDP frequency-oracle report per trajectory over public zones, and its estimator.

A report design is the statistic reported (``visited_zone`` or ``od``), the padding ℓ of a trajectory's
set of visited zones, whether the report is made over a coarser public grid and spread back to the asked
zones, and the estimator that reads the reports (post-processing, no privacy cost):

``projected``
    the unbiased estimate projected on the non-negative counts with the reports' total, with the
    estimator's 95 % interval of the count;
``shrunk``
    shrunk toward P's zone shares (:func:`geoldp.shrinkage.shrink_to_baseline`);
``eb``
    shrunk cell by cell toward the no-data answers (:func:`geoldp.shrinkage.shrunk_counts`).

Names: ``report:<statistic>[:coarse][:pad<ℓ> | :padded][:shrunk | :eb]`` (``padded`` is ℓ = 3; a coarse
visited-zone report pads to ℓ = 2 unless told, and is always shrunk before it is spread).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from geoldp._core import frames as _frames
from geoldp.designs._counts import zone_index
from geoldp.designs.base import Design, register_kind
from geoldp.designs.coarse import coarse_zones, spread_counts, spread_matrix, spread_of_points
from geoldp.designs.simulation import Simulated, Simulation, report_answers
from geoldp.nodata import uniform_answer
from geoldp.questions import Question, answer_table
from geoldp.reports.estimators import estimate_counts
from geoldp.reports.release import report
from geoldp.shrinkage import shrink_to_baseline, shrunk_counts
from geoldp.zones import check_zones, zone_of_vertices

_STATISTICS = ("visited_zone", "od")
_ESTIMATORS = ("projected", "shrunk", "eb")
#: ℓ named by a word of its own
_PADDED = 3


@dataclass(frozen=True)
class ReportDesign(Design):
    """One report per trajectory over public zones (or a coarser grid over them), read by an estimator.

    Parameters
    ----------
    statistic : {"visited_zone", "od"}
    pad_length : int, default 1
        ℓ: a trajectory's set of visited zones is padded to ℓ and one item is reported.
    estimator : {"projected", "shrunk", "eb"}, default "projected"
    coarse : bool, default False
        Report over :func:`geoldp.designs.coarse.coarse_zones` of the asked zones, shrink, and spread the
        answer back to them by P's points (a bias where people are not spread like P; no interval).
    max_set_size : int, optional
        A **public** bound on the number of zones one trajectory visits (the outside category included),
        for example its public maximum number of points: the upper ends of a visited-zone report's
        intervals allow for at most that many (:func:`geoldp.reports.estimate_counts`). Default: the
        number of zones + 1 (no bound).
    """

    kind: ClassVar[str] = "report"
    statistic: str = "visited_zone"
    pad_length: int = 1
    estimator: str = "projected"
    coarse: bool = False
    max_set_size: int | None = None

    def __post_init__(self) -> None:
        if self.statistic not in _STATISTICS:
            raise ValueError(f"statistic must be one of {_STATISTICS}; got {self.statistic!r}")
        if self.estimator not in _ESTIMATORS:
            raise ValueError(f"estimator must be one of {_ESTIMATORS}; got {self.estimator!r}")
        if not isinstance(self.pad_length, int) or self.pad_length < 1:
            raise ValueError(f"pad_length must be an int >= 1; got {self.pad_length!r}")
        if self.statistic == "od" and self.pad_length != 1:
            raise ValueError("an OD report has one pair per trajectory: pad_length must be 1")
        if self.coarse and self.estimator != "shrunk":
            raise ValueError("a coarse report is shrunk before it is spread: estimator must be 'shrunk'")
        if self.max_set_size is not None and (
            isinstance(self.max_set_size, bool)
            or not isinstance(self.max_set_size, int)
            or self.max_set_size < 1
        ):
            raise ValueError(f"max_set_size must be an int >= 1 or None; got {self.max_set_size!r}")

    @property
    def name(self) -> str:  # noqa: D102
        words = ["report", self.statistic]
        if self.coarse:
            words.append("coarse")
        if self.pad_length != _default_pad(self.statistic, self.coarse):
            words.append(
                "padded" if self.pad_length == _PADDED and not self.coarse else f"pad{self.pad_length}"
            )
        if self.estimator != "projected" and not self.coarse:
            words.append(self.estimator)
        return ":".join(words)

    @property
    def questions(self) -> tuple[Question, ...]:  # noqa: D102
        if self.statistic == "od":
            return (Question.OD_FLOWS,)
        return (Question.ZONE_VISITS, Question.HOTSPOTS, Question.RANGE_COUNTS)

    def bounded(self, max_length: int) -> ReportDesign:
        """A visited-zone report bounds each trajectory's set of zones by ``max_length`` (a trip of L points
        visits at most L zones): the upper ends of its intervals allow no more (``max_set_size``)."""
        if self.statistic != "visited_zone":
            return self
        return dataclasses.replace(self, max_set_size=int(max_length))

    def report_zones(self, zones: Any) -> Any:
        """The public zones the reports are made over: ``zones``, or the coarse grid over them."""
        return coarse_zones(zones) if self.coarse else zones

    def _release(self, trips: Any, points: Any, zones: Any, **common: Any) -> Any:
        if zones is None:
            raise ValueError(f"The design {self.name!r} reports over public zones: pass zones=...")
        return report(
            trips, self.report_zones(zones), statistic=self.statistic, pad_length=self.pad_length, **common
        )

    def _answer(self, released: Any, q: Question, points: Any, zones: Any) -> pd.DataFrame:
        caller = f"the answer of design {self.name!r}"
        od = self.statistic == "od"
        asked = self.report_zones(zones)
        bound = None if od else self.max_set_size
        table = estimate_counts(released, asked, max_set_size=bound)
        unbiased = table["estimate"].to_numpy(np.float64)
        index = zone_index(zones, od=od, caller=caller)
        if self.estimator == "projected":
            return answer_table(
                index,
                table["projected"],
                lower=table["lower"],
                upper=table["upper"],
                std_error=table["std_error"],
                raw=unbiased,
                question=q,
                design=self.name,
                covers="95 % interval of each cell's count (cell by cell, not simultaneous)",
            )
        if points is None:
            raise ValueError(f"The answer of design {self.name!r} shrinks toward P's shares: pass points=P.")
        ps = _frames.as_pointset(points, caller=caller)
        lon, lat = np.asarray(ps.lon), np.asarray(ps.lat)
        if self.estimator == "eb":
            values = shrunk_counts(table, ps, asked).to_numpy(np.float64)
        else:
            z = check_zones(asked, caller=caller)
            baseline = uniform_answer(zone_of_vertices(z, lon, lat), z.size, od=od)
            values = shrink_to_baseline(unbiased, table["std_error"].to_numpy(np.float64), baseline)
        if self.coarse:
            matrix = spread_of_points(zones, asked, lon, lat)
            values = spread_counts(values, matrix, od=od)
            unbiased = spread_counts(unbiased, matrix, od=od)
        return answer_table(
            index,
            values,
            raw=unbiased,
            question=q,
            design=self.name,
            covers="no interval: a shrunk estimate is biased toward the no-data answer",
        )

    def simulate(self, sim: Simulation, question: str) -> Simulated:
        """In closed form: the population's expected report frequencies plus the estimator's noise.

        A coarse report is simulated over the coarse grid of the asked zones, shrunk and spread back by
        P's points; the spreading biases it, so no interval is claimed.
        """
        if not self.coarse:
            return report_answers(sim, self.statistic, self.pad_length, sim.epsilon, estimator=self.estimator)
        if sim.zones is None:
            raise ValueError("A coarse-to-fine design needs the simulation's zones.")

        def coarse_grid() -> tuple[Any, np.ndarray, Any]:
            coarse = check_zones(coarse_zones(sim.zones.series), caller="geoldp.plan")
            zc = zone_of_vertices(coarse, np.asarray(sim.ps.lon), np.asarray(sim.ps.lat))
            return coarse, zc, spread_matrix(sim.zone_of_point, zc, sim.n_zones, coarse.size)

        coarse, zc, matrix = sim.cached("coarse", coarse_grid, sim.zones)
        csim = Simulation(sim.ps, zc, coarse.size, sim.seqs, sim.n, sim.epsilon, sim.rng, coarse, sim.cache)
        ests, _ = report_answers(csim, self.statistic, self.pad_length, sim.epsilon, estimator="shrunk")
        return [spread_counts(e, matrix, od=self.statistic == "od") for e in ests], None


def _default_pad(statistic: str, coarse: bool) -> int:
    return 2 if coarse and statistic == "visited_zone" else 1


def _parse(words: list[str], question: Question | None) -> Design:
    statistic = words[1]
    rest = words[2:]
    coarse = "coarse" in rest
    pad = _default_pad(statistic, coarse)
    estimator = "shrunk" if coarse else "projected"
    for word in rest:
        if word == "coarse":
            continue
        if word == "padded":
            pad = _PADDED
        elif word.startswith("pad") and word[3:].isdigit():
            pad = int(word[3:])
        elif word in _ESTIMATORS:
            estimator = word
        else:
            raise ValueError(f"unknown word {word!r} (coarse, padded, pad<ℓ>, shrunk or eb)")
    return ReportDesign(statistic, pad, estimator, coarse)


register_kind("report", _parse)
