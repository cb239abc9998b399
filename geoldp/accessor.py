"""The ``GeoDataFrame.ldp`` accessor and the frame-level functions behind it.

Importing :mod:`geoldp` registers the accessor::

    >>> import geoldp  # doctest: +SKIP
    >>> out = trips.ldp.perturb(pois, mechanism="atp", epsilon=4.0)  # doctest: +SKIP

The accessor is stateless and cheap (pandas 3 builds a new accessor object on every ``gdf.ldp`` access):
it stores the frame reference and nothing else. Each method is a thin wrapper over a module-level function
(:func:`perturb`, :func:`snap`, :func:`geoldp.io.to_geojson`, :mod:`geoldp.queries`,
:func:`geoldp.metrics.evaluate`). :func:`perturb` is a thin driver of the release pipeline
(:mod:`geoldp._release`): validate, snap, plan once, apply to the whole frame (in chunks with a progress
bar).

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

from collections.abc import Sequence
from typing import Any

import pandas as pd

from geoldp import _frames, _release
from geoldp._release import resolve_mechanism
from geoldp._validation import check_bool, check_positive_km

__all__ = ["LDPAccessor", "perturb", "resolve_mechanism", "snap"]


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
    snap_max_km = check_positive_km(snap_max_km, "snap_max_km", caller=caller)
    return_distances = check_bool(return_distances, "return_distances", caller=caller)
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
    progress = check_bool(progress, "progress", caller=caller)
    req = _release.request(
        gdf,
        points,
        mechanism=mechanism,
        epsilon=epsilon,
        options=options,
        keep_columns=keep_columns,
        snap_max_km=snap_max_km,
        rng=rng,
        caller=caller,
        traj_id_col=traj_id_col,
        time_col=time_col,
        on_invalid=on_invalid,
    )
    ft, seqs = req.snap_frame(gdf)
    plan = req.plan(
        columns=list(gdf.columns),
        geom_col=gdf._geometry_column_name,
        crs=ft.crs,
        kind=ft.kind,
        lengths=ft.lengths,
        stacklevel=3,
    )
    return plan.apply(gdf, ft, seqs, progress=progress)


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
