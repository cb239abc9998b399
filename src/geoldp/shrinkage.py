"""Shrinkage and combination of count estimates: post-processing of a release, never of private data.

A report's unbiased counts are noisy, and where the noise is larger than the signal a count is better
shrunk toward a no-data answer (:mod:`geoldp.nodata`): :func:`shrink_to_baseline` (one weight for every
cell) and :func:`shrink_empirical_bayes` (cell by cell, toward the no-data shapes the release is closest
to); :func:`shrunk_counts` applies the latter to a report's estimate table. :func:`inverse_variance` and
:func:`blend` combine independent estimates of the same counts. Every function reads estimates, their
standard errors and public shapes only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from geoldp._core import frames as _frames
from geoldp.nodata import length_pool, no_data_shapes, uniform_answer
from geoldp.reports import estimators as rest
from geoldp.zones import check_zones, zone_of_vertices


def shrink_to_baseline(estimate: Any, std_error: Any, baseline: Any) -> np.ndarray:
    """Shrink an unbiased count estimate toward the uniform no-data answer (positive-part James–Stein).

    Post-processing of a release: it reads the estimate, its standard errors and the public baseline
    shape only. The baseline is scaled to the estimate's total; the weight of the estimate is
    ``max(0, 1 − Σ se² / Σ (estimate − baseline)²)``, so a release that carries less signal than noise
    returns the baseline, and a precise one is left almost as it is. The result is projected onto the
    non-negative counts with the estimate's total (as ``estimate_counts``' ``projected`` column).

    Parameters
    ----------
    estimate : array_like
        Unbiased estimated counts (e.g. ``estimate_counts(...)["estimate"]``).
    std_error : array_like
        Their standard errors (same shape).
    baseline : array_like
        The no-data answer's shape (e.g. :func:`geoldp.nodata.uniform_answer`); only its proportions matter.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> shrink_to_baseline([10.0, -2.0, 4.0], [100.0, 100.0, 100.0], [1.0, 1.0, 1.0]).tolist()
    [4.0, 4.0, 4.0]
    """
    est = np.asarray(estimate, dtype=np.float64)
    se = np.asarray(std_error, dtype=np.float64)
    base = np.asarray(baseline, dtype=np.float64)
    total = max(float(est.sum()), 0.0)
    target = base / base.sum() * total if base.sum() > 0 else np.full(est.shape, total / max(est.size, 1))
    gap = float(np.sum((est - target) ** 2))
    weight = max(0.0, 1.0 - float(np.sum(se**2)) / gap) if gap > 0 else 0.0
    return rest.project_simplex(target + weight * (est - target), total)


def shrink_empirical_bayes(estimate: Any, std_error: Any, shapes: Any) -> np.ndarray:
    """Shrink an unbiased count estimate cell by cell toward no-data shapes fitted to it (empirical Bayes).

    Post-processing of a release: it reads the estimate, its standard errors and public shapes only (the
    no-data answers, e.g. P's zone shares and :func:`~geoldp.nodata.uniform_visits`). The target is the
    non-negative combination of the shapes closest to the estimate (least squares), so the release itself
    says which no-data answer, or which mix of them, it is nearest. Each cell's true count is modelled as
    the target plus a deviation of variance τ²·target (over-dispersion proportional to the count, as in a
    Gamma–Poisson model); τ² is estimated from the release by the method of moments, ``max(0, Σ ((estimate
    − target)² − se²) / Σ target)``, and each cell keeps the share ``τ²·targetᵢ / (τ²·targetᵢ + seᵢ²)`` of
    its own deviation. A release with less signal than noise returns the fitted target; a precise one is
    left almost as it is; cells with a large no-data count keep more of their own estimate than near-empty
    ones. The result is projected onto the non-negative counts with the estimate's total (as
    ``estimate_counts``' ``projected`` column).

    Parameters
    ----------
    estimate, std_error : array_like
        Unbiased estimated counts and their standard errors, as for :func:`shrink_to_baseline`.
    shapes : array_like
        One no-data shape (same length as ``estimate``) or several stacked as rows; only their span
        matters (they are scaled by the fit).

    Returns
    -------
    numpy.ndarray

    See Also
    --------
    shrink_to_baseline : one weight for every cell, toward one shape.

    Examples
    --------
    A release whose deviations from the shape are within its noise returns the fitted shape:

    >>> shrink_empirical_bayes([12.0, 9.0, 3.0], [10.0, 10.0, 10.0], [2.0, 1.0, 1.0]).round(6).tolist()
    [12.0, 6.0, 6.0]

    A precise release keeps its own counts:

    >>> shrink_empirical_bayes([30.0, 0.0, 10.0], [0.1, 0.1, 0.1], [1.0, 1.0, 1.0]).round(1).tolist()
    [30.0, 0.0, 10.0]
    """
    from scipy.optimize import nnls

    est = np.asarray(estimate, dtype=np.float64)
    se = np.asarray(std_error, dtype=np.float64)
    basis = np.atleast_2d(np.asarray(shapes, dtype=np.float64))
    if est.ndim != 1 or se.shape != est.shape or basis.shape[1] != est.shape[0]:
        raise ValueError(
            "shrink_empirical_bayes needs an estimate, standard errors of the same length and shapes "
            f"with one value per cell; got {est.shape}, {se.shape} and {basis.shape}."
        )
    if not (np.isfinite(est).all() and np.isfinite(se).all() and (se >= 0).all()):
        raise ValueError(
            "shrink_empirical_bayes needs finite estimates and finite, non-negative standard errors."
        )
    if not (np.isfinite(basis).all() and (basis >= 0).all()):
        raise ValueError(
            "The shapes of shrink_empirical_bayes must be finite and non-negative (no-data counts)."
        )
    total = max(float(est.sum()), 0.0)
    coef, _ = nnls(basis.T, est)
    target = basis.T @ coef
    if not target.sum() > 0:  # nothing of the shapes fits: an even spread of the total
        target = np.full(est.shape, total / max(est.size, 1))
    gap = (est - target) ** 2
    tau2 = max(0.0, float(np.sum(gap - se**2)) / float(target.sum())) if target.sum() > 0 else 0.0
    prior = tau2 * target
    with np.errstate(invalid="ignore", divide="ignore"):
        keep = np.where(prior + se**2 > 0, prior / (prior + se**2), 1.0)
    return rest.project_simplex(target + keep * (est - target), total)


def shrunk_counts(estimates: pd.DataFrame, points: Any, zones: Any, *, lengths: Any = None) -> pd.Series:
    """A report's counts shrunk toward the no-data answers: the answer of the ``report:*:eb`` designs.

    Post-processing of a release (:func:`shrink_empirical_bayes` on its ``estimate`` and ``std_error``),
    reading only the estimate table, the public points and the zones the reports were made over, and
    optionally the public length distribution.

    Parameters
    ----------
    estimates : pandas.DataFrame
        :func:`geoldp.reports.estimate_counts` of a ``"visited_zone"`` or ``"od"`` report table (without
        ``include_outside``).
    points : PointSet, GeoDataFrame or array of (lon, lat)
        The public points (P).
    zones : GeoDataFrame or GeoSeries
        The same public zones as the reports'.
    lengths : array_like of int, optional
        The trajectories' lengths, public or assumed (one per trajectory, or a sample of the
        distribution): adds :func:`~geoldp.nodata.uniform_visits` to the shapes of zone visits.
        Without it the zone counts are shrunk toward P's zone shares alone; OD counts always toward
        their outer product.

    Returns
    -------
    pandas.Series
        ``shrunk``, one value per row of ``estimates`` (same index), non-negative, summing to the
        estimate's total.
    """
    caller = "geoldp.shrinkage.shrunk_counts"
    ps = _frames.as_pointset(points, caller=caller)
    z = check_zones(zones, caller=caller)
    zone_of_point = zone_of_vertices(z, np.asarray(ps.lon), np.asarray(ps.lat))
    if not isinstance(estimates, pd.DataFrame):
        raise TypeError(
            f"The 'estimates' of {caller} must be the DataFrame of geoldp.reports.estimate_counts."
        )
    od = list(estimates.index.names) == ["origin", "destination"]
    cells = z.size**2 if od else z.size
    if not ({"estimate", "std_error"} <= set(estimates.columns) and len(estimates) == cells):
        raise ValueError(
            f"{caller} needs the table of geoldp.reports.estimate_counts(reports, zones) of a visited-zone "
            f"or OD report over these {z.size} zones ({cells} rows, columns estimate and std_error; without "
            "include_outside)."
        )
    if od or lengths is None:
        shapes = uniform_answer(zone_of_point, z.size, od=od)
    else:
        shapes = no_data_shapes(zone_of_point, z.size, length_pool(lengths, caller), od=False)
    values = shrink_empirical_bayes(
        estimates["estimate"].to_numpy(np.float64), estimates["std_error"].to_numpy(np.float64), shapes
    )
    return pd.Series(values, index=estimates.index, name="shrunk")


def inverse_variance(estimates: Any, std_errors: Any) -> tuple[np.ndarray, np.ndarray]:
    """Cell by cell, the inverse-variance weighted mean of independent estimates of the same counts.

    ``x̂ = Σ_i x̂_i / σ_i² / Σ_i 1 / σ_i²`` and ``σ̂ = (Σ_i 1 / σ_i²)^-1/2``: the minimum-variance
    unbiased combination when the parts are unbiased and independent; for a biased part, pass its
    root-mean-square error as ``σ_i`` (the weights then minimise the mean squared error when the errors
    are independent). Post-processing: it reads the estimates and their errors only. A part whose error
    is not finite or not positive does not weigh on that cell; a cell no part weighs on is NaN.
    (:func:`geoldp.combine` does the same for release tables, with each part's own interval.)

    Parameters
    ----------
    estimates : sequence of array_like
        One vector of estimates per part (same shape).
    std_errors : sequence of array_like
        Their standard errors (or root-mean-square errors), same shapes.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The combined estimates and their standard errors.

    Raises
    ------
    ValueError
        No part, or parts and errors of different numbers or shapes.

    Examples
    --------
    >>> est, se = inverse_variance([[10.0, 4.0], [20.0, 8.0]], [[1.0, 2.0], [2.0, 2.0]])
    >>> est.tolist(), se.round(3).tolist()
    ([12.0, 6.0], [0.894, 1.414])
    """
    x = np.asarray(estimates, dtype=np.float64)
    s = np.asarray(std_errors, dtype=np.float64)
    if x.ndim < 1 or x.shape[0] == 0 or x.shape != s.shape:
        raise ValueError(
            "geoldp.shrinkage.inverse_variance needs one std_errors vector per estimates vector, of the same "
            f"shape (got {x.shape} and {s.shape})."
        )
    ok = np.isfinite(x) & np.isfinite(s) & (s > 0)
    w = np.where(ok, 1.0 / np.where(ok, s, 1.0) ** 2, 0.0)
    total = w.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = (w * np.where(ok, x, 0.0)).sum(axis=0) / total
        se = 1.0 / np.sqrt(total)
    est[total == 0] = np.nan
    return est, se


def blend(report_answer: np.ndarray, trajectory_answer: np.ndarray, report_share: float) -> np.ndarray:
    """A hybrid's answer: the report's and the trajectories' answers weighted by their shares of ε.

    Examples
    --------
    >>> blend(np.array([4.0, 0.0]), np.array([0.0, 4.0]), 0.75).tolist()
    [3.0, 1.0]
    """
    return report_share * np.asarray(report_answer, float) + (1.0 - report_share) * np.asarray(
        trajectory_answer, float
    )
