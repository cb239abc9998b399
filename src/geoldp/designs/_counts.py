"""Counts of released trajectories over public zones, as answer rows (post-processing of a release)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from geoldp import metrics
from geoldp.questions import Question, answer_table
from geoldp.zones import check_zones


def zone_index(zones: Any, *, od: bool, caller: str) -> pd.Index:
    """The answer's index: the zones' labels (``zone``), or every ordered pair of them."""
    z = check_zones(zones, caller=caller)
    labels = z.index.copy().rename("zone")
    if not od:
        return labels
    a, b = np.divmod(np.arange(z.size * z.size), z.size)
    return pd.MultiIndex.from_arrays([labels[a], labels[b]], names=["origin", "destination"])


def released_counts(trajectories: Any, zones: Any, question: Question, *, caller: str) -> np.ndarray:
    """Trajectories of a release visiting each zone, or starting and ending in each zone pair."""
    if question.is_od:
        table = metrics.od_counts(trajectories, zones)
        index = zone_index(zones, od=False, caller=caller)
        return table.reindex(index=index, columns=index, fill_value=0).to_numpy(np.float64).reshape(-1)
    return metrics.zone_visit_counts(trajectories, zones).to_numpy(np.float64)


def counts_answer(
    trajectories: Any, zones: Any, question: Question, *, design: str, covers: str
) -> pd.DataFrame:
    """The answer table of a release of trajectories: their own counts, no interval (``covers`` says why)."""
    caller = f"the answer of design {design!r}"
    counts = released_counts(trajectories, zones, question, caller=caller)
    index = zone_index(zones, od=question.is_od, caller=caller)
    return answer_table(index, counts, raw=counts, question=question, design=design, covers=covers)
