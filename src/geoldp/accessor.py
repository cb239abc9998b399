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

from geoldp import _release, budget_strategies, io, metrics, queries
from geoldp._core import frames as _frames
from geoldp._core.docstrings import lazy_method_of, method_of
from geoldp._core.ledger import ReleaseLedger, attach, ledger_of
from geoldp._core.validation import check_bool, check_positive_km

__all__ = ["GeoSeriesLDPAccessor", "LDPAccessor"]


#: The toy release of the accessor's examples: four public points ``pois`` and two trips ``trips``.
_EXAMPLE_FRAME = """
>>> import geopandas as gpd, geoldp
>>> from shapely import LineString, box
>>> pois = geoldp.PointSet([0.0, 0.01, 0.02, 0.03], [0.0, 0.01, 0.0, 0.01])
>>> lines = [LineString([(0, 0), (0.02, 0)]), LineString([(0.01, 0.01), (0.03, 0.01)])]
>>> trips = gpd.GeoDataFrame(geometry=lines, crs="EPSG:4326")"""


def _examples(*lines: str) -> str:
    """Examples that start from :data:`_EXAMPLE_FRAME`, then ``lines``."""
    return "\n".join([_EXAMPLE_FRAME.strip("\n"), *lines])


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
        One LineString per row (one trajectory per row), or Point rows grouped into trajectories by
        ``traj_id_col`` (ordered by ``time_col``). Any CRS (a missing CRS is an error); Z/M are dropped
        with a :class:`~geoldp.GeoLDPWarning`.
    points : PointSet, GeoDataFrame or GeoSeries of Points
        The public point set P.
    traj_id_col, time_col : column label, optional
        Grouping and ordering of Point rows (as in :func:`geoldp.accessor.perturb`).
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

    Raises
    ------
    TypeError
        Wrong geometry type, ``points`` or ``return_distances`` type.
    ValueError
        Missing CRS, no rows, invalid rows or a vertex beyond ``snap_max_km`` (naming the row position).

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
    points: Any = None,
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
    accountant: Any = None,
    user_col: Any = None,
    n_jobs: int = 1,
    user_budget: str = "trajectory",
    max_per_user: int | None = None,
    select_trips: str = "first",
    **options: Any,
) -> Any:
    """Perturb every trajectory of a GeoDataFrame under ε-LDP (TP, ATP, PointEM, TraCS-D or TraCS-C).

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        One LineString per row (one trajectory per row), or Point rows grouped into trajectories by
        ``traj_id_col`` (ordered by ``time_col``). Any CRS (a missing CRS is an error); Z/M are dropped
        with a :class:`~geoldp.GeoLDPWarning`.
    points : PointSet, GeoDataFrame or GeoSeries of Points, optional
        The public point set P. Every output vertex is a public point (bit-identical to P transformed
        into the input CRS). TP, ATP and PointEM need it: every input vertex is snapped to its nearest
        public point. TraCS-D and TraCS-C do not: without it they release continuous coordinates; with
        it each released location is moved to its nearest public point (post-processing).
    mechanism : {"atp", "tp", "pointem", "tracs-d", "tracs-c"} or mechanism object, default "atp"
        Case-insensitive name, or a configured :class:`~geoldp.ATP` / :class:`~geoldp.TP` /
        :class:`~geoldp.PointEM` / :class:`~geoldp.trajectory.TraCSD` / :class:`~geoldp.trajectory.TraCSC`
        (then ``epsilon`` and ``options`` must not be given). TraCS-D and TraCS-C need
        ``bounds=(minx, miny, maxx, maxy)``: a public box in the frame's CRS (for longitude/latitude, a
        local azimuthal equidistant projection is derived from the box; see "Mechanisms").
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
        Show a progress bar (needs ``tqdm``; silently off without it). The output does not change.
    on_invalid : {"raise", "null"}, default "raise"
        Rows with a missing/empty geometry or NaN/inf/out-of-range coordinates raise ``ValueError``
        (naming the row position). ``"null"`` outputs ``None`` for them instead, which reveals which
        rows were invalid.
    rng : {None, int, array_like[ints], SeedSequence, BitGenerator, Generator}, optional
        ``None`` (default) uses the operating system's CSPRNG. Anything else seeds NumPy: **for
        experiments and tests only, not for deployment**. The seed is never stored in the output.
    accountant : geoldp.BudgetAccountant, optional
        Charge every trajectory ``epsilon`` to its user (k trajectories of one user cost k·ε), after
        refusing, before any random draw, a release that would take a user past the accountant's total
        (:class:`~geoldp.BudgetError`). Needs ``user_col``.
    user_col : column label, optional
        The column holding each row's user id (int or str), for ``accountant``. It is not released
        unless listed in ``keep_columns``.
    n_jobs : int, default 1
        Threads for the perturbation (``-1``: every core). The output is identical for any ``n_jobs``: each
        trajectory draws from its own random stream.
    user_budget : {"trajectory", "split"}, default "trajectory"
        ``"split"``: ``epsilon`` is each user's budget in this release, shared equally by her trajectories
        (``user_col`` needed; the accountant charges each user ``epsilon``); every row's own budget is in
        the output column ``"epsilon"`` (see :mod:`geoldp.budget_strategies`).
    max_per_user : int, optional
        Release at most this many trajectories per user (``user_col`` needed); the other rows are dropped
        from the output, whose index tells which rows were kept.
    select_trips : {"first", "last", "random"}, default "first"
        Which trajectories ``max_per_user`` keeps: the first or last in row order, or a random subset
        (drawn with ``rng``).
    **options
        Mechanism options (``granularity``, ``split``, ``sw_buckets`` ...; ``bounds``,
        ``direction_share``, ``origin``, ``x_share`` for TraCS) when ``mechanism`` is a name.

    Returns
    -------
    geopandas.GeoDataFrame
        A new frame with the input's index (duplicates included), row order, CRS and geometry column
        name, holding the perturbed geometry (same geometry type and vertex count per row), plus
        ``traj_id_col`` for Point input and ``keep_columns``. Its ledger (``out.ldp.ledger``) holds the
        provenance (mechanism, ε, split, granularity, options, ledger by kind, snapping settings,
        geoldp version, RNG policy ``"os-csprng"`` or ``"seeded"``, a unique ``release_id``, the public
        points' provenance from :mod:`geoldp.points`, the accountant settings), never the seed and never
        a value computed from the private data.

    Raises
    ------
    TypeError
        Wrong container, geometry type (MultiLineString: use ``explode()``), mechanism, option or ``rng``
        type.
    ValueError
        Missing CRS, no rows, invalid rows (message names the row position), missing columns, invalid
        ε or options. All checks run before any random draw.
    BudgetError
        With ``accountant``: the release would take some user past the total (nothing drawn or charged).

    Warns
    -----
    PrivacyWarning
        For ``keep_columns``; when the budget per point is so small that the output is close to uniform
        noise (see :func:`geoldp.prepare.point_budget`); when ``points`` were built by
        :mod:`geoldp.points` over an area with exactly the bounds of the trajectories (a private area).
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
    if user_budget != "trajectory" or max_per_user is not None or select_trips != "first":
        kw = dict(mechanism=mechanism, keep_columns=keep_columns, snap_max_km=snap_max_km, time_col=time_col)
        kw.update(progress=progress, on_invalid=on_invalid, n_jobs=n_jobs, **options)
        return budget_strategies.perturb_per_user(
            perturb,
            gdf,
            points,
            epsilon=epsilon,
            user_col=user_col,
            accountant=accountant,
            user_budget=user_budget,
            max_per_user=max_per_user,
            select_trips=select_trips,
            traj_id_col=traj_id_col,
            rng=rng,
            caller=caller,
            **kw,
        )
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
        n_jobs=n_jobs,
        accountant=accountant,
        user_col=user_col,
        refusal_advice=budget_strategies.REFUSAL_ADVICE,
    )
    ft, seqs = req.snap_frame(gdf)
    plan = req.plan(
        columns=list(gdf.columns),
        geom_col=gdf._geometry_column_name,
        crs=ft.crs,
        kind=ft.kind,
        lengths=ft.lengths,
        stacklevel=3,
        users=gdf,
        area=gdf,
    )
    out = plan.apply(gdf, ft, seqs, progress=progress)
    attach(out, req.finish(plan, released=out))
    return out


#: What every estimator method adds to the summary of its function in geoldp.estimate.
_POST_PROCESSING = """

Post-processing: reads only this release, the public points and the public configuration of its mechanism
(by default from this frame's ledger, ``frame.ldp.ledger``), never the originals, so it spends no privacy
budget."""


def _estimator(function: str, summary: str, example: str) -> Any:
    """The accessor method of the estimator :func:`geoldp.estimate.<function>` (imported on first use)."""
    examples = (
        f">>> out = trips.ldp.perturb(pois, epsilon=4.0)  # doctest: +SKIP\n{example}  # doctest: +SKIP"
    )
    return lazy_method_of(f"geoldp.estimate:{function}", summary + _POST_PROCESSING, examples=examples)


class EstimateAccessor:
    """The collector-side estimators of a release: ``released.ldp.estimate``.

    Each method is the function of the same name in :mod:`geoldp.estimate` with this release first
    (``released.ldp.estimate.visit_counts(points)`` is ``geoldp.estimate.visit_counts(released, points)``);
    the mechanism is read from the release's ledger. ``released.ldp.visit_counts`` (no ``estimate``)
    counts the frame's own trajectories instead. Stateless: holds a reference to the frame only.
    """

    __slots__ = ("_obj",)

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    fit = _estimator(
        "fit",
        "Fit the collector-side population model to this release once, for many queries.",
        ">>> pop = out.ldp.estimate.fit(pois)\n>>> pop.visit_counts(zones), pop.denoise()",
    )
    visit_counts = _estimator(
        "visit_counts",
        "Estimated number of distinct original trajectories visiting each public point (or zone).",
        ">>> out.ldp.estimate.visit_counts(pois, zones=geoldp.zone_grid(pois, cell_km=2))",
    )
    range_counts = _estimator(
        "range_counts",
        "Estimated number of original trajectories passing through each region.",
        ">>> out.ldp.estimate.range_counts(pois, [(-87.63, 41.88, 1.5)])",
    )
    od_flows = _estimator(
        "od_flows",
        "Estimated origin-destination flows: trajectories by the zones of their first and last points.",
        ">>> out.ldp.estimate.od_flows(pois, geoldp.zone_grid(pois, cell_km=1.5))",
    )
    hotspots = _estimator(
        "hotspots",
        "The top-k public points (or zones) by estimated visits, with their intervals.",
        ">>> out.ldp.estimate.hotspots(pois, k=5)",
    )
    denoise = _estimator(
        "denoise",
        "A denoised copy of this release: for each trajectory a point estimate of the original.",
        ">>> out.ldp.estimate.denoise(pois)",
    )


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

        self._obj = _frames.accessor_target(obj, gpd.GeoDataFrame)

    @property
    def ledger(self) -> ReleaseLedger | None:
        """The ledger of this release (what it spent and how), or ``None`` for a frame that is not one.

        Returns
        -------
        ReleaseLedger or None
            See :class:`geoldp.ReleaseLedger`.
        """
        return ledger_of(self._obj)

    perturb = method_of(
        perturb,
        "Perturb every trajectory of this frame under ε-LDP (TP, ATP, PointEM, TraCS); return a new frame.",
        examples=_examples(
            '>>> out = trips.ldp.perturb(pois, mechanism="atp", epsilon=4.0, rng=0)'
            "  # rng: for experiments only",
            ">>> out.index.equals(trips.index), out.crs == trips.crs, out.ldp.ledger.epsilon",
            "(True, True, 4.0)",
        ),
    )
    # the modules of report, hybrid, explore and synthesize are imported on the method's first use (the
    # accessor is imported by the first ``.ldp``)
    report = lazy_method_of(
        "geoldp.reports:report",
        "One ε-LDP aggregate report per trajectory (row) over public zones.",
        function="geoldp.report",
        examples=_examples(
            ">>> rep = trips.ldp.report(geoldp.zone_grid(pois, cells=2), epsilon=4.0)  # doctest: +SKIP"
        ),
    )
    hybrid = lazy_method_of(
        "geoldp.hybrids:hybrid",
        "One budget split between a TP/ATP trajectory and an aggregate report of every trajectory (row).",
        function="geoldp.hybrid",
        examples=_examples(
            ">>> traj, rep = trips.ldp.hybrid(pois, geoldp.zone_grid(pois, cells=2), epsilon=4.0)"
            "  # doctest: +SKIP"
        ),
    )
    snap = method_of(
        snap,
        "Index sequences of this frame's trajectories snapped to the public points.",
        examples=_examples(">>> [seq.tolist() for seq in trips.ldp.snap(pois)]", "[[0, 2], [1, 3]]"),
    )
    to_geojson = method_of(
        io.to_geojson,
        'Write this frame as RFC 7946 GeoJSON (WGS 84) with the ledger as a top-level ``"geoldp"`` member.',
        examples=_examples(
            ">>> import pathlib, tempfile",
            ">>> out = trips.ldp.perturb(pois, epsilon=4.0, rng=0)",
            '>>> path = out.ldp.to_geojson(pathlib.Path(tempfile.mkdtemp()) / "released.geojson")',
            '>>> path.name, "geoldp" in path.read_text()',
            "('released.geojson', True)",
        ),
    )
    range_count = method_of(
        queries.range_count,
        "Number of this frame's trajectories that pass through ``region``.",
        examples=_examples(
            ">>> trips.ldp.range_count(box(-0.001, -0.001, 0.001, 0.001))",
            "1",
            ">>> int(trips.ldp.range_count((0.03, 0.01, 0.5)))  # a circle: (lon, lat, radius_km)",
            "1",
        ),
    )
    visit_counts = method_of(
        queries.visit_counts,
        "Number of distinct trajectories of this frame visiting each public point.",
        examples=_examples(">>> trips.ldp.visit_counts(pois).tolist()", "[1, 1, 1, 1]"),
    )
    evaluate = method_of(
        metrics.evaluate,
        "Utility table of ``perturbed`` against this (original) frame, with the no-data baselines.",
        examples=_examples(
            ">>> out = trips.ldp.perturb(pois, epsilon=4.0, rng=0)",
            ">>> table = trips.ldp.evaluate(out, points=pois)",
            ">>> list(table.index), table.columns[0]",
            "(['ATP raw', 'uniform', 'constant'], 'NE_km')",
        ),
    )
    explore = lazy_method_of(
        "geoldp.explore:explore_release",
        "An interactive folium map of this release, with one toggleable layer per frame.",
    )
    synthesize = lazy_method_of(
        "geoldp.ldptrace:synthesize",
        "Synthetic trajectories under ε-LDP per trajectory with LDPTrace (:func:`geoldp.synthesize`).",
        function="geoldp.synthesize",
        examples=_examples(
            ">>> syn = trips.ldp.synthesize(epsilon=4.0, bounds=(0, 0, 0.03, 0.01))  # doctest: +SKIP"
        ),
    )

    @property
    def estimate(self) -> EstimateAccessor:
        """The collector-side estimators of this release, under the names of :mod:`geoldp.estimate`.

        ``frame.ldp.estimate.<name>(...)`` is ``geoldp.estimate.<name>(frame, ...)`` for ``fit``,
        ``visit_counts``, ``range_counts``, ``od_flows``, ``hotspots`` and ``denoise``.

        Returns
        -------
        EstimateAccessor
            Holds a reference to this frame and nothing else.
        """
        return EstimateAccessor(self._obj)


# Arguments of the frame path that need other columns than the geometry: a GeoSeries has none.
_FRAME_ONLY = (
    "keep_columns",
    "traj_id_col",
    "time_col",
    "user_col",
    "accountant",
    "user_budget",
    "max_per_user",
    "select_trips",
)


@pd.api.extensions.register_series_accessor("ldp")
class GeoSeriesLDPAccessor:
    """Local differential privacy for a GeoSeries of trajectories: ``GeoSeries.ldp``.

    Each element is one trajectory (a LineString, or a Point as a one-point trajectory). The methods wrap
    the series into a one-column GeoDataFrame and call the frame path (:class:`LDPAccessor`), so the
    mechanisms, checks and ledger are the same. Stateless: holds a reference to the series only.

    Raises
    ------
    AttributeError
        When used on a Series that is not a :class:`geopandas.GeoSeries`.
    """

    __slots__ = ("_obj",)

    def __init__(self, obj: Any) -> None:
        import geopandas as gpd

        self._obj = _frames.accessor_target(obj, gpd.GeoSeries)

    # the same property as the frame accessor's: it reads only ``self._obj``
    ledger = LDPAccessor.ledger

    def _frame(self, kwargs: dict[str, Any], caller: str) -> Any:
        import geopandas as gpd

        for name in _FRAME_ONLY:
            if name in kwargs:
                raise TypeError(
                    f"GeoSeries.ldp.{caller} does not take {name!r}: a GeoSeries holds only geometries. "
                    f"Build a GeoDataFrame with the other columns and use gdf.ldp.{caller}(...) instead."
                )
        s = self._obj
        return gpd.GeoDataFrame({"geometry": s.values}, index=s.index, geometry="geometry", crs=s.crs)

    def perturb(self, points: Any = None, *, epsilon: float | None = None, **kwargs: Any) -> Any:
        """Perturb every trajectory of this GeoSeries under ε-LDP: see :meth:`LDPAccessor.perturb`.

        Parameters
        ----------
        points : PointSet, GeoDataFrame or GeoSeries of Points, optional
            The public point set P (optional for TraCS-D and TraCS-C, which take ``bounds=``).
        epsilon : float
            The budget of one trajectory (one element).
        **kwargs
            ``mechanism``, ``snap_max_km``, ``progress``, ``on_invalid``, ``rng``, ``n_jobs`` and mechanism
            options, as for a frame. Column-based arguments (``keep_columns``, ``user_col``,
            ``accountant``, ``traj_id_col`` ...) need a GeoDataFrame.

        Returns
        -------
        geopandas.GeoSeries
            The perturbed geometries with this series' index, order, name and CRS; the provenance (ledger)
            is ``out.ldp.ledger``.

        Examples
        --------
        >>> import geoldp, geopandas as gpd, shapely
        >>> pois = geoldp.PointSet([0.0, 0.01, 0.02, 0.03], [0.0, 0.01, 0.0, 0.01])
        >>> s = gpd.GeoSeries([shapely.LineString([(0, 0), (0.02, 0)])], crs="EPSG:4326")
        >>> out = s.ldp.perturb(pois, mechanism="tp", epsilon=8.0, rng=0)
        >>> out.index.equals(s.index), out.crs == s.crs, out.ldp.ledger.mechanism
        (True, True, 'tp')
        """
        out = perturb(self._frame(kwargs, "perturb"), points, epsilon=epsilon, **kwargs)
        res = out.geometry.rename(self._obj.name)
        res.attrs = dict(out.attrs)
        return res

    def snap(self, points: Any, *, snap_max_km: float | None = None, return_distances: bool = False) -> Any:
        """Index sequences of this series' trajectories snapped to the public points (see :func:`snap`).

        Parameters
        ----------
        points : PointSet, GeoDataFrame or GeoSeries of Points
        snap_max_km : float, optional
        return_distances : bool, default False
            Also return the snap distances (private: keep them local).

        Returns
        -------
        list of numpy.ndarray
            One int64 index array per element, in order.
        """
        frame = self._frame({}, "snap")
        return snap(frame, points, snap_max_km=snap_max_km, return_distances=return_distances)
