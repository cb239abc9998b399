"""Hotspots that do not rank noise: the top rows among those the release supports."""

from __future__ import annotations

import numpy as np
import pandas as pd


def top_supported(table: pd.DataFrame, k: int, *, by: str = "estimate") -> pd.DataFrame:
    """The ``k`` supported rows with the largest ``by`` (ties by position), ranked 1..k.

    A row that is not ``supported`` cannot be told from what a population without data gives, so it is
    never ranked: with no supported row the result is empty, and ``attrs`` says so. ``attrs`` holds
    ``supported_cells`` and ``cells`` (the rows ranked among, and all rows).
    """
    supported = np.asarray(table["supported"].to_numpy(), dtype=bool)
    rows = np.flatnonzero(supported)
    order = rows[np.lexsort((rows, -table[by].to_numpy()[rows]))][:k]
    out = table.iloc[order].copy()
    out.insert(0, "rank", np.arange(1, len(out) + 1))
    out.attrs = {**table.attrs, "supported_cells": int(rows.size), "cells": len(table)}
    if rows.size == 0:
        out.attrs["note"] = "no supported hotspot: no cell's interval excludes the no-data answer"
    return out
