"""Aggregate ε-LDP reports over public zones: one frequency-oracle report per trajectory.

A collector who wants population statistics (where people go, between where) can ask each trajectory
for **one** ε-LDP report of a chosen statistic over public zones instead of a whole perturbed
trajectory:

* :func:`report` — the release (``gdf.ldp.report(zones, ...)`` is the same): one report per row, with
  its ledger (:func:`geoldp.ledger_of`);
* :func:`estimate_counts` — debiased counts with 95 % intervals and a non-negative projection;
* :func:`geoldp.zone_grid` — a grid of zones over a public area (for example the public point set);
* :mod:`geoldp.mechanisms.oracles` — k-RR, OUE and OLH with their exact pmfs and variances,
  :func:`choose_oracle`.
"""

from __future__ import annotations

from geoldp.mechanisms.oracles import ORACLES as ORACLES
from geoldp.mechanisms.oracles import Oracle as Oracle
from geoldp.mechanisms.oracles import choose_oracle, oracle
from geoldp.reports.estimators import (
    estimate_counts as estimate_counts,
)
from geoldp.reports.estimators import (
    project_simplex as project_simplex,
)
from geoldp.reports.estimators import (
    true_counts as true_counts,
)
from geoldp.reports.release import (
    MAX_OUE_DOMAIN as MAX_OUE_DOMAIN,
)
from geoldp.reports.release import (
    MAX_PAD_LENGTH as MAX_PAD_LENGTH,
)
from geoldp.reports.release import (
    STATISTICS as STATISTICS,
)
from geoldp.reports.release import (
    report as report,
)
from geoldp.reports.release import (
    scheme as scheme,
)

__all__ = ["choose_oracle", "oracle"]
