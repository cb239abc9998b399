"""The population model behind the collector-side estimators: a weighted library of candidate trajectories.

For every released trajectory length n the model is a finite mixture over a *library* of K candidate
trajectories (index arrays into P) with weights w ≥ 0, Σ w = N (the number of released trajectories of
length n). The channel of TP, ATP and PointEM is public, so the release distribution of every candidate is
simulated by running the mechanism on it S times (ChaCha20 streams under a key drawn from the caller's rng).
The weights maximise a Poisson likelihood of the released (position, cell) counts, cells being a public
grid over P, by the EM algorithm for mixtures (the iterative Bayesian update with a simulated channel).
EM started from uniform weights and stopped early is a regularised estimate: a fixed number of iterations
(64 by default), or a number chosen by two-fold cross-validation over released rows (held-out likelihood).

Every estimator is a linear functional of w: for a query with per-candidate values V (K x T) the estimate is
Vᵀ w. Intervals come from a bootstrap over released rows and over the simulations, re-running the fit.

Everything here is post-processing: the inputs are released index arrays, the public point set, the public
mechanism and a key for the simulations. Nothing outlives a call (no caches).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from geoldp.geo import EARTH_RADIUS_M
from geoldp.trajectory.engine import run_with_key

__all__ = ["CHECKPOINTS", "FitOptions", "Group", "Model", "fit", "grid_cells", "local_xy_km"]

_KM_PER_DEG = EARTH_RADIUS_M * math.pi / 180.0 / 1000.0
#: EM iteration counts compared by cross-validation (0 = the library's prior).
CHECKPOINTS = (0, 1, 2, 4, 8, 16, 32, 64, 128)


@dataclass(frozen=True)
class FitOptions:
    """Public knobs of the fit (documented in :mod:`geoldp.estimate`)."""

    n_candidates: int = 3000
    n_sims: int = 16
    cell_km: float | None = None
    n_iter: int | str = 64
    n_boot: int = 30
    level: float = 0.95


@dataclass
class Group:
    """One released trajectory length n: observations, candidate library, simulations and weights."""

    n: int
    rows: np.ndarray  # (N,) positions (in the release) of the trajectories of this length
    released: np.ndarray  # (N, n) released point indices
    cand: np.ndarray  # (K, n) candidate trajectories (point indices)
    sims: np.ndarray  # (K, S, n) released point indices of the simulated releases
    w: np.ndarray | None = None  # (K,) fitted weights, sum N
    boot_w: np.ndarray | None = None  # (B, K) bootstrap weights
    n_iter: int = 0  # EM iterations used


def local_xy_km(lon, lat, lon0: float, lat0: float) -> tuple[np.ndarray, np.ndarray]:
    """Equirectangular coordinates (km) around (lon0, lat0): enough for a public grid."""
    dlon = (np.asarray(lon, dtype=np.float64) - lon0 + 180.0) % 360.0 - 180.0
    return dlon * math.cos(math.radians(lat0)) * _KM_PER_DEG, (np.asarray(lat) - lat0) * _KM_PER_DEG


def grid_cells(ps, cell_km: float | None) -> tuple[np.ndarray, int]:
    """Cell of every public point on a square grid of side ``cell_km`` (default Δ/16); empty cells dropped."""
    if cell_km is None:
        cell_km = max(ps.diameter_km / 16.0, 1e-6)
    lon0, lat0 = float(np.mean(ps.lon)), float(np.mean(ps.lat))
    x, y = local_xy_km(ps.lon, ps.lat, lon0, lat0)
    ix = np.floor((x - x.min()) / cell_km).astype(np.int64)
    iy = np.floor((y - y.min()) / cell_km).astype(np.int64)
    _, cell = np.unique(ix * (iy.max() + 1) + iy, return_inverse=True)
    return cell.astype(np.int64).reshape(-1), int(cell.max()) + 1


def _candidates(ps, n: int, k: int, prior: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """K public candidate trajectories of length n: a proposal over P (its weights are fitted later).

    Each candidate has a centre drawn from ``prior`` over P (half uniform, half the released visit
    frequencies: post-processing of the release), a scale s log-uniform in [Δ/200, Δ], and n points
    drawn from P with probability ∝ exp(-d²/(2s²)) around the centre. Small scales give compact
    trajectories, large ones spread trajectories close to independent draws from P; the library's own
    visit distribution (the estimate after 0 EM iterations) lies between P-proportional and the raw release.
    """
    m = ps.size
    xyz = np.asarray(ps.xyz, dtype=np.float64)
    centre = gen.choice(m, size=k, p=prior)
    dmax = max(ps.diameter_m / EARTH_RADIUS_M, 1e-12)  # radians
    scale = np.exp(gen.uniform(math.log(dmax / 200.0), math.log(dmax), size=k))
    out = np.empty((k, n), dtype=np.int64)
    block = max(1, 2_000_000 // m)
    for a in range(0, k, block):
        b = min(k, a + block)
        chord2 = np.maximum(2.0 - 2.0 * (xyz[centre[a:b]] @ xyz.T), 0.0)  # ≈ angle² for small angles
        logw = -chord2 / (2.0 * scale[a:b, None] ** 2)
        w = np.exp(logw - logw.max(axis=1, keepdims=True))
        cdf = np.cumsum(w, axis=1)
        u = gen.random((b - a, n)) * cdf[:, -1:]
        out[a:b] = np.minimum((cdf[:, None, :] < u[:, :, None]).sum(axis=2), m - 1)
    return out


def _simulate(cand: np.ndarray, n_sims: int, ps, mech, key: np.ndarray, offset: int) -> np.ndarray:
    """Release every candidate ``n_sims`` times with the mechanism: (K, S, n) point indices."""
    k, n = cand.shape
    reps = np.repeat(cand, n_sims, axis=0)
    out = run_with_key(list(reps), ps, mech, key=key, offset=offset)
    return np.stack(out).reshape(k, n_sims, n)


def _channel(flat: np.ndarray, sw: np.ndarray, size: int) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """The simulated channel as a sparse (K, n·C) matrix: expected released (position, cell) counts."""
    k = flat.shape[0]
    a = sp.csr_matrix(
        (sw.reshape(-1), (np.repeat(np.arange(k), flat.shape[1]), flat.reshape(-1))), shape=(k, size)
    )
    a.sum_duplicates()
    return a, a.T.tocsr()


def _em(y: np.ndarray, chan, total: float, checkpoints) -> list[np.ndarray]:
    """EM weights of the mixture given observed (position, cell) counts ``y``, at each checkpoint.

    ``chan`` is ``(A, Aᵀ)`` from :func:`_channel`; the update is w ← w ⊙ A (y ⊘ Aᵀw) / A1 (the iterative
    Bayesian update), rescaled to keep Σ w = ``total``.
    """
    a, at = chan
    norm = np.asarray(a.sum(axis=1)).reshape(-1)
    norm = np.where(norm > 0, norm, 1.0)
    w = np.full(a.shape[0], total / a.shape[0])
    out = []
    it = 0
    for stop in checkpoints:
        while it < stop:
            mu = at @ w
            ratio = np.divide(y, mu, out=np.zeros_like(mu), where=mu > 0)
            w = w * (a @ ratio) / norm
            tot = w.sum()
            if tot > 0:
                w *= total / tot
            it += 1
        out.append(w.copy())
    return out


def _choose_iterations(obs: np.ndarray, chan, size: int, gen) -> int:
    """Two-fold cross-validation over released rows: the checkpoint with the best held-out likelihood."""
    nrel = obs.shape[0]
    if nrel < 4:
        return 0
    fold = gen.permutation(nrel) % 2
    score = np.zeros(len(CHECKPOINTS))
    for f in (0, 1):
        train = np.bincount(obs[fold == f].reshape(-1), minlength=size).astype(np.float64)
        test = np.bincount(obs[fold != f].reshape(-1), minlength=size).astype(np.float64)
        n_tr, n_te = float((fold == f).sum()), float((fold != f).sum())
        for j, w in enumerate(_em(train, chan, n_tr, CHECKPOINTS)):
            mu = (chan[1] @ w) * (n_te / n_tr)
            mu = np.maximum(mu, 1e-12)  # a cell no candidate reaches: a large but finite penalty
            score[j] += float(np.sum(test * np.log(mu) - mu))
    return int(CHECKPOINTS[int(np.argmax(score))])


@dataclass
class Model:
    """The fitted population model: one :class:`Group` per released length."""

    ps: object
    cell: np.ndarray  # (m,) cell of every public point
    n_cells: int
    groups: list
    n_rows: int
    level: float

    def estimate(self, values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Estimate and interval of the linear functional ``values``.

        ``values(cand)`` maps a (K, n) candidate array to a (K, T) sparse matrix of per-candidate values.
        The interval is the basic bootstrap interval (2·est − the upper and lower bootstrap quantiles,
        clipped at 0 and widened to contain the estimate); the bootstrap resamples released rows and each
        candidate's simulations and re-runs the fit, so it covers sampling and simulation noise, not the
        bias of the early-stopped fit.
        """
        est = boot = None
        for g in self.groups:
            v = sp.csr_matrix(values(g.cand))
            e = np.asarray(v.T @ g.w).reshape(-1)
            est = e if est is None else est + e
            if g.boot_w is not None:
                bt = np.asarray((v.T @ g.boot_w.T).T)
                boot = bt if boot is None else boot + bt
        if est is None:
            raise ValueError("No released trajectory to estimate from.")
        if boot is None:
            nan = np.full_like(est, np.nan)
            return est, nan, nan.copy()
        alpha = (1.0 - self.level) / 2.0
        q_lo, q_hi = np.quantile(boot, [alpha, 1.0 - alpha], axis=0)
        lower = np.minimum(np.maximum(2.0 * est - q_hi, 0.0), est)
        upper = np.maximum(2.0 * est - q_lo, est)
        return est, lower, upper


def fit(seqs: list[np.ndarray], ps, mech, *, key: np.ndarray, options: FitOptions) -> Model:
    """Fit the population model to released index sequences (see the module notes)."""
    cell, n_cells = grid_cells(ps, options.cell_km)
    lengths = np.fromiter((s.shape[0] for s in seqs), dtype=np.int64, count=len(seqs))
    # proposals and bootstrap draws come from a generator seeded by the simulation key (public)
    gen = np.random.default_rng(np.asarray(key, dtype=np.uint32).astype(np.uint64))
    m = ps.size
    freq = np.bincount(np.concatenate(seqs), minlength=m).astype(np.float64)
    prior = 0.5 / m + 0.5 * freq / max(freq.sum(), 1.0)
    prior /= prior.sum()
    groups = []
    offset = 0
    for n in np.unique(lengths):
        n = int(n)
        rows = np.flatnonzero(lengths == n)
        released = np.stack([seqs[r] for r in rows])
        k = int(min(options.n_candidates, max(200, 2 * rows.size)))
        cand = _candidates(ps, n, k, prior, gen)
        sims = _simulate(cand, options.n_sims, ps, mech, key, offset)
        offset += k * options.n_sims
        groups.append(Group(n, rows, released, cand, sims))
    for g in groups:
        _fit_group(g, cell, n_cells, options, gen)
    return Model(ps, cell, n_cells, groups, len(seqs), options.level)


def _fit_group(g: Group, cell: np.ndarray, n_cells: int, options: FitOptions, gen) -> None:
    n = g.n
    k, s, _ = g.sims.shape
    pos = np.arange(n, dtype=np.int64)
    flat = (pos[None, None, :] * n_cells + cell[g.sims]).reshape(k, s * n)
    obs = pos[None, :] * n_cells + cell[g.released]  # (N, n)
    size = n * n_cells
    total = float(g.rows.size)
    chan = _channel(flat, np.full((k, s * n), 1.0 / s), size)
    if options.n_iter == "cv":
        g.n_iter = _choose_iterations(obs, chan, size, gen)
    else:
        g.n_iter = int(options.n_iter)
    y = np.bincount(obs.reshape(-1), minlength=size).astype(np.float64)
    g.w = _em(y, chan, total, (g.n_iter,))[0]
    if options.n_boot < 2:
        return
    nrel = g.rows.size
    boot = np.empty((options.n_boot, k))
    for b in range(options.n_boot):
        pick = gen.multinomial(nrel, np.full(nrel, 1.0 / nrel)).astype(np.float64)
        yb = np.bincount(obs.reshape(-1), weights=np.repeat(pick, n), minlength=size)
        simw = gen.multinomial(s, np.full(s, 1.0 / s), size=k).astype(np.float64) / s  # (K, S)
        chan_b = _channel(flat, np.repeat(simw, n, axis=1), size)
        boot[b] = _em(yb, chan_b, total, (g.n_iter,))[0]
    g.boot_w = boot
