"""Plan a collection before any ε is spent: which design answers the question, from public inputs only.

:func:`plan` simulates every design that answers the question on **no-data populations** built from
public inputs and returns a table: expected error and interval width per design, the no-data baselines,
the recommended design and the users each design needs. :doc:`/reports` ("Which design? Ask the planner
first", "Hybrid releases: one budget, two designs") describes the populations, the table, the designs'
names and what each report design estimates; what follows is how each kind of design is simulated.

* TraCS-D and TraCS-C (``tracs-d``, ``tracs-c``) are simulated in P's lon/lat box (public), their released
  locations snapped to P, as :class:`geoldp.designs.TrajectoryDesign` runs them.
* Trajectory designs (TP, ATP, PointEM) are simulated: each simulated trajectory is released with
  :func:`geoldp.perturb_trajectories` and the raw counts of the release are compared with the truth.
* LDPTrace (:func:`geoldp.synthesize`, on a 6 × 6 grid over P's box) is simulated: the collection of
  n users' reports, the Markov model and the synthetic trajectories, whose zone counts are compared.
* Report designs (:func:`geoldp.report`) use the closed-form variance of their estimator
  (:mod:`geoldp.reports.estimators`): the population's expected report frequencies plus Gaussian noise of
  that variance, then the same projection as the estimator. Shrunk (``:shrunk``,
  :func:`shrink_to_baseline`, positive-part James–Stein), empirical-Bayes (``:eb``; one visited zone,
  ℓ = 2 or 3 padded, the OD pair; :func:`shrink_empirical_bayes` toward :func:`no_data_shapes`), padded
  (``:pad<ℓ>``) and coarse-to-fine (``:coarse``, visited zones with ℓ = 2, or 5 for ``coarse:pad5``; spread
  by P's points: a bias where the population is not spread like P) reports post-process the same
  simulated release.
* The hybrid (``hybrid:atp+report@0.5``) splits ε between an ATP trajectory and a shrunk report and
  averages their answers (:func:`blend`). It mixes two scales where the question is about zone visits:
  the one-zone report estimates each trajectory's 1/|set| share of a zone, ATP's counts are visits.
* The inverse-variance hybrids (``hybrid:atp+report:ivw@s``) weight a padded report and ATP's raw counts
  per cell by :func:`inverse_variance`, ATP's error being its RMS deviation per cell from
  :func:`trajectory_rms` (at least the count one simulated trajectory stands for). The planner simulates
  the design as it is run: the RMS comes from walks of its own, not from the population the design is
  judged on.

With a private pilot (:class:`geoldp.designs.Pilot`) the walks take its lengths, start in its visited
cells and stay near their start or not; the plan is simulated on the three kinds of walk closest to its
distinct-zone classes, its predicted errors' intervals spanning them (population uncertainty).

The designs are :class:`geoldp.designs.Design` objects, each simulating itself (``Design.simulate``) on
the population of a :class:`~geoldp.designs.simulation.Simulation`; the planner ranks :data:`DESIGNS`
(name → design), to which :func:`register_design` adds one.

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
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from geoldp._core import frames as _frames
from geoldp._core.progress import stages
from geoldp._core.validation import (
    MAX_LENGTH,
    MAX_PLAN_USERS,
    check_count,
    check_lengths,
    check_option,
    check_release_epsilon,
)
from geoldp.designs import BaselineDesign, Design, design
from geoldp.designs.pilot import PilotEstimate
from geoldp.designs.simulation import Simulation, needs, truth
from geoldp.designs.trajectory import simulated_rms
from geoldp.nodata import NO_DATA_ANSWERS, length_pool, no_data_answer, random_walks
from geoldp.questions import Question
from geoldp.reports import estimators as rest
from geoldp.zones import check_zones, zone_of_vertices

__all__ = ["PlanTable", "trajectory_rms"]

#: The questions a plan can be asked.
QUESTIONS = tuple(q.value for q in Question)

#: Trajectories in a simulated population (at most; never more than ``n``).
_SIM_MAX = 2000


class PlanTable(pd.DataFrame):
    """The table :func:`plan` returns: a DataFrame whose :attr:`best` is the recommended design, to run."""

    @property
    def _constructor(self) -> type[pd.DataFrame]:  # slices and copies are plain tables
        return pd.DataFrame

    @property
    def best(self) -> Design | None:
        """The recommended :class:`geoldp.designs.Design`, ready to ``release`` and ``answer``.

        When no design beats the better no-data baseline it is that baseline, a
        :class:`~geoldp.designs.BaselineDesign` (``uniform``, ``constant`` or ``shares``, computed from P
        and the zones alone, over the lengths the plan was given): it releases nothing and spends no ε.
        None for a table without the plan's attributes.
        """
        name = self.attrs.get("recommended")
        if not name:
            return None
        if name.startswith(f"{BaselineDesign.kind}:"):
            return BaselineDesign(name.split(":", 1)[1], lengths=self.attrs["lengths"])
        out = DESIGNS[name].for_question(Question(self.attrs["question"]))
        bound = self.attrs.get("max_length")
        return out if bound is None else out.bounded(int(bound))


#: The designs the planner ranks, by name (:func:`geoldp.designs.design` builds each): every trajectory
#: mechanism, LDPTrace, the report designs (one visited zone, padded ℓ, shrunk and empirical-Bayes
#: estimators, coarse-to-fine, OD) and the hybrids. Add one with :func:`register_design`.
PLANNED = (
    "tp",
    "atp",
    "pointem",
    "tracs-d",
    "tracs-c",
    "ldptrace",
    "report:visited_zone",
    "report:visited_zone:padded",
    "report:visited_zone:pad2",
    "report:visited_zone:pad5",
    "report:visited_zone:pad2:shrunk",
    "report:visited_zone:padded:shrunk",
    "report:visited_zone:pad5:shrunk",
    "report:visited_zone:pad8:shrunk",
    "report:visited_zone:coarse",
    "report:visited_zone:coarse:pad5",
    "report:od:coarse",
    "report:od",
    "report:visited_zone:shrunk",
    "report:od:shrunk",
    "report:visited_zone:eb",
    "report:visited_zone:pad2:eb",
    "report:visited_zone:padded:eb",
    "report:od:eb",
    "hybrid:atp+report@0.5",
    "hybrid:atp+report:ivw@0.5",
    "hybrid:atp+report:ivw@0.75",
)
#: The designs :func:`plan` ranks (name → :class:`~geoldp.designs.Design`; each simulates itself).
DESIGNS: dict[str, Design] = {name: design(name) for name in PLANNED}


def register_design(des: Design, *, name: str | None = None) -> None:
    """Add (or replace) a design the planner ranks, under its own name (or ``name``)."""
    if not isinstance(des, Design):
        raise TypeError("register_design needs a geoldp.designs.Design object, such as design('atp').")
    DESIGNS[des.name if name is None else str(name)] = des


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


#: The no-data populations: where the random walks start (``"robust"``: all three, the pick minimising the
#: worst regret).
POPULATIONS = ("spread", "hubs", "mixed", "robust")


def _lengths(lengths: Any, size: int, rng: np.random.Generator, caller: str) -> np.ndarray:
    pool = length_pool(lengths, caller)
    if np.ndim(lengths) == 0:  # one length for every trajectory: nothing to draw
        return np.full(size, pool[0])
    return rng.choice(pool, size=size)


def _baselines(sim: Simulation, question: str, median: int) -> dict[str, np.ndarray]:
    """The no-data answers at the scale of sim.n (:func:`geoldp.nodata.no_data_answer`, with the
    population's lengths): ``uniform``, ``constant`` and, for the zone questions, ``shares`` (often the
    closer guess of how many trajectories visit a zone, since real trajectories revisit few zones)."""
    od = needs(question) == "od"
    lengths = [s.shape[0] for s in sim.seqs]
    return {
        f"baseline:{kind}": no_data_answer(
            kind, sim.zone_of_point, sim.n_zones, sim.n, od=od, lengths=lengths, median=median
        )
        for kind in NO_DATA_ANSWERS
        if not (od and kind == "shares")
    }


# --------------------------------------------------------------------------------------------------
# the plan
# --------------------------------------------------------------------------------------------------


def plan(
    points: Any,
    zones: Any,
    *,
    epsilon: float,
    n: int,
    lengths: Any = None,
    max_length: int | None = None,
    question: str = "zone_visits",
    prior: Any = None,
    pilot: PilotEstimate | None = None,
    population: str = "spread",
    target_error: float | None = None,
    designs: Any = None,
    rng: Any = None,
    progress: bool = False,
) -> PlanTable:
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
    lengths : int or list of int, optional
        Trajectory lengths (public or assumed): one length, or a list to draw lengths from. Needed unless
        ``pilot`` is given (its estimated length classes are drawn from instead) or ``max_length`` is.
    max_length : int, optional
        A **public** maximum number of points of a trajectory (for example the cut a collection app
        enforces), known without looking at the data. Without ``lengths`` and ``pilot`` the simulated
        lengths are drawn uniformly from 2 .. ``max_length``; with a ``pilot`` its length classes are
        drawn from up to ``max_length``. The recommended report design (``best``) then bounds each
        trajectory's number of visited zones by it (``max_set_size``), which narrows the upper ends of
        padded intervals (:func:`geoldp.reports.estimate_counts`).
    question : {"zone_visits", "hotspots", "od_flows", "range_counts"}, default "zone_visits"
    prior : GeoDataFrame of LineStrings, optional
        A **public** prior population (for example last year's published data). Its trajectories are
        snapped to P and used instead of the random walks.
    pilot : PilotEstimate, optional
        Without a public prior: the estimate of a private pilot (:class:`geoldp.designs.Pilot`, ε-LDP
        reports of a public share of the users). The simulated walks take its lengths and start in its
        visited cells; of nine kinds (three start rules × three step lengths: trips that stay near their
        start or not), the plan is simulated on the three whose numbers of distinct zones are closest to
        the pilot's, which of them is real being unknown: it recommends as ``population="robust"``
        does, the predicted error's interval spans the three, a design is recommended only when it
        beats the better baseline on each, and otherwise the baseline with the smallest worst error
        over them is. Its ε is spent by the pilot users: plan the rest of the users (``n``) with what
        they have left.
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
    progress : bool, default False
        Report each design simulated on a progress bar (tqdm; a widget in notebooks; one line per design
        on the command line). The table does not change.

    Returns
    -------
    PlanTable
        A DataFrame whose ``best`` is the recommended design object (:mod:`geoldp.designs`), to
        ``release`` and ``answer`` as it is (a :class:`~geoldp.designs.BaselineDesign`, which releases
        nothing, when a no-data baseline is recommended). One row per
        design and per baseline (index ``design``): ``kind``, ``error`` (expected, lower is
        better), ``error_sd`` (over the repetitions), ``error_se`` (the standard error of ``error``),
        ``error_low`` and ``error_high`` (the predicted error's 95 % interval: the repetitions' noise, and
        with ``population="robust"`` or a ``pilot`` the spread over the populations), ``interval_width``
        (mean 95 % width, NaN where the design has no interval), ``users_needed`` (the users at which the
        design's expected error reaches the target error ``attrs["target_error"]``; NaN when more users
        do not get there), ``recommended`` (one row True). A design is recommended only when it beats
        the better baseline on every simulated population by more than 1.96 of its ``error_se``; else
        the baseline with the smallest worst error over the no-data populations (the pilot's, with a
        pilot) is (its worst error in ``error_worst_population``). ``attrs`` holds the question, ε, n,
        the target error, the recommended design, whether it beats the better baseline, the margin rule
        and the lengths the plan was given (``lengths``: the pilot's length classes with a pilot).

    Raises
    ------
    TypeError, ValueError
        Invalid parameters (named).

    Examples
    --------
    >>> import numpy as np
    >>> from geoldp import zone_grid
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
    if max_length is not None:
        max_length = check_count(max_length, "max_length", caller=caller, maximum=MAX_LENGTH)
        if lengths is None and pilot is None:  # the public bound replaces a private length distribution
            lengths = list(range(min(2, max_length), max_length + 1))
    ps = _frames.as_pointset(points, caller=caller)
    z = check_zones(zones, caller=caller)
    if target_error is not None and not (isinstance(target_error, int | float) and target_error > 0):
        raise ValueError(f"The 'target_error' parameter of {caller} must be a float > 0.")
    asked = Question(question)
    answering = [k for k, v in DESIGNS.items() if asked in v.for_question(asked).questions]
    names = answering if designs is None else list(designs)
    for name in names:
        if name not in DESIGNS:
            raise ValueError(f"Unknown design {name!r} in {caller}; choose from {sorted(DESIGNS)}.")
    # a design that cannot release at this ε (a hybrid's parts below the smallest budget) is not simulated
    names = [name for name in names if epsilon >= DESIGNS[name].min_epsilon]
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)

    zone_of_point = zone_of_vertices(z, np.asarray(ps.lon), np.asarray(ps.lat))
    size = min(n, _SIM_MAX)
    median = int(ps.one_median())  # P's 1-median, as the no-data answers and the baselines of evaluate use
    if pilot is not None:
        if prior is not None or not isinstance(pilot, PilotEstimate):
            raise TypeError(f"The 'pilot' of {caller} is a PilotEstimate (Pilot.estimate), without a prior.")
        populations = _pilot_populations(ps, pilot, size, gen, zone_of_point, z.size, max_length)
        # the baselines' populations
        lengths = pilot.draw_lengths(size, np.random.default_rng(pilot.n), maximum=max_length)
    elif lengths is None:
        raise TypeError(f"{caller} needs public or assumed 'lengths', or a private 'pilot' estimate.")
    else:
        populations = _populations(ps, lengths, size, prior, population, gen, caller)
    tables = {}
    with stages("planning", len(populations) * len(names), enabled=bool(progress)) as report:
        for label, seqs in populations.items():
            sim = Simulation(ps, zone_of_point, z.size, seqs, n, epsilon, gen, z)
            tables[label] = _population_table(sim, question, names, median, target_error, report)
    table = _combine(tables)
    candidates = table[table["kind"] != "baseline"]
    score = "regret" if "regret" in table.columns else "error"
    best = str(candidates[score].idxmin()) if len(candidates) else ""
    beats = bool(best) and _beats_above_noise(tables, best)
    if not beats:
        # the no-data answer to fall back on: the one whose worst error over the no-data populations is
        # smallest (baselines cost nothing to simulate, so every population is tried, not only the asked one)
        worst = (
            _worst_over(tables)
            if pilot is not None and _PILOT_BASELINE_FALLBACK
            else _baseline_worst_errors(
                ps, zone_of_point, z, lengths, size, prior, n, epsilon, question, median
            )
        )
        table["error_worst_population"] = worst.reindex(table.index)
        best = str(worst.idxmin())
    table["recommended"] = table.index == best
    first = next(iter(tables.values()))
    table = PlanTable(table)
    table.attrs = {
        "question": question,
        "epsilon": epsilon,
        "n": n,
        "simulated_trajectories": size,
        "population": "prior"
        if prior is not None
        else f"random walks fitted to a pilot of {pilot.n} reports"
        if pilot is not None
        else f"random walks ({population})",
        "target_error": first.attrs["target_error"] if target_error is None else float(target_error),
        "recommended": best,
        "max_length": max_length,
        "lengths": tuple(
            int(v) for v in (np.unique(lengths) if pilot is not None else length_pool(lengths, caller))
        ),
        "beats_baselines": beats,
        "margin": "a design is recommended only when it beats the better baseline on every simulated "
        "population by more than 1.96 standard errors of its simulated error",
    }
    return table


def _beats_above_noise(tables: dict[str, pd.DataFrame], name: str) -> bool:
    """Whether design ``name`` beats the better baseline on every population by more than its noise."""
    for t in tables.values():
        best_baseline = float(t.loc[t["kind"] == "baseline", "error"].min())
        if not best_baseline - float(t.loc[name, "error"]) > rest.Z95 * float(t.loc[name, "error_se"]):
            return False
    return True


def _worst_over(tables: dict[str, pd.DataFrame]) -> pd.Series:
    """Each baseline's largest error over the simulated populations (the pilot's plausible ones)."""
    return pd.DataFrame({k: t.loc[t["kind"] == "baseline", "error"] for k, t in tables.items()}).max(axis=1)


def _baseline_worst_errors(
    ps: Any,
    zone_of_point: np.ndarray,
    z: Any,
    lengths: Any,
    size: int,
    prior: Any,
    n: int,
    epsilon: float,
    question: str,
    median: int,
) -> pd.Series:
    """Each baseline's largest error over the no-data populations (the prior alone, if one is given).

    Seeded by the public inputs' sizes, not by the plan's generator, so the designs' simulations (and the
    plan's table) are the same as without this step.
    """
    gen = np.random.default_rng([size, len(zone_of_point), z.size])
    pops = _populations(ps, lengths, size, prior, "robust", gen, "geoldp.plan")
    errors = {}
    for label, seqs in pops.items():
        sim = Simulation(ps, zone_of_point, z.size, seqs, n, epsilon, gen, z)
        exact = truth(sim, question)
        errors[label] = {
            k: error_of(question, exact, v, n) for k, v in _baselines(sim, question, median).items()
        }
    return pd.DataFrame(errors).max(axis=1)


def _populations(
    ps: Any, lengths: Any, size: int, prior: Any, population: str, gen: np.random.Generator, caller: str
) -> dict[str, list[np.ndarray]]:
    """The simulated populations (label → trajectories as indices into P): the prior, the pilot's, or
    random walks."""
    if prior is not None:
        tr = _frames.trajectory_arrays(prior, name="prior", caller=caller)
        idx = np.asarray(ps.nearest(tr.lon, tr.lat)[0], dtype=np.int64)
        seqs = [
            np.asarray(idx[a:b], dtype=np.int64) for a, b in zip(tr.offsets[:-1], tr.offsets[1:], strict=True)
        ]
        return {"prior": [seqs[i] for i in gen.choice(len(seqs), size=size, replace=len(seqs) < size)]}
    kinds = POPULATIONS[:3] if population == "robust" else (population,)
    drawn = _lengths(lengths, size, gen, caller)
    return {k: random_walks(ps, drawn, gen, population=k) for k in kinds}


#: Step scales of the walks fitted to a pilot (``step_scale`` of :func:`geoldp.nodata.random_walks`; 1 is the
#: published law).
_PILOT_STEP_SCALES: tuple[float, ...] = (0.1, 0.3, 1.0)
#: How many of the best-fitting walk populations a pilot plan is simulated on (more than one: the plan
#: recommends as ``population="robust"`` does, over those, and its interval spans them: the uncertainty
#: about which population is real, not only the simulation noise).
_PILOT_FITS = 3
#: Walks of each fitted population after the first (a smaller sample of it: the spread of the predicted
#: error over the populations is wanted, not a second precise estimate).
_PILOT_EXTRA_SIZE = 500
#: Without a design above the noise, fall back on the baseline whose worst error over the pilot's
#: populations (not over walks anywhere in P) is smallest.
_PILOT_BASELINE_FALLBACK = True
# The variants these settings were chosen from (other step scales and fits, shrunk start cells, walks
# concentrated at hot points) are measured by experiments/designs_oos.py, which holds their code.


def _pilot_populations(
    ps: Any,
    pilot: PilotEstimate,
    size: int,
    gen: np.random.Generator,
    zone_of_point: np.ndarray,
    n_zones: int,
    max_length: int | None = None,
) -> dict[str, list[np.ndarray]]:
    """Random walks fitted to a pilot: its lengths, starts in its visited cells, and of the kinds of walk
    (three start rules × :data:`_PILOT_STEP_SCALES`) the :data:`_PILOT_FITS` whose numbers of distinct zones
    are closest to the pilot's (L1 between the class shares)."""
    coarse = check_zones(pilot.coarse, caller="geoldp.plan")
    cell_of_point = zone_of_vertices(coarse, np.asarray(ps.lon), np.asarray(ps.lat))
    lengths = pilot.draw_lengths(size, gen, maximum=max_length)
    starts = pilot.draw_starts(cell_of_point, size, gen)
    return fitted_walks(ps, pilot, lengths, starts, gen, zone_of_point, n_zones)


def fitted_walks(
    ps: Any,
    pilot: PilotEstimate,
    lengths: np.ndarray,
    starts: np.ndarray,
    gen: np.random.Generator,
    zone_of_point: np.ndarray,
    n_zones: int,
) -> dict[str, list[np.ndarray]]:
    """The walks of :func:`_pilot_populations` from given lengths and starts."""
    fits: list[tuple[float, int, str, list[np.ndarray]]] = []
    for scale in _PILOT_STEP_SCALES:
        for kind in POPULATIONS[:3]:
            seqs = random_walks(ps, lengths, gen, population=kind, starts=starts, step_scale=scale)
            counts = np.array([np.unique(zone_of_point[s][zone_of_point[s] < n_zones]).size for s in seqs])
            shares = np.bincount(pilot.zone_count_classes(counts), minlength=pilot.zone_count_pmf.shape[0])
            gap = float(np.abs(shares / max(len(seqs), 1) - pilot.zone_count_pmf).sum())
            fits.append((gap, len(fits), f"pilot:{kind}@{scale:g}", seqs))
    fits.sort(key=lambda f: (f[0], f[1]))
    # the first fits in full, the others (population uncertainty) on a smaller sample of their walks
    return {
        label: seqs if i == 0 else seqs[:_PILOT_EXTRA_SIZE]
        for i, (_, _, label, seqs) in enumerate(fits[: max(1, _PILOT_FITS)])
    }


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
    three times with ``mechanism`` at ``epsilon``, and each cell's deviation of the raw counts
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
    >>> from geoldp import zone_grid
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
    return simulated_rms(Simulation(ps, zone_of_point, z.size, seqs, n, epsilon, gen, z), question, mechanism)


def _population_table(
    sim: Simulation,
    question: str,
    names: list[str],
    median: int,
    target_error: float | None,
    report: Callable[[str], None] = lambda name: None,
) -> pd.DataFrame:
    """Every design's and baseline's expected error on one simulated population."""
    n = sim.n
    exact = truth(sim, question)
    rows: dict[str, dict[str, Any]] = {}
    for name, est in _baselines(sim, question, median).items():
        error = error_of(question, exact, est, n)
        rows[name] = {"kind": "baseline", "error": error, "error_sd": 0.0, "error_se": 0.0}
        rows[name].update(error_low=error, error_high=error, interval_width=math.nan)
    best_baseline = min(r["error"] for r in rows.values())
    target = 0.5 * best_baseline if target_error is None else float(target_error)
    for name in names:
        report(name)
        des = DESIGNS[name].for_question(Question(question))
        ests, half = des.simulate(sim, question)
        errs = [error_of(question, exact, e, n) for e in ests]
        se = float(np.std(errs, ddof=1) / math.sqrt(len(errs))) if len(errs) > 1 else 0.0
        mean = float(np.mean(errs))
        rows[name] = {
            "kind": des.kind,
            "error": mean,
            "error_sd": float(np.std(errs)),
            "error_se": se,
            "error_low": max(mean - rest.Z95 * se, 0.0),
            "error_high": mean + rest.Z95 * se,
            "interval_width": _width_of(question, exact, half, n),
        }
        rows[name]["users_needed"] = _users_needed(sim, question, des, target, rows[name]["error"])
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "design"
    table.attrs["target_error"] = target
    return table


def _combine(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One population: its table. Several (``population="robust"``): the mean error over them, and each
    row's worst regret (its error minus the best row's on the same population), the score to minimise."""
    if len(tables) == 1:
        return next(iter(tables.values()))

    def by_population(column: str) -> pd.DataFrame:
        return pd.DataFrame({k: t[column] for k, t in tables.items()})

    errors = by_population("error")
    out = next(iter(tables.values()))[["kind"]].copy()
    out["error"] = errors.mean(axis=1)
    out["error_sd"] = by_population("error_sd").mean(axis=1)
    out["error_se"] = np.sqrt((by_population("error_se") ** 2).sum(axis=1)) / len(tables)
    # the interval of the predicted error spans the populations (which one is real is not known)
    out["error_low"] = by_population("error_low").min(axis=1)
    out["error_high"] = by_population("error_high").max(axis=1)
    out["interval_width"] = by_population("interval_width").mean(axis=1)
    # users needed on the hardest population (NaN if any population does not get there)
    out["users_needed"] = by_population("users_needed").max(axis=1, skipna=False)
    for k in tables:
        out[f"error_{k}"] = errors[k]
    out["regret"] = (errors - errors.min(axis=0)).max(axis=1)
    return out


def _users_needed(sim: Simulation, question: str, des: Design, target: float, err: float) -> float:
    """Smallest n on a doubling grid whose expected error is at most ``target`` (NaN if none)."""
    if des.kind != "report":
        # raw trajectory counts are biased: more users do not remove the error (NaN unless already there)
        return float(sim.n) if err <= target else math.nan
    for factor in (2.0**e for e in range(-6, 13)):
        m = max(1, int(round(sim.n * factor)))
        trial = dataclasses.replace(sim, n=m)  # the same population and cache, at m users
        exact = truth(trial, question)
        ests, _ = des.simulate(trial, question)
        # judged at the plan's scale: the range-count floor is 1 % of the users at every trial size (at m
        # users, error_of's floor of one user would be a larger share of a small trial)
        scale = sim.n / m
        if np.mean([error_of(question, exact * scale, e * scale, sim.n) for e in ests]) <= target:
            return float(m)
    return math.nan
