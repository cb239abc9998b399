"""The normative reference path of TP, ATP and PointEM (ALGORITHM §5.8, §8.9), as an explicit stage machine.

One run of a mechanism on one trajectory is a sequence of *stages* (ALGORITHM §5.9): copy A's stages, then
copy B's, each stage being one primitive call (anchor EM, radius SW, pivot EM, direction k-RR, point EM).
This module computes, for the next stage, its public parameters and its exact conditional pmf given the
transcript prefix (what the exact enumerator walks), and the sampler draws from exactly that pmf
through the :class:`~geoldp._core.randomness.RandomSource` interface (``bernoulli``/``integers`` for k-RR,
``categorical`` for EM and bucketed SW, ``uniform`` only for the continuous-SW option).

The state machine works on a **batch** of B private trajectories of the same length n that share one
transcript prefix: private inputs and pmfs carry a leading axis of length B, public parameters are computed
once and broadcast. The sampler uses B = 1; the tests' exact enumerator
(``tests/trajectory/exact_enumeration.py``) uses B = the number of candidate inputs, which lets it evaluate
Pr[transcript | x] for every x in one walk. Mutants in ``tests/mutants.py`` override the private hook methods
(``_direction_input``, ``_point_set``, ``_region_centre``, ``_em_sensitivity``) to make a public parameter
depend on x; the per-row layout keeps such a dependence visible to the tests.

Order in which one trajectory consumes draws (documented, stable within a minor version): the stages in
transcript order; a k-RR stage consumes one ``bernoulli`` and, on a lie, one ``integers``; an EM or
bucketed SW stage one ``categorical``; a continuous SW stage one ``bernoulli`` and one ``uniform``. No
stage is skipped, even when its domain has a single point (that EM consumes its ``categorical`` draw).
Nothing here is public API.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numba
import numpy as np

from geoldp import mechanisms as _mech
from geoldp._core import kernels as _kernels
from geoldp.trajectory import calibration as _cal
from geoldp.trajectory.merge import TAU_FACTOR, merge_index
from geoldp.trajectory.split import COPIES, CopyBudgets, stage_plan

if TYPE_CHECKING:
    from geoldp._core.kernels import KernelInt
    from geoldp._core.pointset import PointSet
    from geoldp._core.randomness import RandomSource

__all__: list[str] = []

FALLBACK_NAMES = ("intersection", "left", "right", "region")
_CACHE_BYTES = 16_000_000  # per-context cache of sector / distance rows from public origins


# ------------------------------------------------------------------------------------------------------
# Public context: everything that depends only on (mechanism, P, n)
# ------------------------------------------------------------------------------------------------------


class Context:
    """Public quantities of one (mechanism, point set, trajectory length) combination."""

    def __init__(self, mechanism: Any, points: PointSet, n: int) -> None:
        self.mechanism = mechanism
        self.points = points
        self.n = int(n)
        self.lam = np.ascontiguousarray(points.lam, dtype=np.float64)
        self.phi = np.ascontiguousarray(points.phi, dtype=np.float64)
        self.m = int(self.lam.shape[0])
        self.delta = float(points.diameter_m)
        self.tau = TAU_FACTOR * self.delta
        plan = self.plan = mechanism.sampler_plan
        self.single = plan.single(self.n)
        self.is_atp = plan.anchor_region and not self.single
        self.all_mask = np.ones(self.m, dtype=np.bool_)
        self.point_labels = np.arange(self.m)
        #: build the full public-parameter dicts of every stage (the exact enumerator checks that they
        #: depend on released values only)
        self.record_public = False
        self._sector_cache: dict[int, np.ndarray] = {}
        self.cache_rows = max(8, min(4096, _CACHE_BYTES // (8 * self.m)))
        self._dist_cache: dict[int, np.ndarray] = {}
        if self.single:
            self.single_epsilon = mechanism.single_budget(self.n)
            self.plans: dict[str | None, tuple[tuple[str, tuple[int, ...]], ...]]
            self.plans = {None: tuple(("point_em", (i,)) for i in range(1, self.n + 1))}
            return
        self.g = int(plan.granularity)
        self.sector_labels = np.arange(self.g)
        self.centred = plan.centred
        self.balanced = plan.balanced
        self.neighbour_fallback = plan.neighbour_fallback
        self.budgets: dict[str | None, CopyBudgets] = {c: mechanism.copy_budgets(self.n, c) for c in COPIES}
        self.plans = {c: stage_plan(self.n, c, anchor=self.is_atp) for c in COPIES}
        if self.is_atp:
            self.sw_buckets = int(plan.sw_buckets)
            self.continuous = plan.continuous_sw
            self.input_mapping = plan.input_mapping
            self.sw_b: dict[str | None, float] = {
                c: float(_mech.sw_half_width(self.budgets[c].radius)) for c in COPIES
            }
            self.eps_decay: dict[str | None, float] = {c: mechanism.decay_budget(self.n, c) for c in COPIES}

    # -- public geometry helpers (O(m) per call, cached by public origin index) ------------------------
    def sectors_from(self, origin: int) -> np.ndarray:
        """sec_g(θ(P_origin → P_r)) for every r (int64, length m); the origin itself is in sector 0."""
        out = self._sector_cache.get(origin)
        if out is None:
            theta = _kernels.bearing_from_one(
                self.lam[origin], self.phi[origin], self.lam, self.phi, np.empty(self.m)
            )
            out = _kernels.sector_many(theta, self.g, self.centred, np.empty(self.m, dtype=np.int64))
            self._keep(self._sector_cache, origin, out)
        return out

    def distances_from(self, origin: int) -> np.ndarray:
        """d(P_origin, P_r) for every r (metres, length m)."""
        out = self._dist_cache.get(origin)
        if out is None:
            out = _kernels.haversine_from_one(
                self.lam[origin], self.phi[origin], self.lam, self.phi, np.empty(self.m)
            )
            self._keep(self._dist_cache, origin, out)
        return out

    def _keep(self, cache: dict[int, np.ndarray], origin: int, row: np.ndarray) -> None:
        if len(cache) >= self.cache_rows:  # bounded memory: start over
            cache.clear()
        cache[origin] = row

    def merge(self, y_a: np.ndarray, y_b: np.ndarray) -> np.ndarray:
        """Position-wise merge of two copies over the full P (ALGORITHM §5.6)."""
        out = np.empty(len(y_a), dtype=np.int64)
        d_a = np.empty(self.m)
        d_b = np.empty(self.m)
        for i in range(len(y_a)):
            out[i] = merge_index(
                int(y_a[i]), int(y_b[i]), self.lam, self.phi, self.tau, self.balanced, d_a, d_b
            )
        return out


# ------------------------------------------------------------------------------------------------------
# Private batch: the private inputs of B trajectories of length n (never leaves this module's callers)
# ------------------------------------------------------------------------------------------------------


class Private:
    """Private locations of B trajectories (radians, shape (B, n)) and lazily computed distances to P."""

    def __init__(self, ctx: Context, x_lam: np.ndarray, x_phi: np.ndarray) -> None:
        self.ctx = ctx
        self.lam = np.ascontiguousarray(np.atleast_2d(x_lam), dtype=np.float64)
        self.phi = np.ascontiguousarray(np.atleast_2d(x_phi), dtype=np.float64)
        self.B = self.lam.shape[0]
        self._dist: dict[int, np.ndarray] = {}
        self._anchor: np.ndarray | None = None

    def dist(self, position: int) -> np.ndarray:
        """d(x_position, P_r), shape (B, m); ``position`` is 1-based."""
        out = self._dist.get(position)
        if out is None:
            ctx = self.ctx
            out = np.empty((self.B, ctx.m))
            i = position - 1
            for b in range(self.B):
                _kernels.haversine_from_one(self.lam[b, i], self.phi[b, i], ctx.lam, ctx.phi, out[b])
            self._dist[position] = out
        return out

    def anchor(self) -> np.ndarray:
        """p_α per row (ALGORITHM §8.1): nearest P point to the mean location; ties → lowest index."""
        if self._anchor is None:
            ctx = self.ctx
            vector = ctx.plan.vector_mean
            out = np.empty(self.B, dtype=np.int64)
            d = np.empty(ctx.m)
            for b in range(self.B):
                lam_a, phi_a = anchor_location(self.lam[b], self.phi[b], vector)
                _kernels.haversine_from_one(lam_a, phi_a, ctx.lam, ctx.phi, d)
                out[b] = int(np.argmin(d))
            self._anchor = out
        return self._anchor


@numba.njit(cache=True)
def sectors_to(
    lam0: float, phi0: float, lam: np.ndarray, phi: np.ndarray, g: KernelInt, centred: bool, out: np.ndarray
) -> np.ndarray:
    """``out[b] = sec_g(θ((lam0, phi0) → (lam[b], phi[b])))``: sectors of targets seen from one origin."""
    for b in range(out.shape[0]):
        out[b] = _kernels.sector(_kernels.bearing_rad(lam0, phi0, lam[b], phi[b]), g, centred)
    return out


def anchor_location(lam: np.ndarray, phi: np.ndarray, vector: bool) -> tuple[float, float]:
    """Mean location α of one trajectory (radians): arithmetic means (Eq. 8) or the 3-D vector mean (C9).

    The vector mean falls back to the arithmetic mean when the mean vector's norm is below 1e−12.
    """
    if vector:
        cphi = np.cos(phi)
        x = float(np.mean(cphi * np.cos(lam)))
        y = float(np.mean(cphi * np.sin(lam)))
        z = float(np.mean(np.sin(phi)))
        if math.sqrt(x * x + y * y + z * z) >= 1e-12:
            return math.atan2(y, x), math.atan2(z, math.hypot(x, y))
    return float(np.mean(lam)), float(np.mean(phi))


# ------------------------------------------------------------------------------------------------------
# Stages
# ------------------------------------------------------------------------------------------------------


@dataclass
class Stage:
    """The next stage of a run: what it is, its public parameters and its exact conditional pmf.

    Attributes
    ----------
    copy : {"A", "B", None}
    kind : str
        Ledger kind (``anchor_em``, ``radius_sw``, ``pivot_em``, ``direction_krr``, ``point_em``).
    positions : tuple of int
        1-based positions, as in the ledger.
    epsilon : float
        Stage budget.
    outputs : ndarray
        The ordered output labels (P indices for EM, sectors 0…g−1 for k-RR, buckets 0…M−1 for SW).
    pmf : ndarray, shape (B, len(outputs))
        Exact conditional pmf of each batch row (zeros outside the row's domain). ``None`` for the
        continuous-SW option (a density, not a pmf).
    public : dict
        Public parameters, each an array whose first axis has length B (the exact enumerator
        checks that the rows are identical).
    private_input : ndarray, shape (B,)
        The randomiser's private input (k-RR: the true sector; SW: r; EM: the position or p_α).
    """

    copy: str | None
    kind: str
    positions: tuple[int, ...]
    epsilon: float
    outputs: np.ndarray
    pmf: np.ndarray | None
    public: dict = field(default_factory=dict)
    private_input: np.ndarray | None = None
    krr_lie: float | None = None
    sw_params: tuple | None = None


def _shared(arr: np.ndarray) -> bool:
    """True if a per-row array is one public value broadcast to every row (or there is one row)."""
    return arr.shape[0] == 1 or arr.strides[0] == 0


def _rows(value: Any, B: int) -> np.ndarray:
    """Broadcast a public value to a leading batch axis of length B (a view, no copy)."""
    arr = np.asarray(value)
    if B == 1:
        return arr[None]
    return np.broadcast_to(arr, (B,) + arr.shape)


def em_pmf_rows(epsilon: float, dist: np.ndarray, domain: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Exact EM pmf per row over all of P, zero outside each row's domain (ALGORITHM §3.2).

    Log-weights ``−(ε′·d)/(2Δ)`` (the expression of
    :func:`geoldp._core.kernels.em_log_weight`), max-subtracted
    in log space, then normalised.
    """
    ell = -(epsilon * dist) / (2.0 * delta[:, None])
    ell = np.where(domain, ell, -np.inf)
    top = ell.max(axis=1, keepdims=True)
    w = np.exp(ell - top)
    return w / w.sum(axis=1, keepdims=True)


def krr_pmf_rows(true_sector: np.ndarray, g: int, epsilon: float) -> np.ndarray:
    """Exact k-RR pmf per row (ALGORITHM §3.1): p at the true sector, q elsewhere (stable constants)."""
    p, q, _ = _mech.krr_constants(g, epsilon)
    out = np.full((true_sector.shape[0], g), q)
    out[np.arange(true_sector.shape[0]), true_sector] = p
    return out


class _CopyRun:
    """The stage machine of one copy (or of a single-copy mechanism) over a private batch.

    Use :meth:`stage` to get the next :class:`Stage`, :meth:`advance` to record its released output, and
    :meth:`clone` to branch (the exact enumerator). ``done`` becomes True after the last stage.
    """

    def __init__(self, ctx: Context, priv: Private, copy: str | None) -> None:
        self.ctx = ctx
        self.priv = priv
        self.copy = copy
        self.plan = ctx.plans[copy]
        self.s = 0
        self.points: dict[int, int] = {}  # released point per 1-based position
        self.d_hat: dict[tuple[int, ...], int] = {}  # released sector per (k, j)
        self.transcript: list = []
        self.fallback: list[np.ndarray] = []  # per non-pivot: (B,) branch codes into FALLBACK_NAMES
        # ATP public state (per row, broadcast views for the conforming code)
        self.anchor_hat: int | None = None
        self.region: np.ndarray | None = None  # (B, m) bool
        self.region_info: dict = {}
        self.budgets: Any  # the copy's CopyBudgets; None for a single-copy mechanism
        if ctx.single:
            self.budgets = None
            self.region = _rows(ctx.all_mask, priv.B)
        else:
            self.budgets = ctx.budgets[copy]
            if not ctx.is_atp:
                self.region = _rows(ctx.all_mask, priv.B)

    @property
    def done(self) -> bool:
        return self.s >= len(self.plan)

    def clone(self) -> _CopyRun:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.points = dict(self.points)
        new.d_hat = dict(self.d_hat)
        new.transcript = list(self.transcript)
        new.fallback = list(self.fallback)
        new.region_info = dict(self.region_info)
        return new

    # -- hooks (the conforming versions; mutants override these) ---------------------------------------
    def _em_sensitivity(self, dist: np.ndarray, domain: np.ndarray | None) -> np.ndarray:
        """EM sensitivity per row: the global diameter Δ of P, whatever the domain (ALGORITHM §3.2)."""
        return _rows(self.ctx.delta, self.priv.B)

    def _direction_input(self, k: int, j: int) -> np.ndarray:
        """True sector δ_{k,j} = sec_g(θ(P_{â_k} → x_j)) per row; origin = the PERTURBED pivot (§5.4)."""
        ctx, priv = self.ctx, self.priv
        origin = self.points[k]
        return sectors_to(
            ctx.lam[origin],
            ctx.phi[origin],
            priv.lam[:, j - 1],
            priv.phi[:, j - 1],
            ctx.g,
            ctx.centred,
            np.empty(priv.B, dtype=np.int64),
        )

    def _point_set(self, k: int, j: int, d_hat: int) -> np.ndarray:
        """GetPointSet(â_k, δ̂_{k,j}, Ω) per row as a (B, m) mask (ALGORITHM §2.5, §5.4)."""
        sectors = self.ctx.sectors_from(self.points[k])
        return self.region & (sectors == d_hat)[None, :]

    def _region_centre(self) -> np.ndarray:
        """Centre of the ATP region per row: the PERTURBED anchor â_α (ALGORITHM §8.3), never p_α."""
        return _rows(self.anchor_hat, self.priv.B)

    # -- stages ----------------------------------------------------------------------------------------
    def stage(self) -> Stage:
        """The next stage with its public parameters and exact pmf."""
        kind, positions = self.plan[self.s]
        ctx, priv, B = self.ctx, self.priv, self.priv.B
        if ctx.single:
            i = positions[0]
            return self._em_stage(kind, positions, ctx.single_epsilon, priv.dist(i), self.region, _rows(i, B))
        bud = self.budgets
        if kind == "anchor_em":
            anchor = priv.anchor()
            dist = (
                np.stack([ctx.distances_from(int(a)) for a in anchor])
                if B > 1
                else ctx.distances_from(int(anchor[0]))[None, :]
            )
            return self._em_stage(kind, positions, bud.anchor, dist, _rows(ctx.all_mask, B), anchor)
        if kind == "radius_sw":
            return self._radius_stage(positions)
        if kind == "pivot_em":
            i = positions[0]
            return self._em_stage(kind, positions, bud.point_pivot, priv.dist(i), self.region, _rows(i, B))
        if kind == "direction_krr":
            k, j = positions
            true = self._direction_input(k, j)
            pmf = krr_pmf_rows(true, ctx.g, bud.direction)
            public = (
                {
                    "g": _rows(ctx.g, B),
                    "origin": _rows(self.points[k], B),
                    "epsilon": _rows(bud.direction, B),
                    "centred": _rows(ctx.centred, B),
                }
                if ctx.record_public
                else {}
            )
            return Stage(
                self.copy,
                kind,
                positions,
                bud.direction,
                ctx.sector_labels,
                pmf,
                public,
                true,
                krr_lie=_mech.krr_lie_probability(ctx.g, bud.direction),
            )
        # point_em of a non-pivot
        j = positions[0]
        domain, branch = self._domain(j)
        st = self._em_stage(kind, positions, bud.point_nonpivot, priv.dist(j), domain, _rows(j, B))
        st.public["fallback"] = branch
        return st

    def _em_stage(
        self,
        kind: str,
        positions: tuple[int, ...],
        epsilon: float,
        dist: np.ndarray,
        domain: np.ndarray | None,
        private_input: np.ndarray | None,
    ) -> Stage:
        B = self.priv.B
        delta = self._em_sensitivity(dist, domain)
        pmf = em_pmf_rows(epsilon, dist, cast(np.ndarray, domain), delta)  # set before any EM stage
        public = {"domain": domain, "delta": delta}
        if self.ctx.record_public:
            public["epsilon"] = _rows(epsilon, B)
        if self.region_info and self.ctx.record_public:
            for key in ("region", "eta", "r_tilde", "delta_r", "branch_eta"):
                if key in self.region_info:
                    public[key] = self.region_info[key]
        return Stage(self.copy, kind, positions, epsilon, self.ctx.point_labels, pmf, public, private_input)

    def _centre_rows(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """(centres, distances (B, m), shared) for the region centre of every row."""
        ctx, B = self.ctx, self.priv.B
        centre = self._region_centre()
        shared = _shared(centre)
        if shared:
            dist = _rows(ctx.distances_from(int(centre[0])), B)
        else:
            dist = np.stack([ctx.distances_from(int(c)) for c in centre])
        return centre, dist, shared

    def _radius_stage(self, positions: tuple[int, ...]) -> Stage:
        ctx, priv, B = self.ctx, self.priv, self.priv.B
        eps_r = self.budgets.radius
        centre, dist, shared = self._centre_rows()
        delta_r = dist.max(axis=1)
        r = np.empty(B)
        for b in range(B):
            c = int(centre[b])
            r_max = 0.0
            for i in range(ctx.n):
                d = _kernels.haversine_rad(ctx.lam[c], ctx.phi[c], priv.lam[b, i], priv.phi[b, i])
                if d > r_max:
                    r_max = d
            r[b] = _cal.atp_radius_input(r_max, delta_r[b])
        b_half = ctx.sw_b[self.copy]
        public = {
            "b": _rows(b_half, B),
            "buckets": _rows(ctx.sw_buckets, B),
            "delta_r": delta_r,
            "epsilon": _rows(eps_r, B),
        }
        outputs: np.ndarray = np.empty(0)
        pmf: np.ndarray | None = None  # the continuous-SW option: a density, not a pmf
        if not ctx.continuous:
            outputs = np.arange(ctx.sw_buckets)
            pmf = np.atleast_2d(_mech.sw_bucket_masses(r, eps_r, ctx.sw_buckets))
        return Stage(
            self.copy, "radius_sw", positions, eps_r, outputs, pmf, public, r, sw_params=(b_half, eps_r)
        )

    def _domain(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Algorithm 1 intersection with the fallback of §5.5 (option C4); per-row branch codes."""
        ctx = self.ctx
        sets: dict[int, np.ndarray] = {}
        for k in (j - 1, j + 1):
            if 1 <= k <= ctx.n:
                sets[k] = self._point_set(k, j, self.d_hat[(k, j)])
        inter = None
        for s in sets.values():
            inter = s if inter is None else inter & s
        domain = np.array(inter, dtype=np.bool_)
        branch = np.zeros(self.priv.B, dtype=np.int64)
        empty = ~domain.any(axis=1)
        if empty.any():
            todo = empty.copy()
            if ctx.neighbour_fallback:
                for code, side in ((1, sets.get(j - 1)), (2, sets.get(j + 1))):
                    if side is None:
                        continue
                    use = todo & side.any(axis=1)
                    if use.any():
                        domain[use] = side[use] if side.shape[0] > 1 else side[0]
                        branch[use] = code
                        todo &= ~use
            if todo.any():
                region = cast(np.ndarray, self.region)  # set for every copy before its points
                domain[todo] = region[todo] if not _shared(region) else region[0]
                branch[todo] = 3
        return domain, branch

    # -- advancing -------------------------------------------------------------------------------------
    def advance(self, y: Any, stage: Stage | None = None) -> None:
        """Record the released output ``y`` of the current stage and update the public state."""
        kind, positions = self.plan[self.s]
        eps = stage.epsilon if stage is not None else None
        if kind in ("pivot_em", "point_em"):
            self.points[positions[0]] = int(y)
            if kind == "point_em" and stage is not None and "fallback" in stage.public:
                self.fallback.append(np.asarray(stage.public["fallback"]))
        elif kind == "direction_krr":
            self.d_hat[positions] = int(y)
        elif kind == "anchor_em":
            self.anchor_hat = int(y)
        elif kind == "radius_sw":
            self._finish_region(y)
        self.transcript.append((self.copy, kind, positions, eps, y))
        self.s += 1

    def _finish_region(self, y: Any) -> None:
        ctx, B = self.ctx, self.priv.B
        _, dist, shared = self._centre_rows()
        b_half = ctx.sw_b[self.copy]
        eps_r = self.budgets.radius
        r_hat = float(y) if ctx.continuous else _cal.sw_bucket_midpoint(int(y), b_half, ctx.sw_buckets)
        rows = 1 if shared else B
        eta = np.empty(rows)
        branch = np.empty(rows, dtype=np.int64)
        r_tilde = np.empty(rows)
        delta_r = np.empty(rows)
        region = np.empty((rows, ctx.m), dtype=np.bool_)
        for b in range(rows):
            row = np.ascontiguousarray(dist[b])
            delta_r[b] = row.max()
            r_est = _cal.sw_estimate(r_hat, b_half, delta_r[b])
            eta[b], branch[b] = _cal.calibration_centre(
                row, r_hat, b_half, eps_r, delta_r[b], ctx.input_mapping
            )
            r_tilde[b] = _cal.calibrate(r_est, eta[b], delta_r[b], ctx.eps_decay[self.copy])
            _cal.region_mask(row, r_tilde[b], region[b])
        if shared:
            eta, branch, r_tilde, delta_r = (_rows(v[0], B) for v in (eta, branch, r_tilde, delta_r))
            region = _rows(region[0], B)
        self.region = region
        self.region_info = {
            "region": region,
            "eta": eta,
            "r_tilde": r_tilde,
            "delta_r": delta_r,
            "branch_eta": branch,
        }


# ------------------------------------------------------------------------------------------------------
# Sampling through the randomness interface
# ------------------------------------------------------------------------------------------------------


def draw_stage(stage: Stage, source: RandomSource) -> object:
    """Draw the released output of a single-row stage through ``source`` (ALGORITHM §3, §4)."""
    if stage.kind == "direction_krr":
        x = int(cast(np.ndarray, stage.private_input)[0])
        k = stage.outputs.shape[0]
        if source.bernoulli(cast(float, stage.krr_lie)):
            j = int(source.integers(k - 1))
            return j + (j >= x)
        return x
    if stage.pmf is None:  # continuous SW option (ALGORITHM §3.3)
        b_half, eps = cast(tuple, stage.sw_params)
        v = float(cast(np.ndarray, stage.private_input)[0])
        t = math.exp(-eps)
        if source.bernoulli(2.0 * b_half / (2.0 * b_half + t)):
            return v - b_half + 2.0 * b_half * float(source.uniform())
        u = float(source.uniform())
        return u - b_half if u < v else u + b_half
    return int(stage.outputs[int(source.categorical(stage.pmf[0]))])


def new_runs(ctx: Context, priv: Private, run_cls: type[_CopyRun] | None = None) -> list[_CopyRun]:
    """The copy runs of one trajectory in transcript order (one run for single-copy mechanisms)."""
    cls = run_cls or RUN_CLASS
    if ctx.single:
        return [cls(ctx, priv, None)]
    return [cls(ctx, priv, c) for c in COPIES]


#: The stage-machine class used by the sampler and the enumerator (tests monkeypatch in mutant subclasses).
RUN_CLASS: type = _CopyRun


def perturb_one(
    ctx: Context, x_lam: np.ndarray, x_phi: np.ndarray, source: RandomSource
) -> tuple[np.ndarray, list]:
    """Run the reference algorithm on one trajectory; returns (output indices, copy runs)."""
    priv = Private(ctx, x_lam[None, :], x_phi[None, :])
    runs = new_runs(ctx, priv)
    for run in runs:
        sample_run(run, source)
    return output_of(ctx, runs), runs


def sample_run(run: _CopyRun, source: RandomSource) -> _CopyRun:
    """Draw every remaining stage of one copy run through ``source`` (the sampler's only loop)."""
    while not run.done:
        st = run.stage()
        run.advance(draw_stage(st, source), st)
    return run


def output_of(ctx: Context, runs: list[_CopyRun]) -> np.ndarray:
    """Final output: the single run's points, or the merge of copies A and B."""
    seqs = [np.array([run.points[i] for i in range(1, ctx.n + 1)], dtype=np.int64) for run in runs]
    return seqs[0] if ctx.single else ctx.merge(seqs[0], seqs[1])


def diagnostics_of(ctx: Context, runs: list[_CopyRun]) -> dict:
    """Per-trajectory diagnostics recomputed from the released transcript (post-processing only)."""
    out: dict = {"fallback": dict.fromkeys(FALLBACK_NAMES, 0)}
    for run in runs:
        for codes in run.fallback:
            out["fallback"][FALLBACK_NAMES[int(codes[0])]] += 1
        if ctx.is_atp:
            info = run.region_info
            out.setdefault("copies", {})[run.copy] = {
                "anchor": int(cast(int, run.anchor_hat)),
                "r_tilde_m": float(info["r_tilde"][0]),
                "region_size": int(np.count_nonzero(info["region"][0])),
                "eta_branch": ("weighted", "k_empty", "c_empty")[int(info["branch_eta"][0])],
            }
    return out


def transcript_of(runs: list[_CopyRun]) -> list[tuple]:
    """The full transcript (copy A's stages, then copy B's), entries (copy, kind, positions, ε, output)."""
    out: list[tuple] = []
    for run in runs:
        out.extend(run.transcript)
    return out
