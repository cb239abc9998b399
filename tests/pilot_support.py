"""Shared by the planner's pilot tests: a small synthetic city and a checked plan over its populations."""

from __future__ import annotations

from typing import Any

import geoldp
from geoldp import designs


def city(n_trips: int = 400) -> tuple[Any, Any, Any]:
    """P, trips and a 5 × 5 zone grid over P's bounds (seed 4)."""
    from geoldp.datasets import synthetic_city

    pts, trips = synthetic_city(n_points=300, n_trips=n_trips, seed=4)
    return pts, trips, geoldp.zone_grid(tuple(pts.total_bounds), cells=5)


def checked_pilot_plan() -> tuple[Any, list[str]]:
    """A plan over the populations fitted to a pilot, checked; with its per-population error columns.

    Checked: the same plan twice (seeded), one to three populations with one recommended row, and the
    predicted error's interval over every population's error when there are several.
    """
    pilot = designs.Pilot()
    pts, trips, zones = city(400)
    est = pilot.estimate(pilot.release(trips, epsilon=24.0, zones=zones, rng=6), zones)
    kw = dict(epsilon=4.0, n=400, pilot=est, designs=["pointem", "report:visited_zone"], max_length=8)
    a = geoldp.plan(pts, zones, rng=0, **kw)
    b = geoldp.plan(pts, zones, rng=0, **kw)
    assert a.equals(b) and a.attrs["recommended"] == b.attrs["recommended"]
    per_population = [c for c in a.columns if c.startswith("error_pilot:")]
    assert 1 <= len(per_population) <= 3 and a["recommended"].sum() == 1
    if len(per_population) > 1:  # the predicted error's interval covers every plausible population's error
        errs = a[per_population]
        assert (a["error_low"] <= errs.min(axis=1) + 1e-12).all()
        assert (a["error_high"] >= errs.max(axis=1) - 1e-12).all()
    return a, per_population
