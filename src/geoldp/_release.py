"""The release pipeline (private): plan a release once, apply it to a frame, to chunks or to partitions.

Every frame-level release (``gdf.ldp.perturb``, :func:`geoldp.dask.perturb`) runs the same steps, in
this order: :func:`request`, :meth:`Request.snap_frame`, :meth:`Request.plan`, :meth:`Plan.apply`,
:meth:`Request.finish`; docs/architecture.md ("One release, step by step") says what each does. The drivers
in :mod:`geoldp.accessor` and :mod:`geoldp.dask` only call these steps. The accounting steps are one object,
:class:`Spend`, which every release (the aggregate reports of :mod:`geoldp.reports` too) goes through in
the order its docstring gives, by construction.

Budget per point
----------------
ε is the budget of a whole trajectory; a trajectory of n points gets ε/n per point on average
(:func:`point_budget`, read off the mechanism's ledger). The stages that release one location get only a
part of that: for TP and ATP with the default split, less than ε/(2n) per copy. An exponential mechanism
with budget ε′ makes its most likely output at most e^{ε′/2} times as likely as its least likely one, so
with ε/n < :data:`NEAR_UNIFORM_EPSILON` (0.1) the nearest public point is at most e^{0.025} ≈ 1.025 times
as likely as the farthest one: the output is close to uniform noise over the public points. A release then
emits one :class:`~geoldp.PrivacyWarning` with the number of affected trajectories and the length to shrink
them to (:func:`suggest_max_points`). An ε below :data:`MIN_EPSILON` (0.001) is refused with a
``ValueError``: the output would be uniform noise even for one point. :mod:`geoldp.prepare` re-exports the
public functions.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, overload

import numpy as np
import pandas as pd

from geoldp import accounting
from geoldp._core import box as _box
from geoldp._core import frames as _frames
from geoldp._core import point_record
from geoldp._core.area import area_record, warn_if_area_from
from geoldp._core.errors import PrivacyWarning
from geoldp._core.ledger import ReleaseLedger, attach
from geoldp._core.progress import tqdm_class
from geoldp._core.randomness import resolve_rng
from geoldp._core.validation import (
    MIN_EPSILON,
    check_int_min,
    check_positive_km,
    check_real,
    check_release_epsilon,
)
from geoldp._core.versions import geoldp_version
from geoldp.trajectory import engine
from geoldp.trajectory.engine import resolve_mechanism

__all__ = [
    "LEDGER_LENGTHS_MAX",
    "MIN_EPSILON",
    "NEAR_UNIFORM_EPSILON",
    "Plan",
    "Request",
    "Spend",
    "point_budget",
    "request",
    "resolve_mechanism",
    "suggest_max_points",
    "warn_near_uniform",
]

#: Budget per point (ε/n) below which the output is called "close to uniform" (see module notes).
NEAR_UNIFORM_EPSILON = 0.1


#: Up to this many distinct trajectory lengths, the provenance lists the ledger of every length.
LEDGER_LENGTHS_MAX = 16

#: How a continuous-space release with public points maps its released locations onto them.
_CONTINUOUS_SNAP = "released locations moved to the nearest public point (post-processing)"

#: Trajectories per engine call when a progress bar is shown.
_PROGRESS_CHUNK_MAX = 5_000


# --------------------------------------------------------------------------------------------------
# budget per point (public through geoldp.prepare)
# --------------------------------------------------------------------------------------------------


def _budget_of(mech: Any, n: int, cache: dict[int, Any] | None = None) -> float:
    n = int(n)
    ledger = _cached_ledger(mech, n, {} if cache is None else cache)
    # math.fsum: the correctly rounded exact sum of the stage budgets (cheap, unlike Fractions)
    return math.fsum(float(e.epsilon) for e in ledger) / n


def _below(budget: float, threshold: float) -> bool:
    # stage budgets are rounded down (docs/algorithm.md), so ε/n itself may come out a few ulps low
    return budget < threshold * (1.0 - 1e-9)


def _longest_ok(mech: Any, threshold: float) -> int:
    """Largest n whose budget per point is ≥ threshold (0 if even n = 1 is below it)."""
    total = _budget_of(mech, 1)
    if _below(total, threshold):
        return 0
    n = max(1, int(np.floor(total / threshold * (1.0 + 1e-9))))
    while n > 1 and _below(total / n, threshold):
        n -= 1
    return n


def point_budget(
    mechanism: Any = "atp", n: int = 1, *, epsilon: float | None = None, **options: Any
) -> float:
    """Budget per point of a length-``n`` trajectory: the ledger total divided by n (= ε/n).

    Parameters
    ----------
    mechanism : {"atp", "tp", "pointem"} or mechanism object, default "atp"
        Mechanism name (with ``epsilon``) or a configured mechanism object.
    n : int
        Trajectory length (number of vertices), n ≥ 1.
    epsilon : float, optional
        Required with a mechanism name.
    **options
        Mechanism options, with a name.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        ``n`` is not an int; a wrong mechanism or option type.
    ValueError
        ``n < 1``; an invalid ε or option.

    Examples
    --------
    >>> from geoldp.prepare import point_budget
    >>> point_budget("tp", 8, epsilon=4.0)
    0.5
    """
    n = check_int_min(n, "n", minimum=1, caller="point_budget")
    mech = resolve_mechanism(mechanism, epsilon, options, caller="point_budget")
    return _budget_of(mech, n)


def suggest_max_points(
    mechanism: Any = "atp",
    *,
    epsilon: float | None = None,
    threshold: float = NEAR_UNIFORM_EPSILON,
    limit: int | None = None,
    **options: Any,
) -> int:
    """Longest trajectory length whose budget per point is still ≥ ``threshold`` (default 0.1).

    Returns 0 when even a one-point trajectory is below the threshold (ε itself is too small). With
    ``limit``, the result is capped at ``limit``.

    Parameters
    ----------
    mechanism : {"atp", "tp", "pointem"} or mechanism object, default "atp"
        Mechanism name (with ``epsilon``) or a configured mechanism object.
    epsilon : float, optional
        Required with a mechanism name.
    threshold : float, default 0.1
        The smallest acceptable budget per point, > 0.
    limit : int, optional
        Upper cap on the result (≥ 1).
    **options
        Mechanism options, with a name.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        ``threshold`` is not a real number or ``limit`` not an int.
    ValueError
        ``threshold <= 0`` or infinite, ``limit < 1``; an invalid ε or option.

    Examples
    --------
    >>> from geoldp.prepare import suggest_max_points
    >>> suggest_max_points("atp", epsilon=4.0)
    40
    """
    caller = "suggest_max_points"
    mech = resolve_mechanism(mechanism, epsilon, options, caller=caller)
    threshold = check_real(threshold, "threshold", caller=caller)
    if not (0.0 < threshold < np.inf):
        raise ValueError(f"The 'threshold' parameter of {caller} must be > 0. Got {threshold!r}.")
    if limit is not None:
        limit = check_int_min(limit, "limit", minimum=1, caller=caller)  # 0 would cap every length away
    n = _longest_ok(mech, threshold)
    return n if limit is None else min(n, limit)


def warn_near_uniform(
    mech: Any, lengths: np.ndarray, *, stacklevel: int = 2, cache: dict[int, Any] | None = None
) -> None:
    """Emit one PrivacyWarning (counts only) for trajectories whose point budget is near-uniform.

    ``lengths`` are the released trajectory lengths; ``stacklevel`` counts from the caller of this function.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size == 0 or not hasattr(mech, "ledger"):
        return
    n_max = int(lengths.max())
    if not _below(_budget_of(mech, n_max, cache), NEAR_UNIFORM_EPSILON):
        return
    n_ok = _longest_ok(mech, NEAR_UNIFORM_EPSILON)
    affected = int((lengths > n_ok).sum())
    if n_ok == 0:
        advice = "Even a single point gets less than that: use a larger epsilon."
    else:
        advice = (
            f"Shorten them to at most {n_ok} points with geoldp.prepare.resample(gdf, max_points={n_ok}) "
            f"or geoldp.prepare.simplify() (command line: geoldp prepare ... --max-points {n_ok}), or use a "
            "larger epsilon."
        )
    warnings.warn(
        f"{affected} trajectory(ies) get a budget per point (epsilon/n) below {NEAR_UNIFORM_EPSILON} "
        "(the epsilon is shared by all their points), so their output is close to uniform noise over the "
        f"public points. {advice} Another design (an aggregate report, LDPTrace) may answer your question "
        "at this epsilon: compare them before collecting with "
        "geoldp.plan(points, zones, epsilon=..., n=..., lengths=...) (command line: geoldp plan).",
        PrivacyWarning,
        stacklevel=stacklevel + 1,
    )


# --------------------------------------------------------------------------------------------------
# provenance
# --------------------------------------------------------------------------------------------------


def _json_safe(value: Any) -> Any:
    """Convert numpy scalars, Fractions, tuples ... into plain JSON types."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, Fraction):
        return str(value)
    if value is None or isinstance(value, str | int | float):
        return value
    return str(value)


def _by_kind(ledger: Any) -> dict[str, float]:
    """Budget per stage kind; ``math.fsum`` is the correctly rounded exact sum (as ``Ledger.by_kind``)."""
    groups: dict[str, list[float]] = {}
    for entry in ledger:
        groups.setdefault(str(entry.kind), []).append(float(entry.epsilon))
    return {k: math.fsum(v) for k, v in groups.items()}


def _cached_ledger(mech: Any, n: int, cache: dict[int, Any]) -> Any:
    # a per-call cache: ledgers are public functions of (mechanism, n)
    if n not in cache:
        cache[n] = mech.ledger(int(n))
    return cache[n]


def _ledger_summary(mech: Any, lengths: np.ndarray, cache: dict[int, Any]) -> dict[str, Any]:
    """Ledger by kind per trajectory length (lengths are released by the output anyway).

    With more than :data:`LEDGER_LENGTHS_MAX` distinct lengths only the shortest and the longest are
    listed (any other one is ``mechanism(**options).ledger(n)``), to keep provenance small and cheap.
    """
    distinct = [int(n) for n in np.unique(lengths)]
    listed = distinct if len(distinct) <= LEDGER_LENGTHS_MAX else [distinct[0], distinct[-1]]
    by_length: dict[str, Any] = {}
    max_total = 0.0
    for n in listed:
        kinds = _by_kind(_cached_ledger(mech, n, cache))
        by_length[str(n)] = kinds
        max_total = max(max_total, math.fsum(kinds.values()))
    return {
        "unit": "one trajectory",
        "max_total_epsilon": max_total,
        "lengths": {"min": distinct[0], "max": distinct[-1], "distinct": len(distinct)},
        "by_length": by_length,
    }


def _provenance(
    mech: Any,
    *,
    policy: str,
    lengths: np.ndarray,
    snap_max_km: float | None,
    snap_warn_km: float | None,
    kind: str,
    traj_id_col: Any,
    time_col: Any,
    keep_columns: list[Any],
    on_invalid: str,
    ledger_cache: dict[int, Any],
    box: Any = None,
) -> dict[str, Any]:
    """The release's ledger record: public settings only, never the seed or a private value."""
    options = _json_safe(mech.options()) if hasattr(mech, "options") else {}
    granularity = getattr(mech, "granularity_value", None)
    prov = {
        "mechanism": str(getattr(mech, "name", type(mech).__name__.lower())),
        "epsilon": float(mech.epsilon),
        "unit": "one row = one trajectory" if kind == "LineString" else "one trajectory (Point rows grouped)",
        "split": options.get("split") if isinstance(options, dict) else None,
        "granularity": _json_safe(granularity),
        "sector_convention": options.get("sector_convention") if isinstance(options, dict) else None,
        "options": options,
        "ledger": _ledger_summary(mech, lengths, ledger_cache) if lengths.size else {},
        "snap": {
            "method": "nearest public point (haversine)",
            "snap_max_km": snap_max_km,
            "warn_beyond_km": snap_warn_km,
        }
        if box is None
        else {"method": _CONTINUOUS_SNAP if snap_warn_km is not None else "none (continuous coordinates)"},
        "input": {
            "geometry": kind,
            "traj_id_col": None if traj_id_col is None else str(traj_id_col),
            "time_col": None if time_col is None else str(time_col),
            "on_invalid": on_invalid,
        },
        # released as they are: the Point-input trajectory id and every explicitly kept column
        "unprotected_columns": ([] if traj_id_col is None or kind != "Point" else [str(traj_id_col)])
        + [str(c) for c in keep_columns if traj_id_col is None or str(c) != str(traj_id_col)],
        "geoldp_version": geoldp_version(),
        "rng": policy,
    }
    if box is not None:
        prov["box"] = box.record()
        # each location's budget and its split, for every released length (the ledger has them by kind)
        prov["per_location"] = {
            str(n): {
                "epsilon": mech.location_budget(n),
                "stages": dict(zip(mech.stage_names, mech.stage_budgets(n), strict=True)),
            }
            for n in sorted({int(v) for v in np.unique(lengths)})[:LEDGER_LENGTHS_MAX]
        }
    return _json_safe(prov)


# --------------------------------------------------------------------------------------------------
# the pipeline
# --------------------------------------------------------------------------------------------------


class Spend:
    """The accountant's part of one release, in the pipeline's order (public parameters only at first).

    Built with the public parameters (the accountant and user column are checked against the frame's
    column labels, before any row is read), then, in this order and once each:

    1. :meth:`refuse` raises :class:`~geoldp.BudgetError` when the release would take a user past her
       total, before any random draw, and holds the checked charge;
    2. :meth:`draw` draws the stream key (refused before :meth:`refuse`);
    3. :meth:`finish` completes the ledger and commits the held charge (refused before :meth:`draw`).

    Without an accountant the steps only keep that order. The held charge (private per-user counts) lives
    only in this object, which the driver keeps: it never enters a plan or a task graph.
    """

    __slots__ = ("_accountant", "_advice", "_caller", "_pending", "_step", "_user_col")

    def __init__(self, frame: Any, accountant: Any, user_col: Any, *, caller: str, advice: str = "") -> None:
        charged = accounting.check_charge_parameters(accountant, user_col, frame.columns, caller=caller)
        self._accountant = accountant if charged else None
        self._user_col = user_col if charged else None
        self._caller = caller
        self._advice = advice
        self._pending: accounting.PendingCharge | None = None
        self._step = 0

    @property
    def user_col(self) -> Any:
        """The column :meth:`refuse` reads (``None`` without an accountant: no column is needed)."""
        return self._user_col

    def _advance(self, step: int, what: str) -> None:
        if self._step != step - 1:  # a driver calling the steps out of order: a bug, never user input
            raise RuntimeError(f"{self._caller}: {what} out of the release pipeline's order.")
        self._step = step

    def refuse(self, users: Any, epsilon: float, *, traj_id_col: Any = None) -> None:
        """Refuse the release if it would take some user past her total; else hold the charge.

        ``users`` is the (private) frame holding :attr:`user_col`, one row per row released (``None``
        without an accountant); ``traj_id_col`` groups Point rows into trajectories.
        """
        self._advance(1, "the accountant's check")
        if self._accountant is not None:
            self._pending = accounting.charge_release(
                self._accountant,
                users,
                self._user_col,
                epsilon,
                traj_id_col=traj_id_col,
                caller=self._caller,
                advice=self._advice,
            )

    @overload
    def draw(self, source: Any) -> np.ndarray: ...

    @overload
    def draw(self, source: Any, *, needed: bool) -> np.ndarray | None: ...

    def draw(self, source: Any, *, needed: bool = True) -> np.ndarray | None:
        """The release's one stream key from ``source``.

        ``None`` when ``needed`` is false: a release without rows, or a driver that draws from ``source``
        itself (LDPTrace); the step is taken either way, so :meth:`finish` still comes after the refusal.
        """
        self._advance(2, "the stream key drawn")
        return source.stream_key() if needed else None

    def finish(
        self, provenance: dict[str, Any], *, released: Any = None, points: Any = None, ps: Any = None
    ) -> ReleaseLedger:
        """The release's ledger (:func:`geoldp.accounting.finish_release`), committing the held charge.

        ``points`` (with ``ps``, P as resolved) adds their provenance and the ``"points"`` record.
        """
        self._advance(3, "the ledger completed")
        ledger = accounting.finish_release(
            provenance,
            released=released,
            points_provenance=None if points is None else point_record.provenance_of(points),
            charge=self._pending,
        )
        self._pending = None
        if points is not None:
            # what a collector needs to rebuild or verify P: the recipe (box, spacing, CRS) and a digest
            ledger = ledger.replace(points=point_record.ledger_record(points, ps))
        return ledger


@dataclass(frozen=True)
class Request:
    """Validated public parameters of one release (no private data)."""

    caller: str
    mech: Any
    source: Any
    ps: Any
    ps_source: Any
    kept: list[Any]
    snap_max_km: float | None
    traj_id_col: Any
    time_col: Any
    on_invalid: str
    n_jobs: int = 1
    points: Any = None
    spend: Spend | None = None
    #: The public box and plane of a continuous-space mechanism (TraCS), else ``None``.
    box: Any = None

    @property
    def policy(self) -> str:
        """RNG policy recorded in the provenance: ``"os-csprng"`` or ``"seeded"``."""
        return str(getattr(self.source, "policy", "os-csprng"))

    @property
    def charged_col(self) -> Any:
        """The user column the accountant's check reads (``None`` without an accountant)."""
        return None if self.spend is None else self.spend.user_col

    @property
    def area_crs(self) -> Any:
        """The CRS of the area the public points were built over (:mod:`geoldp.points`), else ``None``.

        A driver that cannot pass the whole frame to :meth:`plan` computes the data's bounds in it.
        """
        if self.box is not None:
            return self.box.crs
        area = area_record(self.points)
        return None if area is None else area["crs"]

    def snap_frame(self, frame: Any) -> tuple[Any, list[np.ndarray]]:
        """Validate the rows of ``frame`` and snap them: ``(TrajectoryArrays, index sequences)``."""
        ft = _frames.extract(
            frame,
            traj_id_col=self.traj_id_col,
            time_col=self.time_col,
            on_invalid=self.on_invalid,
            caller=self.caller,
        )
        if self.box is not None:  # continuous space: nothing to snap before the release
            x, y = ft.memo["plane"] = self.box.to_plane(ft.lon, ft.lat)
            _box.warn_outside(ft, x, y, self.box, caller=self.caller)
            return ft, []
        seqs, dist = _frames.snap(ft, self.ps, snap_max_km=self.snap_max_km, caller=self.caller)
        del dist  # private: never leaves this function
        return ft, seqs

    def plan(
        self,
        *,
        columns: Any,
        geom_col: Any,
        crs: Any,
        kind: str,
        lengths: np.ndarray,
        stacklevel: int,
        users: Any,
        area: Any,
        extra_provenance: dict[str, Any] | None = None,
    ) -> Plan:
        """Check the area and the accountant, check budgets, warn, write the provenance, compute the output
        vertices, draw the stream key.

        ``columns`` are the input's columns (in order), ``lengths`` the released length of every
        trajectory, ``users`` the (private) frame holding the accountant's user column (``None`` without
        an accountant), ``area`` a frame with the data's bounds (the frame itself, or a box of its
        bounds in :attr:`area_crs`; compared with the points' area, then dropped), ``stacklevel`` the
        warnings' stack level counted from the caller of this method.
        """
        spend = self.spend
        if spend is None:
            raise RuntimeError(f"{self.caller}: a release is planned once, from its request.")
        if area is not None:
            warn_if_area_from(area, self.points, stacklevel=stacklevel + 1)
            if self.box is not None:
                _box.warn_if_box_from(area, self.box, stacklevel=stacklevel + 1)
        # refuse before any random draw (the key is drawn below); committed by finish()
        spend.refuse(users, self.mech.epsilon, traj_id_col=self.traj_id_col if kind == "Point" else None)
        lengths = np.asarray(lengths, dtype=np.int64)
        engine.check_budgets(self.mech, lengths.tolist(), 0 if self.ps is None else self.ps.size)
        ledgers: dict[int, Any] = {}
        warn_near_uniform(self.mech, lengths, stacklevel=stacklevel + 1, cache=ledgers)

        released = [self.traj_id_col] if kind == "Point" and self.traj_id_col is not None else []
        extra = [c for c in self.kept if c != geom_col and c not in released]
        if extra:
            warnings.warn(
                f"keep_columns releases {[str(c) for c in extra]} unprotected: these columns bypass the "
                "mechanism and are copied to the output as they are.",
                PrivacyWarning,
                stacklevel=stacklevel + 1,
            )
        released += extra
        provenance = _provenance(
            self.mech,
            policy=self.policy,
            lengths=lengths,
            snap_max_km=self.snap_max_km,
            snap_warn_km=None if self.ps is None else float(self.ps.diameter_km),
            kind=kind,
            traj_id_col=self.traj_id_col,
            time_col=self.time_col,
            keep_columns=extra,
            on_invalid=self.on_invalid,
            ledger_cache=ledgers,
            box=self.box,
        )
        provenance.update(extra_provenance or {})
        # public data only; computed before drawing
        xy = None if self.ps is None else _frames.public_xy(self.ps, crs, self.ps_source)
        key = spend.draw(self.source, needed=bool(lengths.size))  # drawn once, after all validation
        order = [c for c in columns if c in released or c == geom_col]
        # the plan (which Dask puts in its task graph) holds the key drawn from the source, never the source
        # nor the held charge
        return Plan(replace(self, source=None, spend=None), self.policy, order, geom_col, xy, key, provenance)

    def finish(self, plan: Plan, *, released: Any = None) -> ReleaseLedger:
        """The plan's ledger, completed (release id, the points' record) and the accountant charged.

        ``released`` is the in-memory release (a seeded one gets a digest of itself as its id); without
        it (a lazy, partitioned release) the id is random.
        """
        if self.spend is None:
            raise RuntimeError(f"{self.caller}: a release is finished once, from its request.")
        return self.spend.finish(plan.provenance, released=released, points=self.points, ps=self.ps)


@dataclass(frozen=True)
class Plan:
    """A planned release: apply it to a whole frame, in chunks, or to partitions (by global offset)."""

    request: Request
    policy: str
    columns: list[Any]
    geom_col: Any
    xy: tuple[np.ndarray, np.ndarray] | None
    key: np.ndarray | None
    provenance: dict[str, Any]

    def perturb(self, seqs: list[np.ndarray], *, offset: int = 0, progress: bool = False) -> list[np.ndarray]:
        """Perturb index sequences; trajectory ``i`` uses stream ``offset + i`` (chunk invariant)."""
        if not seqs:
            return []
        req = self.request

        def run(part: list[np.ndarray], start: int) -> list[np.ndarray]:
            kw: dict[str, Any] = {
                "key": self.key,
                "offset": offset + start,
                "policy": self.policy,
                "n_jobs": req.n_jobs,
            }
            return list(engine.run_with_key(part, req.ps, req.mech, **kw))

        tqdm = _tqdm() if progress else None
        if tqdm is None:
            return run(seqs, 0)
        _warm_up(tqdm, seqs, req, self.policy)
        out: list[np.ndarray] = []
        chunk = max(1, min(_PROGRESS_CHUNK_MAX, -(-len(seqs) // 100)))
        # the bar starts after the warm-up, so its rate and ETA count only the perturbation itself
        with tqdm(total=len(seqs), unit="traj", desc="geoldp", leave=False) as bar:
            for start in range(0, len(seqs), chunk):
                part = seqs[start : start + chunk]
                out.extend(run(part, start))
                bar.update(len(part))
        return out

    def release_coordinates(self, ft: Any, *, offset: int = 0) -> np.ndarray:
        """Release the vertices of ``ft`` in continuous space (TraCS): (N, 2) output coordinates in the
        frame's CRS, moved to the nearest public point when the release has public points.

        Trajectory ``i`` uses stream ``offset + i`` (chunk invariant, as :meth:`perturb`).
        """
        req = self.request
        box = req.box
        x, y = ft.memo.pop("plane", None) or box.to_plane(ft.lon, ft.lat)
        ox, oy = req.mech.perturb_xy(x, y, ft.offsets, key=self.key, first_stream=offset)
        del x, y
        if self.xy is None:
            return np.column_stack(box.to_crs(ox, oy))
        # post-processing: the released location's nearest public point
        lon, lat = box.to_wgs84(ox, oy)
        idx, _ = req.ps.nearest(lon, lat)
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        return np.column_stack([self.xy[0][idx], self.xy[1][idx]])

    def apply(
        self, frame: Any, ft: Any, seqs: list[np.ndarray], *, offset: int = 0, progress: bool = False
    ) -> Any:
        """Perturb the snapped rows of ``frame`` and assemble the output frame (with the provenance)."""
        import geopandas as gpd

        if len(frame) == 0:  # an empty partition
            out = frame[self.columns].copy()
            out.attrs = {}
            attach(out, self.provenance)
            return out
        if self.request.box is not None:
            geometry = _frames.geometry_from_coords(
                ft, self.release_coordinates(ft, offset=offset), len(frame)
            )
        else:
            outputs = self.perturb(seqs, offset=offset, progress=progress)
            if self.xy is None:  # a plan without public points perturbs in continuous space only
                raise RuntimeError(f"{self.request.caller}: the release has no public points.")
            geometry = _frames.build_geometry(ft, outputs, self.xy, len(frame))
        data = {c: frame[c].copy(deep=True) for c in self.columns if c != self.geom_col}
        out_frame = pd.DataFrame(data, index=frame.index.copy())
        out_frame[self.geom_col] = gpd.GeoSeries(geometry, index=frame.index.copy(), crs=frame.crs).values
        # column order: kept columns in input order, geometry where it was in the input
        out = gpd.GeoDataFrame(out_frame, geometry=self.geom_col, crs=frame.crs)[self.columns]
        out.attrs = {}
        attach(out, self.provenance)
        return out


def _tqdm() -> Any:
    """tqdm's bar (:func:`geoldp._core.progress.tqdm_class`: a widget in notebooks); None without tqdm."""
    return tqdm_class()


#: What the progress report says while the kernels are made ready, by :func:`engine.kernel_state`.
KERNEL_STAGES = {"compile": "compiling kernels (first run only)", "cached": "loading compiled kernels"}


def _warm_up(tqdm: Any, seqs: list[np.ndarray], req: Any, policy: str) -> None:
    """Get the kernels compiled (or loaded) under their own stage, before the bar whose ETA they would spoil.

    The warm-up perturbs one made-up trajectory of public points (indices 0, 1, ... of P, as long as the
    first trajectory of length ≥ 2, so that the same kernel variant is compiled) with a fixed key, and
    throws the output away: it reads no input row and uses none of the release's randomness.
    """
    stage = KERNEL_STAGES.get(engine.kernel_state(req.mech))
    if stage is None:
        return
    n = next((len(s) for s in seqs if len(s) >= 2), 1)
    dummy = [np.arange(n, dtype=np.int64) % len(req.ps)]
    with tqdm(total=1, desc=f"geoldp: {stage}", bar_format="{desc} {elapsed}", leave=False) as bar:
        key = np.zeros(8, dtype=np.uint32)
        engine.run_with_key(dummy, req.ps, req.mech, key=key, offset=0, policy=policy)
        bar.update(1)


def request(
    frame: Any,
    points: Any,
    *,
    mechanism: Any,
    epsilon: Any,
    options: dict[str, Any],
    keep_columns: Any,
    snap_max_km: Any,
    rng: Any,
    caller: str,
    traj_id_col: Any = None,
    time_col: Any = None,
    on_invalid: str = "raise",
    n_jobs: Any = 1,
    accountant: Any = None,
    user_col: Any = None,
    refusal_advice: str = "",
) -> Request:
    """Validate the public parameters of a release (``frame`` is only asked for its column names).

    ``rng`` is normalised here, once, at the public entry point. ``refusal_advice`` is appended to the
    accountant's refusal message.
    """
    kept = _frames.check_columns(frame, keep_columns, parameter="keep_columns", caller=caller)
    snap_max_km = check_positive_km(snap_max_km, "snap_max_km", caller=caller)
    if epsilon is not None:  # the one range of every release, before a mechanism is built (or warns)
        check_release_epsilon(epsilon, caller=caller)
    mech, box = _resolve_with_box(frame, mechanism, epsilon, options, caller=caller)
    if isinstance(getattr(mech, "epsilon", None), int | float | Fraction):  # a mechanism object's own ε
        check_release_epsilon(mech.epsilon, caller=caller)
    if box is not None and snap_max_km is not None:
        raise ValueError(
            f"The 'snap_max_km' parameter of {caller} limits how far an input vertex is snapped to the "
            f"public points; {mech.name!r} does not snap its input (it releases locations in the public "
            "box), so leave it out."
        )
    source = resolve_rng(rng)
    if points is None and box is None:
        raise TypeError(
            f"{caller} needs the public points ('points') for mechanism {mech.name!r}; only 'tracs-d' and "
            "'tracs-c' release without them (in a public box, bounds=...)."
        )
    ps, ps_source = (None, None) if points is None else _frames.resolve_points(points, caller=caller)
    n_jobs = engine.check_n_jobs(n_jobs, caller)
    spend = Spend(frame, accountant, user_col, caller=caller, advice=refusal_advice)
    _frames.warn_if_fixes(
        frame,
        traj_id_col=traj_id_col,
        caller=caller,
        option="traj_id_col= (command line: --traj-id-col)",
        ignore=(user_col,),
        stacklevel=4,
    )
    return Request(
        caller,
        mech,
        source,
        ps,
        ps_source,
        kept,
        snap_max_km,
        traj_id_col,
        time_col,
        on_invalid,
        n_jobs,
        points,
        spend,
        box,
    )


def _resolve_with_box(
    frame: Any, mechanism: Any, epsilon: Any, options: dict[str, Any], *, caller: str
) -> tuple[Any, Any]:
    """The mechanism and, for a continuous-space one (TraCS), its public box and plane.

    A TraCS name takes ``bounds=(minx, miny, maxx, maxy)`` in the frame's CRS; for a longitude/latitude
    CRS the mechanism is built on the box in the local plane (:func:`geoldp._core.box.planar_box`). A TraCS
    object's bounds are planar, so it needs a frame in a projected CRS.
    """
    name = mechanism.lower() if isinstance(mechanism, str) else None
    cls = engine.MECHANISMS.get(name) if name is not None else type(mechanism)
    if not getattr(cls, "continuous", False):
        return resolve_mechanism(mechanism, epsilon, options, caller=caller), None
    crs = _frames.require_crs(getattr(frame, "crs", None), what="trajectories", caller=caller)
    if name is None:
        if crs.is_geographic:
            raise ValueError(
                f"A {type(mechanism).__name__} object passed to {caller} holds planar bounds, but the "
                "trajectories are in a longitude/latitude CRS: pass mechanism="
                f"{mechanism.name!r} with bounds=(minx, miny, maxx, maxy) in degrees (a local projection "
                "is derived from the box), or project the trajectories first (gdf.to_crs(...))."
            )
        mech = resolve_mechanism(mechanism, epsilon, options, caller=caller)
        return mech, _box.planar_box(mech.bounds, crs, caller=caller)
    if "bounds" not in options:
        raise TypeError(
            f"{caller} needs bounds=(minx, miny, maxx, maxy) for mechanism {name!r}: the public box, in the "
            "trajectories' CRS, fixed before the data is seen (e.g. a city's extent)."
        )
    from geoldp.trajectory.tracs import check_box

    box = _box.planar_box(check_box(options["bounds"], caller=caller), crs, caller=caller)
    planar = {**options, "bounds": box.planar_bounds}
    return resolve_mechanism(mechanism, epsilon, planar, caller=caller), box
