"""Designs: the ways to collect, each an object that releases, accounts and answers.

A design's name is what :func:`geoldp.plan` prints and ``geoldp collect --design`` takes; :func:`design`
turns a name into its object::

    d = geoldp.designs.design("report:visited_zone:coarse")
    released, answer = d.collect(trips, "zone_visits", epsilon=4.0, points=P, zones=zones)

The kinds: :class:`TrajectoryDesign` (TP, ATP, PointEM), :class:`ReportDesign` (aggregate reports over
public zones, with padding, a coarse grid and an estimator), :class:`SynthesisDesign` (LDPTrace),
:class:`Composition` (a trajectory and a report under one budget) and :class:`BaselineDesign` (no release:
the no-data answer the planner recommends when no design beats it). Every design also simulates itself on a
no-data population (:mod:`geoldp.designs.simulation`), which is how :func:`geoldp.plan` ranks them. A new
kind is one module that defines its :class:`Design` subclass (``release``, ``answer``, ``simulate``) and
registers the first word of its names, imported here.
"""

from __future__ import annotations

from typing import Any

from geoldp.designs.base import Design, parse, to_layer
from geoldp.designs.baseline import BaselineDesign
from geoldp.designs.composition import Composition
from geoldp.designs.pilot import Pilot, PilotEstimate
from geoldp.designs.report import ReportDesign
from geoldp.designs.synthesis import SynthesisDesign
from geoldp.designs.trajectory import TrajectoryDesign
from geoldp.questions import ANSWER_COLUMNS as ANSWER_COLUMNS
from geoldp.questions import answer_table

__all__ = [
    "BaselineDesign",
    "Composition",
    "Design",
    "Pilot",
    "PilotEstimate",
    "ReportDesign",
    "SynthesisDesign",
    "TrajectoryDesign",
    "answer_table",
    "design",
    "to_layer",
]


def design(name: Any, *, question: Any = None) -> Design:
    """The design a name stands for (as :func:`geoldp.plan` prints it), or the design itself.

    Parameters
    ----------
    name : str or Design
        ``"atp"``, ``"report:visited_zone:pad2:eb"``, ``"hybrid:atp+report@0.5"``, ``"ldptrace"``, ...
    question : Question or str, optional
        The question it is asked for: a hybrid reports OD pairs for OD flows, visited zones otherwise.

    Returns
    -------
    Design

    Examples
    --------
    >>> design("report:visited_zone:padded:eb")
    ReportDesign(statistic='visited_zone', pad_length=3, estimator='eb', coarse=False, max_set_size=None)
    >>> design("report:visited_zone:padded:eb").name
    'report:visited_zone:padded:eb'
    """
    return parse(name, question=question, caller="geoldp.designs.design")
