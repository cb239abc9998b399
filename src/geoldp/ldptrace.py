"""LDPTrace: ε-LDP trajectory synthesis on a public grid (Du et al., PVLDB 16(8), 2023).

Every user holds one trajectory and sends, over a public N × N grid, Optimized Unary Encoding (OUE)
reports in two rounds: the length of their grid trajectory at ε/10, then the start cell, the end cell
and L − 1 transitions at 9ε/10 (L estimated from round 1), padded with empty reports; the collector
samples synthetic trajectories from the first-order Markov model it fits to the reports. :doc:`/ldptrace`
("What each user reports", "What the collector does") describes both at length. Everything after the
reports is post-processing, so the synthetic data is ε-LDP per trajectory.

Simulation of the collection
----------------------------
:func:`synthesize` simulates the whole campaign in one call. It never materialises the per-user bit
vectors: the collector only needs the sum of the reports, and the sum of m independent OUE reports is,
bit by bit, ``Binomial(c_j, 1/2) + Binomial(m − c_j, q)`` where c_j is the number of reports whose true
value is j (the bits of one report are independent, so are different reports). :func:`oue_counts` draws
exactly that, by inverse CDF from the project's random source. In a collection in the field, the users'
devices send the bit vectors themselves (:mod:`geoldp.client`, one campaign per round:
:meth:`geoldp.field.campaign.Campaign.next_round`), and the collector builds the same model from their sums
(:func:`model_from_sums`, which :func:`collect` ends with too).

Differences from the published code: the grid comes from a public box (the published code uses the
data's own bounding box, which is private); points outside the box are clamped to the nearest edge cell;
short trajectories pad their transition reports with empty reports. The published code sends only the
real transitions, so the number of a user's reports reveals the length of their trajectory; the padding
makes the reports ε-LDP for any two trajectories, at the price of the OUE noise of the empty reports
(measured in ``docs/results/ldptrace.md``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from geoldp import _release
from geoldp._core import frames as _frames
from geoldp._core.area import warn_if_area_from
from geoldp._core.errors import GeoLDPWarning
from geoldp._core.ledger import attach, require
from geoldp._core.progress import stages
from geoldp._core.randomness import resolve_rng
from geoldp._core.validation import (
    MAX_LENGTH,
    check_count,
    check_epsilon,
    check_float_range,
    check_int_min,
    check_real,
    check_release_epsilon,
)
from geoldp._core.versions import geoldp_version
from geoldp._ldptrace_grid import GRID_MAX, Grid, cell_sequences, move_codes
from geoldp._ldptrace_grid import MOVES as MOVES
from geoldp.budget import exact_share
from geoldp.mechanisms.oracles import oue_counts, oue_estimate

__all__ = ["Grid", "LDPTraceModel", "collect", "synthesize_cells"]

#: Share of ε spent on the length report (the rest goes to start, end and transitions).
LENGTH_SHARE = Fraction(1, 10)

#: The published code's end-state damping: at step j the end probability is multiplied by
#: min(1, END_BASE + (j − 1) · END_STEP), so that very short synthetic trajectories are rarer.
END_BASE, END_STEP = 0.3, 0.2

#: Most synthetic trajectories one call writes (``n_synthetic``): each is a LineString of up to L cells,
#: some hundreds of bytes, so 10⁷ already take gigabytes. Ask for more in several calls.
MAX_SYNTHETIC = 10_000_000

_HALF_ULP = 2.0**-54  # centres uniforms on the 2⁻⁵³ grid inside (0, 1) for inverse CDFs


# --------------------------------------------------------------------------------------------------
# the public grid and the budget
# --------------------------------------------------------------------------------------------------


def auto_grid_size(n_users: int, epsilon: float, length: float, *, lam: float = 2.5) -> int:
    """The grid side from the published granularity rule, from public inputs only.

    ``N = round(λ · (n · l · (e^ε′ − 1)² / e^ε′)^(1/4))`` with ε′ = (9ε/10) / (l + 1), the budget of one
    report of a trajectory of ``l`` cells, λ = 2.5 (as in the published code), clipped to [2, 256].

    Parameters
    ----------
    n_users : int
        Number of users (public: the collector knows how many report).
    epsilon : float
        The budget of one trajectory.
    length : float
        An assumed typical length in cells (public, e.g. from a previous campaign), > 0.

    Examples
    --------
    >>> auto_grid_size(100_000, 2.0, 10.0)
    32
    """
    caller = "grid_size"
    n_users = check_int_min(n_users, "n_users", minimum=1, caller=caller)
    eps = check_epsilon(epsilon, caller=caller)
    length = check_float_range(length, "length", caller=caller)
    lam = check_float_range(lam, "lam", caller=caller)
    e = math.exp(float(1 - LENGTH_SHARE) * eps / (length + 1.0))
    n = lam * (n_users * length * (e - 1.0) ** 2 / e) ** 0.25
    return int(min(GRID_MAX, max(2, round(n))))


def budget_split(epsilon: float, max_length: int) -> dict[str, float]:
    """The per-report budgets: ε/10 for the length, 9ε/(10 (L + 1)) for each of the L + 1 other reports.

    Every share is rounded down (:func:`geoldp.budget.exact_share`), so that, as exact rationals,
    ``length + (L + 1) · per_report ≤ ε``.

    Examples
    --------
    >>> budget_split(1.0, 4)["per_report"]
    0.18
    """
    eps = check_epsilon(epsilon, caller="budget_split")
    L = check_int_min(max_length, "max_length", minimum=1, caller="budget_split")
    return {
        "length": exact_share(eps, LENGTH_SHARE),
        "per_report": exact_share(eps, (1 - LENGTH_SHARE) / (L + 1)),
        "reports": L + 1,
    }


def field_split(epsilon: float, max_length: int) -> dict[str, float]:
    """The budgets of the two rounds of a campaign in the field, each user's total at most ε exactly.

    Round 1 spends ``length`` = ε/10 rounded down (as :func:`budget_split`); round 2 is one record that
    the store charges ``round2`` = ε − ``length`` rounded down, and each of its L + 1 reports spends
    ``per_report`` = ``round2`` / (L + 1) rounded down. As exact rationals ``(L + 1) · per_report ≤
    round2`` and ``length + round2 ≤ ε``: a store that charges the two records never lets a user's
    reports cost more than ε (``per_report`` is :func:`budget_split`'s or within a few ulps of it).

    Examples
    --------
    >>> s = field_split(1.0, 4)
    >>> s["reports"], s["length"] + s["round2"] <= 1.0
    (5, True)
    """
    eps = check_epsilon(epsilon, caller="field_split")
    L = check_int_min(max_length, "max_length", minimum=1, caller="field_split")
    length = exact_share(eps, LENGTH_SHARE)
    rest = Fraction(eps) - Fraction(length)
    round2 = float(rest)
    if Fraction(round2) > rest:
        round2 = math.nextafter(round2, 0.0)
    return {
        "length": length,
        "round2": round2,
        "per_report": exact_share(round2, Fraction(1, L + 1)),
        "reports": L + 1,
    }


# --------------------------------------------------------------------------------------------------
# the collection (users' reports, aggregated) and the model
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LDPTraceModel:
    """What the collector learns: estimated counts (from the ε-LDP reports only) and the public recipe.

    Attributes
    ----------
    grid : Grid
    length_counts : ndarray, shape (D,)
        Estimated number of trajectories of length 1..D (D the public length domain).
    max_length : int
        L, the length quantile estimated from ``length_counts``.
    start, end : ndarray, shape (N²,)
        Estimated start and end counts per cell.
    transitions : ndarray, shape (N², 8)
        Estimated count of each move out of each cell (0 where the move leaves the grid).
    n_users : int
    split : dict
        The budgets of :func:`budget_split`.
    """

    grid: Grid
    length_counts: np.ndarray
    max_length: int
    start: np.ndarray
    end: np.ndarray
    transitions: np.ndarray
    n_users: int
    split: dict[str, float]

    def start_probabilities(self) -> np.ndarray:
        """Start distribution (clipped counts, normalised; uniform if every estimate is ≤ 0)."""
        return _distribution(self.start)

    def length_probabilities(self) -> np.ndarray:
        """Distribution of lengths 1..D (clipped counts, normalised; uniform if all are ≤ 0)."""
        return _distribution(self.length_counts)

    def move_probabilities(self) -> np.ndarray:
        """``(N², 9)``: per cell, the 8 moves then the virtual end state, each row normalised.

        The rows of the published model's (N² + 1)-state matrix, stored sparsely (a cell only moves to its
        neighbours), so memory is O(N²).
        """
        rows = np.concatenate([np.clip(self.transitions, 0, None), np.clip(self.end, 0, None)[:, None]], 1)
        rows[:, :8][self.grid.neighbours() < 0] = 0.0
        return rows / (rows.sum(axis=1, keepdims=True) + 1e-8)


def _distribution(counts: np.ndarray) -> np.ndarray:
    s = np.clip(counts, 0.0, None)
    return s / s.sum() if s.sum() > 0 else np.full(s.shape, 1.0 / s.size)


def _length_quantile(counts: np.ndarray, quantile: float) -> int:
    """Smallest l whose cumulative estimated count reaches ``quantile`` of the total (the published rule).

    The raw (unclipped) estimates are summed, so that their zero-mean noise does not push L up. When the
    noisy total is negative the threshold is negative too and is met early, as in the published code; when
    no l reaches it, L is the whole length domain.
    """
    cum = np.cumsum(counts)
    if cum.size == 0:
        return 0
    reached = np.flatnonzero(cum >= quantile * cum[-1])
    return int(reached[0] + 1) if reached.size else int(counts.size)


def collect(
    cells: np.ndarray,
    offsets: np.ndarray,
    grid: Grid,
    epsilon: float,
    *,
    length_domain: int | None = None,
    quantile: float = 0.9,
    rng: Any = None,
) -> LDPTraceModel:
    """Simulate the two rounds of reports of every user (OUE sums, :func:`oue_counts`) and estimate.

    ``cells, offsets`` are the users' grid trajectories (:func:`cell_sequences`); ``length_domain`` is the
    public length domain D (default N²; longer trajectories report D). Only the estimates leave.
    """
    source = resolve_rng(rng)
    eps = check_epsilon(epsilon, caller="collect")
    d_len = grid.size if length_domain is None else int(length_domain)
    lengths = np.diff(offsets)
    n_users = int(lengths.shape[0])
    # round 1: the length
    eps_len = exact_share(eps, LENGTH_SHARE)
    true_len = np.bincount(np.minimum(lengths, d_len) - 1, minlength=d_len)
    length_counts = oue_estimate(oue_counts(true_len, n_users, eps_len, rng=source), n_users, eps_len)
    del true_len
    max_length = length_cut(length_counts, d_len, quantile)
    split = budget_split(eps, max_length)
    eps_r = split["per_report"]
    # round 2: start, end and L - 1 transitions of the trajectory truncated to L cells
    used = np.minimum(lengths, max_length)
    starts = offsets[:-1]
    true_start = np.bincount(cells[starts], minlength=grid.size)
    true_end = np.bincount(cells[starts + used - 1], minlength=grid.size)
    k = np.arange(int((used - 1).sum())) - np.repeat(np.cumsum(used - 1) - (used - 1), used - 1)
    src = np.repeat(starts, used - 1) + k
    codes = cells[src] * 8 + move_codes(cells[src], cells[src + 1], grid)
    true_moves = np.bincount(codes, minlength=8 * grid.size)
    del codes, src, k, used
    n_moves = n_users * (max_length - 1)  # padded with empty reports
    start = oue_counts(true_start, n_users, eps_r, rng=source)
    end = oue_counts(true_end, n_users, eps_r, rng=source)
    moves = oue_counts(true_moves, n_moves, eps_r, rng=source)
    del true_start, true_end, true_moves
    return model_from_sums(grid, length_counts, max_length, split, (start, end, moves), n_users)


def length_cut(length_counts: np.ndarray, length_domain: int, quantile: float) -> int:
    """L: the ``quantile`` of the estimated length distribution (:func:`_length_quantile`), at most D.

    Post-processing of the round-1 estimates only: the central simulation and the field's second round
    (:meth:`geoldp.field.campaign.Campaign.next_round`) both fix L with it.
    """
    return min(_length_quantile(np.asarray(length_counts, dtype=np.float64), quantile), int(length_domain))


def model_from_sums(
    grid: Grid,
    length_counts: np.ndarray,
    max_length: int,
    split: dict[str, float],
    sums: tuple[np.ndarray, np.ndarray, np.ndarray],
    n_users: int,
) -> LDPTraceModel:
    """The model of the round-2 report sums: their unbiased OUE estimates, moves off the grid at 0.

    Parameters
    ----------
    length_counts : ndarray, shape (D,)
        The round-1 estimates.
    max_length : int
        L.
    split : dict
        The budgets (``per_report`` is the ε of each round-2 report).
    sums : (start, end, moves)
        The bit sums of the ``n_users`` start reports and end reports (N² bits each) and of the
        ``n_users · (L − 1)`` transition reports, padding included (8 N² bits), ``n_users`` the number of
        users who sent round 2.

    Returns
    -------
    LDPTraceModel
        What :func:`collect` returns; the field's :func:`geoldp.field.ingest.answer` builds the same from
        the stored reports.
    """
    eps_r = split["per_report"]
    n_moves = n_users * (max_length - 1)
    start = oue_estimate(sums[0], n_users, eps_r)
    end = oue_estimate(sums[1], n_users, eps_r)
    moves = oue_estimate(sums[2], n_moves, eps_r).reshape(grid.size, 8)
    moves[grid.neighbours() < 0] = 0.0
    return LDPTraceModel(grid, length_counts, max_length, start, end, moves, n_users, split)


def report_sums(payloads: Iterable[str], member: str, d: int) -> np.ndarray:
    """The bit-by-bit sums of the OUE reports ``member`` of stored LDPTrace payloads (JSON text).

    A member that is a list of bit vectors (the transitions) adds all of them. Returns int64 of shape
    (d,): the sum the central simulation draws (:func:`geoldp.mechanisms.oracles.oue_counts`).
    """
    total = np.zeros(d, dtype=np.int64)
    n_bytes = (d + 7) // 8
    chunk: list[str] = []

    def flush() -> None:
        if chunk:
            raw = np.frombuffer(bytes.fromhex("".join(chunk)), dtype=np.uint8).reshape(-1, n_bytes)
            total[:] += np.unpackbits(raw, axis=1)[:, :d].sum(axis=0, dtype=np.int64)
            chunk.clear()

    for text in payloads:
        value = json.loads(text)[member]
        if isinstance(value, str):
            chunk.append(value)
        else:
            chunk.extend(value)
        if len(chunk) * n_bytes > 1 << 24:  # 16 MB of bits at a time
            flush()
    flush()
    return total


def _inverse_cdf(pmf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Row-wise (2-D) or shared (1-D) inverse-CDF draws."""
    cdf = np.cumsum(pmf, axis=-1)
    if pmf.ndim == 1:
        return np.minimum(np.searchsorted(cdf, u * cdf[-1], side="right"), pmf.size - 1)
    idx = (cdf <= (u * cdf[:, -1])[:, None]).sum(axis=1)  # never lands on a zero-probability entry
    return np.minimum(idx, pmf.shape[1] - 1)


def synthesize_cells(model: LDPTraceModel, n: int, *, rng: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``n`` synthetic grid trajectories from the model (vectorised over trajectories).

    A start cell from the start distribution, a target length from the length distribution, then at each
    step a move to a neighbour or the end state (the end probability damped at the first steps, as in the
    published code); a cell whose row carries no probability ends the trajectory.

    Returns
    -------
    cells, offsets : ndarray of int64
    """
    source = resolve_rng(rng)
    n = int(n)
    nb = model.grid.neighbours()
    rows = model.move_probabilities()
    cur = _inverse_cdf(model.start_probabilities(), source.uniform(n))
    target = _inverse_cdf(model.length_probabilities(), source.uniform(n)) + 1
    width = int(target.max()) if n else 1
    out = np.full((n, width), -1, dtype=np.int64)
    out[:, 0] = cur
    alive = np.flatnonzero(target > 1)
    for j in range(1, width):
        if alive.size == 0:
            break
        probs = rows[cur[alive]].copy()
        probs[:, 8] *= min(1.0, END_BASE + (j - 1) * END_STEP)
        total = probs.sum(axis=1)
        pick = _inverse_cdf(probs, source.uniform(alive.size))
        go = (total >= 1e-5) & (pick < 8)
        nxt = nb[cur[alive[go]], pick[go]]
        alive = alive[go]
        cur[alive] = nxt
        out[alive, j] = nxt
        alive = alive[target[alive] > j + 1]
    lengths = (out >= 0).sum(axis=1)
    return out[out >= 0], np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


# --------------------------------------------------------------------------------------------------
# the frame-level release
# --------------------------------------------------------------------------------------------------


def _check_bounds(bounds: Any, caller: str) -> tuple[float, float, float, float]:
    try:
        values = [check_real(b, "bounds", caller=caller) for b in bounds]
    except TypeError:
        raise TypeError(
            f"The 'bounds' parameter of {caller} must be (minx, miny, maxx, maxy) in the trajectories' CRS."
        ) from None
    if len(values) != 4 or not all(math.isfinite(v) for v in values):
        raise ValueError(
            f"The 'bounds' parameter of {caller} must be 4 finite numbers (minx, miny, maxx, maxy)."
        )
    minx, miny, maxx, maxy = values
    if not (maxx > minx and maxy > miny):
        raise ValueError(f"The 'bounds' parameter of {caller} needs minx < maxx and miny < maxy.")
    return minx, miny, maxx, maxy


def _public_bounds(points: Any, crs: Any, caller: str) -> tuple[float, float, float, float]:
    ps, source = _frames.resolve_points(points, caller=caller)
    x, y = _frames.public_xy(ps, crs, source)
    b = (float(np.min(x)), float(np.min(y)), float(np.max(x)), float(np.max(y)))
    if not (b[2] > b[0] and b[3] > b[1]):
        raise ValueError(f"The 'points' of {caller} must span a box of positive width and height.")
    return b


def synthesize(
    trips: Any,
    *,
    epsilon: float,
    bounds: Any = None,
    points: Any = None,
    grid_size: int | str = 6,
    length_hint: float | None = None,
    length_domain: int | None = None,
    quantile: float = 0.9,
    n_synthetic: int | None = None,
    traj_id_col: Any = None,
    time_col: Any = None,
    on_invalid: str = "raise",
    rng: Any = None,
    accountant: Any = None,
    user_col: Any = None,
    progress: bool = False,
) -> Any:
    """Synthesise trajectories with LDPTrace: each trajectory is reported under ε-LDP, the data is synthetic.

    Every input trajectory (one user) sends OUE reports of its length, start cell, end cell and
    transitions on a public N × N grid (ε/10 for the length, 9ε/10 split over the rest); the collector
    fits a Markov model to the estimated counts and samples new trajectories from it.

    Parameters
    ----------
    trips : geopandas.GeoDataFrame
        One LineString per row, or Point rows grouped by ``traj_id_col``. Any CRS.
    epsilon : float
        The budget of **one trajectory**.
    bounds : (minx, miny, maxx, maxy), optional
        The public box of the grid, in the CRS of ``trips``. Give this or ``points``, never a box computed
        from ``trips``. Vertices outside the box count in the nearest edge cell.
    points : GeoDataFrame, GeoSeries or PointSet, optional
        Public points whose bounding box is the grid's box.
    grid_size : int or "auto", default 6
        The grid side N (the published default). ``"auto"`` uses the published granularity rule
        (:func:`auto_grid_size`) with the number of trajectories, ε and ``length_hint``.
    length_hint : float, optional
        Public assumed typical length in cells, for ``grid_size="auto"``.
    length_domain : int, optional
        The largest length a user can report (default N²); longer trajectories report this.
    quantile : float, default 0.9
        The length quantile L (estimated from the length reports) that fixes the number of reports.
    n_synthetic : int, optional
        Number of synthetic trajectories (default: as many as the input has).
    traj_id_col, time_col, on_invalid
        As in :meth:`GeoDataFrame.ldp.perturb`.
    rng : optional
        ``None`` (default): the OS CSPRNG. An int seeds NumPy: for experiments and tests only.
    accountant : geoldp.BudgetAccountant, optional
        Charge ε per trajectory to its user (refused before any draw if over budget); needs ``user_col``.
    user_col : column label, optional
        The column of user ids, for ``accountant``.
    progress : bool, default False
        Report the stages (the reports and the model, the sampling) on a progress bar (tqdm; a widget in
        notebooks; one line per stage on the command line). The output does not change.

    Returns
    -------
    geopandas.GeoDataFrame
        ``n_synthetic`` synthetic LineStrings (a fresh ``RangeIndex``: rows are not the input's rows) in
        the CRS of ``trips``, whose vertices are cell centres (a one-cell trajectory repeats its centre).
        Their ledger (``syn.ldp.ledger``): mechanism ``"ldptrace"``, ε per trajectory, the split, the
        grid recipe, L, the RNG policy, the release id, never the seed or a private value.

    Raises
    ------
    TypeError, ValueError
        Bad parameters or rows (before any draw); neither or both of ``bounds`` and ``points``.
    BudgetError
        With ``accountant``: the release would take a user past the total.

    Examples
    --------
    >>> import geopandas as gpd, geoldp
    >>> from shapely import LineString
    >>> trips = gpd.GeoDataFrame(geometry=[LineString([(0.1, 0.1), (0.5, 0.9)])] * 50, crs="EPSG:3857")
    >>> syn = geoldp.synthesize(trips, epsilon=4.0, bounds=(0, 0, 1, 1), rng=0)
    >>> len(syn), syn.ldp.ledger.mechanism
    (50, 'ldptrace')
    """
    caller = "geoldp.synthesize"
    trips = _frames.check_frame(trips, caller=caller)
    eps = check_release_epsilon(epsilon, caller=caller)
    quantile = check_real(quantile, "quantile", caller=caller)
    if not 0.0 < quantile <= 1.0:
        raise ValueError(f"The 'quantile' parameter of {caller} must be in (0, 1]. Got {quantile!r}.")
    if (bounds is None) == (points is None):
        raise ValueError(
            f"{caller} needs exactly one of 'bounds' (a public box) or 'points' (public points) for the grid."
        )
    if n_synthetic is not None:
        n_synthetic = check_count(n_synthetic, "n_synthetic", caller=caller, maximum=MAX_SYNTHETIC)
    if length_domain is not None:
        length_domain = check_count(length_domain, "length_domain", caller=caller, maximum=MAX_LENGTH)
    source = resolve_rng(rng)
    spend = _release.Spend(trips, accountant, user_col, caller=caller)  # refuse, draw, commit: in order
    _frames.warn_if_fixes(
        trips, traj_id_col=traj_id_col, caller=caller, option="traj_id_col=", ignore=(user_col,)
    )
    ft = _frames.extract(
        trips, traj_id_col=traj_id_col, time_col=time_col, on_invalid=on_invalid, caller=caller
    )
    crs = ft.crs
    if points is not None:
        warn_if_area_from(trips, points, stacklevel=3)
        box = _public_bounds(points, crs, caller)
    else:
        box = _check_bounds(bounds, caller)
    _warn_outside(ft, crs, box, caller)
    n_users = ft.n_trajectories
    if grid_size == "auto":
        if length_hint is None:
            raise ValueError(
                f"{caller}: grid_size='auto' needs 'length_hint', a public typical length in cells."
            )
        side = auto_grid_size(n_users, eps, length_hint)
    else:
        side = check_int_min(grid_size, "grid_size", minimum=1, caller=caller)
        if side > GRID_MAX:
            raise ValueError(f"The 'grid_size' parameter of {caller} must be at most {GRID_MAX}.")
    grid = Grid(*box, n=side)
    d_len = grid.size if length_domain is None else length_domain
    spend.refuse(trips, eps, traj_id_col=traj_id_col if ft.kind == "Point" else None)
    spend.draw(source, needed=False)  # LDPTrace draws from the source itself, not from a stream key
    with stages("synthesizing", 2, enabled=bool(progress)) as report:
        report("reports and the model")
        x, y = _input_xy(ft, crs)
        cells, offsets = cell_sequences(x, y, ft.offsets, grid)
        del x, y
        model = collect(cells, offsets, grid, eps, length_domain=d_len, quantile=quantile, rng=source)
        del cells, offsets  # the private grid trajectories end here; only the estimates go on
        n_out = n_users if n_synthetic is None else n_synthetic
        report(f"sampling {n_out} synthetic trajectories")
        syn, syn_off = synthesize_cells(model, n_out, rng=source)
    out = synthetic_frame(grid, syn, syn_off, crs)
    ledger = {
        **model_settings(model, eps, crs.to_string(), d_len, quantile),
        "n_users": n_users,
        "n_synthetic": n_out,
        "input": {
            "geometry": ft.kind,
            "traj_id_col": None if traj_id_col is None else str(traj_id_col),
            "time_col": None if time_col is None else str(time_col),
            "on_invalid": on_invalid,
        },
        "geoldp_version": geoldp_version(),
        "rng": str(getattr(source, "policy", "os-csprng")),
    }
    attach(out, spend.finish(ledger, released=out, points=points))
    return out


def synthetic_frame(grid: Grid, cells: np.ndarray, offsets: np.ndarray, crs: Any) -> Any:
    """The synthetic grid trajectories as LineStrings through their cell centres (a fresh RangeIndex).

    A one-cell trajectory becomes a two-vertex LineString on its centre.
    """
    import geopandas as gpd
    import shapely

    n_out = int(offsets.shape[0] - 1)
    cx, cy = grid.centres()
    lengths = np.diff(offsets)
    reps = np.where(lengths[np.repeat(np.arange(n_out), lengths)] == 1, 2, 1)
    flat = np.repeat(cells, reps)
    idx = np.repeat(np.arange(n_out), np.maximum(lengths, 2))
    geoms = shapely.linestrings(np.column_stack([cx[flat], cy[flat]]), indices=idx)
    return gpd.GeoDataFrame(geometry=geoms, crs=crs)


def model_settings(
    model: LDPTraceModel, epsilon: float, crs: str, length_domain: int, quantile: float
) -> dict[str, Any]:
    """The public part of a synthetic release's ledger that the model fixes: ε, its split, the grid, L."""
    return {
        "mechanism": "ldptrace",
        "epsilon": epsilon,
        "unit": "one trajectory = one user",
        "reference": "Du et al., LDPTrace, PVLDB 16(8), 2023",
        "split": {
            "length": model.split["length"],
            "start": model.split["per_report"],
            "end": model.split["per_report"],
            "transitions": model.split["per_report"],
            "transition_reports": model.max_length - 1,
            "frequency_oracle": "OUE",
        },
        "grid": {**model.grid.to_dict(), "crs": crs, "vertices": "cell centres"},
        "length_domain": length_domain,
        "max_length": model.max_length,
        "quantile": quantile,
    }


def _warn_outside(ft: Any, crs: Any, box: tuple[float, float, float, float], caller: str) -> None:
    """GeoLDPWarning with the number of trajectories that leave the public box (counted in edge cells).

    Only a local count: nothing here reaches the release or its ledger, and the box is never compared
    with the trips' own extent (that would make a public choice depend on them).
    """
    import warnings

    x, y = _input_xy(ft, crs)
    tol = 1e-9 * max(box[2] - box[0], box[3] - box[1])  # the round trip through lon/lat, not a departure
    out = (x < box[0] - tol) | (x > box[2] + tol) | (y < box[1] - tol) | (y > box[3] + tol)
    owner = np.repeat(np.arange(ft.n_trajectories), np.diff(ft.offsets))
    n_out = int(np.unique(owner[out]).size)
    del x, y, out, owner
    if n_out:
        warnings.warn(
            f"{n_out} of the {ft.n_trajectories} trajectories passed to {caller} have a vertex outside the "
            "grid's box; those vertices are counted in the nearest edge cell. Use a public box that "
            "covers the area (a city's or a region's extent).",
            GeoLDPWarning,
            stacklevel=3,
        )


def _input_xy(ft: Any, crs: Any) -> tuple[np.ndarray, np.ndarray]:
    """The vertices in the input CRS (the grid's CRS)."""
    if _frames.is_wgs84(crs):
        return ft.lon, ft.lat
    from pyproj import Transformer

    x, y = Transformer.from_crs(_frames.WGS84, crs, always_xy=True).transform(ft.lon, ft.lat)
    return np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)


def synthetic_cells(
    synthetic: Any, *, caller: str
) -> tuple[Grid, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The grid trajectories of a synthetic release, from the release and its ledger alone (public).

    Returns
    -------
    grid, cells, offsets, centre_lon, centre_lat
        The ledger's grid, every synthetic trajectory as cells (:func:`cell_sequences`), and the WGS 84
        longitude and latitude of every cell centre.
    """
    from pyproj import CRS, Transformer

    led = require(synthetic, what="The synthetic set", caller=caller, mechanism="ldptrace")
    g = led.settings.get("grid")
    if not isinstance(g, dict):
        raise ValueError(f"{caller}: the synthetic set's LDPTrace ledger records no grid.")
    minx, miny, maxx, maxy = (float(b) for b in g["bounds"])
    grid = Grid(minx, miny, maxx, maxy, n=int(g["n"]))
    crs = CRS.from_user_input(g["crs"])
    ft = _frames.extract(synthetic, caller=caller)
    x, y = _input_xy(ft, crs)
    cells, offsets = cell_sequences(x, y, ft.offsets, grid)
    cx, cy = grid.centres()
    if _frames.is_wgs84(crs):
        return grid, cells, offsets, cx, cy
    lon, lat = Transformer.from_crs(crs, _frames.WGS84, always_xy=True).transform(cx, cy)
    return grid, cells, offsets, np.asarray(lon, dtype=np.float64), np.asarray(lat, dtype=np.float64)
