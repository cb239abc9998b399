"""The synthesis design: LDPTrace reports of grid transitions, and synthetic trajectories drawn from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from geoldp import ldptrace
from geoldp.designs._counts import counts_answer
from geoldp.designs.base import Design, register_kind
from geoldp.designs.simulation import REPS, Simulated, Simulation, needs
from geoldp.questions import ALL, Question
from geoldp.zones import zone_of_vertices

_DEFAULT_GRID = 6


@dataclass(frozen=True)
class SynthesisDesign(Design):
    """LDPTrace (:func:`geoldp.synthesize`) on a ``grid_size`` × ``grid_size`` grid over P's box.

    The answer counts the synthetic trajectories (as many as the users): no interval is claimed.
    """

    kind: ClassVar[str] = "synthesis"
    grid_size: int = _DEFAULT_GRID

    def __post_init__(self) -> None:
        if not isinstance(self.grid_size, int) or self.grid_size < 2:
            raise ValueError(f"grid_size must be an int >= 2; got {self.grid_size!r}")

    @property
    def name(self) -> str:  # noqa: D102
        return "ldptrace" if self.grid_size == _DEFAULT_GRID else f"ldptrace:grid{self.grid_size}"

    @property
    def questions(self) -> tuple[Question, ...]:  # noqa: D102
        return ALL

    def _release(self, trips: Any, points: Any, zones: Any, **common: Any) -> Any:
        if points is None:
            raise ValueError(f"The design {self.name!r} lays its grid over P's box: pass points=P.")
        return ldptrace.synthesize(trips, points=points, grid_size=self.grid_size, **common)

    def _answer(self, released: Any, q: Question, points: Any, zones: Any) -> pd.DataFrame:
        return counts_answer(
            released,
            zones,
            q,
            design=self.name,
            covers="no interval: counts of the synthetic trajectories",
        )

    def simulate(self, sim: Simulation, question: str) -> Simulated:
        """The collection of ``sim.n`` users' reports on the grid over P's lon/lat box (public), the Markov
        model and as many synthetic trajectories as the population has, whose zone counts are scaled to n."""
        lon, lat = np.asarray(sim.ps.lon), np.asarray(sim.ps.lat)
        box = sim.lonlat_box()
        grid = ldptrace.Grid(*box, n=self.grid_size)
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
        for _ in range(REPS):
            seed = int(sim.rng.integers(2**63 - 1))
            model = ldptrace.collect(cells, offsets, grid, sim.epsilon, rng=seed)
            syn, off = ldptrace.synthesize_cells(model, len(sim.seqs), rng=seed + 1)
            zone_seqs = [zone_of_cell[syn[a:b]] for a, b in zip(off[:-1], off[1:], strict=True) if b > a]
            counts = sim.od_of_zones(zone_seqs) if needs(question) == "od" else sim.visits_of_zones(zone_seqs)
            out.append(counts * (sim.n / max(len(zone_seqs), 1)))
        return out, None


def _parse(words: list[str], question: Question | None) -> Design:
    if len(words) == 1:
        return SynthesisDesign()
    if len(words) == 2 and words[1].startswith("grid") and words[1][4:].isdigit():
        return SynthesisDesign(int(words[1][4:]))
    raise ValueError("a synthesis design is 'ldptrace' or 'ldptrace:grid<N>'")


register_kind("ldptrace", _parse)
