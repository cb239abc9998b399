"""Trajectory mechanisms TP, ATP and PointEM, and the engine entry point.

Zhang, Ye, Chen, Hu, Han. Trajectory Data Collection with Local Differential Privacy. PVLDB 16(10), 2023.
https://arxiv.org/abs/2307.09339
"""

from __future__ import annotations

from geoldp.trajectory.atp import ATP
from geoldp.trajectory.engine import perturb_trajectories, precompute
from geoldp.trajectory.pointem import PointEM
from geoldp.trajectory.tp import TP

__all__ = ["ATP", "TP", "PointEM", "perturb_trajectories", "precompute"]
