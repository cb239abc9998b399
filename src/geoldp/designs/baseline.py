"""The no-data designs: an answer from the public points and zones alone, when no release would beat it.

:func:`geoldp.plan` recommends one of these when no design beats knowing nothing; running it releases
nothing and spends no ε: its answer is :func:`geoldp.nodata.no_data_answer` for as many trajectories as
there are rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from geoldp._core import frames as _frames
from geoldp._core.validation import check_lengths
from geoldp.designs._counts import zone_index
from geoldp.designs.base import Design, register_kind
from geoldp.designs.simulation import Simulated, Simulation, needs
from geoldp.nodata import NO_DATA_ANSWERS, length_pool, no_data_answer
from geoldp.questions import ALL, Question, answer_table
from geoldp.zones import check_zones, zone_of_vertices


@dataclass(frozen=True)
class BaselineDesign(Design):
    """Answer without any data: the no-data answer (:func:`geoldp.nodata.no_data_answer`) for n trajectories.

    ``release`` reads nothing but the number of rows and spends nothing (an accountant is not charged);
    ``answer`` is the no-data answer from P and the zones, without an interval.

    Parameters
    ----------
    answer_kind : {"uniform", "constant", "shares"}
        Every point a uniform draw from P; every trajectory at P's 1-median; one visit per trajectory
        spread like P's points (zone questions only).
    lengths : tuple of int, optional
        Public (or assumed) trajectory lengths, each equally likely: what ``"uniform"`` zone visits
        average over (``geoldp.plan`` sets the lengths it simulated).
    """

    kind: ClassVar[str] = "baseline"
    answer_kind: str = "shares"
    lengths: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.answer_kind not in NO_DATA_ANSWERS:
            raise ValueError(f"answer_kind must be one of {NO_DATA_ANSWERS}; got {self.answer_kind!r}")
        if self.lengths is not None:  # checked, and held as a tuple (the design is frozen and hashable)
            caller = f"the design {self.name!r}"
            pool = length_pool(check_lengths(self.lengths, caller=caller), caller)
            object.__setattr__(self, "lengths", tuple(int(v) for v in pool))

    @property
    def name(self) -> str:  # noqa: D102
        return f"baseline:{self.answer_kind}"

    @property
    def questions(self) -> tuple[Question, ...]:  # noqa: D102
        return tuple(q for q in ALL if not (q.is_od and self.answer_kind == "shares"))

    def bounded(self, max_length: int) -> Design:
        """Without lengths, each length from 2 to the public bound ``max_length`` (as :func:`geoldp.plan`)."""
        if self.lengths is not None:
            return self
        return replace(self, lengths=tuple(range(min(2, max_length), max_length + 1)))

    def ledger(self, epsilon: float) -> dict[str, float]:
        """Nothing is released: no part, no ε."""
        return {}

    def _release(self, trips: Any, points: Any, zones: Any, **common: Any) -> Any:
        if not isinstance(trips, pd.DataFrame):
            raise TypeError(f"The trips given to the design {self.name!r} must be a GeoDataFrame.")
        return pd.DataFrame(index=trips.index)  # the rows, and nothing read from them

    def _answer(self, released: Any, q: Question, points: Any, zones: Any) -> pd.DataFrame:
        caller = f"the answer of design {self.name!r}"
        if not isinstance(released, pd.DataFrame):
            raise TypeError(f"The release given to {caller} must be what its release returned (a DataFrame).")
        if points is None:
            raise ValueError(f"The design {self.name!r} answers from the public points: pass points=P.")
        if self.answer_kind == "uniform" and not q.is_od and self.lengths is None:
            raise ValueError(
                f"The design {self.name!r} averages zone visits over public trajectory lengths: give them, "
                "e.g. BaselineDesign('uniform', lengths=(2, 3, 5, 8)) (geoldp plan's best sets its own)."
            )
        ps = _frames.as_pointset(points, caller=caller)
        z = check_zones(zones, caller=caller)
        zone_of_point = zone_of_vertices(z, np.asarray(ps.lon), np.asarray(ps.lat))
        median = ps.one_median() if self.answer_kind == "constant" else -1
        values = no_data_answer(
            self.answer_kind,
            zone_of_point,
            z.size,
            len(released),
            od=q.is_od,
            lengths=self.lengths,
            median=median,
        )
        return answer_table(
            zone_index(zones, od=q.is_od, caller=caller),
            values,
            question=q,
            design=self.name,
            covers="no interval: the no-data answer, from the public points and zones alone (no release)",
        )

    def simulate(self, sim: Simulation, question: str) -> Simulated:
        """The same no-data answer for the simulated population (its lengths; it does not vary)."""
        od = needs(question) == "od"
        median = sim.cached("one_median", sim.ps.one_median) if self.answer_kind == "constant" else -1
        lengths = [s.shape[0] for s in sim.seqs]
        return [
            no_data_answer(
                self.answer_kind, sim.zone_of_point, sim.n_zones, sim.n, od=od, lengths=lengths, median=median
            )
        ], None


def _parse(words: list[str], question: Question | None) -> Design:
    if len(words) != 2:
        raise ValueError(f"a no-data design is 'baseline:<kind>', a kind of {NO_DATA_ANSWERS}")
    return BaselineDesign(words[1])


register_kind("baseline", _parse)
