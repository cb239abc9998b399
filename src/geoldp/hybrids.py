"""Hybrid releases: one user's ε split between a TP/ATP trajectory and an aggregate report, in one call.

:func:`hybrid` (``geoldp.hybrid``, ``gdf.ldp.hybrid``) runs ``gdf.ldp.perturb`` at ε·``fraction`` and
:func:`geoldp.report` at the rest, on the same rows; :doc:`/reports` ("Hybrid releases: one budget, two
designs") gives the composition, the exact check of the split, the accountant's check and the ``hybrid``
ledger entry. Each part is charged as it is released. Combine what both releases say into one estimate
per query with :func:`geoldp.combine`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from geoldp import accounting
from geoldp._core import frames as _frames
from geoldp._core.ledger import attach, require
from geoldp.reports import report


def split_epsilon(epsilon: float, fraction: float) -> tuple[float, float]:
    """``(ε_trajectory, ε_report)`` with ``ε_trajectory = ε·fraction`` and an exact sum of at most ε.

    Examples
    --------
    >>> split_epsilon(4.0, 0.5)
    (2.0, 2.0)
    """
    first = float(epsilon) * float(fraction)
    second = float(epsilon) - first
    while Fraction(first) + Fraction(second) > Fraction(float(epsilon)):  # rounding up by one ulp at most
        second = math.nextafter(second, 0.0)
    return first, second


def hybrid(
    gdf: Any,
    points: Any,
    zones: Any,
    *,
    epsilon: float,
    fraction: float = 0.5,
    mechanism: str = "atp",
    statistic: str = "visited_zone",
    rng: Any = None,
    accountant: Any = None,
    user_col: Any = None,
    report_options: dict[str, Any] | None = None,
    **options: Any,
) -> tuple[Any, Any]:
    """Release every trajectory twice under one budget: a TP/ATP trajectory and an aggregate report.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        One LineString per row.
    points : PointSet, GeoDataFrame or GeoSeries of Points
        The public point set of the trajectory release.
    zones : GeoDataFrame or GeoSeries of polygons
        The public zones of the report.
    epsilon : float
        The total budget of one trajectory (row).
    fraction : float, default 0.5
        Share of ε for the trajectory release, in (0, 1); the report gets the rest.
    mechanism : {"atp", "tp", "pointem"}, default "atp"
    statistic : {"visited_zone", "od", "transitions"}, default "visited_zone"
    rng : optional
        As in :func:`geoldp.report`; one source drives both parts (seeded: reproducible).
    accountant, user_col : optional
        Checked for the whole ε before any draw; each part is charged when it is released.
    report_options : dict, optional
        ``oracle``, ``pad_length`` for the report.
    **options
        Options of the trajectory mechanism.

    Returns
    -------
    (geopandas.GeoDataFrame, pandas.DataFrame)
        The trajectory release and the report table; each ledger has a ``hybrid`` entry.

    Examples
    --------
    >>> import geopandas as gpd
    >>> from shapely.geometry import LineString, Point
    >>> from geoldp import ledger_of
    >>> from geoldp import zone_grid
    >>> pts = gpd.GeoDataFrame(geometry=[Point(0.1 * i, 0.1 * i) for i in range(6)], crs="EPSG:4326")
    >>> trips = gpd.GeoDataFrame(geometry=[LineString([(0.0, 0.0), (0.5, 0.5)])] * 8, crs="EPSG:4326")
    >>> traj, rep = hybrid(trips, pts, zone_grid(pts, cells=2), epsilon=4.0, rng=0)
    >>> ledger_of(traj).epsilon, ledger_of(rep).epsilon
    (2.0, 2.0)
    """
    from geoldp._core.randomness import resolve_rng
    from geoldp._core.validation import MIN_EPSILON, check_release_epsilon

    caller = "geoldp.hybrid"
    gdf = _frames.check_frame(gdf, caller=caller)
    epsilon = check_release_epsilon(epsilon, caller=caller)
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0.0 < float(fraction) < 1.0:
        raise ValueError(f"The 'fraction' parameter of {caller} must be a float in (0, 1). Got {fraction!r}.")
    eps_traj, eps_rep = split_epsilon(epsilon, fraction)
    if min(eps_traj, eps_rep) < MIN_EPSILON:  # each part is a release of its own: the same lower end
        raise ValueError(
            f"The 'epsilon' parameter of {caller} ({epsilon:g}) split by fraction={float(fraction):g} gives "
            f"a part of {min(eps_traj, eps_rep):g}, below the smallest budget a release takes, "
            f"{MIN_EPSILON:g}. Use a larger epsilon or a fraction nearer 0.5."
        )
    # refuse the whole ε up front (nothing drawn or charged); the parts charge themselves below
    accounting.charge_release(accountant, gdf, user_col, epsilon, caller=caller)
    source = resolve_rng(rng)  # once: both parts draw their stream keys from this one source
    traj = gdf.ldp.perturb(  # the accessor: this module stays below geoldp.accessor in the layers
        points,
        mechanism=mechanism,
        epsilon=eps_traj,
        rng=source,
        accountant=accountant,
        user_col=user_col,
        **options,
    )
    rep = report(
        gdf,
        zones,
        statistic=statistic,
        epsilon=eps_rep,
        rng=source,
        accountant=accountant,
        user_col=user_col,
        **(report_options or {}),
    )
    note = {
        "total_epsilon": epsilon,
        "trajectory_epsilon": eps_traj,
        "report_epsilon": eps_rep,
        "composition": "sequential: both releases of a row together spend at most total_epsilon",
    }
    traj_ledger = require(traj, what="The trajectory part", caller=caller)
    rep_ledger = require(rep, what="The report part", caller=caller)
    note["release_ids"] = [traj_ledger.release_id, rep_ledger.release_id]
    attach(traj, traj_ledger.replace(hybrid=dict(note)))
    attach(rep, rep_ledger.replace(hybrid=dict(note)))
    return traj, rep
