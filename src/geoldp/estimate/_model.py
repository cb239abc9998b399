"""The population model behind the collector-side estimators: a mixture over a library of candidates.

docs/collector.md ("The model", "Intervals", "Cost") is the description of the model: the library (a
public proposal, the no-data populations and the released copies), the per-trajectory likelihoods (exact
for PointEM, a simulated composite likelihood for TP/ATP), the EM fit with its cross-validated start and
stopping, the intervals and the channel check, the fit on a sample above ``fit_rows`` and the streams of
randomness. Here: :class:`Lik` keeps the likelihoods in log space where exp(ℓ) underflows,
:class:`SimulatedChannel` the TP/ATP tables (one per position; its back-off cell frequency f_i is that of
every release of the length), :meth:`Model.estimate` the estimates and intervals,
:class:`_Channel` the channel check.

Everything here is post-processing: the inputs are released index arrays, the public point set, the public
mechanism and a key for the simulations. Nothing outlives a call (no caches).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.special import ndtri

from geoldp._core.geo import EARTH_RADIUS_M, KM_PER_DEGREE
from geoldp._core.progress import stages
from geoldp.trajectory.engine import run_with_key

if TYPE_CHECKING:
    from geoldp._core.pointset import PointSet

__all__ = [
    "BASELINES",
    "CHECKPOINTS",
    "STARTS",
    "FitOptions",
    "choose",
    "Group",
    "Lik",
    "Model",
    "SimulatedChannel",
    "channel_table",
    "cell_frequencies",
    "fit",
    "grid_cells",
    "local_xy_km",
    "select",
]

#: EM iteration counts compared by cross-validation (0 = the library's prior).
CHECKPOINTS = (0, 1, 2, 4, 8, 16, 32, 64)
#: EM's starting weights compared by cross-validation (see :func:`_start_weights`).
STARTS = ("released", "mixed", "uniform", "proposal", "constant")  # in order of preference (see choose)
#: Rows x candidates of one dense block (bounded memory for distances and likelihood blocks).
_BLOCK = 2_000_000


@dataclass(frozen=True)
class FitOptions:
    """Public knobs of the fit (documented in :mod:`geoldp.estimate`)."""

    n_candidates: int = 3000
    n_sims: int = 16
    cell_km: float | None = None
    n_iter: int | str = "cv"
    n_boot: int = 30
    level: float = 0.95
    library: str = "mixed"  # "mixed" (proposal incl. uniform draws + releases), "proposal" or "released"
    start: str = "cv"  # EM's starting weights: one of STARTS, or "cv" (chosen with n_iter)
    fit_rows: int = 5000  # a length with more releases fits its weights on a uniform sample of this many
    progress: bool = False  # report the stages (geoldp._core.progress); never changes the result


#: Rows whose smallest likelihood ratio exp(ℓ_jc − max_c ℓ_jc) is below this keep their log-likelihoods: a
#: float32 ratio below 1.2e-38 underflows, and a weighted sum this small may be made of such ratios.
_TINY = 1e-30
_LOG_TINY = math.log(_TINY)
#: The parts of the library (``Group.source``): released copies are >= 0.
PROPOSAL, UNIFORM, CONSTANT = -1, -2, -3


@dataclass
class Lik:
    """Per-trajectory likelihoods of one length group, exact at any trajectory length.

    ``scaled`` holds exp(ℓ_jc − max_c ℓ_jc) in float32 (the fast path: EM is two matrix-vector products per
    iteration). Where some entry of a row is below 1e-30 (it may have underflowed), the row's
    ℓ_jc − max_c ℓ_jc are also kept in ``logs`` (float32; row j is ``logs[wide[j]]``), and a row whose
    weighted sum Σ_c w_c scaled_jc is below 1e-30 · Σ_c w_c is computed from them in log space. Elsewhere
    the lost terms are below 1.2e-38 · Σ_c w_c, a relative error below 1e-8.
    """

    scaled: np.ndarray  # (N, K) float32
    wide: np.ndarray  # (N,) int64: the row of ``logs`` of each row, -1 when the row has no tiny entry
    logs: np.ndarray  # (W, K) float32 ℓ_jc − max_c ℓ_jc of the wide rows

    @classmethod
    def from_log(cls, ll: np.ndarray) -> Lik:
        """From (N, K) log-likelihoods (any per-row constant may be added: only ratios within a row count)."""
        ll = np.asarray(ll, dtype=np.float64)
        ll = ll - ll.max(axis=1, keepdims=True)
        is_wide = ll.min(axis=1) < _LOG_TINY
        wide = np.full(ll.shape[0], -1, dtype=np.int64)
        wide[is_wide] = np.arange(int(is_wide.sum()))
        return cls(np.exp(ll).astype(np.float32), wide, ll[is_wide].astype(np.float32))

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.scaled.shape[0]), int(self.scaled.shape[1])

    def take(self, rows: np.ndarray) -> Lik:
        """The likelihoods of the given rows (an index array)."""
        wide = self.wide[rows]
        on = wide >= 0
        new = np.full(rows.size, -1, dtype=np.int64)
        new[on] = np.arange(int(on.sum()))
        return Lik(self.scaled[rows], new, self.logs[wide[on]])

    def _exact(self, rows: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior (len(rows), K) and log Σ_c w_c exp(ℓ_jc − max ℓ_j) of wide rows, in log space."""
        with np.errstate(divide="ignore"):
            logw = np.log(np.asarray(w, dtype=np.float64))
        a = self.logs[self.wide[rows]].astype(np.float64) + logw[None, :]
        top = a.max(axis=1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)  # a row with every weight 0: posterior 0, log-sum −inf
        r = np.exp(a - top)
        tot = r.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            log_den = (top + np.log(tot)).reshape(-1)
        return r / np.where(tot > 0, tot, 1.0), log_den

    def _underflowing(self, den: np.ndarray, w: np.ndarray, a: int = 0) -> np.ndarray:
        """Positions (within ``den``, rows a:a+len(den)) whose fast-path sum may have lost its mass."""
        tiny = _TINY * float(np.sum(w))
        return np.flatnonzero((den < tiny) & (self.wide[a : a + den.size] >= 0))

    def log_mix(self, w: np.ndarray) -> np.ndarray:
        """(N,) log Σ_c w_c exp(ℓ_jc − max_c ℓ_jc): the per-row log-likelihood of the mixture ``w``."""
        den = (self.scaled @ np.asarray(w, dtype=np.float32)).astype(np.float64)
        bad = self._underflowing(den, w)
        with np.errstate(divide="ignore"):
            out = np.log(den)
        step = _exact_block(self.shape[1])
        for a in range(0, bad.size, step):
            out[bad[a : a + step]] = self._exact(bad[a : a + step], w)[1]
        return out

    def posterior(self, a: int, b: int | None, w: np.ndarray) -> np.ndarray:
        """(rows a:b, K) posterior r_jc ∝ w_c exp(ℓ_jc), float64; each row sums to 1."""
        r = self.scaled[a:b] * np.asarray(w, dtype=np.float64)[None, :]
        tot = r.sum(axis=1)
        bad = self._underflowing(tot, w, a)
        r /= np.where(tot > 0, tot, 1.0)[:, None]
        if bad.size:
            r[bad] = self._exact(bad + a, w)[0]
        return r

    def em_step(self, w: np.ndarray, row_w: np.ndarray | None) -> np.ndarray:
        """Σ_j π_j r_jc under weights ``w`` (rows weighted by π; all 1 when ``row_w`` is None)."""
        den = self.scaled @ np.asarray(w, dtype=self.scaled.dtype)  # float32 products, float64 weights
        pi = np.ones(den.size, dtype=np.float64) if row_w is None else np.asarray(row_w, dtype=np.float64)
        bad = self._underflowing(den.astype(np.float64), w)
        ok = den > 0
        ok[bad] = False
        ratio = np.zeros(den.shape, dtype=self.scaled.dtype)
        np.divide(pi.astype(self.scaled.dtype), den, out=ratio, where=ok)
        new = np.asarray(w, dtype=np.float64) * (self.scaled.T @ ratio)
        step = _exact_block(self.shape[1])
        for a in range(0, bad.size, step):
            rows = bad[a : a + step]
            new += pi[rows] @ self._exact(rows, w)[0]
        return new


def _exact_block(k: int) -> int:
    return max(1, _BLOCK // max(k, 1))


@dataclass
class Group:
    """One released trajectory length n: observations, candidate library, likelihoods and weights."""

    n: int
    rows: np.ndarray  # (N,) positions (in the release) of the trajectories of this length
    released: np.ndarray  # (N, n) released point indices
    cand: np.ndarray  # (K, n) candidate trajectories (point indices)
    lik: Lik  # (N, K) per-trajectory likelihoods
    source: np.ndarray  # (K,) the row (0..N-1) a candidate was copied from, or PROPOSAL, UNIFORM, CONSTANT
    w: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (K,) fitted weights, sum N
    boot_w: np.ndarray | None = None  # (B, K) bootstrap weights (after one E-step on all rows)
    n_iter: int = 0  # EM iterations used
    start: str = "mixed"  # the starting weights used (see STARTS)
    alt_w: np.ndarray | None = None  # (A, K) weights of the other plausible models (see choose)
    plausible: list = field(default_factory=list)  # the (start, iterations) the release cannot reject
    no_data_w: np.ndarray | None = None  # (D, K) weights of the no-data populations in the library
    sims: np.ndarray | None = None  # (K, S', n) int32: a few simulated releases of every candidate
    # Large lengths (more releases than ``FitOptions.fit_rows``): the positions (0..N-1) of the uniformly
    # drawn rows the weights are fitted on (``lik`` holds only those rows) and the per-row log-likelihood
    # of any released rows, for what must touch every row (denoise). None: every row is fitted.
    fit_rows: np.ndarray | None = None
    row_loglik: Callable[[np.ndarray], np.ndarray] | None = None

    @property
    def scale(self) -> float:
        """Releases of this length per fitted row (1 when every row is fitted)."""
        return float(self.rows.size) / float(self.lik.shape[0])

    def posterior(self, a: int = 0, b: int | None = None, w: np.ndarray | None = None) -> np.ndarray:
        """(fitted rows a:b, K) posterior r_jc ∝ w_c exp(ℓ_jc) over the candidates (w: the fitted weights)."""
        return self.lik.posterior(a, b, self.w if w is None else w)


def local_xy_km(
    lon: npt.ArrayLike, lat: npt.ArrayLike, lon0: float, lat0: float
) -> tuple[np.ndarray, np.ndarray]:
    """Equirectangular coordinates (km) around (lon0, lat0): enough for a public grid."""
    dlon = (np.asarray(lon, dtype=np.float64) - lon0 + 180.0) % 360.0 - 180.0
    return dlon * math.cos(math.radians(lat0)) * KM_PER_DEGREE, (np.asarray(lat) - lat0) * KM_PER_DEGREE


def grid_cells(ps: PointSet, cell_km: float | None) -> tuple[np.ndarray, int]:
    """Cell of every public point on a square grid of side ``cell_km`` (default Δ/16); empty cells dropped."""
    if cell_km is None:
        cell_km = max(ps.diameter_km / 16.0, 1e-6)
    lon0, lat0 = float(np.mean(ps.lon)), float(np.mean(ps.lat))
    x, y = local_xy_km(ps.lon, ps.lat, lon0, lat0)
    ix = np.floor((x - x.min()) / cell_km).astype(np.int64)
    iy = np.floor((y - y.min()) / cell_km).astype(np.int64)
    _, cell = np.unique(ix * (iy.max() + 1) + iy, return_inverse=True)
    return cell.astype(np.int64).reshape(-1), int(cell.max()) + 1


def _candidates(ps: PointSet, n: int, k: int, prior: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """K public candidate trajectories of length n: a proposal over P (its weights are fitted later).

    Each candidate has a centre drawn from ``prior`` over P (half uniform, half the released visit
    frequencies: post-processing of the release), a scale s log-uniform in [Δ/200, Δ], and n points
    drawn from P with probability ∝ exp(-d²/(2s²)) around the centre. Small scales give compact
    trajectories, large ones spread trajectories close to independent draws from P.
    """
    m = ps.size
    xyz = np.asarray(ps.xyz, dtype=np.float64)
    centre = gen.choice(m, size=k, p=prior)
    dmax = max(ps.diameter_m / EARTH_RADIUS_M, 1e-12)  # radians
    scale = np.exp(gen.uniform(math.log(dmax / 200.0), math.log(dmax), size=k))
    out = np.empty((k, n), dtype=np.int64)
    block = max(1, _BLOCK // m)
    for a in range(0, k, block):
        b = min(k, a + block)
        chord2 = np.maximum(2.0 - 2.0 * (xyz[centre[a:b]] @ xyz.T), 0.0)  # ≈ angle² for small angles
        logw = -chord2 / (2.0 * scale[a:b, None] ** 2)
        w = np.exp(logw - logw.max(axis=1, keepdims=True))
        cdf = np.cumsum(w, axis=1)
        u = gen.random((b - a, n)) * cdf[:, -1:]
        out[a:b] = np.minimum((cdf[:, None, :] < u[:, :, None]).sum(axis=2), m - 1)
    return out


def _simulate(
    cand: np.ndarray, n_sims: int, ps: PointSet, mech: Any, key: np.ndarray, offset: int
) -> np.ndarray:
    """Release every candidate ``n_sims`` times with the mechanism: (K, S, n) point indices."""
    k, n = cand.shape
    reps = np.repeat(cand, n_sims, axis=0)
    out = run_with_key(list(reps), ps, mech, key=key, offset=offset)
    return np.stack(out).reshape(k, n_sims, n)


def _angles(xa: np.ndarray, xb: np.ndarray) -> np.ndarray:
    """Central angles (radians) between unit vectors: (A, 3) x (B, 3) → (A, B), from the chord."""
    chord2 = np.maximum(2.0 - 2.0 * (xa @ xb.T), 0.0)
    return 2.0 * np.arcsin(np.minimum(np.sqrt(chord2) / 2.0, 1.0))


def em_log_normaliser(ps: PointSet, units: np.ndarray, coef: float) -> np.ndarray:
    """The log-partition log Z(u) = log Σ_r exp(−coef·d(P_u, P_r)) over the public points ``units``, d in m.

    Blocks of rows keep memory at O(block · |P|); no |P| x |P| matrix is formed.
    """
    xyz = np.asarray(ps.xyz, dtype=np.float64)
    out = np.empty(units.size)
    block = max(1, _BLOCK // ps.size)
    for a in range(0, units.size, block):
        d = _angles(xyz[units[a : a + block]], xyz) * EARTH_RADIUS_M
        lw = -coef * d
        mx = lw.max(axis=1, keepdims=True)
        out[a : a + block] = (mx + np.log(np.exp(lw - mx).sum(axis=1, keepdims=True))).reshape(-1)
    return out


def pointem_coefficient(ps: PointSet, mech: Any, n: int) -> float:
    """ε_n / (2Δ) in 1/m: the exponent's scale of PointEM's per-point exponential mechanism."""
    return float(mech.point_budget(n)) / (2.0 * float(ps.diameter_m))


def _loglik_pointem(released: np.ndarray, cand: np.ndarray, ps: PointSet, mech: Any) -> np.ndarray:
    """(N, K) exact log-likelihood of PointEM: Σ_i [−coef·d(c_i, y_i) − log Z(c_i)]."""
    n = cand.shape[1]
    coef = pointem_coefficient(ps, mech, n)
    xyz = np.asarray(ps.xyz, dtype=np.float64)
    units, inv = np.unique(cand, return_inverse=True)
    logz = em_log_normaliser(ps, units, coef)[inv.reshape(cand.shape)]  # (K, n)
    out = np.empty((released.shape[0], cand.shape[0]))
    block = max(1, _BLOCK // cand.shape[0])
    for a in range(0, released.shape[0], block):
        b = min(released.shape[0], a + block)
        acc = np.zeros((b - a, cand.shape[0]))
        for i in range(n):
            acc -= coef * EARTH_RADIUS_M * _angles(xyz[released[a:b, i]], xyz[cand[:, i]])
        out[a:b] = acc - logz.sum(axis=1)[None, :]
    return out


def _loglik_simulated(
    released: np.ndarray,
    cand: np.ndarray,
    sims: np.ndarray,
    cell: np.ndarray,
    n_cells: int,
    freq: np.ndarray,
) -> np.ndarray:
    """(N, K) composite log-likelihood from the simulations (positions independent given the candidate).

    With S simulations per candidate, counts are far too few to estimate the channel of one candidate
    alone, so each position's channel is shrunk in two stages: candidate c's own count of the released
    cell z, then the pooled frequency over all candidates whose point at position i lies in the same cell
    (the channel's main dependence), then the release's cell frequency f_i at i:

        q̂_{c,i}(z) = (#{s : cell(sim_{c,s,i}) = z} + S·g_{i}(z | cell(c_i))) / 2S,
        g_i(z | u) = (pooled count of z from inputs in u + S·f_i(z)) / (pooled total from u + S).

    ℓ_jc = Σ_i log q̂_{c,i}(z_ji) depends on the released trajectory only through its cells, so each
    position's table log q̂_{c,i}(z) (cells x K) is computed once and the rows are looked up in it.
    ``freq`` (n, cells): the f_i of every position (:func:`cell_frequencies`).
    """
    out = np.zeros((released.shape[0], cand.shape[0]))
    for i in range(cand.shape[1]):
        obs = cell[released[:, i]]
        table = channel_table(i, cand, sims, cell, n_cells, freq[i])
        block = max(1, _BLOCK // cand.shape[0])
        for a in range(0, obs.size, block):
            out[a : a + block] += table[obs[a : a + block]]
    return out


@dataclass(frozen=True)
class SimulatedChannel:
    """The TP/ATP per-row log-likelihood of one length: ``channel(released)`` is (rows, K) ℓ_jc.

    ``tables()`` gives every position's table at once (n x cells x K float64), for many rows.
    """

    cand: np.ndarray
    sims: np.ndarray
    cell: np.ndarray
    n_cells: int
    freq: np.ndarray

    def __call__(self, released: np.ndarray) -> np.ndarray:
        return _loglik_simulated(released, self.cand, self.sims, self.cell, self.n_cells, self.freq)

    def tables(self) -> np.ndarray:
        """(n, cells, K) log q̂_{c,i}(z) of every position (see ``channel_table``)."""
        args = (self.cand, self.sims, self.cell, self.n_cells)
        return np.stack([channel_table(i, *args, self.freq[i]) for i in range(self.cand.shape[1])])


def cell_frequencies(released: np.ndarray, cell: np.ndarray, n_cells: int) -> np.ndarray:
    """(n, cells): the released cell frequency f_i of every position (the back-off of the channel)."""
    obs = cell[released]
    return np.array([np.bincount(obs[:, i], minlength=n_cells) / obs.shape[0] for i in range(obs.shape[1])])


def channel_table(
    i: int, cand: np.ndarray, sims: np.ndarray, cell: np.ndarray, n_cells: int, freq: np.ndarray
) -> np.ndarray:
    """(cells, K) log q̂_{c,i}(z) of position i for every released cell z (see ``_loglik_simulated``)."""
    k, s, _ = sims.shape
    rows_k = np.repeat(np.arange(k), s)
    sim_cells = cell[sims[:, :, i]].reshape(-1)
    counts = sp.csr_matrix((np.ones(k * s), (rows_k, sim_cells)), shape=(k, n_cells)).toarray().T
    in_cell = cell[cand[:, i]]
    pooled = sp.csr_matrix(
        (np.ones(k * s), (np.repeat(in_cell, s), sim_cells)), shape=(n_cells, n_cells)
    ).toarray()
    pooled_tot = np.bincount(in_cell, minlength=n_cells) * float(s)
    g = (pooled[in_cell].T + s * freq[:, None]) / (pooled_tot[in_cell][None, :] + s)  # (cells, K)
    with np.errstate(divide="ignore"):
        return np.log((counts + s * g) / (2.0 * s))


def _em(lik: Lik, w0: np.ndarray, n_iter: int, row_w: np.ndarray | None = None) -> np.ndarray:
    """``n_iter`` EM steps for the mixture weights: w ← Σ_j π_j r_jc, r_jc ∝ w_c L_jc (rows weighted by π)."""
    w = np.asarray(w0, dtype=np.float64).copy()
    total = float(lik.shape[0] if row_w is None else np.sum(row_w))
    for _ in range(n_iter):
        w = lik.em_step(w, row_w)
        tot = w.sum()
        if tot > 0:
            w *= total / tot
    return w


def _start_weights(
    source: np.ndarray, start: str, total: float, keep: np.ndarray | None = None
) -> np.ndarray:
    """EM's starting weights (sum ``total``): uniform over the candidates of one part of the library.

    ``"mixed"``: every candidate; ``"proposal"``: the public proposal only (its compact candidates and its
    uniform draws); ``"uniform"``: the independent uniform draws from P (a no-data population);
    ``"constant"``: the trajectory at P's 1-median (the other no-data population); ``"released"``: the
    released trajectories only (the raw release taken as the population: its fit is the release smoothed by
    the channel). ``keep`` masks out candidates (cross-validation drops those copied from held-out rows).
    """
    parts = {
        "proposal": (source == PROPOSAL) | (source == UNIFORM),
        "uniform": source == UNIFORM,
        "constant": source == CONSTANT,
        "released": source >= 0,
        "mixed": source != CONSTANT,
    }
    on = parts[start].copy() if start in parts else np.ones(source.size, dtype=bool)
    if keep is not None:
        on &= keep
    if not on.any():
        on = np.ones(source.size, dtype=bool) if keep is None else keep.copy()
    return on * (total / max(int(on.sum()), 1))


#: The models every selection compares the fit against (start, iterations): the raw release and the two
#: no-data populations. No baseline beats a chosen model on held-out rows by more than a standard error.
BASELINES = (("released", 0), ("uniform", 0), ("constant", 0))


def _starts(source: np.ndarray, library: str) -> tuple[str, ...]:
    """The starting weights a library allows (a part that is absent is no start)."""
    have = {
        "released": bool((source >= 0).any()),
        "uniform": bool((source == UNIFORM).any()),
        "constant": bool((source == CONSTANT).any()),
        "proposal": bool((source == PROPOSAL).any()),
    }
    have["mixed"] = have["released"] and have["proposal"]
    if library != "mixed" or not have["mixed"]:
        return ("mixed",) + tuple(s for s in ("uniform", "constant") if have[s])
    return tuple(s for s in STARTS if have[s])


def choose(
    lik: Lik, source: np.ndarray, starts: Sequence[Any], checkpoints: Sequence[int], gen: np.random.Generator
) -> tuple[tuple, list]:
    """Two-fold cross-validation over released rows: the chosen (start, iterations) and the plausible ones.

    Every (start, iterations) is scored by the held-out log-likelihood of the released rows. A model is
    *plausible* when its score is within two standard errors of the best (the standard error of the
    paired per-row difference): the release cannot tell it from the best one. The choice is the first
    plausible model within one standard error in the order of ``starts`` (then fewer iterations) among
    those no baseline of :data:`BASELINES` (the raw release, uniform draws from P, the constant at P's
    1-median) beats by more than one standard error of the paired difference: where the release cannot
    tell two populations apart, the one closer to the release itself is kept rather than whichever scores
    best by chance, and no model the held-out likelihood clearly prefers less than a baseline is returned
    (the best model is always eligible, so there is a choice). A candidate copied from a held-out row is
    left out of that fold's library, otherwise it would explain its own row perfectly and the score would
    reward staying at the start.
    """
    nrel = lik.shape[0]
    if nrel < 4 or (len(starts) == 1 and len(checkpoints) == 1):
        return (starts[0], int(checkpoints[0])), [(starts[0], int(checkpoints[0]))]
    fold = gen.permutation(nrel) % 2
    cand_fold = np.where(source >= 0, fold[np.maximum(source, 0)], -1)
    per_row = np.zeros((len(starts), len(checkpoints), nrel))
    for f in (0, 1):
        train, test = lik.take(np.flatnonzero(fold == f)), lik.take(np.flatnonzero(fold != f))
        keep = cand_fold != 1 - f
        for s, start in enumerate(starts):
            w = _start_weights(source, start, train.shape[0], keep)
            done = 0
            for j, stop in enumerate(checkpoints):
                if start != "constant":  # EM keeps zero weights at zero: one candidate stays put
                    w = _em(train, w, stop - done)
                done = stop
                per_row[s, j, fold != f] = test.log_mix(w / w.sum())
    return select(np.maximum(per_row, -1e250), tuple(starts), tuple(checkpoints))


#: A held-out log-likelihood difference smaller than this (in nats, over all of a length's held-out rows) is
#: no evidence, however consistent across rows: a likelihood ratio of e^3 ≈ 20 is "strong" evidence on Kass
#: and Raftery's scale. Without it, a flat channel (PointEM with a small per-point budget) makes differences
#: of 0.01 nat a row "significant", and the constant at P's 1-median beats every model that has a place.
EVIDENCE_NATS = 3.0


def select(per_row: np.ndarray, starts: tuple, checkpoints: tuple) -> tuple[tuple, list]:
    """The choice and the plausible models from held-out per-row scores (starts x checkpoints x rows).

    See :func:`choose` for the rule.
    """
    nrel = per_row.shape[2]
    total = per_row.sum(axis=2)
    best = np.unravel_index(int(np.argmax(total)), total.shape)
    diff = per_row[best][None, None, :] - per_row
    se = diff.std(axis=2, ddof=1) * math.sqrt(nrel)
    ok = total >= total[best] - np.maximum(se, EVIDENCE_NATS)
    for st, it in BASELINES:  # never clearly less likely on held-out rows than a baseline
        if st in starts and it in checkpoints:
            base = per_row[starts.index(st), list(checkpoints).index(it)]
            d = base[None, None, :] - per_row
            ok &= d.sum(axis=2) <= np.maximum(d.std(axis=2, ddof=1) * math.sqrt(nrel), EVIDENCE_NATS)
    s, j = np.argwhere(ok)[0]  # row-major: starts in order, then fewer iterations
    plausible = [(starts[a], int(checkpoints[b])) for a, b in np.argwhere(total >= total[best] - 2.0 * se)]
    return (starts[int(s)], int(checkpoints[int(j)])), plausible


#: Uniform draws from P per released length for the uniform no-data answer of :meth:`Model.release_check`.
PRIOR_DRAWS = 10_000
#: Simulated releases of the constant trajectory per released length in :meth:`Model.release_check`.
PRIOR_SIMS = 1_000
#: The answers :meth:`Model.release_check` compares: the model's first, then its alternatives.
CHECKED = ("model", "released", "uniform", "constant")


@dataclass
class ReleaseCheck:
    """The outcome of :meth:`Model.release_check`.

    ``answer``: ``"model"``, ``"released"`` (the raw release's own count), ``"uniform"`` or ``"constant"``
    (the no-data answers); ``score``: each candidate answer's held-out score (lower is better);
    ``prior``: the no-data answers (prior mean counts of the uniform and the constant populations).
    """

    answer: str
    score: dict
    prior: dict


@dataclass
class Model:
    """The fitted population model: one :class:`Group` per released length."""

    ps: PointSet
    groups: list
    n_rows: int
    level: float
    options: FitOptions = field(default_factory=FitOptions)
    key: np.ndarray = field(default_factory=lambda: np.zeros(8, dtype=np.uint32))
    mech: Any = None  # the public mechanism (for the held-out check's simulations)
    _intervals_done: bool = False

    def intervals(self) -> None:
        """Fit what the intervals need (the other plausible models, the bootstrap) once, on first use.

        Their random draws come from their own streams, so the point estimate is the same with or without
        them (and whatever ``n_boot`` is).
        """
        if self._intervals_done:
            return
        with stages("intervals", len(self.groups), enabled=self.options.progress) as report:
            for g in self.groups:
                report(f"bootstrap of length {g.n}")
                _fit_intervals(g, self.options, _stream(self.key, g.n, _BOOT))
        self._intervals_done = True

    def estimate(
        self, values: Callable[[np.ndarray], Any]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Estimate, interval and support of the count of original trajectories with indicator ``values``.

        ``values(cand)`` maps a (K, n) candidate array to a (K, T) sparse 0/1 matrix. With the posterior
        r_jc of released trajectory j over the candidates and p_jt = Σ_c r_jc V_ct:

        - estimate Σ_j p_jt (the posterior mean of the count);
        - variance Σ_j p_jt (1 − p_jt) (which original is which, given the fitted population) plus the
          variance over bootstrap replicates of released rows of the estimate under the refitted weights
          (uncertainty of the population itself);
        - interval: [lowest estimate − z·sd, highest estimate + z·sd] over the chosen model and the other
          plausible ones (the models cross-validation cannot reject, see :func:`choose`), clipped at 0 and
          at the number of trajectories. Where the release says little, the plausible models differ and
          the interval says so; where it is informative, they agree and it is the normal interval; then
          widened to hold the channel's own interval (:class:`_Channel`), which does not trust the
          composite likelihood;
        - supported: the interval (without a bootstrap: the range of the plausible models' estimates)
          excludes the estimate of each no-data population (uniform draws from P, the constant at P's
          1-median). Where it does not, the release cannot tell this count from what a population without
          any data would give, and the estimate should not be read as learned from the release.
        """
        z = float(ndtri(0.5 + self.level / 2.0))
        est, var, boot, low, high, nd, ch = self._sums(values, z)
        c_lo, c_hi = ch.interval(z, est.shape[0])
        if boot is None:
            nan = np.full_like(est, np.nan)
            lower, upper = nan, nan.copy()
            a, b = np.minimum(low, c_lo), np.maximum(high, c_hi)
        else:
            sd = np.sqrt(np.maximum(var + boot.var(axis=0, ddof=1), 0.0))
            top = float(self.n_rows) if ch.cap is None else np.maximum(ch.cap, est)
            lower = np.clip(np.minimum(low - z * sd, c_lo), 0.0, est)
            upper = np.clip(np.maximum(high + z * sd, c_hi), est, top)
            a, b = lower, upper
        supported = np.ones(est.shape, dtype=bool)
        for row in nd if nd is not None else ():
            # a tolerance for the rounding of sums over groups: equal up to it is inside
            tol = 1e-9 * max(1.0, float(self.n_rows))
            supported &= (row < a - tol) | (row > b + tol)
        return est, lower, upper, supported

    def release_check(
        self,
        values: Callable[[np.ndarray], Any],
        columns: int,
        *,
        raw_as_release: bool = False,
    ) -> ReleaseCheck:
        """Held-out check of the model's answer against the raw release's and the no-data answers.

        Each length's released rows (those the weights are fitted on) are split in two halves by a draw
        from the key's own stream (never from the data). On each half the model is refitted as it was
        (same start and iterations, without the library's copies of the other half's rows), and each
        answer is a population formed from that half alone: the model's, the raw release's (the half's
        released trajectories taken as the population), uniform draws from P and the trajectory at P's
        1-median. Each population is pushed through the channel (the mean of the kept simulated releases
        of its candidates, so the real mechanism and not the composite likelihood) and compared with the
        other half's release over the first ``columns`` columns of ``values``: the summed absolute
        difference of the counts (scaled by the rows each length stands for). ``raw_as_release``: the raw
        release's prediction is the half's own counts instead (no second pass through the channel).

        The model's answer is kept when no alternative is closer; otherwise the closest alternative's.
        Post-processing: the release, P and the public configuration only.
        """
        score = dict.fromkeys(CHECKED, 0.0)
        prior: dict[str, Any] = {name: None for name in ("uniform", "constant")}
        for g in self.groups:
            v = sp.csr_matrix(values(g.cand))[:, :columns]
            # the no-data answers, prior mean counts (no release read): the trajectory at P's 1-median,
            # and for uniform draws from P the mean over PRIOR_DRAWS fresh draws (the library holds few)
            gen = _stream(self.key, g.n, _CHECK)
            draws = gen.integers(0, self.ps.size, size=(PRIOR_DRAWS, g.n))
            per_row = {
                "uniform": np.asarray(sp.csr_matrix(values(draws))[:, :columns].mean(axis=0)).reshape(-1),
                "constant": np.asarray(v.T @ _start_weights(g.source, "constant", 1.0)).reshape(-1),
            }
            for name, part in per_row.items():
                prior[name] = float(g.rows.size) * part + (0.0 if prior[name] is None else prior[name])
            if g.sims is None or g.sims.shape[1] == 0 or g.lik.shape[0] < 4:
                continue  # too few rows to split (their answer is the raw release's, see choose)
            resp = sp.lil_matrix(_mean_response(g.sims, values)[:, :columns])  # (K, T) the channel's mean
            # the constant is one candidate: its few kept releases would make its prediction far noisier
            # than that of a population spread over many candidates, so it is released PRIOR_SIMS times
            const = np.flatnonzero(g.source == CONSTANT)
            if const.size and self.mech is not None:
                key = gen.integers(0, 2**32, size=8, dtype=np.uint32)
                rel = run_with_key([g.cand[const[0]]] * PRIOR_SIMS, self.ps, self.mech, key=key)
                resp[const[0]] = sp.csr_matrix(values(np.stack(rel)))[:, :columns].mean(axis=0)
            resp = resp.tocsr()
            fitted = g.released if g.fit_rows is None else g.released[g.fit_rows]
            y = sp.csr_matrix(values(fitted))[:, :columns]
            fold = gen.permutation(fitted.shape[0]) % 2
            cand_fold = np.where(g.source >= 0, fold[np.maximum(g.source, 0)], -1)
            for f in (0, 1):
                train, test = np.flatnonzero(fold == f), np.flatnonzero(fold != f)
                keep = cand_fold != 1 - f
                obs = np.asarray(y[test].sum(axis=0)).reshape(-1)
                ratio = test.size / max(train.size, 1)
                for name in CHECKED:
                    start = g.start if name == "model" else name
                    w = _start_weights(g.source, start, float(train.size), keep)
                    if name == "model" and start != "constant":  # EM keeps the constant where it is
                        w = _em(g.lik.take(train), w, g.n_iter)
                    pred = ratio * np.asarray(resp.T @ w).reshape(-1)
                    if name == "released" and raw_as_release:
                        pred = ratio * np.asarray(y[train].sum(axis=0)).reshape(-1)
                    score[name] += g.scale * float(np.abs(pred - obs).sum())
        best = min(CHECKED[1:], key=lambda name: score[name])
        return ReleaseCheck(best if score[best] < score["model"] else "model", score, prior)

    def sd(self, values: Callable[[np.ndarray], Any]) -> np.ndarray:
        """The standard deviation of each count before any range widening: sqrt(var + bootstrap variance).

        The posterior variance, the variance of sampling the fitted rows (lengths fitted on a sample) and
        the bootstrap variance of the refitted weights (0 without a bootstrap).
        """
        _, var, boot, *_ = self._sums(values, float(ndtri(0.5 + self.level / 2.0)))
        extra = 0.0 if boot is None else boot.var(axis=0, ddof=1)
        return np.sqrt(np.maximum(var + extra, 0.0))

    def _sums(self, values: Callable[[np.ndarray], Any], z: float) -> tuple[Any, ...]:
        """Per count, summed over lengths: estimate, variance, bootstrap replicates, checks.

        Bootstrap replicates (B, T) or None, the plausible models' range, the no-data estimates (D, T) and
        the channel check.
        """
        self.intervals()
        est = var = boot = low = high = None
        nd: np.ndarray | None = None
        ch = _Channel()
        for g in self.groups:
            v = sp.csr_matrix(values(g.cand))
            # a length fitted on a sample of its rows: every count is the sample's times N / n (see
            # _posterior_counts), plus the variance of sampling n of the N rows
            f = g.scale
            e, q, sq = _posterior_counts(g, v, g.w)
            if g.fit_rows is not None:
                q = f * q + _sampling_variance(g, e, sq)
            e = f * e
            lo, hi = e.copy(), e.copy()
            for w in g.alt_w if g.alt_w is not None else ():
                ea = f * _posterior_counts(g, v, w, variance=False)[0]
                np.minimum(lo, ea, out=lo)
                np.maximum(hi, ea, out=hi)
            est, var = (e, q) if est is None or var is None else (est + e, var + q)
            low, high = (lo, hi) if low is None or high is None else (low + lo, high + hi)
            if g.boot_w is not None:
                bt = f * np.asarray((v.T @ g.boot_w.T).T)
                boot = bt if boot is None else boot + bt
            if g.no_data_w is not None and g.no_data_w.shape[0]:
                ndg = f * np.stack([_posterior_counts(g, v, w, variance=False)[0] for w in g.no_data_w])
                nd = ndg if nd is None else nd + ndg
            ch.add(g, values, v, z)
        if est is None or var is None or low is None or high is None:
            raise ValueError("No released trajectory to estimate from.")
        return est, var, boot, low, high, nd, ch


class _Channel:
    """What the release itself can say about each count, from the simulated channel (an interval per column).

    For every released length, the kept simulated releases of the library's candidates give the channel's
    mean response of each column: across candidates c (weighted half by the fitted population, half
    uniformly), the mean released value A_ct = E[V_t(release of c)] is regressed on the candidate's own
    value V_ct, A ≈ a_t + b_t V. When the slope b_t exceeds z standard
    errors, the count is estimated by moments, (R_t − N a_t) / b_t with R_t the raw count of the N
    releases (its variance: the releases' empirical variance and the regression's, by the delta method);
    otherwise the release's count in t hardly depends on the originals' and the group's count may be
    anything in [N · min V, N · max V] (V over the library and the releases: [0, N] for an indicator).
    The estimate's interval is widened to hold this one. It does not use the composite likelihood, so
    where the channel hides a count, no model makes the interval look informative.
    """

    def __init__(self) -> None:
        # per column, summed over groups: moment estimate and variance (informative groups), N · min value
        # and N · (max − min) (uninformative groups), N · max value (all groups: the count's upper bound)
        self.sums: np.ndarray | None = None  # (5, T)

    @property
    def cap(self) -> np.ndarray | None:
        return None if self.sums is None else self.sums[4]

    def add(self, g: Group, values: Callable[[np.ndarray], Any], v: Any, z: float) -> None:
        t = v.shape[1]
        y = sp.csr_matrix(values(g.released))
        if g.sims is None or g.sims.shape[1] == 0:
            est, var, ok = np.zeros(t), np.zeros(t), np.zeros(t, dtype=bool)
        else:
            a_mat = _mean_response(g.sims, values)
            k = g.cand.shape[0]
            fitted = np.asarray(g.w, dtype=np.float64)
            fitted = fitted / fitted.sum() if fitted.size == k and fitted.sum() > 0 else np.full(k, 1.0 / k)
            # half the fitted population (the candidates like the release), half the whole library
            est, var, ok = _moments(v, sp.csr_matrix(a_mat), y, z, 0.5 * fitted + 0.5 / k)
        # the range of a trajectory's value over the library and the releases (0..1 for an indicator)
        top = np.maximum(np.maximum(_colext(v, "max"), _colext(y, "max")), 1.0)
        bottom = np.minimum(_colext(v, "min"), _colext(y, "min"))
        n = float(g.rows.size)
        add = np.stack(
            [
                np.where(ok, est, 0.0),
                np.where(ok, var, 0.0),
                np.where(ok, 0.0, n * bottom),
                np.where(ok, 0.0, n * (top - bottom)),
                n * top,
            ]
        )
        self.sums = add if self.sums is None else self.sums + add

    def interval(self, z: float, t: int) -> tuple[np.ndarray, np.ndarray]:
        if self.sums is None:
            return np.full(t, np.inf), np.full(t, -np.inf)
        est, var, floor, free, cap = self.sums
        sd = np.sqrt(np.maximum(var, 0.0))
        lo = np.clip(est - z * sd + floor, 0.0, cap)
        hi = np.clip(est + z * sd + floor + free, 0.0, cap)
        return lo, np.maximum(hi, lo)


def _mean_response(sims: np.ndarray, values: Callable[[np.ndarray], Any]) -> Any:
    """(K, T) sparse: each candidate's mean value over its kept simulated releases ``sims`` (K, S', n)."""
    sims = sims.astype(np.int64)
    total = sp.csr_matrix(values(sims[:, 0]))
    for s in range(1, sims.shape[1]):
        total = total + sp.csr_matrix(values(sims[:, s]))
    return sp.csr_matrix(total / float(sims.shape[1]))


def _colsum(m: Any) -> np.ndarray:
    return np.asarray(m.sum(axis=0), dtype=np.float64).reshape(-1)


def _colext(m: Any, which: str) -> np.ndarray:
    """Each column's ``"min"`` or ``"max"``, at least 0 (0 for a matrix without rows)."""
    if m.shape[0] == 0:
        return np.zeros(m.shape[1])
    return np.maximum(np.asarray(getattr(m, which)(axis=0).toarray(), dtype=np.float64).reshape(-1), 0.0)


def _moments(
    v: Any, a_mat: Any, y: Any, z: float, weight: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Moment estimate, its variance and whether the channel is informative, per column (see _Channel).

    A weighted least-squares fit over the candidates (``weight`` sums to 1; its effective size sets the
    standard errors).
    """
    om = np.asarray(weight, dtype=np.float64).reshape(-1, 1)
    k_eff = 1.0 / max(float(np.sum(om**2)), 1e-300)
    wv, wa = v.multiply(om).tocsr(), a_mat.multiply(om).tocsr()
    mv, ma = _colsum(wv), _colsum(wa)
    sxx = _colsum(wv.multiply(v)) - mv * mv
    sxy = _colsum(wv.multiply(a_mat)) - mv * ma
    syy = _colsum(wa.multiply(a_mat)) - ma * ma
    with np.errstate(divide="ignore", invalid="ignore"):
        live = sxx > 1e-12
        b = np.where(live, sxy / sxx, 0.0)
        a = ma - b * mv
        s2 = np.maximum(syy - b * sxy, 0.0) * k_eff / max(k_eff - 2.0, 1.0)
        se_b2 = np.where(live, s2 / (k_eff * sxx), np.inf)
        var_a = s2 / k_eff * (1.0 + np.where(live, mv * mv / sxx, 0.0))
        ok = live & (b > z * np.sqrt(se_b2))
        n = float(y.shape[0])
        r = _colsum(y)
        var_r = np.maximum(_colsum(y.multiply(y)) - r * r / max(n, 1.0), 0.0)
        safe_b = np.where(ok, b, 1.0)
        est = (r - n * a) / safe_b
        var = (var_r + n * n * var_a) / safe_b**2 + est**2 * se_b2 / safe_b**2
    return np.where(ok, est, 0.0), np.where(ok, var, 0.0), ok


def _posterior_counts(
    g: Group, v: Any, w: np.ndarray, variance: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Σ_j E[V_t | y_j], Σ_j Var[V_t | y_j] and Σ_j E[V_t | y_j]² for the values ``v`` under weights ``w``.

    For a 0/1 indicator the variance is p_jt (1 − p_jt); for counts (a total) E[V²] − E[V]². The sums run
    over the fitted rows (all rows, or a length's uniform sample) in blocks: no (rows x candidates) matrix
    larger than one block is formed.
    """
    e = np.zeros(v.shape[1])
    q = np.zeros(v.shape[1])
    sq = np.zeros(v.shape[1])
    binary = bool(v.nnz == 0 or np.all(v.data == 1.0))
    v2 = v if binary else v.multiply(v).tocsr()
    block = max(1, _BLOCK // max(v.shape[1], g.cand.shape[0]))
    for a in range(0, g.lik.shape[0], block):
        post = g.posterior(a, a + block, w)
        p = np.asarray((v.T @ post.T).T)  # (rows, T)
        e += p.sum(axis=0)
        if variance:
            pp = p * p
            sq += pp.sum(axis=0)
            p2 = p if binary else np.asarray((v2.T @ post.T).T)
            q += (p2 - pp).sum(axis=0)
    return e, q, sq


def _sampling_variance(g: Group, e: np.ndarray, sq: np.ndarray) -> np.ndarray:
    """Variance of N · (mean of p_jt over the n fitted rows) as an estimate of Σ_j p_jt over all N rows.

    The fitted rows are a uniform sample without replacement: N² (1 − n/N) s_t² / n, s_t² the sample
    variance of the posterior means p_jt (``e`` and ``sq``: their sum and sum of squares over the sample).
    """
    n, big = float(g.lik.shape[0]), float(g.rows.size)
    s2 = np.maximum(sq - e * e / n, 0.0) / max(n - 1.0, 1.0)
    return big * big * (1.0 - n / big) * s2 / n


#: Simulated releases kept per candidate (and simulated for PointEM) for :class:`_Channel`.
_CHANNEL_SIMS = 8
#: Purposes of the random streams derived from the key (see :func:`_stream`).
_LIBRARY, _FOLDS, _BOOT, _SUBSAMPLE, _CHECK = 0, 1, 2, 3, 4


def _stream(key: np.ndarray, n: int, purpose: int) -> np.random.Generator:
    """The generator of one purpose for the released length n: independent of every other stream."""
    words = [int(x) for x in np.asarray(key, dtype=np.uint32).reshape(-1)]
    return np.random.default_rng(np.random.SeedSequence(words, spawn_key=(int(n), int(purpose))))


def fit(seqs: list[np.ndarray], ps: PointSet, mech: Any, *, key: np.ndarray, options: FitOptions) -> Model:
    """Fit the population model to released index sequences (see the module notes)."""
    lengths = np.fromiter((s.shape[0] for s in seqs), dtype=np.int64, count=len(seqs))
    m = ps.size
    freq = np.bincount(np.concatenate(seqs), minlength=m).astype(np.float64)
    prior = 0.5 / m + 0.5 * freq / max(freq.sum(), 1.0)
    prior /= prior.sum()
    exact = getattr(mech, "name", None) == "pointem"
    cell, n_cells = (np.zeros(0, dtype=np.int64), 0) if exact else grid_cells(ps, options.cell_km)
    median = ps.one_median() if options.library != "released" else -1
    n_stages = 2 * len(np.unique(lengths))
    with stages("fitting the population model", n_stages, enabled=options.progress) as report:
        groups = []
        offset = 0
        for n in np.unique(lengths):
            n = int(n)
            report(f"simulating length {n}")
            gen = _stream(key, n, _LIBRARY)  # proposals: public post-processing, one stream per length
            rows = np.flatnonzero(lengths == n)
            released = np.stack([seqs[r] for r in rows])
            sub = fit_sample(rows.size, options.fit_rows, key, n)
            fitted = released if sub is None else released[sub]  # the rows the weights are fitted on
            k = int(min(options.n_candidates, max(200, 2 * fitted.shape[0])))
            parts, source = [], []
            if options.library != "released":
                ku = k // 3  # a third of the proposal: independent uniform draws from P (no-data population)
                parts += [_candidates(ps, n, k - ku, prior, gen), gen.integers(0, m, size=(ku, n))]
                parts.append(np.full((1, n), median, dtype=np.int64))  # the other no-data population
                source += [np.full(k - ku, PROPOSAL), np.full(ku, UNIFORM), np.full(1, CONSTANT)]
            if options.library != "proposal":
                pick = gen.permutation(fitted.shape[0])[:k]  # source: a position among the fitted rows
                parts.append(fitted[pick])
                source.append(pick.astype(np.int64))
            cand = np.concatenate(parts)
            row_loglik: Callable[[np.ndarray], np.ndarray]
            if exact:
                row_loglik = partial(_loglik_pointem, cand=cand, ps=ps, mech=mech)
                sims = _simulate(cand, _CHANNEL_SIMS, ps, mech, key, offset)  # for the channel check only
                offset += cand.shape[0] * _CHANNEL_SIMS
            else:
                sims = _simulate(cand, options.n_sims, ps, mech, key, offset)
                offset += cand.shape[0] * options.n_sims
                all_sims = np.ascontiguousarray(sims, dtype=np.int32) if sub is not None else sims
                # the back-off f_i is the cell frequency of every release of the length (the fitted rows'
                # when all are fitted), the same for every row: no released cell has probability 0
                freq = cell_frequencies(released, cell, n_cells)
                row_loglik = SimulatedChannel(cand, all_sims, cell, n_cells, freq)
            src = np.concatenate(source).astype(np.int64)
            kept = np.ascontiguousarray(sims[:, :_CHANNEL_SIMS], dtype=np.int32)
            lik = Lik.from_log(row_loglik(fitted))
            g = Group(n, rows, released, cand, lik, src, sims=kept)
            if sub is not None:
                g.fit_rows, g.row_loglik = sub, row_loglik
            groups.append(g)
        for g in groups:
            report(f"fitting length {g.n}")
            _fit_group(g, options, _stream(key, g.n, _FOLDS))
    key = np.asarray(key, dtype=np.uint32)
    return Model(ps, groups, len(seqs), options.level, options, key, mech=mech)


def fit_sample(n_rows: int, fit_rows: int, key: np.ndarray, n: int) -> np.ndarray | None:
    """The sorted positions of the ``fit_rows`` rows a length with ``n_rows`` releases is fitted on.

    None when every row is fitted (``n_rows <= fit_rows``). A uniform sample without replacement from its
    own stream of the key: which rows are fitted depends on the key, the length and the number of rows,
    never on a released value.
    """
    if n_rows <= fit_rows:
        return None
    return np.sort(_stream(key, n, _SUBSAMPLE).choice(n_rows, size=fit_rows, replace=False))


def _fit_group(g: Group, options: FitOptions, gen: np.random.Generator) -> None:
    """The point estimate's weights: start and iterations by cross-validation, then EM on all rows."""
    nrel = g.lik.shape[0]
    starts = _starts(g.source, options.library) if options.start == "cv" else (options.start,)
    checkpoints = CHECKPOINTS if options.n_iter == "cv" else (int(options.n_iter),)
    (g.start, g.n_iter), g.plausible = choose(g.lik, g.source, starts, checkpoints, gen)
    w0 = _start_weights(g.source, g.start, nrel)
    g.w = _em(g.lik, w0, 0 if g.start == "constant" else g.n_iter)
    nd = [st for st in ("uniform", "constant") if st in _starts(g.source, options.library)]
    g.no_data_w = np.array([_start_weights(g.source, st, nrel) for st in nd]).reshape(len(nd), -1)


def _fit_intervals(g: Group, options: FitOptions, gen: np.random.Generator) -> None:
    """The other plausible models (the ends of each start's plausible stretch) and the bootstrap."""
    nrel = g.lik.shape[0]
    ends = []
    for start in dict.fromkeys(st for st, _ in g.plausible):
        its = [it for st, it in g.plausible if st == start]
        ends += [(start, it) for it in sorted({min(its), max(its)}) if (start, it) != (g.start, g.n_iter)]
    g.alt_w = np.array([_em(g.lik, _start_weights(g.source, st, nrel), it) for st, it in ends])
    g.alt_w = g.alt_w.reshape(len(ends), g.lik.shape[1])
    if options.n_boot < 2:  # no interval: the plausible models' range is kept for the support flag
        return
    w0 = _start_weights(g.source, g.start, nrel)
    boot = np.empty((options.n_boot, g.lik.shape[1]))
    for b in range(options.n_boot):
        pick = gen.multinomial(nrel, np.full(nrel, 1.0 / nrel)).astype(np.float64)
        wb = _em(g.lik, w0, g.n_iter, row_w=pick)
        boot[b] = _em(g.lik, wb, 1)  # the posterior-mean weights of all released rows under wb
    g.boot_w = boot
