"""What a design does on a simulated population: the planner's view of a collection, from public inputs.

:func:`geoldp.plan` ranks designs by releasing a **no-data population** (random walks over the public
points P, or a public prior) with each one and comparing its answer with the population's exact one.
A :class:`Simulation` holds that population and the public configuration; every design simulates
itself on it (``Design.simulate``). Report designs are simulated in closed form: the population's
expected report frequencies plus Gaussian noise of the estimator's variance (:func:`report_answers`).
Nothing here reads private data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from geoldp.nodata import no_data_shapes, uniform_answer
from geoldp.reports import estimators as rest
from geoldp.reports import release as rrel
from geoldp.shrinkage import shrink_empirical_bayes, shrink_to_baseline

#: Repetitions of each simulated release (the expected error is their mean).
REPS = 3
#: Repetitions of a report design's closed-form simulation: cheap, and a shrunk report's error varies much
#: from draw to draw, so more of them keep the plan's ranking of close designs from being a coin toss.
REPORT_REPS = 20

#: What a design's simulation returns: the estimated answer of each repetition (at the scale of ``n``
#: users) and the 95 % interval half-width per cell (None where the design claims no interval).
Simulated = tuple[list[np.ndarray], np.ndarray | None]


@dataclass
class Simulation:
    """A no-data population and the public configuration a design is simulated on (no private data).

    Attributes
    ----------
    ps : PointSet
    zone_of_point : ndarray
        Zone position of every public point (``n_zones`` = outside).
    seqs : list of ndarray
        The simulated trajectories (indices into P).
    n : int
        Users the plan is for (the population stands for n users).
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
    #: Results that depend on the trajectories and the zones but not on n (shared by the simulations of
    #: other sizes made from this one, e.g. for ``users_needed``); keyed with the ids of the objects they
    #: were computed from, which each entry keeps alive.
    cache: dict[Any, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def cached(self, name: Any, compute: Callable[[], Any], *parts: Any) -> Any:
        """``compute()`` once per (``name``, these trajectories, zones of P and ``parts`` objects)."""
        key = (name, id(self.seqs), id(self.zone_of_point), *(id(p) for p in parts))
        hit = self.cache.get(key)
        if hit is None:
            hit = self.cache[key] = (compute(), self.seqs, self.zone_of_point, parts)
        return hit[0]

    def lonlat_box(self) -> tuple[float, float, float, float]:
        """P's lon/lat bounding box (public), widened by a tiny margin when P lies on one line."""
        lon, lat = np.asarray(self.ps.lon), np.asarray(self.ps.lat)
        box = (float(lon.min()), float(lat.min()), float(lon.max()), float(lat.max()))
        if not (box[2] > box[0] and box[3] > box[1]):
            box = (box[0] - 1e-6, box[1] - 1e-6, box[2] + 1e-6, box[3] + 1e-6)
        return box

    def visits(self, seqs: list[np.ndarray]) -> np.ndarray:
        """Trajectories visiting each zone (outside excluded)."""
        return self.visits_of_zones([self.zone_of_point[s] for s in seqs])

    def od(self, seqs: list[np.ndarray]) -> np.ndarray:
        """OD counts over zone pairs (``k × k`` flattened; an endpoint outside is left out)."""
        return self.od_of_zones([self.zone_of_point[s] for s in seqs])

    def visits_of_zones(self, zone_seqs: list[np.ndarray]) -> np.ndarray:
        """Trajectories visiting each zone, from each trajectory's sequence of zone positions."""
        k = self.n_zones
        if not zone_seqs:
            return np.zeros(k, dtype=np.float64)
        zone = np.concatenate(zone_seqs).astype(np.int64)
        row = np.repeat(np.arange(len(zone_seqs), dtype=np.int64), [z.shape[0] for z in zone_seqs])
        pairs = np.unique(row * (k + 1) + zone)  # each (trajectory, zone) once
        zone = pairs % (k + 1)
        return np.bincount(zone[zone < k], minlength=k).astype(np.float64)

    def od_of_zones(self, zone_seqs: list[np.ndarray]) -> np.ndarray:
        """OD counts over zone pairs from each trajectory's sequence of zone positions."""
        k = self.n_zones
        o = np.array([z[0] for z in zone_seqs], dtype=np.int64)
        d = np.array([z[-1] for z in zone_seqs], dtype=np.int64)
        ok = (o < k) & (d < k)
        return np.bincount(o[ok] * k + d[ok], minlength=k * k).astype(np.float64)


def needs(question: str) -> str:
    """``"od"`` for OD flows, ``"visits"`` for every zone question."""
    return "od" if question == "od_flows" else "visits"


def with_epsilon(sim: Simulation, epsilon: float) -> Simulation:
    """The same population and configuration at another ε (a part of a composition)."""
    return dataclasses.replace(sim, epsilon=epsilon, cache={})


def truth(sim: Simulation, question: str) -> np.ndarray:
    """The simulated population's exact answer at the scale of ``sim.n`` users."""
    od = needs(question) == "od"
    counts = sim.cached(("truth", od), lambda: sim.od(sim.seqs) if od else sim.visits(sim.seqs))
    return counts * (sim.n / len(sim.seqs))


def answer_cells(sim: Simulation, statistic: str, values: np.ndarray) -> np.ndarray:
    """A report's domain values cut to the asked cells: the zones, or the ordered zone pairs."""
    k = sim.n_zones
    if statistic == "od":
        return values[: (k + 1) ** 2].reshape(k + 1, k + 1)[:k, :k].reshape(-1)
    return values[:k]


def report_frequencies(sim: Simulation, des: rrel.ReportScheme) -> np.ndarray:
    """Expected number of reports of each domain value (sampling probabilities summed over users)."""
    k = sim.n_zones + 1

    def per_trajectory() -> np.ndarray:
        f = np.zeros(des.d, dtype=np.float64)
        for s in sim.seqs:
            z = sim.zone_of_point[s]
            items = np.unique(z) if des.statistic == "visited_zone" else np.array([z[0] * k + z[-1]])
            m = max(items.shape[0], des.pad_length)
            f[items] += 1.0 / m
            if m > items.shape[0]:
                f[des.base : des.base + m - items.shape[0]] += 1.0 / m
        return f

    f = sim.cached(("frequencies", des.statistic, des.pad_length, des.d, des.base), per_trajectory)
    return f * (sim.n / len(sim.seqs))


def report_answers(
    sim: Simulation, statistic: str, pad: int, epsilon: float, *, estimator: str, reps: int = REPORT_REPS
) -> tuple[list[np.ndarray], np.ndarray]:
    """Simulated estimates of a report design at ``epsilon`` (closed-form variance, Gaussian noise).

    ``estimator``: ``"projected"`` (the estimator's non-negative projection), ``"shrunk"``
    (:func:`shrink_to_baseline`), ``"eb"`` (:func:`shrink_empirical_bayes`) or ``"unbiased"`` (the
    debiased estimate itself, as an inverse-variance combination needs it)."""
    des = rrel.scheme(statistic, sim.n_zones, epsilon, pad_length=pad, caller="geoldp.plan")
    f = report_frequencies(sim, des)
    od = statistic == "od"
    sd = np.sqrt(rest.count_variance(f, sim.n, des.oracle, single=od))
    se = answer_cells(sim, statistic, sd * pad)
    if estimator == "shrunk":
        baseline = uniform_answer(sim.zone_of_point, sim.n_zones, od=od)
    elif estimator == "eb":
        shapes = no_data_shapes(sim.zone_of_point, sim.n_zones, [len(s) for s in sim.seqs], od=od)
    out = []
    for _ in range(reps):
        noisy = f + sd * sim.rng.standard_normal(f.shape[0])
        unbiased = answer_cells(sim, statistic, noisy * pad)
        if estimator == "unbiased":
            out.append(unbiased)
        elif estimator == "shrunk":
            out.append(shrink_to_baseline(unbiased, se, baseline))
        elif estimator == "eb":
            out.append(shrink_empirical_bayes(unbiased, se, shapes))
        else:
            out.append(answer_cells(sim, statistic, rest.project_simplex(noisy, float(sim.n)) * pad))
    return out, answer_cells(sim, statistic, rest.Z95 * sd * pad)
