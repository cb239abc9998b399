"""Denoising released trajectories: the posterior geometric median of each position (post-processing).

Given the fitted library (candidates c with weights w_c and S simulated releases each), the posterior of a
released trajectory y of length n over the candidates is

    r_c(y) ∝ w_c · Π_i q_{c,i}(cell(y_i)),   q_{c,i}(z) = (#{s : cell(sim_{c,s,i}) = z} + a·f_i(z)) / (S + a),

where f_i is the released cell frequency at position i over the whole release (a back-off that keeps a
cell no simulation reached from zeroing a candidate) and a = S. Position i of the denoised trajectory is
the point minimising the posterior expected distance Σ_c r_c d(x, cand_{c,i}) (the Bayes estimate under the
NE loss), found by Weiszfeld iterations on the unit sphere's chords and snapped to the nearest public point.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["posterior_medoids"]

_WEISZFELD_STEPS = 8
_CHUNK = 256


def _lonlat(xyz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    xyz = xyz / np.maximum(np.linalg.norm(xyz, axis=-1, keepdims=True), 1e-300)
    lat = np.degrees(np.arcsin(np.clip(xyz[..., 2], -1.0, 1.0)))
    lon = np.degrees(np.arctan2(xyz[..., 1], xyz[..., 0]))
    return lon, lat


def _posterior(
    g, released: np.ndarray, freqs: list[np.ndarray], cell: np.ndarray, n_cells: int
) -> np.ndarray:
    """(N, K) posterior of released trajectories of the group ``g`` over its candidates."""
    k, s, n = g.sims.shape
    loglik = np.zeros((released.shape[0], k))
    for i in range(n):
        sim_cells = cell[g.sims[:, :, i]]  # (K, S)
        counts = sp.csr_matrix(
            (np.ones(k * s), (np.repeat(np.arange(k), s), sim_cells.reshape(-1))), shape=(k, n_cells)
        )
        obs = cell[released[:, i]]
        freq = freqs[i]
        c = np.asarray(counts[:, obs].todense()).T  # (N, K)
        loglik += np.log((c + s * freq[obs][:, None]) / (2.0 * s))
    logw = np.log(np.maximum(g.w, 1e-300))[None, :] + loglik
    logw -= logw.max(axis=1, keepdims=True)
    post = np.exp(logw)
    return post / post.sum(axis=1, keepdims=True)


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


def posterior_medoids(model, n_rows: int) -> list[np.ndarray]:
    """Denoised index arrays of every released trajectory, in release order."""
    ps = model.ps
    xyz = np.asarray(ps.xyz, dtype=np.float64)
    out: list = [None] * n_rows
    for g in model.groups:
        res = np.empty(g.released.shape, dtype=np.int64)
        cells = model.cell[g.released]
        freqs = [np.bincount(cells[:, i], minlength=model.n_cells) / cells.shape[0] for i in range(g.n)]
        for a in range(0, g.released.shape[0], _CHUNK):
            post = _posterior(g, g.released[a : a + _CHUNK], freqs, model.cell, model.n_cells)
            for i in range(g.n):
                lon, lat = _lonlat(_geometric_median(post, xyz[g.cand[:, i]]))
                idx, _ = ps.nearest(lon, lat)
                res[a : a + _CHUNK, i] = np.asarray(idx, dtype=np.int64).reshape(-1)
        for j, r in enumerate(g.rows):
            out[r] = res[j].copy()
    return out
