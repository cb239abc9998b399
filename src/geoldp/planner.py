"""Plan a collection before any ε is spent: which design answers the question, from public inputs only.

:func:`plan` simulates every design that answers the question on **no-data populations** built from
public inputs (random walks over the public points P, starting anywhere in P or at a few random hubs,
with the given length distribution; or a public prior population), measures each design's error
against that population's exact answer, and returns a table: expected error and interval width per
design, the no-data baselines (uniform over P; constant at P's 1-median; for the zone questions also P's
zone shares, one visit per trajectory), the recommended design, and the number of users each design
needs for a target error.

* Trajectory designs (TP, ATP, PointEM) are simulated: each simulated trajectory is released with
  :func:`geoldp.perturb_trajectories` and the raw counts of the release are compared with the truth.
* LDPTrace (:func:`geoldp.synthesize`, on a 6 × 6 grid over P's box) is simulated: the collection of
  n users' reports, the Markov model and the synthetic trajectories, whose zone counts are compared.
* Report designs (:func:`geoldp.report`) use the closed-form variance of their estimator
  (:mod:`geoldp.reports.estimators`): the population's expected report frequencies plus Gaussian noise of
  that variance, then the same projection as the estimator.
* Shrunk reports (``report:*:shrunk``) post-process the same release with :func:`shrink_to_baseline`
  (positive-part James–Stein toward the uniform answer): never far from the baseline when the release
  carries little, close to the plain estimate when it carries much.
* Empirical-Bayes reports (``report:*:eb``; one visited zone, ℓ = 2 or 3 padded, the OD pair) post-process
  the same release with :func:`shrink_empirical_bayes`: toward the mix of the no-data answers
  (:func:`no_data_shapes`) the release itself is closest to, cell by cell, each cell keeping as much of
  its own estimate as its signal over its noise allows.
* Padded reports (``report:visited_zone:pad<ℓ>``, ``padded`` = ℓ 3; ℓ ∈ {2, 3, 5, 8}, plain or
  ``:shrunk``) pad each trajectory's set of visited zones to ℓ and report one sampled item; ℓ × the
  debiased frequency estimates the **visit counts** (exact for trajectories with at most ℓ zones), where
  ℓ = 1 estimates sampled-zone frequencies (each trajectory counted 1/|set| in each of its zones). The
  planner picks ℓ by simulating each on the population drawn from the public length distribution.
* Coarse-to-fine reports (``report:*:coarse``) report over a coarser public grid
  (:func:`geoldp.designs.coarse_zones`, about half the zones' resolution per side; visited zones with
  ℓ = 2, or 5 for ``coarse:pad5``), shrink the coarse estimate, and spread it to the asked zones by P's
  points within each coarse cell (:func:`geoldp.designs.spread_counts`): less noise, a bias where the
  population is not spread like P. Each is one report at the whole ε; the rest is post-processing.
* The hybrid (``hybrid:atp+report@0.5``) splits ε between an ATP trajectory and a shrunk report and
  averages their answers (:func:`blend`). It mixes two scales where the question is about zone visits:
  the one-zone report estimates each trajectory's 1/|set| share of a zone, ATP's counts are visits.
* The inverse-variance hybrids (``hybrid:atp+report:ivw@s``, s = 0.5 or 0.75 the report's share of ε)
  combine like with like: a padded report (ℓ = 3 visited zones, which estimates visit counts; the OD
  report for OD flows) and ATP's raw counts of the same cells, weighted per cell by the inverse of their
  squared errors (:func:`inverse_variance`): the report's closed-form standard error, and for ATP, which
  is biased, its **root-mean-square deviation** from the truth per cell, simulated before any release
  from public inputs (:func:`trajectory_rms`: random walks over P with the public lengths; at least the
  count one simulated trajectory stands for). The planner simulates the design as it is run: the RMS
  comes from walks of its own, not from the population the design is judged on.

The no-data populations are random walks over P whose steps follow a published law of human
displacements (Gonzalez et al., Nature 2008), never a constant fitted to the data it is judged on;
``population="robust"`` simulates three start rules and recommends the row with the smallest worst regret.

The designs are a registry (:data:`DESIGNS`, name → :class:`DesignSpec`); add one with
:func:`register_design`.

Errors (lower is better):

``zone_visits``
    L1 distance between the normalised zone-visit distributions (trajectories visiting each zone), in
    [0, 2].
``hotspots``
    1 − precision of the top-k zones (k = min(10, zones // 2)).
``od_flows``
    L1 distance between the normalised OD distributions over zone pairs (trajectories starting or ending
    outside every zone are left out), in [0, 2].
``range_counts``
    mean relative error of the number of trajectories passing each zone, with a sanity bound of 1 % of
    the users (so that empty zones do not dominate).

The simulated population is not the real one: the planner says what a design can do on populations
*like* the simulated ones (a public prior makes that closer to the truth). It never reads private data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from geoldp import _frames, ldptrace, metrics
from geoldp._validation import (
    MAX_PLAN_USERS,
    check_count,
    check_lengths,
    check_option,
    check_release_epsilon,
)
from geoldp.designs import coarse_zones, spread_counts, spread_matrix
from geoldp.geo import haversine_array_m
from geoldp.reports import estimators as rest
from geoldp.reports import release as rrel
from geoldp.reports.zones import check_zones, zone_of_vertices
from geoldp.trajectory import perturb_trajectories

__all__ = [
    "DESIGNS",
    "POPULATIONS",
    "QUESTIONS",
    "DesignSpec",
    "Simulation",
    "blend",
    "inverse_variance",
    "no_data_shapes",
    "plan",
    "register_design",
    "shrink_empirical_bayes",
    "shrink_to_baseline",
    "shrunk_counts",
    "trajectory_rms",
    "uniform_answer",
    "uniform_visits",
]

#: The questions a plan can be asked.
QUESTIONS = ("zone_visits", "hotspots", "od_flows", "range_counts")

#: Trajectories in a simulated population (at most; never more than ``n``).
_SIM_MAX = 2000
#: Repetitions of each simulated release (the expected error is their mean).
_REPS = 3
#: Repetitions of a report design's closed-form simulation: cheap, and a shrunk report's error varies much
#: from draw to draw, so more of them keep the plan's ranking of close designs from being a coin toss.
_REPORT_REPS = 20


@dataclass
class Simulation:
    """A no-data population and the public configuration a design is simulated on (no private data).

    Attributes
    ----------
    ps : PointSet
    zone_of_point : ndarray
        Zone position of every public point (``n_zones`` = outside).
    n_zones : int
    seqs : list of ndarray
        The simulated trajectories (indices into P).
    n : int
        Users the plan is for (the population stands for n users).
    epsilon : float
    rng : numpy.random.Generator
        Simulation randomness (public; never used for a release).
    """

    ps: Any
    zone_of_point: np.ndarray
    n_zones: int
    seqs: list[np.ndarray]
    n: int
    epsilon: float
    rng: np.random.Generator
    zones: Any = None  # the checked public zones (for designs whose output is not on P, e.g. LDPTrace)

    def visits(self, seqs: list[np.ndarray]) -> np.ndarray:
        """Trajectories visiting each zone (outside excluded)."""
        k = self.n_zones
        out = np.zeros(k, dtype=np.float64)
        for s in seqs:
            z = np.unique(self.zone_of_point[s])
            out[z[z < k]] += 1
        return out

    def od(self, seqs: list[np.ndarray]) -> np.ndarray:
        """OD counts over zone pairs (``k × k`` flattened; an endpoint outside is left out)."""
        return self.od_of_zones([self.zone_of_point[s] for s in seqs])

    def visits_of_zones(self, zone_seqs: list[np.ndarray]) -> np.ndarray:
        """Trajectories visiting each zone, from each trajectory's sequence of zone positions."""
        k = self.n_zones
        out = np.zeros(k, dtype=np.float64)
        for z in zone_seqs:
            u = np.unique(z)
            out[u[u < k]] += 1
        return out

    def od_of_zones(self, zone_seqs: list[np.ndarray]) -> np.ndarray:
        """OD counts over zone pairs from each trajectory's sequence of zone positions."""
        k = self.n_zones
        o = np.array([z[0] for z in zone_seqs], dtype=np.int64)
        d = np.array([z[-1] for z in zone_seqs], dtype=np.int64)
        ok = (o < k) & (d < k)
        return np.bincount(o[ok] * k + d[ok], minlength=k * k).astype(np.float64)


@dataclass(frozen=True)
class DesignSpec:
    """A design the planner can simulate.

    ``simulate(sim, question)`` returns ``(estimates, half_widths)``: a list of estimated answer vectors
    (zone visits, or OD counts, at the scale of ``sim.n`` users; one per repetition) and the 95 %
    interval half-width of each cell (or ``None`` when the design has no interval).
    """

    questions: tuple[str, ...]
    simulate: Callable[[Simulation, str], tuple[list[np.ndarray], np.ndarray | None]]
    kind: str


def _needs(question: str) -> str:
    return "od" if question == "od_flows" else "visits"


def _trajectory_design(mechanism: str) -> DesignSpec:
    def simulate(sim: Simulation, question: str) -> tuple[list[np.ndarray], np.ndarray | None]:
        scale = sim.n / len(sim.seqs)
        out = []
        for _ in range(_REPS):
            seed = int(sim.rng.integers(2**63 - 1))
            rel = perturb_trajectories(sim.seqs, sim.ps, mechanism=mechanism, epsilon=sim.epsilon, rng=seed)
            counts = sim.od(rel) if _needs(question) == "od" else sim.visits(rel)
            out.append(counts * scale)
        return out, None

    return DesignSpec(QUESTIONS, simulate, "trajectory")


def _report_frequencies(sim: Simulation, des: rrel.Design) -> np.ndarray:
    """Expected number of reports of each domain value (sampling probabilities summed over users)."""
    k = sim.n_zones + 1
    f = np.zeros(des.d, dtype=np.float64)
    for s in sim.seqs:
        z = sim.zone_of_point[s]
        items = np.unique(z) if des.statistic == "visited_zone" else np.array([z[0] * k + z[-1]])
        m = max(items.shape[0], des.pad_length)
        f[items] += 1.0 / m
        if m > items.shape[0]:
            f[des.base : des.base + m - items.shape[0]] += 1.0 / m
    return f * (sim.n / len(sim.seqs))


def _report_design(statistic: str, pad: int, *, estimator: str = "projected") -> DesignSpec:
    def simulate(sim: Simulation, question: str) -> tuple[list[np.ndarray], np.ndarray | None]:
        return _report_answers(sim, statistic, pad, sim.epsilon, estimator=estimator)

    questions = ("od_flows",) if statistic == "od" else ("zone_visits", "hotspots", "range_counts")
    return DesignSpec(questions, simulate, "report")


def no_data_shapes(zone_of_point: np.ndarray, n_zones: int, lengths: Any, *, od: bool) -> np.ndarray:
    """The no-data answers' shapes a report's estimate is shrunk toward (rows; public inputs only).

    For OD flows the outer product of P's zone shares; for zone questions P's zone shares (one visit per
    trajectory) and :func:`uniform_visits` over the public ``lengths`` (every point a uniform draw from P).

    Examples
    --------
    >>> no_data_shapes(np.array([0, 0, 1, 2]), 2, [1, 3], od=False).round(3).tolist()
    [[0.5, 0.25], [1.375, 0.828]]
    """
    share = uniform_answer(zone_of_point, n_zones, od=od)
    if od:
        return share[None, :]
    return np.vstack([share, uniform_visits(zone_of_point, n_zones, lengths)])


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
        distribution): adds :func:`uniform_visits` to the shapes of zone visits. Without it the zone
        counts are shrunk toward P's zone shares alone; OD counts always toward their outer product.

    Returns
    -------
    pandas.Series
        ``shrunk``, one value per row of ``estimates`` (same index), non-negative, summing to the
        estimate's total.
    """
    caller = "geoldp.planner.shrunk_counts"
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
        shapes = no_data_shapes(zone_of_point, z.size, _length_pool(lengths, caller), od=False)
    values = shrink_empirical_bayes(
        estimates["estimate"].to_numpy(np.float64), estimates["std_error"].to_numpy(np.float64), shapes
    )
    return pd.Series(values, index=estimates.index, name="shrunk")


def _report_answers(
    sim: Simulation, statistic: str, pad: int, epsilon: float, *, estimator: str, reps: int = _REPORT_REPS
) -> tuple[list[np.ndarray], np.ndarray]:
    """Simulated estimates of a report design at ``epsilon`` (closed-form variance, Gaussian noise).

    ``estimator``: ``"projected"`` (the estimator's non-negative projection), ``"shrunk"``
    (:func:`shrink_to_baseline`), ``"eb"`` (:func:`shrink_empirical_bayes`) or ``"unbiased"`` (the
    debiased estimate itself, as an inverse-variance combination needs it)."""
    des = rrel.design(statistic, sim.n_zones, epsilon, pad_length=pad, caller="geoldp.plan")
    f = _report_frequencies(sim, des)
    od = statistic == "od"
    sd = np.sqrt(rest.count_variance(f, sim.n, des.oracle, single=od))
    se = _answer(sim, statistic, sd * pad)
    if estimator == "shrunk":
        baseline = uniform_answer(sim.zone_of_point, sim.n_zones, od=od)
    elif estimator == "eb":
        shapes = no_data_shapes(sim.zone_of_point, sim.n_zones, [len(s) for s in sim.seqs], od=od)
    out = []
    for _ in range(reps):
        noisy = f + sd * sim.rng.standard_normal(f.shape[0])
        unbiased = _answer(sim, statistic, noisy * pad)
        if estimator == "unbiased":
            out.append(unbiased)
        elif estimator == "shrunk":
            out.append(shrink_to_baseline(unbiased, se, baseline))
        elif estimator == "eb":
            out.append(shrink_empirical_bayes(unbiased, se, shapes))
        else:
            out.append(_answer(sim, statistic, rest.project_simplex(noisy, float(sim.n)) * pad))
    return out, _answer(sim, statistic, rest.Z95 * sd * pad)


def _coarse_report_design(statistic: str, pad: int) -> DesignSpec:
    """A shrunk report over :func:`geoldp.designs.coarse_zones` of the asked zones, spread back to them."""

    def simulate(sim: Simulation, question: str) -> tuple[list[np.ndarray], np.ndarray | None]:
        if sim.zones is None:
            raise ValueError("A coarse-to-fine design needs the simulation's zones.")
        coarse = check_zones(coarse_zones(sim.zones.series), caller="geoldp.plan")
        zc = zone_of_vertices(coarse, np.asarray(sim.ps.lon), np.asarray(sim.ps.lat))
        matrix = spread_matrix(sim.zone_of_point, zc, sim.n_zones, coarse.size)
        csim = Simulation(sim.ps, zc, coarse.size, sim.seqs, sim.n, sim.epsilon, sim.rng, coarse)
        ests, _ = _report_answers(csim, statistic, pad, sim.epsilon, estimator="shrunk")
        # biased by the spreading: no interval is claimed
        return [spread_counts(e, matrix, od=statistic == "od") for e in ests], None

    questions = ("od_flows",) if statistic == "od" else ("zone_visits", "hotspots", "range_counts")
    return DesignSpec(questions, simulate, "report")


def uniform_answer(zone_of_point: np.ndarray, n_zones: int, *, od: bool) -> np.ndarray:
    """The uniform no-data answer's shape: zone shares of P (their outer product for OD), summing to ≤ 1."""
    share = np.bincount(zone_of_point, minlength=n_zones + 1)[:n_zones].astype(np.float64)
    share /= max(zone_of_point.shape[0], 1)
    return np.outer(share, share).reshape(-1) if od else share


def uniform_visits(zone_of_point: np.ndarray, n_zones: int, lengths: Any) -> np.ndarray:
    """Expected number of trajectories visiting each zone when every point is a uniform draw from P.

    A trajectory of length L whose points are independent uniform draws from P visits a zone of share s
    with probability 1 − (1 − s)^L, so the no-data answer to "how many trajectories visit each zone" is
    Σ_i 1 − (1 − s)^{L_i} over the (public) lengths: about L·s·n for small shares, not the s·n of one
    point per trajectory.

    Parameters
    ----------
    zone_of_point : ndarray of int
        Zone position of every public point (``n_zones`` = outside).
    n_zones : int
    lengths : array_like of int
        The trajectories' lengths (public, or the assumed public distribution's draws), one per trajectory.

    Returns
    -------
    ndarray of float, shape (n_zones,)
    """
    share = uniform_answer(zone_of_point, n_zones, od=False)
    values, counts = np.unique(np.asarray(lengths, dtype=np.int64), return_counts=True)
    miss = (1.0 - share)[:, None] ** values[None, :]  # zone × distinct length
    return (counts[None, :] * (1.0 - miss)).sum(axis=1)


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
        The no-data answer's shape (e.g. :func:`uniform_answer`); only its proportions matter.

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
    no-data answers, e.g. P's zone shares and :func:`uniform_visits`). The target is the non-negative
    combination of the shapes closest to the estimate (least squares), so the release itself says which
    no-data answer, or which mix of them, it is nearest. Each cell's true count is modelled as the target
    plus a deviation of variance τ²·target (over-dispersion proportional to the count, as in a
    Gamma–Poisson model); τ² is estimated from the release by the method of moments,
    ``max(0, Σ ((estimate − target)² − se²) / Σ target)``, and each cell keeps the share
    ``τ²·targetᵢ / (τ²·targetᵢ + seᵢ²)`` of its own deviation. A release with less signal than noise
    returns the fitted target; a precise one is left almost as it is; cells with a large no-data count
    keep more of their own estimate than near-empty ones. The result is projected onto the non-negative
    counts with the estimate's total (as ``estimate_counts``' ``projected`` column).

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


def _hybrid_design(mechanism: str, report_share: float) -> DesignSpec:
    """ε split: ``report_share`` to a shrunk report of the question's statistic, the rest to a trajectory."""

    def simulate(sim: Simulation, question: str) -> tuple[list[np.ndarray], np.ndarray | None]:
        statistic = "od" if _needs(question) == "od" else "visited_zone"
        # a simulation only (no release): the split of geoldp.hybrid.split_epsilon up to an ulp
        eps_rep = sim.epsilon * report_share
        eps_traj = sim.epsilon - eps_rep
        reps, _ = _report_answers(sim, statistic, 1, eps_rep, estimator="shrunk", reps=_REPS)
        trajectory = Simulation(
            sim.ps, sim.zone_of_point, sim.n_zones, sim.seqs, sim.n, eps_traj, sim.rng, sim.zones
        )
        trajs, _ = _trajectory_design(mechanism).simulate(trajectory, question)
        return [blend(r, t, report_share) for r, t in zip(reps, trajs, strict=True)], None

    return DesignSpec(QUESTIONS, simulate, "hybrid")


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
            "geoldp.planner.inverse_variance needs one std_errors vector per estimates vector, of the same "
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


#: Visited zones the inverse-variance hybrids pad to (the ``padded`` report's ℓ; a fixed choice).
_IVW_PAD = 3


def _ivw_hybrid_design(mechanism: str, report_share: float) -> DesignSpec:
    """ε split: ``report_share`` to a padded report (visit counts; the OD report for OD flows), the rest to a
    trajectory; the two answers combined per cell by :func:`inverse_variance`, then projected on the
    non-negative counts with their total."""

    def simulate(sim: Simulation, question: str) -> tuple[list[np.ndarray], np.ndarray | None]:
        od = _needs(question) == "od"
        statistic, pad = ("od", 1) if od else ("visited_zone", _IVW_PAD)
        eps_rep = sim.epsilon * report_share
        reps, half = _report_answers(sim, statistic, pad, eps_rep, estimator="unbiased", reps=_REPS)
        se = half / rest.Z95
        trajectory = Simulation(
            sim.ps, sim.zone_of_point, sim.n_zones, sim.seqs, sim.n, sim.epsilon - eps_rep, sim.rng, sim.zones
        )
        trajs, _ = _trajectory_design(mechanism).simulate(trajectory, question)
        # the trajectory part's error as the design computes it before any release (trajectory_rms): on
        # its own random walks over P with the population's lengths, never on the population itself
        walks = _walks(sim.ps, np.array([q.shape[0] for q in sim.seqs]), sim.rng, population="spread")
        rms = _rms(
            Simulation(sim.ps, sim.zone_of_point, sim.n_zones, walks, sim.n, trajectory.epsilon, sim.rng),
            question,
            mechanism,
        )
        out = []
        for rep, traj in zip(reps, trajs, strict=True):
            est, _ = inverse_variance([rep, traj], [se, rms])
            out.append(rest.project_simplex(np.nan_to_num(est), max(float(np.nansum(est)), 0.0)))
        # the trajectory part is biased: no interval is claimed
        return out, None

    return DesignSpec(QUESTIONS, simulate, "hybrid")


def _truth(sim: Simulation, question: str) -> np.ndarray:
    """The simulated population's exact answer at the scale of ``sim.n`` users."""
    counts = sim.od(sim.seqs) if _needs(question) == "od" else sim.visits(sim.seqs)
    return counts * (sim.n / len(sim.seqs))


def _answer(sim: Simulation, statistic: str, values: np.ndarray) -> np.ndarray:
    k = sim.n_zones
    if statistic == "od":
        return values[: (k + 1) ** 2].reshape(k + 1, k + 1)[:k, :k].reshape(-1)
    return values[:k]


def _ldptrace_design(grid_size: int) -> DesignSpec:
    """LDPTrace (:func:`geoldp.synthesize`) on an N × N grid over P's lon/lat box (public)."""

    def simulate(sim: Simulation, question: str) -> tuple[list[np.ndarray], np.ndarray | None]:
        lon, lat = np.asarray(sim.ps.lon), np.asarray(sim.ps.lat)
        box = (float(lon.min()), float(lat.min()), float(lon.max()), float(lat.max()))
        if not (box[2] > box[0] and box[3] > box[1]):  # a P on one line: widen its box by a tiny margin
            box = (box[0] - 1e-6, box[1] - 1e-6, box[2] + 1e-6, box[3] + 1e-6)
        grid = ldptrace.Grid(*box, n=grid_size)
        # the collection is simulated for n users: the population repeated (LDPTrace's noise scales with n)
        reps = -(-sim.n // len(sim.seqs))
        seqs = (sim.seqs * reps)[: sim.n]
        lengths = np.array([s.shape[0] for s in seqs], dtype=np.int64)
        idx = np.concatenate(seqs)
        cells, offsets = ldptrace.cell_sequences(
            lon[idx], lat[idx], np.concatenate([[0], np.cumsum(lengths)]), grid
        )
        cx, cy = grid.centres()
        zone_of_cell = zone_of_vertices(sim.zones, cx, cy)
        out = []
        for _ in range(_REPS):
            seed = int(sim.rng.integers(2**63 - 1))
            model = ldptrace.collect(cells, offsets, grid, sim.epsilon, rng=seed)
            syn, off = ldptrace.synthesize_cells(model, len(sim.seqs), rng=seed + 1)
            zone_seqs = [zone_of_cell[syn[a:b]] for a, b in zip(off[:-1], off[1:], strict=True) if b > a]
            counts = (
                sim.od_of_zones(zone_seqs) if _needs(question) == "od" else sim.visits_of_zones(zone_seqs)
            )
            out.append(counts * (sim.n / max(len(zone_seqs), 1)))
        return out, None

    return DesignSpec(QUESTIONS, simulate, "synthesis")


#: The designs the planner simulates (name → spec). Hybrids or other designs can be added with
#: :func:`register_design`.
DESIGNS: dict[str, DesignSpec] = {
    "tp": _trajectory_design("tp"),
    "atp": _trajectory_design("atp"),
    "pointem": _trajectory_design("pointem"),
    "ldptrace": _ldptrace_design(6),
    "report:visited_zone": _report_design("visited_zone", 1),
    "report:visited_zone:padded": _report_design("visited_zone", 3),
    "report:visited_zone:pad2": _report_design("visited_zone", 2),
    "report:visited_zone:pad5": _report_design("visited_zone", 5),
    "report:visited_zone:pad2:shrunk": _report_design("visited_zone", 2, estimator="shrunk"),
    "report:visited_zone:padded:shrunk": _report_design("visited_zone", 3, estimator="shrunk"),
    "report:visited_zone:pad5:shrunk": _report_design("visited_zone", 5, estimator="shrunk"),
    "report:visited_zone:pad8:shrunk": _report_design("visited_zone", 8, estimator="shrunk"),
    "report:visited_zone:coarse": _coarse_report_design("visited_zone", 2),
    "report:visited_zone:coarse:pad5": _coarse_report_design("visited_zone", 5),
    "report:od:coarse": _coarse_report_design("od", 1),
    "report:od": _report_design("od", 1),
    "report:visited_zone:shrunk": _report_design("visited_zone", 1, estimator="shrunk"),
    "report:od:shrunk": _report_design("od", 1, estimator="shrunk"),
    "report:visited_zone:eb": _report_design("visited_zone", 1, estimator="eb"),
    "report:visited_zone:pad2:eb": _report_design("visited_zone", 2, estimator="eb"),
    "report:visited_zone:padded:eb": _report_design("visited_zone", 3, estimator="eb"),
    "report:od:eb": _report_design("od", 1, estimator="eb"),
    "hybrid:atp+report@0.5": _hybrid_design("atp", 0.5),
    "hybrid:atp+report:ivw@0.5": _ivw_hybrid_design("atp", 0.5),
    "hybrid:atp+report:ivw@0.75": _ivw_hybrid_design("atp", 0.75),
}


def register_design(name: str, spec: DesignSpec) -> None:
    """Add (or replace) a design in :data:`DESIGNS`."""
    if not isinstance(spec, DesignSpec):
        raise TypeError("register_design needs a geoldp.planner.DesignSpec.")
    DESIGNS[str(name)] = spec


# --------------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------------


def _normalised(v: np.ndarray) -> np.ndarray:
    v = np.maximum(np.asarray(v, dtype=np.float64), 0.0)
    s = v.sum()
    return v / s if s > 0 else np.full(v.shape[0], 1.0 / max(v.shape[0], 1))


def _top(v: np.ndarray, k: int) -> set[int]:
    return set(np.lexsort((np.arange(v.shape[0]), -v))[:k].tolist())


def error_of(question: str, truth: np.ndarray, est: np.ndarray, n: int) -> float:
    """The question's error of ``est`` against ``truth`` (see the module notes)."""
    if question in ("zone_visits", "od_flows"):
        return float(np.abs(_normalised(truth) - _normalised(est)).sum())
    if question == "hotspots":
        k = max(1, min(10, truth.shape[0] // 2))
        return 1.0 - len(_top(truth, k) & _top(est, k)) / k
    bound = max(1.0, 0.01 * n)
    return float(np.mean(np.abs(np.maximum(est, 0.0) - truth) / np.maximum(truth, bound)))


def _width_of(question: str, truth: np.ndarray, half: np.ndarray | None, n: int) -> float:
    """Mean 95 % interval width in the question's units (NaN when the design has none)."""
    if half is None or question == "hotspots":
        return math.nan
    if question == "range_counts":
        return float(np.mean(2.0 * half / np.maximum(truth, max(1.0, 0.01 * n))))
    return float(np.mean(2.0 * half) / max(truth.sum(), 1.0))


# --------------------------------------------------------------------------------------------------
# populations and baselines
# --------------------------------------------------------------------------------------------------


def _neighbours(ps: Any, k: int) -> np.ndarray:
    """The k nearest public points of every public point (P's own k-d tree; O(|P| log |P|))."""
    k = min(k, ps.size)
    _, idx = ps.tree.query(ps.xyz, k=k)
    return np.asarray(idx, dtype=np.int64).reshape(ps.size, k)


#: Step law of the simulated walks, taken from a published study of human displacements and never fitted
#: to any data set of this project: the chance of stepping to a public point at distance d is proportional to
#: (d + 1.5 km)^-1.75 (Gonzalez, Hidalgo and Barabási, "Understanding individual human mobility patterns",
#: Nature 453, 2008: Δr0 = 1.5 km, β = 1.75).
_STEP_R0_KM = 1.5
_STEP_BETA = 1.75
#: Near candidates (nearest public points) and far candidates (uniform over P) of each step; the far ones
#: stand for the rest of P (importance weights), so a step costs O(1) whatever |P|.
_NEAR = 8
_FAR = 56

#: The no-data populations: where the random walks start (``"robust"``: all three, the pick minimising the
#: worst regret).
POPULATIONS = ("spread", "hubs", "mixed", "robust")


def _walks(
    ps: Any, lengths: np.ndarray, rng: np.random.Generator, *, population: str = "spread", hubs: int = 10
) -> list[np.ndarray]:
    """Random walks over P whose steps follow the published displacement law (:data:`_STEP_BETA`).

    Each step goes to one of the current point's 8 nearest points or to one of 56 uniform draws from P
    (which stand for the rest of P), with probability proportional to ``(d + 1.5 km)^-1.75``.

    ``"hubs"``: every walk starts at one of a few random public points (Zipf weights), a concentrated
    population; ``"spread"``: at a uniformly random public point, a population spread like P;
    ``"mixed"``: half of each.
    """
    size = ps.size
    nb = _neighbours(ps, _NEAR + 1)[:, 1:] if size > 1 else np.zeros((size, 0), dtype=np.int64)
    hub = rng.choice(size, size=min(hubs, size), replace=False)
    w = 1.0 / np.arange(1, hub.shape[0] + 1)
    starts = hub[rng.choice(hub.shape[0], size=lengths.shape[0], p=w / w.sum())]
    spread = rng.integers(0, size, size=lengths.shape[0])
    if population == "spread":
        starts = spread
    elif population == "mixed":
        starts = np.where(np.arange(lengths.shape[0]) % 2 == 0, starts, spread)
    lon, lat = np.asarray(ps.lon), np.asarray(ps.lat)
    width = int(lengths.max())
    walk = np.empty((lengths.shape[0], width), dtype=np.int64)
    walk[:, 0] = starts
    far_weight = max(size - nb.shape[1] - 1, 0) / _FAR
    for j in range(1, width):
        cur = walk[:, j - 1]
        cand = np.concatenate([nb[cur], rng.integers(0, size, size=(cur.shape[0], _FAR))], axis=1)
        d = haversine_array_m(lon[cur][:, None], lat[cur][:, None], lon[cand], lat[cand]) / 1000.0
        wts = np.power(np.asarray(d) + _STEP_R0_KM, -_STEP_BETA)
        wts[:, nb.shape[1] :] *= far_weight
        cdf = np.cumsum(wts, axis=1)
        pick = (cdf < rng.random((cur.shape[0], 1)) * cdf[:, -1:]).sum(axis=1)
        walk[:, j] = cand[np.arange(cur.shape[0]), np.minimum(pick, cand.shape[1] - 1)]
    return [walk[i, : int(m)].copy() for i, m in enumerate(lengths)]


def _length_pool(lengths: Any, caller: str) -> np.ndarray:
    """The checked lengths (an int, or a non-empty list of ints ≥ 1) as an int64 array."""
    pool: np.ndarray
    if isinstance(lengths, int | np.integer) and not isinstance(lengths, bool):
        pool = np.array([int(lengths)], dtype=np.int64)
    else:
        try:
            pool = np.asarray(lengths)
        except Exception:  # pragma: no cover - numpy raises many kinds
            pool = np.zeros(0)
        if pool.ndim != 1 or pool.size == 0 or pool.dtype.kind not in "iu":
            raise TypeError(
                f"The 'lengths' parameter of {caller} must be an int or a non-empty list of ints (trajectory "
                "lengths to draw from)."
            )
    if pool.min() < 1:
        raise ValueError(f"The 'lengths' of {caller} must be >= 1.")
    return pool.astype(np.int64)


def _lengths(lengths: Any, size: int, rng: np.random.Generator, caller: str) -> np.ndarray:
    pool = _length_pool(lengths, caller)
    if np.ndim(lengths) == 0:  # one length for every trajectory: nothing to draw
        return np.full(size, pool[0])
    return rng.choice(pool, size=size)


def _baselines(sim: Simulation, question: str, median: int) -> dict[str, np.ndarray]:
    """The no-data answers at the scale of sim.n: ``uniform`` (every point a uniform draw from P, with the
    population's lengths), ``constant`` (every trajectory at the 1-median) and, for the zone questions,
    ``shares`` (one visit per trajectory spread over the zones like P's points; often the closer guess of
    how many trajectories visit a zone, since real trajectories revisit few zones)."""
    k = sim.n_zones
    zm = int(sim.zone_of_point[median])
    if _needs(question) == "od":
        uni = uniform_answer(sim.zone_of_point, k, od=True) * sim.n
        const = np.zeros(k * k)
        if zm < k:
            const[zm * k + zm] = sim.n
        return {"baseline:uniform": uni, "baseline:constant": const}
    lengths = [s.shape[0] for s in sim.seqs]
    uni = uniform_visits(sim.zone_of_point, k, lengths) * (sim.n / max(len(lengths), 1))
    const = np.zeros(k)
    if zm < k:
        const[zm] = sim.n
    shares = uniform_answer(sim.zone_of_point, k, od=False) * sim.n
    return {"baseline:uniform": uni, "baseline:constant": const, "baseline:shares": shares}


# --------------------------------------------------------------------------------------------------
# the plan
# --------------------------------------------------------------------------------------------------


def plan(
    points: Any,
    zones: Any,
    *,
    epsilon: float,
    n: int,
    lengths: Any,
    question: str = "zone_visits",
    prior: Any = None,
    population: str = "spread",
    target_error: float | None = None,
    designs: Any = None,
    rng: Any = None,
) -> pd.DataFrame:
    """Expected error of every design for a question, from public inputs only, before any ε is spent.

    Parameters
    ----------
    points : PointSet, GeoDataFrame of Points or (m, 2) array
        The public point set P.
    zones : GeoDataFrame or GeoSeries of polygons
        The public zones the question is about.
    epsilon : float
        The budget of one trajectory.
    n : int
        The number of users (trajectories) the collection will have.
    lengths : int or list of int
        Trajectory lengths (public or assumed): one length, or a list to draw lengths from.
    question : {"zone_visits", "hotspots", "od_flows", "range_counts"}, default "zone_visits"
    prior : GeoDataFrame of LineStrings, optional
        A **public** prior population (for example last year's published data). Its trajectories are
        snapped to P and used instead of the random walks.
    population : {"spread", "hubs", "mixed", "robust"}, default "spread"
        Without ``prior``: where the simulated random walks start: anywhere in P (a population spread
        like P; right when P is where people go, such as visited places), at a few random hubs (a
        concentrated population; closer when P is a regular grid or road nodes), or half of each.
        ``"robust"`` simulates all three and recommends the row with the smallest worst **regret**
        (its error minus the best row's error on the same population): the pick that is never far from
        the best whichever of them the real population resembles. The table then has ``error_<name>``
        per population, ``regret``, and ``error`` as their mean.
    target_error : float, optional
        The error to reach for ``users_needed`` (default: half the better baseline's error).
    designs : list of str, optional
        Names from :data:`DESIGNS` (default: all that answer the question).
    rng : {None, int, Generator, ...}, optional
        Simulation randomness (public; the plan reads no private data). Seed it for a reproducible table.

    Returns
    -------
    pandas.DataFrame
        One row per design and per baseline (index ``design``): ``kind``, ``error`` (expected, lower is
        better), ``error_sd`` (over the repetitions), ``interval_width`` (mean 95 % width, NaN where the
        design has no interval), ``users_needed`` (for ``target_error``; NaN when more users do not get
        there), ``recommended`` (one row True). ``attrs`` holds the question, ε, n, the target error,
        the recommended design and whether it beats the better baseline.

    Raises
    ------
    TypeError, ValueError
        Invalid parameters (named).

    Examples
    --------
    >>> import numpy as np
    >>> from geoldp.reports import zone_grid
    >>> pts = np.random.default_rng(0).uniform(0, 1, size=(200, 2))
    >>> table = plan(pts, zone_grid((0.0, 0.0, 1.0, 1.0), cells=4), epsilon=4.0, n=1000, lengths=4, rng=0)
    >>> table.attrs["recommended"] in table.index
    True
    """
    caller = "geoldp.plan"
    question = check_option(question, "question", QUESTIONS, caller, case_insensitive=True)
    population = check_option(population, "population", POPULATIONS, caller, case_insensitive=True)
    epsilon = check_release_epsilon(epsilon, caller=caller)
    n = check_count(n, "n", caller=caller, maximum=MAX_PLAN_USERS)
    check_lengths(lengths, caller=caller)
    ps = _frames.as_pointset(points, caller=caller)
    z = check_zones(zones, caller=caller)
    if target_error is not None and not (isinstance(target_error, int | float) and target_error > 0):
        raise ValueError(f"The 'target_error' parameter of {caller} must be a float > 0.")
    names = [k for k, v in DESIGNS.items() if question in v.questions] if designs is None else list(designs)
    for name in names:
        if name not in DESIGNS:
            raise ValueError(f"Unknown design {name!r} in {caller}; choose from {sorted(DESIGNS)}.")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)

    zone_of_point = zone_of_vertices(z, np.asarray(ps.lon), np.asarray(ps.lat))
    size = min(n, _SIM_MAX)
    median = int(metrics.one_median(ps))
    populations = _populations(ps, lengths, size, prior, population, gen, caller)
    tables = {}
    for label, seqs in populations.items():
        sim = Simulation(ps, zone_of_point, z.size, seqs, n, epsilon, gen, z)
        tables[label] = _population_table(sim, question, names, median, target_error)
    table = _combine(tables)
    baselines = table[table["kind"] == "baseline"]
    candidates = table[table["kind"] != "baseline"]
    score = "regret" if "regret" in table.columns else "error"
    best = str(candidates[score].idxmin()) if len(candidates) else str(baselines[score].idxmin())
    beats = bool(len(candidates) and candidates.loc[best, score] < baselines[score].min())
    if not beats:
        best = str(baselines[score].idxmin())
    table["recommended"] = table.index == best
    first = next(iter(tables.values()))
    table.attrs = {
        "question": question,
        "epsilon": epsilon,
        "n": n,
        "simulated_trajectories": size,
        "population": "prior" if prior is not None else f"random walks ({population})",
        "target_error": first.attrs["target_error"] if target_error is None else float(target_error),
        "recommended": best,
        "beats_baselines": beats,
    }
    return table


def _populations(
    ps: Any, lengths: Any, size: int, prior: Any, population: str, gen: np.random.Generator, caller: str
) -> dict[str, list[np.ndarray]]:
    """The simulated populations (label → trajectories as indices into P): the prior, or random walks."""
    if prior is not None:
        tr = _frames.trajectory_arrays(prior, name="prior", caller=caller)
        idx = np.asarray(ps.nearest(tr.lon, tr.lat)[0], dtype=np.int64)
        seqs = [
            np.asarray(idx[a:b], dtype=np.int64) for a, b in zip(tr.offsets[:-1], tr.offsets[1:], strict=True)
        ]
        return {"prior": [seqs[i] for i in gen.choice(len(seqs), size=size, replace=len(seqs) < size)]}
    kinds = POPULATIONS[:3] if population == "robust" else (population,)
    drawn = _lengths(lengths, size, gen, caller)
    return {k: _walks(ps, drawn, gen, population=k) for k in kinds}


def trajectory_rms(
    points: Any,
    zones: Any,
    *,
    epsilon: float,
    n: int,
    lengths: Any,
    question: str = "zone_visits",
    mechanism: str = "atp",
    prior: Any = None,
    population: str = "spread",
    rng: Any = None,
) -> np.ndarray:
    """Root-mean-square error per cell of a trajectory release's raw counts, simulated from public inputs.

    The error a trajectory part brings to an inverse-variance combination (:func:`inverse_variance`):
    the population of :func:`plan` (the public ``prior``, or random walks over P) is released
    :data:`_REPS` times with ``mechanism`` at ``epsilon``, and each cell's deviation of the raw counts
    (at the scale of ``n`` users) from the population's exact answer is averaged in square. It includes
    the mechanism's bias, which more users do not remove. It is at least the count one simulated
    trajectory stands for (the simulation's resolution). Public inputs only: no private data is read,
    so the result may be used with any release made later.

    Parameters
    ----------
    points, zones, epsilon, n, lengths, prior, rng
        As in :func:`plan`.
    question : {"zone_visits", "hotspots", "od_flows", "range_counts"}, default "zone_visits"
        Zone visits (one value per zone) for every question but ``"od_flows"`` (one per ordered zone
        pair, ``k × k`` flattened, origin-major).
    mechanism : {"atp", "tp", "pointem"}, default "atp"
    population : {"spread", "hubs", "mixed"}, default "spread"
        As in :func:`plan` (one population; not ``"robust"``).

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from geoldp.reports import zone_grid
    >>> pts = np.random.default_rng(0).uniform(0, 1, size=(100, 2))
    >>> zones = zone_grid((0.0, 0.0, 1.0, 1.0), cells=2)
    >>> rms = trajectory_rms(pts, zones, epsilon=2.0, n=300, lengths=3, rng=0)
    >>> rms.shape, bool((rms >= 1.0).all())
    ((4,), True)
    """
    caller = "geoldp.planner.trajectory_rms"
    question = check_option(question, "question", QUESTIONS, caller, case_insensitive=True)
    mechanism = check_option(mechanism, "mechanism", ("atp", "tp", "pointem"), caller, case_insensitive=True)
    population = check_option(population, "population", POPULATIONS[:3], caller, case_insensitive=True)
    epsilon = check_release_epsilon(epsilon, caller=caller)
    n = check_count(n, "n", caller=caller, maximum=MAX_PLAN_USERS)
    check_lengths(lengths, caller=caller)
    ps = _frames.as_pointset(points, caller=caller)
    z = check_zones(zones, caller=caller)
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    zone_of_point = zone_of_vertices(z, np.asarray(ps.lon), np.asarray(ps.lat))
    seqs = next(iter(_populations(ps, lengths, min(n, _SIM_MAX), prior, population, gen, caller).values()))
    return _rms(Simulation(ps, zone_of_point, z.size, seqs, n, epsilon, gen, z), question, mechanism)


def _rms(sim: Simulation, question: str, mechanism: str) -> np.ndarray:
    """Per-cell RMS deviation of ``mechanism``'s raw counts from ``sim``'s truth, at least one simulated
    trajectory's count."""
    truth = _truth(sim, question)
    ests, _ = _trajectory_design(mechanism).simulate(sim, question)
    rms = np.sqrt(np.mean([(e - truth) ** 2 for e in ests], axis=0))
    return np.maximum(rms, sim.n / len(sim.seqs))


def _population_table(
    sim: Simulation, question: str, names: list[str], median: int, target_error: float | None
) -> pd.DataFrame:
    """Every design's and baseline's expected error on one simulated population."""
    n = sim.n
    truth = _truth(sim, question)
    rows: dict[str, dict[str, Any]] = {}
    for name, est in _baselines(sim, question, median).items():
        rows[name] = {"kind": "baseline", "error": error_of(question, truth, est, n), "error_sd": 0.0}
        rows[name]["interval_width"] = math.nan
    best_baseline = min(r["error"] for r in rows.values())
    target = 0.5 * best_baseline if target_error is None else float(target_error)
    for name in names:
        spec = DESIGNS[name]
        ests, half = spec.simulate(sim, question)
        errs = [error_of(question, truth, e, n) for e in ests]
        rows[name] = {
            "kind": spec.kind,
            "error": float(np.mean(errs)),
            "error_sd": float(np.std(errs)),
            "interval_width": _width_of(question, truth, half, n),
        }
        rows[name]["users_needed"] = _users_needed(sim, question, name, spec, target, rows[name]["error"])
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "design"
    table.attrs["target_error"] = target
    return table


def _combine(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One population: its table. Several (``population="robust"``): the mean error over them, and each
    row's worst regret (its error minus the best row's on the same population), the score to minimise."""
    if len(tables) == 1:
        return next(iter(tables.values()))
    first = next(iter(tables.values()))
    errors = pd.DataFrame({k: t["error"] for k, t in tables.items()})
    out = first[["kind"]].copy()
    out["error"] = errors.mean(axis=1)
    out["error_sd"] = pd.DataFrame({k: t["error_sd"] for k, t in tables.items()}).mean(axis=1)
    out["interval_width"] = pd.DataFrame({k: t["interval_width"] for k, t in tables.items()}).mean(axis=1)
    # users needed on the hardest population (NaN if any population does not get there)
    out["users_needed"] = pd.DataFrame({k: t["users_needed"] for k, t in tables.items()}).max(
        axis=1, skipna=False
    )
    for k in tables:
        out[f"error_{k}"] = errors[k]
    out["regret"] = (errors - errors.min(axis=0)).max(axis=1)
    return out


def _users_needed(
    sim: Simulation, question: str, name: str, spec: DesignSpec, target: float, err: float
) -> float:
    """Smallest n on a doubling grid whose expected error is at most ``target`` (NaN if none)."""
    if spec.kind != "report":
        # raw trajectory counts are biased: more users do not remove the error (NaN unless already there)
        return float(sim.n) if err <= target else math.nan
    for factor in (2.0**e for e in range(-6, 13)):
        m = max(1, int(round(sim.n * factor)))
        trial = Simulation(
            sim.ps, sim.zone_of_point, sim.n_zones, sim.seqs, m, sim.epsilon, sim.rng, sim.zones
        )
        truth = _truth(trial, question)
        ests, _ = spec.simulate(trial, question)
        # judged at the plan's scale: the range-count floor is 1 % of the users at every trial size (at m
        # users, error_of's floor of one user would be a larger share of a small trial)
        scale = sim.n / m
        if np.mean([error_of(question, truth * scale, e * scale, sim.n) for e in ests]) <= target:
            return float(m)
    return math.nan
