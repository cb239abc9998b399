"""Perturb partitioned frames with Dask (``dask_geopandas.GeoDataFrame``), or report one aggregate each.

Install the extra: ``pip install "geoldp[dask]"``. Dask is imported only when :func:`perturb` or
:func:`report` is called; with Dask's dataframe module loaded, ``ddf.ldp.perturb(...)`` and
``ddf.ldp.report(...)`` are the same calls (:class:`DaskLDPAccessor`).

Seeded results do not depend on the partitioning (:doc:`/user_guide`, "Scaling out with Dask"):
:func:`perturb` draws **one** 256-bit stream key per call and every trajectory uses the counter-based
stream numbered by its **global row position**, known once the partition lengths are computed.

This module is a thin driver of the release pipeline (:mod:`geoldp._release`): it plans the release once
on the released trajectory lengths and applies the plan to every partition.
"""

from __future__ import annotations

import sys
import warnings
from collections import Counter
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from geoldp._core.docstrings import method_of
from geoldp._core.ledger import attach

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = ["DaskLDPAccessor", "perturb", "report"]

_CALLER = "geoldp.dask.perturb"


def _checked_dask(ddf: Any, caller: str, in_memory: str) -> Any:
    """Import Dask and check that ``ddf`` is a dask_geopandas.GeoDataFrame with a CRS; return ``dask``.

    ``in_memory`` names the in-memory counterpart of ``caller``, for the message.
    """
    try:
        import dask
        import dask_geopandas
    except ImportError as exc:
        raise ImportError(
            'geoldp.dask needs dask and dask-geopandas. Install them with: pip install "geoldp[dask]"'
        ) from exc
    if not isinstance(ddf, dask_geopandas.GeoDataFrame):
        raise TypeError(
            f"The 'ddf' parameter of {caller} must be a dask_geopandas.GeoDataFrame. Got "
            f"{type(ddf).__name__}. For an in-memory frame use {in_memory}."
        )
    from geoldp._core import frames as _frames

    _frames.require_crs(ddf.crs, what="trajectories", caller=caller)  # the in-memory frame's message
    return dask


def _partition_stats(
    part: Any,
    user_col: Any = None,
    area_crs: Any = None,
    *,
    crs: Any = None,
    number: int = 0,
    caller: str = _CALLER,
) -> tuple[int, dict[int, int], set[int], Any, Any]:
    """Row count, trajectory lengths (length -> count), geometry type ids, user column, bounds of a partition.

    The first three are released by the output anyway (row count, vertex counts, geometry type). The user
    column (only with an accountant) and the bounds in ``area_crs`` (only when the public points record
    the area they were built over) are private: they are used for the charge and the area check of the
    release, then dropped.
    """
    import shapely

    part_crs = getattr(part, "crs", None)
    if crs is not None and part_crs is not None and not part_crs.equals(crs):
        raise ValueError(
            f"Partition {number} of the trajectories passed to {caller} is in {part_crs.to_string()}, but "
            f"the frame declares {crs.to_string()}; every partition must be in the frame's CRS "
            "(reproject the partitions, or the frame, with to_crs() first)."
        )
    geoms = np.asarray(part.geometry.values)
    counts = shapely.get_num_coordinates(geoms)
    values, freq = np.unique(counts[counts > 0], return_counts=True)
    types = {int(t) for t in np.unique(shapely.get_type_id(geoms))}
    users = None if user_col is None else part[[user_col]]
    bounds = None
    if area_crs is not None and len(part):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-empty partitions give NaN bounds
            bounds = np.asarray(part.geometry.to_crs(area_crs).total_bounds, dtype=np.float64)
    return len(part), {int(v): int(f) for v, f in zip(values, freq, strict=True)}, types, users, bounds


def _data_box(stats: Any, crs: Any) -> Any:
    """A one-row frame with the partitions' combined bounds (in ``crs``).

    It feeds the area check of the release pipeline; ``None`` when no partition has bounds.
    """
    import geopandas as gpd
    import shapely

    parts = [b for b in (s[4] for s in stats) if b is not None and np.all(np.isfinite(b))]
    if not parts:
        return None
    b = np.array(parts)
    return gpd.GeoDataFrame(
        geometry=[shapely.box(b[:, 0].min(), b[:, 1].min(), b[:, 2].max(), b[:, 3].max())], crs=crs
    )


def _refuse_mixed_types(per_partition: list[set[int]], caller: str) -> None:
    """One geometry type across all partitions, as for an in-memory frame (missing rows aside)."""
    from geoldp._core import frames as _frames

    first: dict[int, int] = {}
    for number, types in enumerate(per_partition):
        for t in sorted(types - {-1}):
            first.setdefault(t, number)
    if len(first) > 1:
        (a, pa), (b, pb) = sorted(first.items(), key=lambda kv: (kv[1], kv[0]))[:2]
        name_a, name_b = (_frames.TYPE_NAMES.get(t, f"geometry type {t}") for t in (a, b))
        where = f"partition {pa} holds" if pa == pb else f"partitions {pa} and {pb} hold"
        raise ValueError(
            f"Mixed geometry types in the trajectories passed to {caller}: {where} {name_a} and "
            f"{name_b} rows. Every row must be a LineString (one trajectory), or every row a Point; build "
            "LineStrings first with geoldp.prepare.trajectories_from_points."
        )


def _first_pass(
    dask: Any, ddf: Any, user_col: Any, area_crs: Any, caller: str, ignore: Any
) -> tuple[tuple[Any, ...], tuple[int, ...], set[int], Any]:
    """Pass 1 of a partitioned release: ``(stats, offsets, geometry type ids, users)``.

    The partition lengths give each partition the global position of its first row (``offsets``); the
    stats (see :func:`_partition_stats`) also hold each partition's trajectory lengths and, when asked,
    its bounds in ``area_crs``; ``users`` is the whole user column (only with ``user_col``), for the
    accountant's check. Refuses a frame without rows or with mixed geometry types, and warns, from the
    schema, of Point rows that look like GPS fixes (the partitions cannot be grouped into trips; the
    column ``ignore``, the user ids, aside).
    """
    from geoldp._core import frames as _frames

    stats = dask.compute(
        *[
            dask.delayed(_partition_stats)(p, user_col, area_crs, crs=ddf.crs, number=k, caller=caller)
            for k, p in enumerate(ddf.to_delayed())
        ]
    )
    sizes = np.array([s[0] for s in stats], dtype=np.int64)
    if int(sizes.sum()) == 0:
        raise ValueError(f"The trajectories GeoDataFrame passed to {caller} has no rows.")
    offsets = tuple(int(v) for v in np.concatenate([[0], np.cumsum(sizes)[:-1]]))
    _refuse_mixed_types([s[2] for s in stats], caller)
    type_ids: set[int] = set().union(*(s[2] for s in stats))
    _frames.warn_if_fixes(
        ddf._meta, traj_id_col=None, caller=caller, option=None, ignore=(ignore,), point_rows=type_ids == {0}
    )
    users = None
    if user_col is not None:
        import pandas as pd

        users = pd.concat([s[3] for s in stats], ignore_index=True)
    return stats, offsets, type_ids, users


def _lazy_frame(dask: Any, ddf: Any, meta: Any, record: Any, partition: Any, **bound: Any) -> Any:
    """The lazy result: ``partition(part, number=k, **bound)`` of every partition ``k``.

    ``meta``, the empty output, gets the ledger ``record``. Each partition's offset is bound into its own
    task, so a subset of partitions (``out.partitions[k]``, ``out.head()``) gives the rows of the full
    result (map_partitions' ``partition_info`` would renumber it from 0, reusing other rows' streams).
    """
    import dask.dataframe as dd

    meta.attrs = {}
    attach(meta, record)
    task = dask.delayed(partition, pure=True)
    parts = [task(part, number=k, **bound) for k, part in enumerate(ddf.to_delayed())]
    return dd.from_delayed(parts, meta=meta, divisions=ddf.divisions, verify_meta=False)


def _perturb_partition(part: Any, *, plan: Any, offsets: tuple[int, ...], number: int) -> Any:
    """Apply the plan to one partition; its first row has global position ``offsets[number]``."""
    offset = int(offsets[number])
    if len(part) == 0:
        return plan.apply(part, None, [], offset=offset)
    with _in_partition(number, offset):
        ft, seqs = plan.request.snap_frame(part)
    return plan.apply(part, ft, seqs, offset=offset)


@contextmanager
def _in_partition(number: int, offset: int) -> Iterator[None]:
    """A TypeError or ValueError raised inside says which partition (and its first row's position)."""
    try:
        yield
    except (TypeError, ValueError) as exc:
        raise type(exc)(
            f"In partition {number} (its row positions start at global position {offset}): {exc}"
        ) from exc


def perturb(
    ddf: Any,
    points: Any = None,
    *,
    mechanism: Any = "atp",
    epsilon: float | None = None,
    keep_columns: Sequence[Any] | None = None,
    snap_max_km: float | None = None,
    rng: Any = None,
    accountant: Any = None,
    user_col: Any = None,
    **options: Any,
) -> Any:
    """Perturb every trajectory (row) of a Dask GeoDataFrame under ε-LDP.

    The Dask counterpart of ``gdf.ldp.perturb``: the same mechanisms, snapping, column policy and
    provenance, applied partition by partition (one task per partition, with that partition's global row
    offset bound into it).

    Parameters
    ----------
    ddf : dask_geopandas.GeoDataFrame
        One LineString per row (one trajectory per row; Point rows are one-point trajectories), with a CRS.
        Point rows grouped by a trajectory id are not supported here, because a trajectory could span
        partitions: build LineStrings first with :func:`geoldp.prepare.trajectories_from_points`.
    points : PointSet, GeoDataFrame or GeoSeries of Points, optional
        The public point set P (in memory; it is sent to every partition); optional for TraCS-D and
        TraCS-C, which take ``bounds=(minx, miny, maxx, maxy)`` instead. As in ``gdf.ldp.perturb``, a
        :class:`~geoldp.PrivacyWarning` says so when it was built by :mod:`geoldp.points` over exactly the
        bounds of ``ddf`` (computed in the first pass, compared and discarded).
    mechanism : {"atp", "tp", "pointem", "tracs-d", "tracs-c"} or mechanism object, default "atp"
        As in ``gdf.ldp.perturb``.
    epsilon : float
        The privacy budget of one trajectory (one row).
    keep_columns : list of column labels, optional
        Columns copied unchanged, **not protected** (a :class:`~geoldp.PrivacyWarning` names them).
    snap_max_km : float, optional
        Raise ``ValueError`` (at compute time) for a vertex farther than this from every public point.
    rng : {None, int, array_like[ints], SeedSequence, BitGenerator, Generator}, optional
        ``None`` (default) uses the operating system's CSPRNG. Anything else seeds NumPy: **for
        experiments and tests only, not for deployment**.
    accountant : geoldp.BudgetAccountant, optional
        As in ``gdf.ldp.perturb``: charges every row ε to its user (several rows of one user compose),
        refusing, before the stream key is drawn, a release that would take a user past the total
        (:class:`~geoldp.BudgetError`). The charge is made when this function returns, since the lazy
        result is one fixed release. Needs ``user_col``.
    user_col : column label, optional
        The column holding each row's user id (int or str), for ``accountant``. It is read in the first
        pass (so that column of the whole frame is held in memory for a moment) and not released unless
        listed in ``keep_columns``.
    **options
        Mechanism options (``granularity``, ``split``, ...) when ``mechanism`` is a name.

    Returns
    -------
    dask_geopandas.GeoDataFrame
        Lazy; same partitions, index and CRS as ``ddf``, with the perturbed geometry and ``keep_columns``.
        Each computed partition (and the computed frame) carries the same ledger (:func:`geoldp.ledger_of`)
        as ``gdf.ldp.perturb`` (a :class:`~geoldp.ReleaseLedger` with a ``release_id``, the
        public points' provenance and, with ``accountant``, its settings), plus the partitioning.

    Raises
    ------
    ImportError
        If dask or dask-geopandas is missing (install ``geoldp[dask]``).
    TypeError, ValueError
        For an invalid frame, mechanism, ε, options, ``rng`` or columns: raised here, before anything is
        computed or drawn. Invalid rows raise at compute time, naming the partition and the row position
        inside it.
    BudgetError
        With ``accountant``: the release would take some user past the total (nothing drawn or charged).

    Notes
    -----
    Calling this function computes the partition lengths (one pass over ``ddf``) and draws the stream
    key; the perturbation itself is lazy. Computing the result twice gives the same output (the key is
    fixed in the graph), so materialise it once and treat it as one release: every ``perturb`` call on
    the same data spends ε again.

    The lazy result therefore holds secret material: the stream key (with ``rng=None`` too) next to the
    graph of the private input. Whoever holds both can replay the randomness and undo the protection.
    Compute it, keep only the computed frame, and never pickle, persist to shared storage or hand out
    the lazy object or its graph (the computed frame holds neither the key nor the input).

    The ``release_id`` is drawn once per call (a random UUID, seeded or not), so every partition and
    every computation of the result carry the same ledger. Unlike a seeded in-memory release, whose id
    is a digest of the release, a seeded Dask release therefore gets a new id on every call.

    Examples
    --------
    >>> import dask_geopandas  # doctest: +SKIP
    >>> import geoldp.dask  # doctest: +SKIP
    >>> ddf = dask_geopandas.from_geopandas(trips, npartitions=8)  # doctest: +SKIP
    >>> out = geoldp.dask.perturb(ddf, pois, mechanism="atp", epsilon=4.0).compute()  # doctest: +SKIP
    """
    dask = _checked_dask(ddf, _CALLER, "gdf.ldp.perturb(...)")
    from geoldp import _release

    for name in ("traj_id_col", "time_col"):
        if name in options:
            raise ValueError(
                f"{_CALLER} does not group Point rows ({name!r}): a trajectory could span partitions. "
                "Build one LineString per trajectory first with geoldp.prepare.trajectories_from_points."
            )
    meta = ddf._meta
    req = _release.request(
        meta,
        points,
        mechanism=mechanism,
        epsilon=epsilon,
        options=options,
        keep_columns=keep_columns,
        snap_max_km=snap_max_km,
        rng=rng,
        caller=_CALLER,
        accountant=accountant,  # checked on the (empty) meta frame, before any pass over the data
        user_col=user_col,
    )
    stats, offsets, type_ids, users = _first_pass(dask, ddf, req.charged_col, req.area_crs, _CALLER, user_col)
    area = None if req.area_crs is None else _data_box(stats, req.area_crs)
    length_counts = sum((Counter(s[1]) for s in stats), Counter[int]())
    lengths = np.array(sorted(length_counts), dtype=np.int64)
    del stats  # the private user column and bounds do not outlive the checks
    plan = req.plan(
        columns=list(meta.columns),
        geom_col=meta.geometry.name,
        crs=ddf.crs,
        kind="Point" if type_ids == {0} else "LineString",
        # the released length of every trajectory (checks and warnings as for an in-memory frame)
        lengths=np.repeat(lengths, [length_counts[int(n)] for n in lengths]),
        stacklevel=2,
        users=users,
        area=area,
        extra_provenance={"partitioned": {"backend": "dask", "npartitions": int(ddf.npartitions)}},
    )
    del users, area
    # The ledger is completed once per graph, from public values only (released=None: a random id), so
    # every partition carries the same one and pandas keeps it when the partitions are concatenated.
    plan = replace(plan, provenance=req.finish(plan).record())
    return _lazy_frame(
        dask, ddf, meta[plan.columns].copy(), plan.provenance, _perturb_partition, plan=plan, offsets=offsets
    )


_REPORT_CALLER = "geoldp.dask.report"


def _report_partition(
    part: Any, *, des: Any, zones: Any, key: Any, ledger: Any, offsets: tuple[int, ...], number: int
) -> Any:
    """One partition's reports; its first row has global position ``offsets[number]``."""
    from geoldp.reports import release

    offset = int(offsets[number])
    with _in_partition(number, offset):
        out = release.report_partition(part, des, zones, key, offset=offset, caller=_REPORT_CALLER)
    out.attrs = {}
    attach(out, ledger)  # the same ledger in every partition: pandas keeps it on concat
    return out


def report(
    ddf: Any,
    zones: Any,
    *,
    statistic: str = "visited_zone",
    epsilon: float,
    oracle: str = "auto",
    pad_length: int = 1,
    rng: Any = None,
    accountant: Any = None,
    user_col: Any = None,
) -> Any:
    """One ε-LDP aggregate report per row of a Dask GeoDataFrame: the Dask :func:`geoldp.report`.

    Row ``i`` (global position) uses random stream ``i`` of one stream key drawn per call, so with the
    same ``rng`` the computed result equals ``geoldp.report(ddf.compute(), zones, ...)`` row for row,
    whatever the partitioning.

    Parameters
    ----------
    ddf : dask_geopandas.GeoDataFrame
        One LineString per row (or Point rows, each a one-point trajectory), with a CRS. Every row must be
        valid: an invalid row raises at compute time, naming its partition and position.
    zones : GeoDataFrame or GeoSeries of Polygons/MultiPolygons
        The public zones.
    statistic, epsilon, oracle, pad_length, rng, accountant, user_col
        As in :func:`geoldp.report`.

    Returns
    -------
    dask.dataframe.DataFrame
        Lazy; the same index and partitions as ``ddf``, the columns of :func:`geoldp.report`, and its
        ledger of every computed partition (plus the partitioning; the
        ``release_id`` is a random id, seeded or not).

    Raises
    ------
    ImportError
        If dask or dask-geopandas is missing.
    TypeError, ValueError
        Invalid frame, zones or parameters, before anything is drawn.
    BudgetError
        With ``accountant``: a user would go past the total (nothing drawn or charged).

    Warns
    -----
    GeoLDPWarning
        As :func:`geoldp.report`, when the reports cannot be told from no data.

    Notes
    -----
    As with :func:`perturb`, calling this computes the partition lengths (one pass) and draws the stream
    key; the lazy result holds that key next to the graph of the private input. Compute it once, keep
    only the computed table, and never persist or hand out the lazy object.

    Examples
    --------
    >>> import dask_geopandas, geoldp.dask  # doctest: +SKIP
    >>> from geoldp import zone_grid  # doctest: +SKIP
    >>> ddf = dask_geopandas.from_geopandas(trips, npartitions=8)  # doctest: +SKIP
    >>> rep = geoldp.dask.report(ddf, zone_grid(pois, cells=10), epsilon=4.0).compute()  # doctest: +SKIP
    """
    dask = _checked_dask(ddf, _REPORT_CALLER, "geoldp.report(gdf, ...)")
    from geoldp import _release
    from geoldp._core.area import area_record, warn_if_area_from
    from geoldp._core.randomness import resolve_rng
    from geoldp.reports import release
    from geoldp.zones import check_zones

    meta = ddf._meta
    z = check_zones(zones, caller=_REPORT_CALLER)
    des = release.scheme(
        statistic, z.size, epsilon, oracle=oracle, pad_length=pad_length, caller=_REPORT_CALLER
    )
    source = resolve_rng(rng)
    spend = _release.Spend(meta, accountant, user_col, caller=_REPORT_CALLER)  # before any pass
    record = area_record(zones)  # zones laid over trajectories: their area is compared with the data's
    area_crs = None if record is None else record["crs"]
    stats, offsets, type_ids, users = _first_pass(
        dask, ddf, spend.user_col, area_crs, _REPORT_CALLER, user_col
    )
    area = None if area_crs is None else _data_box(stats, area_crs)
    if area is not None:
        warn_if_area_from(area, zones, what="zones", stacklevel=2)
    n = int(sum(s[0] for s in stats))
    del stats, area
    spend.refuse(users, des.oracle.epsilon)
    del users
    release.warn_if_no_data_level(des, n, stacklevel=2)
    key = spend.draw(source)  # once, after every check
    prov = release.release_provenance(des, z, source.policy, "Point" if type_ids == {0} else "LineString")
    prov["input"]["on_invalid"] = "raise"
    prov["partitioned"] = {"backend": "dask", "npartitions": int(ddf.npartitions)}
    ledger = spend.finish(prov)
    meta = release.empty_table(des, meta.index)
    # OUE's packed bit vectors are bytes in an object column: not text, so Dask must not turn them into
    # strings
    with dask.config.set({"dataframe.convert-string": False}):
        bound = {"des": des, "zones": z, "key": key, "ledger": ledger, "offsets": offsets}
        return _lazy_frame(dask, ddf, meta, ledger, _report_partition, **bound)


class DaskLDPAccessor:
    """``ddf.ldp`` on a ``dask_geopandas.GeoDataFrame``: the Dask counterparts of ``gdf.ldp``.

    Registered on Dask DataFrames once :mod:`geoldp.dask` is imported and Dask's dataframe module is
    loaded (in either order); importing :mod:`geoldp.dask` alone does not import Dask. Stateless: holds a
    reference to the frame only.

    Raises
    ------
    AttributeError
        When used on a Dask DataFrame that is not a ``dask_geopandas.GeoDataFrame``.

    Examples
    --------
    >>> import dask_geopandas, geoldp.dask  # doctest: +SKIP
    >>> ddf = dask_geopandas.from_geopandas(trips, npartitions=8)  # doctest: +SKIP
    >>> out = ddf.ldp.perturb(pois, mechanism="atp", epsilon=4.0).compute()  # doctest: +SKIP
    """

    __slots__ = ("_obj",)

    def __init__(self, obj: Any) -> None:
        import dask_geopandas

        from geoldp._core import frames as _frames

        self._obj = _frames.accessor_target(obj, dask_geopandas.GeoDataFrame)

    perturb = method_of(
        perturb, "Perturb every row under ε-LDP, lazily: :func:`geoldp.dask.perturb` on this frame."
    )
    report = method_of(
        report, "One ε-LDP aggregate report per row, lazily: :func:`geoldp.dask.report` on this frame."
    )


def register_accessor() -> None:
    """Register ``ddf.ldp`` (:class:`DaskLDPAccessor`) on Dask DataFrames; imports Dask's dataframe module.

    Called for you when this module is imported after Dask's dataframe module, or when that module is
    imported after this one; calling it again does nothing.
    """
    import dask.dataframe as dd
    from dask.dataframe.extensions import register_dataframe_accessor

    if not hasattr(dd.DataFrame, "ldp"):
        register_dataframe_accessor("ldp")(DaskLDPAccessor)


if "dask.dataframe" in sys.modules:  # else geoldp's import hook calls register_accessor() when it loads
    register_accessor()
