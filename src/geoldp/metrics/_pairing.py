"""Reading the two sides of a comparison: original and perturbed rows matched by position."""

from __future__ import annotations

from typing import Any

import numpy as np

from geoldp._core.frames import TrajectoryArrays, as_pointset, trajectory_arrays
from geoldp._core.geo import haversine_array_m
from geoldp._core.pointset import PointSet


def pair(
    original: Any, perturbed: Any, points: Any, *, caller: str, pointwise: bool = True
) -> tuple[TrajectoryArrays, TrajectoryArrays, PointSet | None]:
    pts = as_pointset(points, caller=caller) if points is not None else None
    to = trajectory_arrays(original, pts, name="original", caller=caller)
    tp = trajectory_arrays(perturbed, pts, name="perturbed", caller=caller)
    check_same_rows(to, tp, caller=caller)
    if to.n_trajectories == 0:
        raise ValueError(f"{caller}: 'original' and 'perturbed' must contain at least one trajectory.")
    if pointwise:
        diff = np.flatnonzero(to.lengths != tp.lengths)
        if diff.size:
            r = int(diff[0])
            raise ValueError(
                f"{caller}: row {r} has {int(to.lengths[r])} points in 'original' and "
                f"{int(tp.lengths[r])} in "
                "'perturbed'; rows are matched by position and must have the same number of points."
            )
    return to, tp, pts


def check_same_rows(
    to: TrajectoryArrays, tp: TrajectoryArrays, *, caller: str, name: str = "perturbed"
) -> None:
    """Raise ValueError unless ``tp`` (the input ``name``) has as many trajectories as 'original' ``to``."""
    if to.n_trajectories != tp.n_trajectories:
        raise ValueError(
            f"{caller}: 'original' has {to.n_trajectories} trajectories and {name!r} has "
            f"{tp.n_trajectories}; rows are matched by position, so both must have the same number of rows."
        )


def point_distances_m(to: TrajectoryArrays, tp: TrajectoryArrays) -> np.ndarray:
    return haversine_array_m(to.lon, to.lat, tp.lon, tp.lat)


def per_trajectory_mean(values: np.ndarray, tr: TrajectoryArrays) -> np.ndarray:
    """Mean of a flat per-vertex array (N,) or (N, k) within each trajectory."""
    sums = np.add.reduceat(values, tr.offsets[:-1], axis=0)
    lengths = tr.lengths.astype(np.float64)
    return sums / (lengths if values.ndim == 1 else lengths[:, None])
