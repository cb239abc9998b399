"""A new release kind is one module: its Design subclass, registered; every surface then runs it.

The kind below is defined here, as a module of its own would define it (a report of every trajectory's
start zone, the OD report's origin alone), and nothing else in geoldp is edited: the name grammar reads
it, the planner simulates and ranks it, ``plan(...).best`` releases and answers it, and
``geoldp collect --design`` runs it from files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

import geoldp
from geoldp import cli, designs, planner, zone_grid
from geoldp.designs.base import register_kind
from geoldp.designs.simulation import report_answers
from geoldp.questions import Question


@dataclass(frozen=True)
class VisitedZoneOnce(designs.Design):
    """One visited zone per trajectory (k-RR over the zones), at the whole ε; answered as reported."""

    kind: ClassVar[str] = "onezone"

    @property
    def name(self) -> str:
        return "onezone"

    @property
    def questions(self) -> tuple[Question, ...]:
        return (Question.ZONE_VISITS, Question.HOTSPOTS)

    @property
    def _report(self) -> designs.ReportDesign:
        return designs.ReportDesign("visited_zone", 1)

    def release(self, trips, *, epsilon, points=None, zones=None, rng=None, accountant=None, user_col=None):
        return self._report.release(
            trips, epsilon=epsilon, zones=zones, rng=rng, accountant=accountant, user_col=user_col
        )

    def answer(self, released, question, *, points=None, zones=None):
        table = self._report.answer(released, self._question(question), points=points, zones=zones)
        table.attrs["design"] = self.name
        return table

    def simulate(self, sim, question):
        return report_answers(sim, "visited_zone", 1, sim.epsilon, estimator="projected")


@pytest.fixture
def registered():
    register_kind("onezone", lambda words, question: VisitedZoneOnce())
    planner.register_design(VisitedZoneOnce())
    try:
        yield
    finally:
        del planner.DESIGNS["onezone"]
        from geoldp.designs import base

        del base._KINDS["onezone"]


def test_a_registered_kind_is_planned_released_and_answered(registered):
    from geoldp.datasets import synthetic_city

    pts, trips = synthetic_city(n_points=200, n_trips=400, seed=4)
    zones = zone_grid(tuple(pts.to_crs(4326).total_bounds), cells=3)
    assert designs.design("onezone") == VisitedZoneOnce()
    table = geoldp.plan(pts, zones, epsilon=8.0, n=4000, lengths=4, designs=["onezone", "tp"], rng=0)
    assert np.isfinite(table.loc["onezone", "error"]) and table.loc["onezone", "kind"] == "onezone"
    # not an OD design: the planner does not rank it for OD flows
    od = geoldp.plan(pts, zones, epsilon=8.0, n=4000, lengths=4, question="od_flows", rng=0)
    assert "onezone" not in od.index
    released, answer = VisitedZoneOnce().collect(
        trips, "zone_visits", epsilon=8.0, points=pts, zones=zones, rng=1
    )
    assert len(released) == len(trips)
    assert list(answer.columns) == list(designs.ANSWER_COLUMNS) and answer.attrs["design"] == "onezone"


def test_a_registered_kind_runs_from_the_command_line(registered, tmp_path, capsys):
    from geoldp.datasets import synthetic_city

    pts, trips = synthetic_city(n_points=200, n_trips=200, seed=5)
    pts.to_file(tmp_path / "P.gpkg")
    trips.to_file(tmp_path / "trips.gpkg")
    out = tmp_path / "answer.gpkg"
    argv = ["collect", str(tmp_path / "trips.gpkg"), "--design", "onezone", "--epsilon", "4"]
    code = cli.main([*argv, "--points", str(tmp_path / "P.gpkg"), "--cell-km", "3", "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    assert out.exists()
