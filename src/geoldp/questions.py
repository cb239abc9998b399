"""The questions a collection answers: one name per question in Python, the accessor, Dask and the CLI.

Every design (:mod:`geoldp.designs`) says which questions it answers, the planner (:func:`geoldp.plan`)
ranks designs for one question, and every answer is a table about one question.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

__all__ = ["Question"]


class Question(StrEnum):
    """What the collector wants to know about the population of trajectories.

    Members compare equal to their names as strings (``Question.ZONE_VISITS == "zone_visits"``).
    """

    #: How many trajectories visit each public zone.
    ZONE_VISITS = "zone_visits"
    #: Which zones are the most visited (the top k of the zone visits).
    HOTSPOTS = "hotspots"
    #: How many trajectories start in one zone and end in another (zone pairs).
    OD_FLOWS = "od_flows"
    #: How many trajectories pass through each region (here, each zone; relative errors).
    RANGE_COUNTS = "range_counts"

    @property
    def is_od(self) -> bool:
        """True for the questions about zone pairs, whose answers have one row per ordered pair."""
        return self is Question.OD_FLOWS


#: Every question, in the order the docs and the CLI list them.
ALL: tuple[Question, ...] = tuple(Question)


def question(value: Any, *, caller: str, among: tuple[Question, ...] = ALL) -> Question:
    """The :class:`Question` named by ``value`` (a member or its name, any case), or a ValueError naming it.

    Examples
    --------
    >>> question("OD_flows", caller="example")
    <Question.OD_FLOWS: 'od_flows'>
    """
    if isinstance(value, Question) and value in among:
        return value
    name = value.lower() if isinstance(value, str) else None
    for q in among:
        if name == q.value:
            return q
    names = ", ".join(repr(q.value) for q in among)
    raise ValueError(f"The 'question' parameter of {caller} must be one of {names}; got {value!r}.")
