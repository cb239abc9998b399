"""Trajectory designs: every trajectory released by TP, ATP or PointEM over the public point set P."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from geoldp._core import frames as _frames
from geoldp._core.box import planar_box
from geoldp.designs._counts import counts_answer
from geoldp.designs.base import Design, register_kind
from geoldp.designs.simulation import REPS, Simulated, Simulation, needs, truth
from geoldp.questions import ALL, Question
from geoldp.trajectory import perturb_coordinates, perturb_trajectories
from geoldp.trajectory.engine import MECHANISMS


@dataclass(frozen=True)
class TrajectoryDesign(Design):
    """Release every trajectory with a trajectory mechanism; answer with the release's own counts.

    TraCS-D and TraCS-C (``"tracs-d"``, ``"tracs-c"``) release in the bounding box of P (public) and their
    locations are snapped to P (post-processing), so that they answer on the same zones.

    The answer is the raw count of released trajectories per zone (or zone pair), as the planner
    simulates it: no interval is claimed (:func:`geoldp.estimate.visit_counts` estimates the original
    counts with intervals from the same release).

    Parameters
    ----------
    mechanism : {"tp", "atp", "pointem", "tracs-d", "tracs-c"}
    """

    kind: ClassVar[str] = "trajectory"
    mechanism: str = "atp"

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"mechanism must be one of {sorted(MECHANISMS)}; got {self.mechanism!r}")

    @property
    def name(self) -> str:  # noqa: D102
        return self.mechanism

    @property
    def questions(self) -> tuple[Question, ...]:  # noqa: D102
        return ALL

    def _release(self, trips: Any, points: Any, zones: Any, **common: Any) -> Any:
        if points is None:
            raise ValueError(f"The design {self.name!r} releases over a public point set: pass points=P.")
        if self.continuous:  # TraCS: in P's box (public), then snapped to P (post-processing)
            common["bounds"] = public_box(trips, points, caller=f"the design {self.name!r}")
        return trips.ldp.perturb(points, mechanism=self.mechanism, **common)

    @property
    def continuous(self) -> bool:
        """Whether the mechanism releases continuous coordinates in a public box (TraCS-D, TraCS-C)."""
        return bool(getattr(MECHANISMS[self.mechanism], "continuous", False))

    def _answer(self, released: Any, q: Question, points: Any, zones: Any) -> pd.DataFrame:
        return counts_answer(
            released,
            zones,
            q,
            design=self.name,
            covers="no interval: the released trajectories' own counts",
        )

    def simulate(self, sim: Simulation, question: str) -> Simulated:  # noqa: D102
        seqs = self._simulate_continuous(sim) if self.continuous else self._simulate_on_points(sim)
        counting = sim.od if needs(question) == "od" else sim.visits
        return [counting(rel) * (sim.n / len(sim.seqs)) for rel in seqs], None

    def _simulate_on_points(self, sim: Simulation) -> list[list[np.ndarray]]:
        out = []
        for _ in range(REPS):
            seed = int(sim.rng.integers(2**63 - 1))
            out.append(
                perturb_trajectories(
                    sim.seqs, sim.ps, mechanism=self.mechanism, epsilon=sim.epsilon, rng=seed
                )
            )
        return out

    def _simulate_continuous(self, sim: Simulation) -> list[list[np.ndarray]]:
        """In P's lon/lat box (public), the released locations snapped to P."""
        lon, lat = np.asarray(sim.ps.lon), np.asarray(sim.ps.lat)
        box = sim.lonlat_box()
        plane = planar_box(box, "EPSG:4326", caller="geoldp.plan")
        x, y = plane.to_plane(lon, lat)
        xy = np.column_stack([x, y])
        cuts = np.cumsum([s.shape[0] for s in sim.seqs])[:-1]
        out = []
        for _ in range(REPS):
            seed = int(sim.rng.integers(2**63 - 1))
            rel = perturb_coordinates(
                [xy[s] for s in sim.seqs],
                mechanism=self.mechanism,
                epsilon=sim.epsilon,
                rng=seed,
                bounds=plane.planar_bounds,
            )
            flat = np.concatenate(rel)
            rlon, rlat = plane.to_wgs84(flat[:, 0], flat[:, 1])
            out.append(np.split(np.asarray(sim.ps.nearest(rlon, rlat)[0], dtype=np.int64), cuts))
        return out


def simulated_rms(sim: Simulation, question: str, mechanism: str) -> np.ndarray:
    """Per-cell RMS deviation of ``mechanism``'s raw counts from ``sim``'s truth, at least one simulated
    trajectory's count (:func:`geoldp.planner.trajectory_rms` on a given population)."""
    exact = truth(sim, question)
    ests, _ = TrajectoryDesign(mechanism).simulate(sim, question)
    rms = np.sqrt(np.mean([(e - exact) ** 2 for e in ests], axis=0))
    return np.maximum(rms, sim.n / len(sim.seqs))


def public_box(trips: Any, points: Any, *, caller: str) -> tuple[float, float, float, float]:
    """The bounding box of the public points P in the trips' CRS: a public box for a TraCS release."""
    ps, source = _frames.resolve_points(points, caller=caller)
    x, y = _frames.public_xy(ps, trips.crs, source)
    return float(np.min(x)), float(np.min(y)), float(np.max(x)), float(np.max(y))


def _parse(words: list[str], question: Question | None) -> Design:
    if len(words) != 1:
        raise ValueError(f"a trajectory design is a mechanism name alone (one of {sorted(MECHANISMS)})")
    return TrajectoryDesign(words[0])


for _name in MECHANISMS:
    register_kind(_name, _parse)
