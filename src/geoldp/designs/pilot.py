"""A private pilot: what the planner needs to know about the population, collected under ε-LDP.

Without a public prior, the planner simulates designs on populations made up from P, and a made-up
population can be far from the real one (real trips visit fewer zones, and other lengths, than random
walks). A pilot asks a **public share** of the users three small questions, each by k-ary randomized
response at a share of the pilot's ε: the trajectory's length class and its number of distinct zones (in
public classes), and one visited cell of a coarse public grid (sampled uniformly among its cells).
:meth:`Pilot.estimate` debiases the three histograms (post-processing of the reports alone) into a
:class:`PilotEstimate`, which :func:`geoldp.plan` takes as ``pilot=``; :doc:`/reports` ("Which design?
Ask the planner first") and :doc:`/cli` ("geoldp pilot") say how to choose the users and how the planner
draws its populations from the estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from geoldp import accounting, hybrids
from geoldp._core import frames as _frames
from geoldp._core.area import warn_if_area_from
from geoldp._core.ledger import attach, require
from geoldp._core.randomness import resolve_rng
from geoldp._core.validation import check_epsilon
from geoldp.designs.coarse import coarse_zones
from geoldp.mechanisms.krr import KRR, krr_constants
from geoldp.reports.estimators import project_simplex
from geoldp.zones import check_zones, zone_of_vertices

#: The report columns, in the order of the budget shares.
COLUMNS = ("length_class", "zone_count_class", "coarse_cell")


@dataclass(frozen=True)
class PilotEstimate:
    """The pilot's debiased histograms (public: post-processing of ε-LDP reports).

    Attributes
    ----------
    length_edges, zone_edges : tuple of int
        The public class edges (class ``c`` holds the values in ``[edges[c-1], edges[c])``).
    length_pmf, zone_count_pmf, cell_pmf : ndarray
        Estimated share of the trajectories in each length class, each class of distinct zones visited,
        and each coarse cell (the last one: outside every zone) as a visited cell.
    n : int
        The number of pilot reports.
    coarse : GeoDataFrame
        The coarse public grid the cells are of.
    cell_std_error : ndarray, optional
        The standard error of each share of ``cell_pmf`` before its projection (k-RR's variance at the
        estimate): how much of the estimated spread of visited cells is noise.
    zone_count_std_error : ndarray, optional
        The same for each share of ``zone_count_pmf``.
    """

    length_edges: tuple[int, ...]
    zone_edges: tuple[int, ...]
    length_pmf: np.ndarray
    zone_count_pmf: np.ndarray
    cell_pmf: np.ndarray
    n: int
    coarse: Any = field(repr=False)
    cell_std_error: np.ndarray | None = field(default=None, repr=False)
    zone_count_std_error: np.ndarray | None = field(default=None, repr=False)

    def draw_lengths(self, size: int, rng: np.random.Generator, *, maximum: int | None = None) -> np.ndarray:
        """Lengths drawn from the estimated classes, uniform within a class (the last: up to 2× its edge).

        Parameters
        ----------
        size : int
            How many lengths to draw.
        rng : numpy.random.Generator
            Simulation randomness (public).
        maximum : int, optional
            A public maximum length: the classes above it are left out (their share goes to the others)
            and a class reaching past it is drawn up to it.

        Returns
        -------
        numpy.ndarray
            ``size`` int64 lengths, each at least 1.
        """
        edges = np.asarray(self.length_edges, dtype=np.int64)
        lo = np.concatenate([[1], edges])
        hi = np.concatenate([edges, [2 * edges[-1]]])
        pmf = np.asarray(self.length_pmf, dtype=np.float64)
        if maximum is not None:
            hi = np.minimum(hi, int(maximum) + 1)
            pmf = np.where(lo <= int(maximum), pmf, 0.0)
            lo = np.minimum(lo, int(maximum))
            hi = np.maximum(hi, lo + 1)
            pmf = (
                pmf / pmf.sum()
                if pmf.sum() > 0
                else np.where(lo <= int(maximum), 1.0, 0.0) / (lo <= int(maximum)).sum()
            )
        cls = rng.choice(lo.shape[0], size=size, p=pmf)
        return rng.integers(lo[cls], hi[cls]).astype(np.int64)

    def zone_count_classes(self, counts: np.ndarray) -> np.ndarray:
        """The class of each number of distinct zones visited (as the pilot reported it)."""
        return np.searchsorted(np.asarray(self.zone_edges), counts, side="right")

    def draw_starts(self, cell_of_point: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """Public points drawn as the pilot's visited cells are spread: a cell by its share, then a
        uniform point of P in it (cells holding no point of P are left out)."""
        k = self.cell_pmf.shape[0]
        members = np.bincount(cell_of_point, minlength=k)[:k]
        weights = np.where(members > 0, self.cell_pmf, 0.0)
        if not weights.sum() > 0:
            return rng.integers(0, cell_of_point.shape[0], size=size)
        cells = rng.choice(k, size=size, p=weights / weights.sum())
        order = np.argsort(cell_of_point, kind="stable")
        first = np.concatenate([[0], np.cumsum(members)])
        return order[first[cells] + rng.integers(0, members[cells])]


@dataclass(frozen=True)
class Pilot:
    """The public configuration of a pilot (see the module notes).

    Parameters
    ----------
    length_edges : tuple of int
        Length classes: below the first edge, between consecutive edges, from the last one on.
    zone_edges : tuple of int
        Classes of the number of distinct zones visited (0 is below the first edge when it is 1).
    shares : tuple of three floats
        The shares of the pilot's ε spent on the length, the number of zones and the coarse cell.
    """

    length_edges: tuple[int, ...] = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
    zone_edges: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 12, 16)
    shares: tuple[float, float, float] = (0.25, 0.25, 0.5)

    def __post_init__(self) -> None:
        for name in ("length_edges", "zone_edges"):
            edges = np.asarray(getattr(self, name))
            if (
                edges.ndim != 1
                or edges.size == 0
                or edges.dtype.kind not in "iu"
                or (np.diff(edges) <= 0).any()
            ):
                raise ValueError(
                    f"The {name} of a Pilot must be increasing ints; got {getattr(self, name)!r}."
                )
        if len(self.shares) != 3 or min(self.shares) <= 0 or abs(sum(self.shares) - 1.0) > 1e-9:
            raise ValueError(
                f"The shares of a Pilot must be three positive floats summing to 1; got {self.shares!r}."
            )

    @classmethod
    def of_reports(cls, reports: pd.DataFrame) -> Pilot:
        """The pilot whose reports these are (its public configuration, read from their ledger)."""
        settings = require(
            reports, what="The reports", caller="geoldp.designs.Pilot.of_reports", mechanism="pilot"
        ).settings
        split = [float(settings["split"][col]) for col in COLUMNS]
        total = sum(split)
        shares = (split[0] / total, split[1] / total, split[2] / total)
        return cls(
            tuple(int(e) for e in settings["length_edges"]),
            tuple(int(e) for e in settings["zone_edges"]),
            shares,
        )

    def ledger(self, epsilon: float) -> dict[str, float]:
        """ε of each of the three reports (they add up to ``epsilon``, never more)."""
        first, rest = hybrids.split_epsilon(float(epsilon), self.shares[0])
        second, third = hybrids.split_epsilon(rest, self.shares[1] / (self.shares[1] + self.shares[2]))
        return dict(zip(COLUMNS, (first, second, third), strict=True))

    def release(
        self,
        trips: Any,
        *,
        epsilon: float,
        zones: Any,
        rng: Any = None,
        accountant: Any = None,
        user_col: Any = None,
    ) -> pd.DataFrame:
        """The pilot reports of the trajectories ``trips`` (one row each), ε per trajectory in all.

        Parameters
        ----------
        trips : GeoDataFrame
            The pilot users' trajectories (a public share of the users, chosen by the collector).
        epsilon : float
            The budget of one trajectory for the three reports together.
        zones : GeoDataFrame or GeoSeries of polygons
            The public zones the campaign is about (the coarse grid is laid over their bounds).
        rng, accountant, user_col
            As in :func:`geoldp.report`.

        Returns
        -------
        pandas.DataFrame
            The columns ``length_class``, ``zone_count_class`` and ``coarse_cell`` (each a k-RR report),
            the input's index, and their ledger (:func:`geoldp.ledger_of`).
        """
        caller = "geoldp.designs.Pilot.release"
        epsilon = check_epsilon(epsilon, caller=caller)
        z = check_zones(zones, caller=caller)
        coarse = check_zones(coarse_zones(z.series), caller=caller)
        charge = accounting.charge_release(accountant, trips, user_col, epsilon, caller=caller)
        # Point rows are one-point trajectories here at the whole ε each: say so when they look like fixes
        _frames.warn_if_fixes(trips, traj_id_col=None, caller=caller, option=None, ignore=(user_col,))
        warn_if_area_from(trips, zones, what="zones", stacklevel=2)
        tr = _frames.trajectory_arrays(trips, name="trips", caller=caller)
        source = resolve_rng(rng)
        lengths = np.diff(tr.offsets)
        zone = zone_of_vertices(z, tr.lon, tr.lat)
        cell = zone_of_vertices(coarse, tr.lon, tr.lat)
        starts = tr.offsets[:-1]
        n_zones = np.array(
            [
                np.unique(zone[a:b][zone[a:b] < z.size]).size
                for a, b in zip(starts, tr.offsets[1:], strict=True)
            ]
        )
        visited = [np.unique(cell[a:b]) for a, b in zip(starts, tr.offsets[1:], strict=True)]
        counts = np.array([v.size for v in visited], dtype=np.int64)
        pick = np.minimum((np.asarray(source.uniform(counts.size)) * counts).astype(np.int64), counts - 1)
        sampled = np.array([v[i] for v, i in zip(visited, pick, strict=True)], dtype=np.int64)
        truths = (
            np.searchsorted(np.asarray(self.length_edges), lengths, side="right"),
            np.searchsorted(np.asarray(self.zone_edges), n_zones, side="right"),
            sampled,
        )
        sizes = (len(self.length_edges) + 1, len(self.zone_edges) + 1, coarse.size + 1)
        budgets = self.ledger(epsilon)
        out = pd.DataFrame(index=trips.index)
        for col, x, k in zip(COLUMNS, truths, sizes, strict=True):
            out[col] = (
                KRR(epsilon=budgets[col], k=k).perturb(x, rng=source) if len(x) else np.zeros(0, np.int64)
            )
        del lengths, zone, cell, n_zones, visited, sampled, truths  # private: never outlive the call
        provenance = self.provenance(
            epsilon, coarse_cells=coarse.size, zones_digest=z.digest(), rng=source.policy
        )
        out.attrs = {}
        attach(out, accounting.finish_release(provenance, charge=charge))
        return out

    def provenance(self, epsilon: float, *, coarse_cells: int, zones_digest: str, rng: str) -> dict[str, Any]:
        """The public part of a pilot release's ledger: what :meth:`estimate` and the planner read.

        ``coarse_cells`` and ``zones_digest`` say which grid the cells were drawn on and which zones they
        are over; ``rng`` how the reports were drawn.
        """
        return {
            "mechanism": "pilot",
            "epsilon": epsilon,
            "split": self.ledger(epsilon),
            "length_edges": list(self.length_edges),
            "zone_edges": list(self.zone_edges),
            "coarse_cells": coarse_cells,
            "zones_digest": zones_digest,
            "rng": rng,
        }

    def estimate(self, reports: pd.DataFrame, zones: Any) -> PilotEstimate:
        """The debiased histograms of pilot reports (post-processing: the reports and the zones only)."""
        caller = "geoldp.designs.Pilot.estimate"
        led = require(reports, what="The reports", caller=caller, mechanism="pilot").settings
        z = check_zones(zones, caller=caller)
        if z.digest() != led["zones_digest"]:
            raise ValueError(f"The zones passed to {caller} are not the zones the pilot was made over.")
        coarse = coarse_zones(z.series)
        sizes = (len(self.length_edges) + 1, len(self.zone_edges) + 1, int(led["coarse_cells"]) + 1)
        n = len(reports)
        pmfs, ses = [], []
        for col, k in zip(COLUMNS, sizes, strict=True):
            counts = np.bincount(reports[col].to_numpy(np.int64), minlength=k).astype(np.float64)
            p, q, _ = krr_constants(k, float(led["split"][col]))
            unbiased = (counts - n * q) / (p - q)
            pmf = project_simplex(unbiased, float(n)) / n if n else np.full(k, 1.0 / k)
            pmfs.append(pmf)
            # k-RR's variance of a debiased count c: (n q (1 − q) + c (p − q)(1 − p − q)) / (p − q)²
            c = np.clip(unbiased, 0.0, float(n))
            var = (n * q * (1.0 - q) + c * (p - q) * (1.0 - p - q)) / (p - q) ** 2
            ses.append(np.sqrt(var) / max(n, 1))
        return PilotEstimate(
            self.length_edges,
            self.zone_edges,
            pmfs[0],
            pmfs[1],
            pmfs[2],
            n,
            coarse,
            cell_std_error=ses[2],
            zone_count_std_error=ses[1],
        )
