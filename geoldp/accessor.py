"""The ``GeoDataFrame.ldp`` accessor and the frame-level functions behind it.

Importing :mod:`geoldp` registers the accessor::

    >>> import geoldp  # doctest: +SKIP
    >>> out = trips.ldp.perturb(pois, mechanism="atp", epsilon=4.0)  # doctest: +SKIP

The accessor is stateless and cheap (pandas 3 builds a new accessor object on every ``gdf.ldp`` access):
it stores the frame reference and nothing else. Each method is a thin wrapper over a module-level function
(:func:`perturb`, :func:`snap`, :func:`geoldp.io.to_geojson`, :mod:`geoldp.queries`,
:func:`geoldp.metrics.evaluate`).

Point input
-----------
Point rows are grouped into trajectories by ``traj_id_col`` (in order of first appearance) and ordered by
``time_col`` (stable sort: ties keep the input order). The output **mirrors the input rows**: one perturbed
Point per input row, same index, same row order, same CRS, plus the ``traj_id_col`` column. A GeoPandas
user gets back a frame that lines up with the one they passed (``out.index.equals(gdf.index)``), and no
row is ever dropped or merged. To get one LineString per trajectory instead, build LineStrings first with
:func:`geoldp.prepare.trajectories_from_points` (which can also split at time gaps) and perturb those.
Without ``traj_id_col`` every Point row is a trajectory of length one (one point EM with the full ε).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from geoldp import _frames
from geoldp.errors import PrivacyWarning

__all__ = ["LDPAccessor", "perturb", "resolve_mechanism", "snap"]

_MECHANISMS = ("tp", "atp", "pointem")


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("geoldp")
    except Exception:  # pragma: no cover - source tree without metadata
        return "0.0.0+unknown"


def resolve_mechanism(mechanism: Any, epsilon: Any, options: dict[str, Any], *, caller: str) -> Any:
    """Return a validated mechanism object for a name (``"tp"``, ``"atp"``, ``"pointem"``) or an object.

    Delegates to the engine's registry (:func:`geoldp.trajectory.engine.resolve_mechanism`), so names,
    options and messages are the same everywhere.

    Raises
    ------
    TypeError, ValueError
        For an unknown name, a conflicting ε or options, and (from the mechanism) invalid ε or options.
    """
    from geoldp.trajectory import engine

    return engine.resolve_mechanism(mechanism, epsilon, options, caller=caller)


def _check_bool(value: Any, name: str, caller: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(
            f"The {name!r} parameter of {caller} must be a bool. Got {type(value).__name__} instead."
        )
    return bool(value)


def _json_safe(value: Any) -> Any:
    """Convert numpy scalars, Fractions, tuples ... into plain JSON types."""
    from fractions import Fraction

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


#: Up to this many distinct trajectory lengths, the provenance lists the ledger of every length.
LEDGER_LENGTHS_MAX = 16


def _by_kind(ledger: Any) -> dict[str, float]:
    """Budget per stage kind; ``math.fsum`` is the correctly rounded exact sum (as ``Ledger.by_kind``)."""
    groups: dict[str, list[float]] = {}
    for entry in ledger:
        groups.setdefault(str(entry.kind), []).append(float(entry.epsilon))
    return {k: math.fsum(v) for k, v in groups.items()}


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
        led = _cached_ledger(mech, n, cache)
        kinds = _by_kind(led)
        by_length[str(n)] = kinds
        max_total = max(max_total, math.fsum(kinds.values()))
    return {
        "unit": "one trajectory",
        "max_total_epsilon": max_total,
        "lengths": {"min": distinct[0], "max": distinct[-1], "distinct": len(distinct)},
        "by_length": by_length,
    }


def _cached_ledger(mech: Any, n: int, cache: dict[int, Any]) -> Any:
    if n not in cache:
        cache[n] = mech.ledger(int(n))
    return cache[n]


def _provenance(
    mech: Any,
    *,
    policy: str,
    lengths: np.ndarray,
    snap_max_km: float | None,
    snap_warn_km: float,
    kind: str,
    traj_id_col: Any,
    time_col: Any,
    keep_columns: list[Any],
    on_invalid: str,
    ledger_cache: dict[int, Any] | None = None,
) -> dict[str, Any]:
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
        "ledger": _ledger_summary(mech, lengths, {} if ledger_cache is None else ledger_cache)
        if lengths.size
        else {},
        "snap": {
            "method": "nearest public point (haversine)",
            "snap_max_km": snap_max_km,
            "warn_beyond_km": snap_warn_km,
        },
        "input": {
            "geometry": kind,
            "traj_id_col": None if traj_id_col is None else str(traj_id_col),
            "time_col": None if time_col is None else str(time_col),
            "on_invalid": on_invalid,
        },
        # released as they are: the Point-input trajectory id and every explicitly kept column
        "unprotected_columns": ([] if traj_id_col is None or kind != "Point" else [str(traj_id_col)])
        + [str(c) for c in keep_columns if traj_id_col is None or str(c) != str(traj_id_col)],
        "geoldp_version": _version(),
        "rng": policy,
    }
    return _json_safe(prov)


def snap(
    gdf: Any,
    points: Any,
    *,
    traj_id_col: Any = None,
    time_col: Any = None,
    snap_max_km: float | None = None,
    return_distances: bool = False,
) -> Any:
    """Snap every trajectory to the public point set and return the index sequences.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        LineString rows, or Point rows grouped by ``traj_id_col``.
    points : PointSet, GeoDataFrame or GeoSeries of Points
        The public point set P.
    traj_id_col, time_col : column label, optional
        Grouping and ordering of Point rows (see the module notes).
    snap_max_km : float, optional
        Raise ``ValueError`` (naming the row position) if a vertex is farther than this from P.
    return_distances : bool, default False
        Also return the snap distances (metres) per trajectory. They are computed from the private data:
        keep them local, never publish them.

    Returns
    -------
    list of numpy.ndarray
        One int64 array of indices into P per trajectory, in trajectory order (input row order for
        LineStrings; order of first appearance of each id for Point rows). With ``return_distances``, a
        tuple ``(sequences, distances)``.

    See Also
    --------
    geoldp.perturb_trajectories : the array engine that consumes these sequences.
    """
    caller = "GeoDataFrame.ldp.snap"
    gdf = _frames.check_frame(gdf, caller=caller)
    snap_max_km = _frames.check_snap_max_km(snap_max_km, caller=caller)
    return_distances = _check_bool(return_distances, "return_distances", caller)
    ps, _ = _frames.resolve_points(points, caller=caller)
    ft = _frames.extract(gdf, traj_id_col=traj_id_col, time_col=time_col, caller=caller)
    seqs, dist = _frames.snap(ft, ps, snap_max_km=snap_max_km, caller=caller)
    if return_distances:
        dists = [dist[a:b] for a, b in zip(ft.offsets[:-1], ft.offsets[1:], strict=True)]
        return seqs, dists
    return seqs


def perturb(
    gdf: Any,
    points: Any,
    *,
    mechanism: Any = "atp",
    epsilon: float | None = None,
    keep_columns: Sequence[Any] | None = None,
    snap_max_km: float | None = None,
    traj_id_col: Any = None,
    time_col: Any = None,
    progress: bool = False,
    on_invalid: str = "raise",
    rng: Any = None,
    **options: Any,
) -> Any:
    """Perturb every trajectory of a GeoDataFrame under ε-LDP (TP, ATP or PointEM).

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        One LineString per row (one trajectory per row), or Point rows grouped into trajectories by
        ``traj_id_col`` (ordered by ``time_col``). Any CRS (a missing CRS is an error); Z/M are dropped
        with a :class:`~geoldp.GeoLDPWarning`.
    points : PointSet, GeoDataFrame or GeoSeries of Points
        The public point set P. Every input vertex is snapped to its nearest public point, and every
        output vertex is a public point (bit-identical to P transformed into the input CRS).
    mechanism : {"atp", "tp", "pointem"} or mechanism object, default "atp"
        Case-insensitive name, or a configured :class:`~geoldp.ATP` / :class:`~geoldp.TP` /
        :class:`~geoldp.PointEM` (then ``epsilon`` and ``options`` must not be given).
    epsilon : float
        The privacy budget of **one trajectory** (one row, or one ``traj_id_col`` group).
    keep_columns : list of column labels, optional
        Columns copied to the output unchanged. They are **not protected** by the mechanism; a
        :class:`~geoldp.PrivacyWarning` names them. By default only the geometry (and ``traj_id_col`` for
        Point rows) is returned.
    snap_max_km : float, optional
        If set, a vertex farther than this from every public point raises ``ValueError`` naming the row
        position. If not set, vertices farther than the diameter of P trigger one
        :class:`~geoldp.GeoLDPWarning` with counts only. The snap distances are computed from the
        private data, so they never enter the output (``attrs`` records only the settings); inspect them
        locally with ``gdf.ldp.snap(points, return_distances=True)``.
    traj_id_col, time_col : column label, optional
        Grouping and ordering of Point rows. A Point row without ``traj_id_col`` is a one-point
        trajectory.
    progress : bool, default False
        Show a progress bar (needs ``tqdm``; silently off without it).
    on_invalid : {"raise", "null"}, default "raise"
        Rows with a missing/empty geometry or NaN/inf/out-of-range coordinates raise ``ValueError``
        (naming the row position). ``"null"`` outputs ``None`` for them instead, which reveals which
        rows were invalid.
    rng : {None, int, array_like[ints], SeedSequence, BitGenerator, Generator}, optional
        ``None`` (default) uses the operating system's CSPRNG. Anything else seeds NumPy: **for
        experiments and tests only, not for deployment**. The seed is never stored in the output.
    **options
        Mechanism options (``granularity``, ``split``, ``sw_buckets`` ...) when ``mechanism`` is a name.

    Returns
    -------
    geopandas.GeoDataFrame
        A new frame with the input's index (duplicates included), row order, CRS and geometry column
        name, holding the perturbed geometry (same geometry type and vertex count per row), plus
        ``traj_id_col`` for Point input and ``keep_columns``. ``out.attrs["geoldp"]`` holds the
        provenance (mechanism, ε, split, granularity, options, ledger by kind, snapping settings,
        geoldp version, RNG policy ``"os-csprng"`` or ``"seeded"``), never the seed and never a value
        computed from the private data.

    Raises
    ------
    TypeError
        Wrong container, geometry type (MultiLineString: use ``explode()``), mechanism, or rng type.
    ValueError
        Missing CRS, no rows, invalid rows (message names the row position), missing columns, invalid
        ε or options. All checks run before any random draw.

    Warns
    -----
    PrivacyWarning
        For ``keep_columns``; when the budget per point is so small that the output is close to uniform
        noise (see :func:`geoldp.prepare.point_budget`).
    GeoLDPWarning
        Z/M dropped; vertices farther from P than its diameter.

    See Also
    --------
    geoldp.perturb_trajectories : the same mechanisms on index sequences.
    geoldp.prepare.resample : shrink long GPS traces before perturbing them.

    Notes
    -----
    ``gdf.ldp.perturb(P, epsilon=e, rng=s)`` equals
    ``perturb_trajectories(gdf.ldp.snap(P), P, epsilon=e, rng=s)`` mapped back to geometries.
    """
    caller = "GeoDataFrame.ldp.perturb"
    gdf = _frames.check_frame(gdf, caller=caller)
    kept = _frames.check_columns(gdf, keep_columns, parameter="keep_columns", caller=caller)
    snap_max_km = _frames.check_snap_max_km(snap_max_km, caller=caller)
    progress = _check_bool(progress, "progress", caller)
    mech = resolve_mechanism(mechanism, epsilon, options, caller=caller)
    from geoldp._random import resolve_rng

    source = resolve_rng(rng)
    ps, ps_source = _frames.resolve_points(points, caller=caller)
    ft = _frames.extract(
        gdf, traj_id_col=traj_id_col, time_col=time_col, on_invalid=on_invalid, caller=caller
    )
    seqs, _dist = _frames.snap(ft, ps, snap_max_km=snap_max_km, caller=caller)
    del _dist  # private: never leaves this function

    from geoldp import prepare

    ledgers: dict[int, Any] = {}  # per-call cache: ledgers are public functions of (mechanism, n)
    prepare._warn_near_uniform(mech, ft.lengths, stacklevel=3, cache=ledgers)

    geom_col = gdf._geometry_column_name
    released = []
    if ft.kind == "Point" and traj_id_col is not None:
        released.append(traj_id_col)
    extra = [c for c in kept if c != geom_col and c not in released]
    if extra:
        warnings.warn(
            f"keep_columns releases {[str(c) for c in extra]} unprotected: these columns bypass the "
            "mechanism and are copied to the output as they are.",
            PrivacyWarning,
            stacklevel=3,
        )
    released += extra

    xy = _frames.public_xy(ps, ft.crs, ps_source)  # public data only; computed before drawing
    outputs = _run_engine(seqs, ps, mech, source, progress=progress) if seqs else []

    geometry = _frames.build_geometry(ft, outputs, xy, len(gdf))
    return _assemble(
        gdf,
        geometry,
        released,
        geom_col,
        ft,
        mech,
        source,
        snap_max_km,
        ps,
        traj_id_col,
        time_col,
        kept,
        on_invalid,
        ledgers,
    )


def _run_engine(
    seqs: list[np.ndarray], ps: Any, mech: Any, source: Any, *, progress: bool
) -> list[np.ndarray]:
    from geoldp.trajectory import perturb_trajectories

    tqdm = None
    if progress:
        try:
            from tqdm.auto import tqdm
        except ImportError:  # tqdm is optional: no bar
            tqdm = None
    if tqdm is None:
        return list(perturb_trajectories(seqs, ps, mechanism=mech, rng=source))
    return _run_with_progress(seqs, ps, mech, source, tqdm)


def _run_with_progress(
    seqs: list[np.ndarray], ps: Any, mech: Any, source: Any, tqdm: Any
) -> list[np.ndarray]:
    """Run in chunks with a progress bar.

    Same validation as :func:`geoldp.perturb_trajectories`, then ONE stream key drawn from the source and
    per-trajectory streams ``offset + i``: the output is identical to a single call (chunk invariance).
    """
    from geoldp.trajectory import engine

    trajs = engine.validate_trajectories(seqs, ps.size, caller="GeoDataFrame.ldp.perturb")
    for n in sorted({t.shape[0] for t in trajs}):
        mech.check_budgets(n, ps.size)
    key = source.stream_key()
    policy = str(getattr(source, "policy", "seeded"))
    out: list[np.ndarray] = []
    chunk = max(1, min(5_000, -(-len(trajs) // 100)))
    with tqdm(total=len(trajs), unit="traj", desc="geoldp", leave=False) as bar:
        for start in range(0, len(trajs), chunk):
            part = trajs[start : start + chunk]
            out.extend(engine.run_with_key(part, ps, mech, key=key, offset=start, policy=policy))
            bar.update(len(part))
    return out


def _assemble(
    gdf,
    geometry,
    released,
    geom_col,
    ft,
    mech,
    source,
    snap_max_km,
    ps,
    traj_id_col,
    time_col,
    kept,
    on_invalid,
    ledgers,
):
    import geopandas as gpd

    data = {}
    for col in gdf.columns:
        if col in released:
            data[col] = gdf[col].copy(deep=True)
    frame = pd.DataFrame(data, index=gdf.index.copy())
    gs = gpd.GeoSeries(geometry, index=gdf.index.copy(), crs=gdf.crs)
    frame[geom_col] = gs.values
    out = gpd.GeoDataFrame(frame, geometry=geom_col, crs=gdf.crs)
    # column order: kept columns in input order, geometry where it was in the input
    order = [c for c in gdf.columns if c in released or c == geom_col]
    out = out[order]
    out.attrs = {
        "geoldp": _provenance(
            mech,
            policy=str(getattr(source, "policy", "os-csprng")),
            lengths=ft.lengths,
            snap_max_km=snap_max_km,
            snap_warn_km=float(ps.diameter_km),
            kind=ft.kind,
            traj_id_col=traj_id_col,
            time_col=time_col,
            keep_columns=[c for c in released if not (ft.kind == "Point" and c == traj_id_col)],
            on_invalid=on_invalid,
            ledger_cache=ledgers,
        )
    }
    return out


@pd.api.extensions.register_dataframe_accessor("ldp")
class LDPAccessor:
    """Local differential privacy for trajectories: ``GeoDataFrame.ldp``.

    Stateless: holds a reference to the frame and nothing else. Registered on import of :mod:`geoldp`.

    Raises
    ------
    AttributeError
        When used on something that is not a :class:`geopandas.GeoDataFrame`.
    """

    __slots__ = ("_obj",)

    def __init__(self, obj: Any) -> None:
        import geopandas as gpd

        if not isinstance(obj, gpd.GeoDataFrame):
            raise AttributeError(
                f"The .ldp accessor requires a geopandas.GeoDataFrame, got {type(obj).__name__}. "
                "Use geopandas.GeoDataFrame(df, geometry=..., crs=...) first."
            )
        self._obj = obj

    def perturb(
        self,
        points: Any,
        *,
        mechanism: Any = "atp",
        epsilon: float | None = None,
        keep_columns: Sequence[Any] | None = None,
        snap_max_km: float | None = None,
        traj_id_col: Any = None,
        time_col: Any = None,
        progress: bool = False,
        on_invalid: str = "raise",
        rng: Any = None,
        **options: Any,
    ) -> Any:
        """Perturb every trajectory under ε-LDP; return a new GeoDataFrame.

        See Also
        --------
        geoldp.accessor.perturb : full documentation.
        """
        return perturb(
            self._obj,
            points,
            mechanism=mechanism,
            epsilon=epsilon,
            keep_columns=keep_columns,
            snap_max_km=snap_max_km,
            traj_id_col=traj_id_col,
            time_col=time_col,
            progress=progress,
            on_invalid=on_invalid,
            rng=rng,
            **options,
        )

    def snap(
        self,
        points: Any,
        *,
        traj_id_col: Any = None,
        time_col: Any = None,
        snap_max_km: float | None = None,
        return_distances: bool = False,
    ) -> Any:
        """Index sequences of the trajectories snapped to the public points.

        See Also
        --------
        geoldp.accessor.snap : full documentation.
        """
        return snap(
            self._obj,
            points,
            traj_id_col=traj_id_col,
            time_col=time_col,
            snap_max_km=snap_max_km,
            return_distances=return_distances,
        )

    def to_geojson(self, path: Any, *, ledger: bool = True) -> Any:
        """Write RFC 7946 GeoJSON (WGS 84) with the ledger as a top-level ``"geoldp"`` member.

        See Also
        --------
        geoldp.io.to_geojson : full documentation.
        """
        from geoldp import io

        return io.to_geojson(self._obj, path, ledger=ledger)

    def range_count(self, region: Any, *, points: Any = None, how: str = "points") -> Any:
        """Number of trajectories that visit ``region``.

        See Also
        --------
        geoldp.queries.range_count : full documentation.
        """
        from geoldp import queries

        return queries.range_count(self._obj, region, points=points, how=how)

    def visit_counts(self, points: Any, *, max_km: float | None = 0.001) -> Any:
        """Visits per public point.

        See Also
        --------
        geoldp.queries.visit_counts : full documentation.
        """
        from geoldp import queries

        return queries.visit_counts(self._obj, points, max_km=max_km)

    def evaluate(
        self,
        perturbed: Any,
        *,
        points: Any = None,
        delta_km: Any = (0.5, 1.0, 2.0, 3.0, 4.0),
        regions: Any = "auto",
        sanity_bound: Any = "auto",
        k: int = 10,
        bins: int = 20,
    ) -> Any:
        """Utility table of ``perturbed`` against this (original) frame.

        See Also
        --------
        geoldp.metrics.evaluate : full documentation.
        """
        from geoldp import metrics

        return metrics.evaluate(
            self._obj,
            perturbed,
            points=points,
            delta_km=delta_km,
            regions=regions,
            sanity_bound=sanity_bound,
            k=k,
            bins=bins,
        )

    # -- collector-side estimators (geoldp.estimate); the mechanism is read from this frame's ledger --------

    def estimate_visits(self, points: Any, *, zones: Any = None, **kwargs: Any) -> Any:
        """Estimated distinct trajectories per public point (or zone) of this *released* frame.

        See Also
        --------
        geoldp.estimate.visit_counts : full documentation (``mechanism`` defaults to ``attrs["geoldp"]``).
        """
        from geoldp import estimate

        return estimate.visit_counts(self._obj, points, zones=zones, **kwargs)

    def estimate_range_counts(self, points: Any, regions: Any, **kwargs: Any) -> Any:
        """Estimated trajectories passing through each region, from this released frame.

        See Also
        --------
        geoldp.estimate.range_counts : full documentation.
        """
        from geoldp import estimate

        return estimate.range_counts(self._obj, points, regions, **kwargs)

    def estimate_od_flows(self, points: Any, zones: Any, **kwargs: Any) -> Any:
        """Estimated origin-destination flows between zones, from this released frame.

        See Also
        --------
        geoldp.estimate.od_flows : full documentation.
        """
        from geoldp import estimate

        return estimate.od_flows(self._obj, points, zones, **kwargs)

    def estimate_hotspots(self, points: Any, *, k: int = 10, zones: Any = None, **kwargs: Any) -> Any:
        """The top-k public points (or zones) by estimated visits, from this released frame.

        See Also
        --------
        geoldp.estimate.hotspots : full documentation.
        """
        from geoldp import estimate

        return estimate.hotspots(self._obj, points, k=k, zones=zones, **kwargs)

    def denoise(self, points: Any, **kwargs: Any) -> Any:
        """A denoised copy of this released frame (same index, CRS and vertex counts).

        See Also
        --------
        geoldp.estimate.denoise : full documentation.
        """
        from geoldp import estimate

        return estimate.denoise(self._obj, points, **kwargs)
