"""LDPTrace's public grid and grid trajectories, with numpy only (shared by the collector and the device).

:mod:`geoldp.ldptrace` (the collector's side) and :mod:`geoldp.client` (a user's device) both read the
cells of a trajectory from here, so a device reports exactly the cells the central simulation counts.
This module imports numpy and the standard library only (``import geoldp.client`` stays light).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["GRID_MAX", "MOVES", "Grid", "cell_sequences", "move_codes"]

#: The 8 moves to adjacent cells, (dx, dy) in cell units; a transition report is ``cell * 8 + move``.
MOVES = np.array([(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)], dtype=np.int64)

#: Largest grid side accepted (8 N² transition bits per report).
GRID_MAX = 256


@dataclass(frozen=True)
class Grid:
    """A public N × N grid over a box ``(minx, miny, maxx, maxy)`` in some CRS.

    Cell ``ix * n + iy`` covers column ``ix`` (along x) and row ``iy`` (along y). A point outside the box
    belongs to the nearest edge cell (clamped), so the domain never depends on the data.
    """

    minx: float
    miny: float
    maxx: float
    maxy: float
    n: int

    def __post_init__(self) -> None:
        if not (self.maxx > self.minx and self.maxy > self.miny):
            raise ValueError("A Grid needs minx < maxx and miny < maxy.")
        if not 1 <= self.n <= GRID_MAX:
            raise ValueError(f"A Grid's side n must be in [1, {GRID_MAX}].")

    @property
    def size(self) -> int:
        """Number of cells, N²."""
        return self.n * self.n

    def cells(self, x: Any, y: Any) -> np.ndarray:
        """Cell of every point (clamped to the box)."""
        n = self.n
        fx = (np.asarray(x, dtype=np.float64) - self.minx) / (self.maxx - self.minx)
        fy = (np.asarray(y, dtype=np.float64) - self.miny) / (self.maxy - self.miny)
        ix = np.clip(np.floor(fx * n), 0, n - 1).astype(np.int64)
        iy = np.clip(np.floor(fy * n), 0, n - 1).astype(np.int64)
        return ix * n + iy

    def centres(self) -> tuple[np.ndarray, np.ndarray]:
        """The x and y of every cell centre (public)."""
        k = np.arange(self.size)
        ix, iy = np.divmod(k, self.n)
        x = self.minx + (ix + 0.5) * (self.maxx - self.minx) / self.n
        y = self.miny + (iy + 0.5) * (self.maxy - self.miny) / self.n
        return x, y

    def neighbours(self) -> np.ndarray:
        """``(N², 8)`` int64: the cell reached by each move of :data:`MOVES`, -1 outside the grid."""
        ix, iy = np.divmod(np.arange(self.size), self.n)
        nx = ix[:, None] + MOVES[None, :, 0]
        ny = iy[:, None] + MOVES[None, :, 1]
        inside = (nx >= 0) & (nx < self.n) & (ny >= 0) & (ny < self.n)
        return np.where(inside, nx * self.n + ny, -1)

    def to_dict(self) -> dict[str, Any]:
        """The grid recipe (public), as recorded in the ledger."""
        return {"bounds": [self.minx, self.miny, self.maxx, self.maxy], "n": self.n, "cells": self.size}


def cell_sequences(x: Any, y: Any, offsets: Any, grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """Grid trajectories: cells of the vertices, repeats dropped, gaps filled by the diagonal-first path.

    Consecutive vertices in the same cell count once; a move between non-adjacent cells goes through the
    cells of the path that steps diagonally until one coordinate is reached, then straight (as the
    published code), so that every step is one of the 8 :data:`MOVES`.

    Returns
    -------
    cells : ndarray of int64
    offsets : ndarray of int64, shape (T + 1,)
        Trajectory ``t`` is ``cells[offsets[t]:offsets[t + 1]]`` (at least one cell each).
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    c = grid.cells(x, y)
    t = offsets.shape[0] - 1
    starts = offsets[:-1]
    first = np.zeros(c.shape[0], dtype=bool)
    first[starts[np.diff(offsets) > 0]] = True
    keep = first.copy()
    keep[1:] |= c[1:] != c[:-1]
    traj = np.repeat(np.arange(t), np.diff(offsets))
    c, traj = c[keep], traj[keep]
    # steps to the next vertex of the same trajectory (the last vertex of each one emits only itself)
    ix, iy = np.divmod(c, grid.n)
    last = np.ones(c.shape[0], dtype=bool)
    last[:-1] = traj[1:] != traj[:-1]
    dx = np.zeros_like(ix)
    dy = np.zeros_like(iy)
    dx[:-1] = np.where(last[:-1], 0, ix[1:] - ix[:-1])
    dy[:-1] = np.where(last[:-1], 0, iy[1:] - iy[:-1])
    reps = np.maximum(np.maximum(np.abs(dx), np.abs(dy)), 1)
    k = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
    src = np.repeat(np.arange(c.shape[0]), reps)
    px = ix[src] + np.sign(dx[src]) * np.minimum(k, np.abs(dx[src]))
    py = iy[src] + np.sign(dy[src]) * np.minimum(k, np.abs(dy[src]))
    out = px * grid.n + py
    counts = np.bincount(traj[src], minlength=t)
    return out.astype(np.int64), np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def move_codes(a: np.ndarray, b: np.ndarray, grid: Grid) -> np.ndarray:
    """Index into :data:`MOVES` of each step from cell ``a`` to the adjacent cell ``b``."""
    ax, ay = np.divmod(np.asarray(a, dtype=np.int64), grid.n)
    bx, by = np.divmod(np.asarray(b, dtype=np.int64), grid.n)
    m = (bx - ax + 1) * 3 + (by - ay + 1)  # 0..8 in the 3 × 3 block, 4 = no move
    return m - (m > 4)


def round2_values(cells: np.ndarray, max_length: int, grid: Grid) -> tuple[int, int, np.ndarray]:
    """The true values of one user's round-2 reports: start cell, end cell and L − 1 transitions.

    ``cells`` is one grid trajectory (:func:`cell_sequences`), truncated here to its first L cells. The
    transitions are ``cell * 8 + move`` (:func:`move_codes`), padded with ``-1`` (an empty report) to
    L − 1 values, exactly what :func:`geoldp.ldptrace.collect` counts for this user.
    """
    used = cells[: min(int(cells.shape[0]), max_length)]
    moves = np.full(max_length - 1, -1, dtype=np.int64)
    k = used.shape[0] - 1
    moves[:k] = used[:-1] * 8 + move_codes(used[:-1], used[1:], grid)
    return int(used[0]), int(used[-1]), moves
