"""A design: one way to collect, as an object that releases, accounts and answers.

A :class:`Design` holds the public parameters of one release kind. ``release`` runs the ε-LDP release on
the users' trajectories (the only step that reads private data), ``ledger`` says how ε is split among its
parts before anything is drawn, ``answer`` turns a release into the one answer table for a question
(post-processing that reads the release, P and the public zones only), and ``simulate`` runs the design
on a no-data population (:class:`~geoldp.designs.simulation.Simulation`). The planner
(:func:`geoldp.plan`) ranks designs by their simulations and returns the one it recommends, so a
recommendation is something you run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from geoldp import layers
from geoldp._core.validation import MIN_EPSILON
from geoldp.designs.simulation import Simulated, Simulation
from geoldp.questions import Question, question


def to_layer(answer: pd.DataFrame, zones: Any) -> Any:
    """An answer table as a GIS layer: the zones with their rows, or OD flows as lines (EPSG:4326).

    Parameters
    ----------
    answer : pandas.DataFrame
        An answer table (:func:`geoldp.designs.answer_table`, e.g. from :meth:`Design.answer`).
    zones : GeoDataFrame or GeoSeries of polygons
        The public zones the answer is about.

    Returns
    -------
    geopandas.GeoDataFrame
    """
    if list(answer.index.names) == ["origin", "destination"]:
        return layers.od_layer(answer, zones)
    return layers.zone_layer(answer, zones)


class Design(ABC):
    """One way to collect: a release kind with its public parameters.

    Subclasses are small frozen dataclasses; every parameter is public (chosen before any ε is spent).
    """

    #: The first word of the kind's names (``"report"`` in ``"report:od:eb"``).
    kind: ClassVar[str]

    @property
    @abstractmethod
    def name(self) -> str:
        """The design's name, as :func:`geoldp.plan` prints it and ``geoldp collect --design`` takes it."""

    @property
    @abstractmethod
    def questions(self) -> tuple[Question, ...]:
        """The questions this design answers."""

    def bounded(self, max_length: int) -> Design:
        """The design told a **public** bound on the points of a trajectory (itself, unless it uses one)."""
        return self

    def for_question(self, question: Question) -> Design:
        """The design as it is run for ``question`` (itself, unless its release depends on the question)."""
        return self

    @property
    def min_epsilon(self) -> float:
        """The smallest ε per trajectory the design can release with (a composition splits it)."""
        return MIN_EPSILON

    @abstractmethod
    def simulate(self, sim: Simulation, question: str) -> Simulated:
        """The design run on a simulated no-data population, as :func:`geoldp.plan` ranks it.

        Parameters
        ----------
        sim : Simulation
            The population (indices into P), the public zones and ε; ``sim.rng`` is its randomness.
        question : str
            A question the design answers.

        Returns
        -------
        estimates : list of ndarray
            The estimated answer of each repetition at the scale of ``sim.n`` users: zone visits, or OD
            counts over ordered zone pairs (``k × k`` flattened, origin-major).
        half_widths : ndarray or None
            The 95 % interval half-width per cell, None where the design claims no interval.
        """

    def ledger(self, epsilon: float) -> dict[str, float]:
        """How a trajectory's ``epsilon`` is split among the design's releases (public, before any draw)."""
        return {self.name: float(epsilon)}

    def release(
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
        """Release the trajectories ``trips`` (one row per trajectory) under ``epsilon`` per row.

        Parameters
        ----------
        trips : GeoDataFrame
            The private trajectories.
        epsilon : float
            The budget of one trajectory (row).
        points : PointSet, GeoDataFrame of Points or array, optional
            The public point set P (needed by the designs that release over it).
        zones : GeoDataFrame or GeoSeries of polygons, optional
            The public zones the question is about.
        rng : {None, int, Generator}, optional
            None draws from the operating system's cryptographic source; a seed is for experiments.
        accountant : BudgetAccountant, optional
            Charged for every row before anything is drawn; refuses a release over a user's budget.
        user_col : str, optional
            The column holding each row's user (with ``accountant``).

        Returns
        -------
        GeoDataFrame, DataFrame or tuple of them
            The release with its ledger (a composition returns one release per part).
        """
        common = {"epsilon": epsilon, "rng": rng, "accountant": accountant, "user_col": user_col}
        return self._release(trips, points, zones, **common)

    def _release(self, trips: Any, points: Any, zones: Any, **common: Any) -> Any:
        # a kind defines this (``common``: epsilon, rng, accountant, user_col) or overrides release itself
        raise NotImplementedError(f"The design {self.name!r} defines no release.")

    def answer(self, released: Any, question: Any, *, points: Any = None, zones: Any = None) -> pd.DataFrame:
        """The answer table (:func:`~geoldp.designs.answer_table`) to ``question`` from ``released``.

        Post-processing: reads the release, the public points and zones, never the trajectories.

        Parameters
        ----------
        released : what :meth:`release` returned
        question : Question or str
        points : PointSet, GeoDataFrame of Points or array, optional
            The public point set P.
        zones : GeoDataFrame or GeoSeries of polygons
            The public zones the question is about.

        Returns
        -------
        pandas.DataFrame
            One row per zone (index ``zone``) or per ordered zone pair (``origin``, ``destination``),
            with the columns ``geoldp.designs.ANSWER_COLUMNS``; for hotspots first ``rank``, every zone
            ordered by its estimate (1 the busiest; ties by position): ``supported`` says which of them
            the release tells apart from nothing.
        """
        q = self._question(question)
        table = self._answer(released, q, points, zones)
        if q is Question.HOTSPOTS:
            order = np.lexsort((np.arange(len(table)), -table["estimate"].to_numpy(np.float64)))
            rank = np.empty(len(table), dtype=np.int64)
            rank[order] = np.arange(1, len(table) + 1)
            table.insert(0, "rank", rank)
        return table

    def _answer(self, released: Any, q: Question, points: Any, zones: Any) -> pd.DataFrame:
        # a kind defines this (``q``: a question it answers) or overrides answer itself
        raise NotImplementedError(f"The design {self.name!r} defines no answer.")

    def collect(
        self,
        trips: Any,
        question: Any,
        *,
        epsilon: float,
        points: Any = None,
        zones: Any = None,
        rng: Any = None,
        accountant: Any = None,
        user_col: Any = None,
    ) -> tuple[Any, pd.DataFrame]:
        """:meth:`release`, then :meth:`answer` to ``question``: ``(release, answer)``."""
        released = self.release(
            trips,
            epsilon=epsilon,
            points=points,
            zones=zones,
            rng=rng,
            accountant=accountant,
            user_col=user_col,
        )
        return released, self.answer(released, question, points=points, zones=zones)

    def _question(self, value: Any) -> Question:
        return question(value, caller=f"the design {self.name!r}", among=self.questions)

    def __str__(self) -> str:
        return self.name


#: kind word -> parser of a name's remaining words (with the question it is asked for, when known)
_KINDS: dict[str, Callable[[list[str], Question | None], Design]] = {}


def register_kind(word: str, parser: Callable[[list[str], Question | None], Design]) -> None:
    """Register a release kind: ``parser(words, question)`` builds its design from the name's words."""
    _KINDS[word] = parser


def parse(name: Any, *, question: Any = None, caller: str = "geoldp.designs.design") -> Design:
    """The :class:`Design` a name stands for (``"atp"``, ``"report:visited_zone:pad2:eb"``, ...).

    ``question`` resolves the designs whose release depends on it (a hybrid reports OD pairs for OD
    flows, visited zones otherwise).
    """
    if isinstance(name, Design):
        return name
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"The design of {caller} must be a design name such as 'atp' or 'report:od'.")
    words = name.strip().lower().split(":")
    q = None if question is None else Question(str(question).lower())
    head = words[0].split("+")[0].split("@")[0]
    parser = _KINDS.get(head)
    if parser is None:
        raise ValueError(
            f"Unknown design {name!r} for the 'name' parameter of {caller}: a design name starts with one of "
            f"{sorted(_KINDS)} "
            "(geoldp plan prints the names it ranks)."
        )
    try:
        return parser(words, q)
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(f"Cannot read the design name {name!r} in {caller}: {exc}") from None
