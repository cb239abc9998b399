"""Trajectory mechanisms TP, ATP, PointEM, TraCS-D and TraCS-C, and the engine entry points.

Zhang, Ye, Chen, Hu, Han. Trajectory Data Collection with Local Differential Privacy. PVLDB 16(10), 2023.
https://arxiv.org/abs/2307.09339
"""

from __future__ import annotations

from geoldp.trajectory.atp import ATP as ATP
from geoldp.trajectory.engine import (
    perturb_coordinates,
    precompute,
)
from geoldp.trajectory.engine import (
    perturb_trajectories as perturb_trajectories,
)
from geoldp.trajectory.pointem import PointEM as PointEM
from geoldp.trajectory.tp import TP as TP
from geoldp.trajectory.tracs import TraCSC, TraCSD

__all__ = ["TraCSC", "TraCSD", "perturb_coordinates", "precompute"]
