"""Denoising released trajectories: the posterior geometric median of each position (post-processing).

Given the fitted mixture (candidates c with weights w_c), the posterior of released trajectory j over the
candidates is r_jc ∝ w_c exp(ℓ_jc), ℓ the per-trajectory log-likelihood of :mod:`geoldp.estimate._model`
(exact for PointEM, a simulated composite likelihood for TP/ATP). Position i of the denoised trajectory is
the point minimising the posterior expected distance Σ_c r_jc d(x, cand_{c,i}) (the Bayes estimate under the
NE loss), found by Weiszfeld iterations on the unit sphere's chords and snapped to the nearest public point.
"""

from __future__ import annotations

import numpy as np

__all__ = ["posterior_medoids"]

_WEISZFELD_STEPS = 8
_CHUNK = 256
#: Rows whose likelihoods are computed at once for a length fitted on a sample (2,048 x K float64).
_LIKELIHOOD_BLOCK = 2048


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


def posterior_medoids(model, n_rows: int) -> list[np.ndarray]:
    """Denoised index arrays of every released trajectory, in release order."""
    ps = model.ps
    xyz = np.asarray(ps.xyz, dtype=np.float64)
    out: list = [None] * n_rows
    for g in model.groups:
        res = np.empty(g.released.shape, dtype=np.int64)
        # every released row, also those a large length did not fit on: their likelihoods are computed
        # here, a block of rows at a time (larger blocks amortise building the channel tables)
        step = _CHUNK if g.fit_rows is None else _LIKELIHOOD_BLOCK
        for a0 in range(0, g.released.shape[0], step):
            block = g.posterior_of_released(a0, a0 + step)
            for a in range(0, block.shape[0], _CHUNK):
                post = block[a : a + _CHUNK]
                for i in range(g.n):
                    lon, lat = _lonlat(_geometric_median(post, xyz[g.cand[:, i]]))
                    idx, _ = ps.nearest(lon, lat)
                    res[a0 + a : a0 + a + _CHUNK, i] = np.asarray(idx, dtype=np.int64).reshape(-1)
        for j, r in enumerate(g.rows):
            out[r] = res[j].copy()
    return out
