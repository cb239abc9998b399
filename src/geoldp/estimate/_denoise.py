"""Denoising released trajectories: the posterior geometric median of each position (post-processing).

Given the fitted mixture (candidates c with weights w_c), the posterior of released trajectory j over the
candidates is r_jc ∝ w_c exp(ℓ_jc), ℓ the per-trajectory log-likelihood of :mod:`geoldp.estimate._model`
(exact for PointEM, a simulated composite likelihood for TP/ATP). Position i of the denoised trajectory is
the point minimising the posterior expected distance Σ_c r_jc d(x, cand_{c,i}) (the Bayes estimate under the
NE loss), found by Weiszfeld iterations on the unit sphere's chords and snapped to the nearest public point.

Lengths fitted on every release run the iterations over all K candidates (O(K) per step and position).
Lengths fitted on a sample (more releases than ``fit_rows``) first pool the candidates' points at each
position by public cells of side Δ/``MEDIAN_CELLS`` (Δ the diameter of P): a cell weighs the posterior mass
of its candidates and sits at their posterior-weighted centroid, so the first moment, the iterations'
start (the posterior mean) and every candidate's mass are kept exactly and only the distances inside a
cell are approximated. The iterations then cost O(cells) per step instead of O(K); the posterior itself is
computed in log space from the likelihood tables of :class:`~geoldp.estimate._model.SimulatedChannel`,
built once per length.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from geoldp._core.kernels import jit, jit_inline
from geoldp.estimate._model import SimulatedChannel, local_xy_km

if TYPE_CHECKING:
    from geoldp._core.kernels import KernelInt
    from geoldp._core.pointset import PointSet
    from geoldp.estimate._model import Group, Model

__all__ = ["MEDIAN_CELLS", "pooled_medians", "pooled_medians_from_tables", "posterior_medoids"]

_WEISZFELD_STEPS = 8
_CHUNK = 256
#: Rows whose likelihoods are computed at once for a length fitted on a sample (2,048 x K float64).
_LIKELIHOOD_BLOCK = 2048
#: Cells across P's diameter that pool the candidates' points of a length fitted on a sample.
MEDIAN_CELLS = 64


def _lonlat(xyz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    xyz = xyz / np.maximum(np.linalg.norm(xyz, axis=-1, keepdims=True), 1e-300)
    lat = np.degrees(np.arcsin(np.clip(xyz[..., 2], -1.0, 1.0)))
    lon = np.degrees(np.arctan2(xyz[..., 1], xyz[..., 0]))
    return lon, lat


def _geometric_median(post: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """Weiszfeld iterations: (N, K) weights over (K, 3) points → (N, 3)."""
    y = post @ pts
    for _ in range(_WEISZFELD_STEPS):
        d = np.sqrt(
            np.maximum((y * y).sum(1)[:, None] - 2.0 * (y @ pts.T) + (pts * pts).sum(1)[None, :], 0.0)
        )
        wt = post / np.maximum(d, 1e-9)
        y = (wt @ pts) / wt.sum(axis=1, keepdims=True)
    return y


@jit_inline
def _pooled_weiszfeld(
    post: np.ndarray,
    pj: KernelInt,
    out: np.ndarray,
    j: KernelInt,
    i: KernelInt,
    pool: tuple[np.ndarray, np.ndarray, np.ndarray],
    steps: KernelInt,
    mass: np.ndarray,
    centre: np.ndarray,
    wts: np.ndarray,
) -> None:  # pragma: no cover
    """``out[j, i]``: pool the candidates' points at position i by cell under ``post[pj]``, then iterate.

    ``pool`` = (order, starts, points): position i's candidates sorted by cell (``order[i]``), where each
    cell's run starts (``starts[i]``, one more than the cells) and their points in that order (n, K, 3).
    """
    order, starts, pts = pool
    g = 0
    y0 = 0.0
    y1 = 0.0
    y2 = 0.0
    for u in range(starts.shape[1] - 1):
        a, b = starts[i, u], starts[i, u + 1]
        if a == b:
            break  # past the cells used at this position
        m = 0.0
        cx = 0.0
        cy = 0.0
        cz = 0.0
        for t in range(a, b):
            r = post[pj, order[i, t]]
            m += r
            cx += r * pts[i, t, 0]
            cy += r * pts[i, t, 1]
            cz += r * pts[i, t, 2]
        y0 += cx  # the posterior mean, where the exact iterations start too
        y1 += cy
        y2 += cz
        if m > 0.0:
            mass[g] = m
            centre[0, g] = cx / m
            centre[1, g] = cy / m
            centre[2, g] = cz / m
            g += 1
    cx_, cy_, cz_ = centre[0], centre[1], centre[2]
    for _ in range(steps):
        for u in range(g):  # no reduction here: the square roots and divisions vectorise
            dx = y0 - cx_[u]
            dy = y1 - cy_[u]
            dz = y2 - cz_[u]
            wts[u] = mass[u] / max(np.sqrt(dx * dx + dy * dy + dz * dz), 1e-9)
        sw = 0.0
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        for u in range(g):
            wt = wts[u]
            sw += wt
            a0 += wt * cx_[u]
            a1 += wt * cy_[u]
            a2 += wt * cz_[u]
        y0 = a0 / sw
        y1 = a1 / sw
        y2 = a2 / sw
    out[j, i, 0] = y0
    out[j, i, 1] = y1
    out[j, i, 2] = y2


@jit
def pooled_medians(
    post: np.ndarray,
    pool: tuple[np.ndarray, np.ndarray, np.ndarray],
    steps: KernelInt,
    mass: np.ndarray,
    centre: np.ndarray,
    wts: np.ndarray,
    out: np.ndarray,
) -> np.ndarray:  # pragma: no cover
    """Weiszfeld iterations over the candidates pooled by cell, for every row and position.

    ``post`` (B, K) posteriors; ``pool`` the candidates by cell (see ``_pooled_weiszfeld``); ``mass``
    (G,), ``centre`` (3, G) and ``wts`` (G,) work arrays (G ≥ the cells used at any position); ``out``
    (B, n, 3) receives the estimates.
    """
    for j in range(post.shape[0]):
        for i in range(out.shape[1]):
            _pooled_weiszfeld(post, j, out, j, i, pool, steps, mass, centre, wts)
    return out


@jit
def pooled_medians_from_tables(
    tables: np.ndarray,
    cells: np.ndarray,
    logw: np.ndarray,
    pool: tuple[np.ndarray, np.ndarray, np.ndarray],
    steps: KernelInt,
    post: np.ndarray,
    mass: np.ndarray,
    centre: np.ndarray,
    wts: np.ndarray,
    out: np.ndarray,
) -> np.ndarray:  # pragma: no cover
    """:func:`pooled_medians` of TP/ATP rows, their posteriors computed row by row from the tables.

    ``tables`` (n, cells, K) log q̂ of :class:`~geoldp.estimate._model.SimulatedChannel` (float32: they
    are read once per row and position), ``cells`` (B, n) the rows' released cells, ``logw`` (K,) the log
    weights (−inf for 0), ``post`` (1, K) work: ℓ_jc + log w_c summed in float64, less its maximum,
    exponentiated and normalised (log space: no underflow at any ℓ).
    """
    k = logw.shape[0]
    for j in range(cells.shape[0]):
        for c in range(k):
            post[0, c] = logw[c]
        for i in range(cells.shape[1]):
            row = tables[i, cells[j, i]]
            for c in range(k):
                post[0, c] += row[c]
        top = -np.inf
        for c in range(k):
            top = max(top, post[0, c])
        tot = 0.0
        for c in range(k):
            r = np.exp(post[0, c] - top)
            post[0, c] = r
            tot += r
        for c in range(k):
            post[0, c] /= tot
        for i in range(cells.shape[1]):
            _pooled_weiszfeld(post, 0, out, j, i, pool, steps, mass, centre, wts)
    return out


def _pooling(ps: PointSet, cand: np.ndarray, xyz: np.ndarray) -> tuple[tuple[np.ndarray, ...], int]:
    """The candidates of every position sorted by pooling cell (see ``_pooled_weiszfeld``), most cells.

    Cells: a square grid of side Δ/``MEDIAN_CELLS`` over P's local plane (public: P only).
    """
    lon0, lat0 = float(np.mean(ps.lon)), float(np.mean(ps.lat))
    x, y = local_xy_km(ps.lon, ps.lat, lon0, lat0)
    side = max(ps.diameter_km / MEDIAN_CELLS, 1e-9)
    ix = np.floor((x - x.min()) / side).astype(np.int64)
    iy = np.floor((y - y.min()) / side).astype(np.int64)
    point_cell = ix * (int(iy.max()) + 1) + iy
    n, k = cand.shape[1], cand.shape[0]
    runs = [np.unique(point_cell[cand[:, i]], return_inverse=True)[1].reshape(-1) for i in range(n)]
    most = max(int(r.max()) + 1 for r in runs)
    order = np.empty((n, k), dtype=np.int64)
    starts = np.full((n, most + 1), k, dtype=np.int64)
    for i, run in enumerate(runs):
        order[i] = np.argsort(run, kind="stable")
        used = int(run.max()) + 1
        starts[i, : used + 1] = np.searchsorted(run[order[i]], np.arange(used + 1))
    pts = np.ascontiguousarray(xyz[cand.T[np.arange(n)[:, None], order]])
    return (order, starts, pts), most


def _log_posterior(ll: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(rows, K) r_jc ∝ w_c exp(ℓ_jc), normalised in log space (exact at any ℓ)."""
    with np.errstate(divide="ignore"):
        ll += np.log(np.asarray(w, dtype=np.float64))[None, :]
    ll -= ll.max(axis=1, keepdims=True)
    np.exp(ll, out=ll)
    ll /= ll.sum(axis=1, keepdims=True)
    return ll


def _pooled_group(g: Group, ps: PointSet, xyz: np.ndarray, res: np.ndarray) -> None:
    """Denoise every released row of a length fitted on a sample (see the module notes)."""
    pool, most = _pooling(ps, g.cand, xyz)
    mass, centre, wts = np.empty(most), np.empty((3, most)), np.empty(most)
    channel = g.row_loglik
    if channel is None:  # set together with fit_rows, which the caller checked
        raise RuntimeError("A length fitted on a sample has no row likelihood.")
    simulated = channel if isinstance(channel, SimulatedChannel) else None
    if simulated is not None:
        tables = simulated.tables().astype(np.float32)
        with np.errstate(divide="ignore"):
            logw = np.log(np.asarray(g.w, dtype=np.float64))
        post = np.empty((1, g.cand.shape[0]))
    for a0 in range(0, g.released.shape[0], _LIKELIHOOD_BLOCK):
        rows = g.released[a0 : a0 + _LIKELIHOOD_BLOCK]
        y = np.empty((*rows.shape, 3))
        if simulated is not None:
            z = np.ascontiguousarray(simulated.cell[rows])
            pooled_medians_from_tables(tables, z, logw, pool, _WEISZFELD_STEPS, post, mass, centre, wts, y)
        else:
            p = _log_posterior(channel(rows), g.w)
            pooled_medians(p, pool, _WEISZFELD_STEPS, mass, centre, wts, y)
        lon, lat = _lonlat(y)
        idx, _ = ps.nearest(lon.reshape(-1), lat.reshape(-1))
        res[a0 : a0 + rows.shape[0]] = np.asarray(idx, dtype=np.int64).reshape(rows.shape)


def posterior_medoids(model: Model, n_rows: int) -> list[np.ndarray]:
    """Denoised index arrays of every released trajectory, in release order."""
    ps = model.ps
    xyz = np.asarray(ps.xyz, dtype=np.float64)
    out: list = [None] * n_rows
    for g in model.groups:
        res = np.empty(g.released.shape, dtype=np.int64)
        if g.fit_rows is not None:
            _pooled_group(g, ps, xyz, res)
        else:
            for a in range(0, g.released.shape[0], _CHUNK):
                post = g.posterior(a, a + _CHUNK)
                for i in range(g.n):
                    lon, lat = _lonlat(_geometric_median(post, xyz[g.cand[:, i]]))
                    idx, _ = ps.nearest(lon, lat)
                    res[a : a + _CHUNK, i] = np.asarray(idx, dtype=np.int64).reshape(-1)
        for j, r in enumerate(g.rows):
            out[r] = res[j].copy()
    return out
