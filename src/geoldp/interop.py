"""MovingPandas and trackintel in and out of geoldp.

* :func:`from_movingpandas` / :func:`from_trackintel`: a ``TrajectoryCollection`` or trackintel
  ``Triplegs`` → a GeoDataFrame of LineStrings, one row per trajectory, **the trajectory id as the index**
  (``perturb`` keeps the index, so the ids survive the release without ``keep_columns``).
* :func:`to_movingpandas` / :func:`to_trackintel`: a release → a ``TrajectoryCollection`` / ``Triplegs``.

**Times are not protected**: geoldp perturbs locations only, so the way back uses placeholder times
unless the original ones are passed as ``times=``, which raises a :class:`~geoldp.PrivacyWarning` (the
times are then released as they are, outside the ε-LDP guarantee). :doc:`/user_guide` ("MovingPandas and
trackintel") gives the placeholder times, the ids kept and the optional extras to install.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd

from geoldp._core.errors import GeoLDPWarning, PrivacyWarning
from geoldp._core.validation import missing_column

#: The time of the first vertex when no ``times`` are given (then one second per vertex).
PLACEHOLDER_START = pd.Timestamp("1970-01-01")  # naive, as movingpandas keeps times; UTC for trackintel

_TIMES_WARNING = (
    "times= re-attaches the original timestamps to the released trajectories: they are NOT protected by "
    "the mechanism (geoldp perturbs locations only) and are released as they are."
)


def _optional(name: str) -> Any:
    """The optional extra ``name`` (movingpandas or trackintel), or an ImportError saying how to get it."""
    import importlib

    try:
        with warnings.catch_warnings():
            # movingpandas warns on import about its own optional extras (e.g. Stone Soup)
            warnings.simplefilter("ignore", UserWarning)
            return importlib.import_module(name)
    except ImportError:
        raise ImportError(f"This needs {name}: pip install 'geoldp[{name}]'.") from None


@contextmanager
def _quiet_deprecations() -> Iterator[None]:
    """Silence the pandas 3 deprecations that movingpandas triggers; they are not the user's to fix."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        yield


def _check_released(released: Any, caller: str) -> Any:
    import geopandas as gpd

    if not isinstance(released, gpd.GeoDataFrame):
        raise TypeError(
            f"The 'released' parameter of {caller} must be a GeoDataFrame of LineStrings (the output of "
            f"gdf.ldp.perturb). Got {type(released).__name__}."
        )
    if released.crs is None:
        raise ValueError(f"The 'released' frame of {caller} has no CRS. Declare it with set_crs().")
    geoms = released.geometry
    bad = np.flatnonzero(np.asarray(geoms.isna() | geoms.is_empty | (geoms.geom_type != "LineString")))
    if bad.size:
        raise TypeError(
            f"{caller} needs one non-empty LineString per row; row position {int(bad[0])} is not one "
            "(Point releases: build LineStrings with geoldp.prepare.trajectories_from_points first)."
        )
    return released


def _utc(times: pd.Series) -> pd.Series:
    """Timezone-aware timestamps (trackintel requires them); naive ones are taken as UTC."""
    t = pd.to_datetime(times)
    return t.dt.tz_localize("UTC") if t.dt.tz is None else t


# ------------------------------------------------------------------------------------------------------
# MovingPandas


def from_movingpandas(tc: Any) -> Any:
    """A MovingPandas ``TrajectoryCollection`` (or one ``Trajectory``) as one LineString row per trajectory.

    Parameters
    ----------
    tc : movingpandas.TrajectoryCollection or movingpandas.Trajectory
        The trajectories (private data).

    Returns
    -------
    geopandas.GeoDataFrame
        One LineString per trajectory in collection order, index = the trajectory ids (named
        ``"traj_id"``), an ``"obj_id"`` column when the trajectories have one (use it as
        ``user_col`` with a :class:`~geoldp.BudgetAccountant`), and the collection's CRS. The times are
        left behind.

    Raises
    ------
    ImportError
        movingpandas is not installed.
    TypeError
        ``tc`` is neither a TrajectoryCollection nor a Trajectory.

    Examples
    --------
    >>> trips = geoldp.from_movingpandas(tc)  # doctest: +SKIP
    >>> released = trips.ldp.perturb(points, epsilon=4.0)  # doctest: +SKIP
    """
    import geopandas as gpd

    mpd = _optional("movingpandas")
    caller = "geoldp.from_movingpandas"
    if isinstance(tc, mpd.Trajectory):
        trajs = [tc]
    elif isinstance(tc, mpd.TrajectoryCollection):
        trajs = list(tc.trajectories)
    else:
        raise TypeError(
            f"The 'tc' parameter of {caller} must be a movingpandas TrajectoryCollection or Trajectory. "
            f"Got {type(tc).__name__}."
        )
    if not trajs:
        raise ValueError(f"The collection given to {caller} has no trajectories.")
    data: dict[str, Any] = {}
    obj = [t.obj_id for t in trajs]
    if any(o is not None for o in obj):
        data["obj_id"] = obj
    index = pd.Index([t.id for t in trajs], name="traj_id")
    lines = [t.to_linestring() for t in trajs]
    return gpd.GeoDataFrame(data, geometry=lines, index=index, crs=trajs[0].crs)


def to_movingpandas(released: Any, *, times: Any = None, obj_id_col: Any = None) -> Any:
    """A release of LineStrings back to a MovingPandas ``TrajectoryCollection``.

    Parameters
    ----------
    released : geopandas.GeoDataFrame
        One LineString per row (e.g. ``from_movingpandas(tc).ldp.perturb(...)``); the index gives the
        trajectory ids.
    times : movingpandas.TrajectoryCollection or mapping, optional
        ``None`` (default): placeholder times, vertex ``k`` at ``PLACEHOLDER_START + k`` s (no
        information). Otherwise the original times: a TrajectoryCollection with the same trajectory ids
        (its timestamps, one per released vertex), or a mapping ``{traj_id: sequence of timestamps}``.
        **The times are not protected**: a :class:`~geoldp.PrivacyWarning` says so.
    obj_id_col : column label, optional
        A column of ``released`` holding each trajectory's object id (released only if it was kept
        with ``keep_columns``, unprotected).

    Returns
    -------
    movingpandas.TrajectoryCollection
        One Trajectory per row, id = the row's index label, in the release's CRS.

    Raises
    ------
    ImportError
        movingpandas is not installed.
    TypeError, ValueError
        Not a LineString frame; a trajectory missing from ``times`` or with another number of
        timestamps than vertices (named by row position; e.g. the trace was resampled before the
        release: pass times per released vertex).

    Warns
    -----
    PrivacyWarning
        Whenever ``times`` is given.
    """
    import geopandas as gpd
    import shapely

    mpd = _optional("movingpandas")
    caller = "geoldp.to_movingpandas"
    released = _check_released(released, caller)
    if obj_id_col is not None and obj_id_col not in released.columns:
        raise missing_column("obj_id_col", caller, obj_id_col, released.columns, where="'released'")
    lookup: Mapping[Any, Any] | None = None
    if times is not None:
        if isinstance(times, mpd.TrajectoryCollection):
            lookup = {t.id: t.df.index for t in times.trajectories}
        elif isinstance(times, Mapping):
            lookup = times
        else:
            raise TypeError(
                f"The 'times' parameter of {caller} must be None, a movingpandas TrajectoryCollection or "
                f"a mapping {{traj_id: timestamps}}. Got {type(times).__name__}."
            )
        warnings.warn(_TIMES_WARNING, PrivacyWarning, stacklevel=2)
    trajs = []
    for pos, (label, geom) in enumerate(zip(released.index, released.geometry, strict=True)):
        xy = shapely.get_coordinates(geom)
        if lookup is None:
            t = pd.DatetimeIndex(PLACEHOLDER_START + pd.to_timedelta(np.arange(len(xy)), unit="s"))
        else:
            if label not in lookup:
                raise ValueError(
                    f"'times' given to {caller} has no timestamps for the row at position {pos}."
                )
            t = pd.DatetimeIndex(lookup[label])
            if len(t) != len(xy):
                raise ValueError(
                    f"'times' given to {caller} has {len(t)} timestamps for the row at position {pos}, which "
                    f"has {len(xy)} vertices. Pass one timestamp per released vertex."
                )
        df = gpd.GeoDataFrame(
            {"geometry": gpd.points_from_xy(xy[:, 0], xy[:, 1])}, index=t.rename("t"), crs=released.crs
        )
        obj = None if obj_id_col is None else released[obj_id_col].iloc[pos]
        with _quiet_deprecations():
            trajs.append(mpd.Trajectory(df, label, obj_id=obj))
    with _quiet_deprecations():
        return mpd.TrajectoryCollection(trajs)


# ------------------------------------------------------------------------------------------------------
# trackintel


def from_trackintel(triplegs: Any) -> Any:
    """The trackintel ``Triplegs`` as a GeoDataFrame of LineStrings: tripleg id as index, ``user_id`` kept.

    Parameters
    ----------
    triplegs : trackintel.Triplegs or geopandas.GeoDataFrame
        Triplegs (LineString geometry, ``user_id``, ``started_at``, ``finished_at``).

    Returns
    -------
    geopandas.GeoDataFrame
        The geometry and ``user_id`` (use it as ``user_col`` with a :class:`~geoldp.BudgetAccountant`;
        it is not released unless kept), same index, order and CRS. The times are left behind.

    Raises
    ------
    ImportError
        trackintel is not installed.
    TypeError, ValueError
        Not a GeoDataFrame, no ``user_id`` column, or non-LineString rows.
    """
    import geopandas as gpd

    _optional("trackintel")
    caller = "geoldp.from_trackintel"
    if not isinstance(triplegs, gpd.GeoDataFrame):
        raise TypeError(
            f"The 'triplegs' parameter of {caller} must be trackintel Triplegs. "
            f"Got {type(triplegs).__name__}."
        )
    if "user_id" not in triplegs.columns:
        raise ValueError(
            f"The 'triplegs' given to {caller} have no 'user_id' column: not trackintel Triplegs."
        )
    _check_released(triplegs, caller)
    return gpd.GeoDataFrame(
        {"user_id": triplegs["user_id"].to_numpy(copy=True)},
        geometry=triplegs.geometry.to_numpy().copy(),
        index=triplegs.index.copy(),
        crs=triplegs.crs,
    )


def to_trackintel(released: Any, *, times: Any = None, user_col: Any = "user_id") -> Any:
    """A release of LineStrings back to trackintel ``Triplegs``.

    Parameters
    ----------
    released : geopandas.GeoDataFrame
        One LineString per row (e.g. ``from_trackintel(tpls).ldp.perturb(...)``); the index gives the
        tripleg ids.
    times : pandas.DataFrame, optional
        ``None`` (default): placeholder ``started_at``/``finished_at`` (``PLACEHOLDER_START``, no
        information). Otherwise a frame with ``started_at`` and ``finished_at`` indexed by tripleg id,
        e.g. the original Triplegs. **The times are not protected**: a :class:`~geoldp.PrivacyWarning`
        says so.
    user_col : column label, default "user_id"
        The column of ``released`` with the user id (present only if it was kept with ``keep_columns``,
        unprotected). Without it every tripleg gets its own pseudo-user (its index label), so no two
        triplegs are linked.

    Returns
    -------
    trackintel.Triplegs
        Index, order and CRS of ``released``. Degenerate released lines (all vertices on one public
        point) are not valid geometries: then the Triplegs are built without trackintel's validation
        and a :class:`~geoldp.GeoLDPWarning` gives their count.

    Raises
    ------
    ImportError
        trackintel is not installed.
    TypeError, ValueError
        Not a LineString frame; ``times`` lacks the columns or a tripleg (named by row position).

    Warns
    -----
    PrivacyWarning
        Whenever ``times`` is given.
    """
    import geopandas as gpd

    ti = _optional("trackintel")
    caller = "geoldp.to_trackintel"
    released = _check_released(released, caller)
    n = len(released)
    if times is None:
        started = pd.Series(PLACEHOLDER_START.tz_localize("UTC"), index=released.index)
        finished = started.copy()
    else:
        if not isinstance(times, pd.DataFrame) or not {"started_at", "finished_at"} <= set(times.columns):
            raise TypeError(
                f"The 'times' parameter of {caller} must be a DataFrame with 'started_at' and 'finished_at' "
                "columns indexed by tripleg id (e.g. the original Triplegs)."
            )
        pos = np.flatnonzero(~released.index.isin(times.index))
        if pos.size:
            raise ValueError(
                f"'times' given to {caller} has no row for the tripleg at position {int(pos[0])}."
            )
        warnings.warn(_TIMES_WARNING, PrivacyWarning, stacklevel=2)
        started = times["started_at"].reindex(released.index)
        finished = times["finished_at"].reindex(released.index)
    users = (
        released[user_col].to_numpy(copy=True) if user_col in released.columns else released.index.to_numpy()
    )
    frame = gpd.GeoDataFrame(
        {
            "user_id": users,
            "started_at": _utc(started).array,
            "finished_at": _utc(finished).array,
        },
        geometry=released.geometry.to_numpy().copy(),
        index=released.index.copy(),
        crs=released.crs,
    )
    invalid = int((~frame.geometry.is_valid).sum()) if n else 0
    if invalid:
        warnings.warn(
            f"{invalid} released tripleg(s) are degenerate lines (all vertices on one public point), which "
            "trackintel does not accept as valid: the Triplegs are built without its validation.",
            GeoLDPWarning,
            stacklevel=2,
        )
    return ti.Triplegs(frame, validate=not invalid)
