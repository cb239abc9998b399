"""Point-wise and range-count scores: NE, PRQ(δ) and the relative error of range queries."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import pandas as pd

from geoldp._core.frames import as_regions
from geoldp.metrics._pairing import pair, per_trajectory_mean, point_distances_m
from geoldp.queries import check_how, range_counts


def normalized_error(original: Any, perturbed: Any, *, points: Any = None) -> float:
    r"""Normalised error (NE) in km: the mean over trajectories of the mean point displacement.

    .. math:: NE = \frac{1}{|T|} \sum_{\tau \in T} \frac{1}{|\tau|}
              \sum_{i=1}^{|\tau|} d(x_i, \hat x_i)

    with d the haversine distance in km (ALGORITHM §13.2). Lower is better; 0 for identical inputs.

    Parameters
    ----------
    original, perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories matched by position (same number of rows and of points per row).
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index-array input.

    Returns
    -------
    float
        NE in km.

    Raises
    ------
    ValueError
        If the row counts or the number of points of a row differ.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.0, 1.0]])          # 1 degree of latitude apart: 111.19 km
    >>> round(normalized_error([[0, 0], [1]], [[0, 1], [1]], points=P), 3)   # (55.597 + 0) / 2
    27.799
    """
    to, tp, _ = pair(original, perturbed, points, caller="normalized_error")
    d = point_distances_m(to, tp) / 1000.0
    return float(np.mean(per_trajectory_mean(d, to)))


normalised_error = normalized_error


def check_deltas(delta_km: Any, caller: str) -> tuple[np.ndarray, bool]:
    arr = np.asarray(delta_km, dtype=np.float64)
    scalar = arr.ndim == 0
    arr = np.atleast_1d(arr)
    if arr.ndim != 1 or arr.size == 0 or not np.all((arr >= 0) & np.isfinite(arr)):
        raise ValueError(
            f"The 'delta_km' parameter of {caller} must be a float or a non-empty list of floats in "
            "[0, inf). "
            f"Got {delta_km!r} instead."
        )
    return arr, scalar


def preservation_range_query(
    original: Any, perturbed: Any, delta_km: Any, *, points: Any = None
) -> float | np.ndarray:
    r"""Preservation range query PRQ(δ): mean share of points displaced by at most δ km.

    .. math:: PRQ(\delta) = \frac{1}{|T|} \sum_{\tau \in T} \frac{1}{|\tau|}
              \sum_{i=1}^{|\tau|} 1[d(x_i, \hat x_i) \le \delta]

    (ALGORITHM §13.2). Higher is better; 1 for identical inputs.

    Parameters
    ----------
    original, perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories matched by position (same number of rows and of points per row).
    delta_km : float or sequence of float
        Threshold(s) δ in km.
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index-array input.

    Returns
    -------
    float or numpy.ndarray
        PRQ for a scalar δ; an array of the same length for a sequence of δ.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.0, 1.0]])          # 111.19 km apart
    >>> preservation_range_query([[0, 0], [1]], [[0, 1], [1]], [1.0, 200.0], points=P).tolist()
    [0.75, 1.0]
    """
    caller = "preservation_range_query"
    deltas, scalar = check_deltas(delta_km, caller)
    to, tp, _ = pair(original, perturbed, points, caller=caller)
    d = point_distances_m(to, tp)
    hit = (d[:, None] <= deltas[None, :] * 1000.0).astype(np.float64)
    prq = per_trajectory_mean(hit, to).mean(axis=0)
    return float(prq[0]) if scalar else prq


# --------------------------------------------------------------------------------------------------
# range queries
# --------------------------------------------------------------------------------------------------


def resolve_sanity_bound(sanity_bound: Any, n_traj: int, caller: str) -> float:
    if isinstance(sanity_bound, str) and sanity_bound == "auto":
        return max(1.0, 0.01 * n_traj)
    if isinstance(sanity_bound, bool) or not isinstance(sanity_bound, numbers.Real):
        raise TypeError(
            f"The 'sanity_bound' parameter of {caller} must be 'auto' or a float. Got {sanity_bound!r}."
        )
    if not (0.0 < float(sanity_bound) < math.inf):
        raise ValueError(
            f"The 'sanity_bound' parameter of {caller} must be 'auto' or a float in the range (0, inf). "
            f"Got {sanity_bound!r} instead."
        )
    return float(sanity_bound)


def range_query_error(
    original: Any,
    perturbed: Any,
    regions: Any,
    *,
    points: Any = None,
    sanity_bound: Any = "auto",
    how: str = "points",
) -> pd.DataFrame:
    r"""Relative error of range-count queries (trajectories passing through each region).

    For every region R, with c(R) the number of original trajectories passing through R and ĉ(R) the number
    of perturbed ones (see :func:`geoldp.queries.range_count`),

    .. math:: RE(R) = \frac{|\hat c(R) - c(R)|}{\max(c(R), b)}

    The **sanity bound** b keeps regions with tiny true counts from dominating (and avoids division by 0):
    by default b = max(1, 1 % of the number of trajectories), the convention of the trajectory-synthesis
    literature (e.g. AdaTrace, Gursoy et al., CCS 2018).

    Parameters
    ----------
    original, perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories (same number of rows).
    regions : Polygon, circle (lon, lat, radius_km), list of those, or GeoSeries of polygons
        Query regions. Bare shapely polygons are taken to be in the CRS of ``original`` (EPSG:4326 for index
        input); a GeoSeries is used in its own CRS.
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index-array input.
    sanity_bound : "auto" or float, default "auto"
        b above, as an absolute number of trajectories (> 0).
    how : {"points", "line"}, default "points"
        What "passing through" means (see :func:`geoldp.queries.range_count`).

    Returns
    -------
    pandas.DataFrame
        One row per region: ``region`` (position), ``true_count``, ``perturbed_count``, ``relative_error``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.0, 1.0]])
    >>> t = range_query_error([[0, 0], [0], [1]], [[0, 1], [1], [1]], [(0.0, 0.0, 1.0)],
    ...                       points=P, sanity_bound=1.0)
    >>> t[["true_count", "perturbed_count", "relative_error"]].values.tolist()
    [[2.0, 1.0, 0.5]]
    """
    caller = "range_query_error"
    how = check_how(how, caller)
    to, tp, _ = pair(original, perturbed, points, caller=caller, pointwise=False)
    b = resolve_sanity_bound(sanity_bound, to.n_trajectories, caller)
    regs, _ = as_regions(regions, caller=caller)
    if not regs:
        raise ValueError(f"The 'regions' parameter of {caller} must contain at least one region.")
    c = range_counts(to, regs, how)
    # Bare polygons are in the CRS of 'original'; evaluate them there for both inputs.
    from dataclasses import replace

    regs_p = [r if r.kind == "circle" or r.crs is not None else replace(r, crs=to.crs) for r in regs]
    chat = range_counts(tp, regs_p, how)
    err = np.abs(chat - c) / np.maximum(c, b)
    return pd.DataFrame(
        {"region": np.arange(len(regs)), "true_count": c, "perturbed_count": chat, "relative_error": err}
    )
