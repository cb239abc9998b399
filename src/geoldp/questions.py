"""The questions a collection answers: one name per question in Python, the accessor, Dask and the CLI.

Every design (:mod:`geoldp.designs`) says which questions it answers, the planner (:func:`geoldp.plan`)
ranks designs for one question, and every answer is a table about one question: :func:`answer_table`,
which the designs, :func:`geoldp.combine` and the estimators of :mod:`geoldp.estimate` all return.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

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


#: The columns of every answer table, in this order. ``estimate`` is the answer; ``lower`` and ``upper``
#: its interval (NaN where none is claimed); ``std_error`` where defined; ``supported`` whether the
#: release tells the cell from nothing (by default: the interval excludes zero; False wherever no
#: interval is claimed, ``attrs["covers"]`` says why); ``raw`` the count before post-processing (the
#: release's own count, or the unbiased estimate a projection or shrinkage starts from).
ANSWER_COLUMNS = ("estimate", "lower", "upper", "std_error", "supported", "raw")


def answer_table(
    index: pd.Index,
    estimate: Any,
    *,
    question: Question | str,
    design: str,
    covers: str,
    lower: Any = None,
    upper: Any = None,
    std_error: Any = None,
    supported: Any = None,
    raw: Any = None,
) -> pd.DataFrame:
    """The one answer table: :data:`ANSWER_COLUMNS` per cell, and what it answers in ``attrs``.

    ``attrs`` holds ``question``, ``design`` and ``covers`` (what the interval is an interval of, or why
    there is none). ``supported`` defaults to "the interval excludes zero".
    """
    import numpy as np  # here: the command line imports this module for the questions' names
    import pandas as pd

    n = len(index)

    def column(values: Any) -> np.ndarray:
        if values is None:
            return np.full(n, np.nan)
        return np.asarray(values, dtype=np.float64).reshape(n)

    lo, hi = column(lower), column(upper)
    if supported is None:
        supported = ~np.isnan(hi) & (np.nan_to_num(lo) > 0)
    table = pd.DataFrame(
        {
            "estimate": column(estimate),
            "lower": lo,
            "upper": hi,
            "std_error": column(std_error),
            "supported": np.asarray(supported, dtype=bool).reshape(n),
            "raw": column(raw),
        },
        index=index,
    )
    table.attrs = {"question": str(question), "design": design, "covers": covers}
    return table
