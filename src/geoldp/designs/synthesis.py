"""The synthesis design: LDPTrace reports of grid transitions, and synthetic trajectories drawn from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

from geoldp import ldptrace
from geoldp.designs._counts import counts_answer
from geoldp.designs.base import Design, register_kind
from geoldp.questions import ALL, Question

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

    def release(  # noqa: D102
        self,
        trips: Any,
        *,
        epsilon: float,
        points: Any = None,
        zones: Any = None,
        rng: Any = None,
        accountant: Any = None,
        user_col: Any = None,
    ) -> Any:
        if points is None:
            raise ValueError(f"The design {self.name!r} lays its grid over P's box: pass points=P.")
        return ldptrace.synthesize(
            trips,
            epsilon=epsilon,
            points=points,
            grid_size=self.grid_size,
            rng=rng,
            accountant=accountant,
            user_col=user_col,
        )

    def answer(  # noqa: D102
        self, released: Any, question: Any, *, points: Any = None, zones: Any = None
    ) -> pd.DataFrame:
        return counts_answer(
            released,
            zones,
            self._question(question),
            design=self.name,
            covers="no interval: counts of the synthetic trajectories",
        )


def _parse(words: list[str], question: Question | None) -> Design:
    if len(words) == 1:
        return SynthesisDesign()
    if len(words) == 2 and words[1].startswith("grid") and words[1][4:].isdigit():
        return SynthesisDesign(int(words[1][4:]))
    raise ValueError("a synthesis design is 'ldptrace' or 'ldptrace:grid<N>'")


register_kind("ldptrace", _parse)
