"""Visit density and origin-destination flows over public zones (:mod:`geoldp.zones`), and their errors.

``zones="auto"`` is :func:`geoldp.zone_grid` of P with cells of :data:`geoldp.zones.AUTO_CELL_KM` km.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from geoldp._core.docstrings import doc
from geoldp._core.frames import TrajectoryArrays, as_pointset, trajectory_arrays
from geoldp._core.pointset import PointSet
from geoldp.metrics._distributions import jensen_shannon
from geoldp.zones import AUTO_CELL_KM, Zones, check_zones, zone_grid


def zone_arg(zones: Any, pts: PointSet | None, caller: str) -> Zones | None:
    """The zones of a metric: ``None``, validated polygons, or ``"auto"`` (a km grid over P)."""
    if zones is None:
        return None
    if isinstance(zones, Zones):
        return zones
    if isinstance(zones, str):
        if zones != "auto":
            raise ValueError(f"Got zones={zones!r}; `zones` of {caller} must be 'auto', None or polygons.")
        if pts is None:
            raise ValueError(
                f"zones='auto' in {caller} builds the zones from the public point set: pass `points=`, or "
                "pass `zones=` (a GeoDataFrame of polygons)."
            )
        return check_zones(zone_grid(pts, cell_km=AUTO_CELL_KM), caller=caller)
    return check_zones(zones, caller=caller, accepts=" or 'auto'")


def _required_zones(zones: Any, pts: PointSet | None, caller: str) -> Zones:
    zn = zone_arg(zones, pts, caller)
    if zn is None:
        raise ValueError(f"{caller} needs zones: pass `zones=` (polygons) or zones='auto' with `points=`.")
    return zn


def zone_counts_of(tr: TrajectoryArrays, zn: Zones, pts: PointSet | None = None) -> np.ndarray:
    """Distinct trajectories visiting each zone (zone order)."""
    z = zn.of_trajectories(tr, pts)
    ok = z >= 0
    key = np.unique(tr.codes[ok] * np.int64(zn.size) + z[ok])
    return np.bincount(key % zn.size, minlength=zn.size).astype(np.float64)


def od_of(tr: TrajectoryArrays, zn: Zones, pts: PointSet | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sparse OD counts: keys ``origin * n_zones + destination`` (zone positions) and counts."""
    z = zn.of_trajectories(tr, pts)
    o, d = z[tr.offsets[:-1]], z[tr.offsets[1:] - 1]
    ok = (o >= 0) & (d >= 0)
    keys, counts = np.unique(o[ok] * np.int64(zn.size) + d[ok], return_counts=True)
    return keys, counts.astype(np.float64)


def counts_vector(obj: Any, zn: Zones, caller: str, name: str) -> np.ndarray:
    """Zone counts given as an array (zone order), a Series or a DataFrame with an 'estimate' column."""
    if isinstance(obj, pd.DataFrame):
        if "estimate" not in obj.columns:
            raise ValueError(
                f"The {name} DataFrame of {caller} needs an 'estimate' column (one row per zone)."
            )
        obj = obj["estimate"]
    if isinstance(obj, pd.Series):
        extra = obj.index.difference(zn.index)
        if len(extra):
            raise ValueError(
                f"The {name} of {caller} are indexed by labels that are not zones' index labels."
            )
        obj = obj.reindex(zn.index, fill_value=0.0)
    arr = np.asarray(obj, dtype=np.float64)
    if arr.shape != (zn.size,) or not np.all(np.isfinite(arr)):
        raise ValueError(
            f"The {name} of {caller} must be {zn.size} finite counts, one per zone (zones' order)."
        )
    return np.clip(arr, 0.0, None)


def od_sparse(obj: Any, zn: Zones, caller: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    """OD counts: an (n_zones, n_zones) array, a long DataFrame or an answer table indexed by the pairs."""
    if isinstance(obj, pd.DataFrame) and list(obj.index.names) == ["origin", "destination"]:
        obj = obj.reset_index()
    if isinstance(obj, pd.DataFrame):
        value = next((c for c in ("estimate", "count") if c in obj.columns), None)
        if value is None or not {"origin", "destination"} <= set(obj.columns):
            raise ValueError(
                f"The {name} DataFrame of {caller} needs columns 'origin', 'destination' (zones' index "
                "labels) and 'estimate' or 'count'."
            )
        o = zn.index.get_indexer(obj["origin"])
        d = zn.index.get_indexer(obj["destination"])
        if (o < 0).any() or (d < 0).any():
            raise ValueError(f"The {name} of {caller} name an origin or destination that is not a zone.")
        v = np.asarray(obj[value], dtype=np.float64)
        keys = o.astype(np.int64) * zn.size + d
    else:
        arr = np.asarray(obj, dtype=np.float64)
        if arr.shape != (zn.size, zn.size):
            raise ValueError(
                f"The {name} of {caller} must be an ({zn.size}, {zn.size}) array or a long DataFrame."
            )
        keys = np.flatnonzero(arr)
        v = arr.ravel()[keys]
    if not np.all(np.isfinite(v)):
        raise ValueError(f"The {name} of {caller} must be finite.")
    keys, inv = np.unique(keys, return_inverse=True)
    return keys, np.bincount(inv, weights=np.clip(v, 0.0, None))


def normalise(v: np.ndarray) -> np.ndarray | None:
    total = float(v.sum())
    return v / total if total > 0 else None


def pmf_distances(p: np.ndarray | None, q: np.ndarray | None) -> tuple[float, float]:
    """L1 distance (in [0, 2]) and Jensen-Shannon divergence (base 2, in [0, 1]) of two pmfs."""
    if p is None or q is None:
        return math.nan, math.nan
    return float(np.abs(p - q).sum()), jensen_shannon(p, q)


def sparse_distances(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[float, float]:
    """L1 and JSD of two sparse count vectors (keys, counts), normalised, over the union of their keys."""
    keys, inv = np.unique(np.concatenate([a[0], b[0]]), return_inverse=True)
    p = np.bincount(inv[: a[0].size], weights=a[1], minlength=keys.size)
    q = np.bincount(inv[a[0].size :], weights=b[1], minlength=keys.size)
    return pmf_distances(normalise(p), normalise(q))


def zone_visit_counts(trajectories: Any, zones: Any = "auto", *, points: Any = None) -> pd.Series:
    """Number of distinct trajectories visiting each zone.

    A trajectory visits zone z when one of its vertices lies in z (closed polygon; a vertex on a shared
    edge counts for the zone that comes first). Vertices outside every zone are ignored.

    Parameters
    ----------
    trajectories : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories (any CRS), or index arrays into ``points``.
    zones : "auto" or GeoDataFrame/GeoSeries of polygons, default "auto"
        Zones in any CRS. ``"auto"``: :func:`geoldp.zone_grid` of ``points`` (1.5 km cells).
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index input and for ``zones="auto"``.

    Returns
    -------
    pandas.Series of float
        Indexed by the zones' index, named ``visits``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.02, 0.0], [0.0, 0.02]])
    >>> zone_visit_counts([[0, 0, 1], [1], [2]], points=P).tolist()
    [1.0, 2.0, 1.0, 0.0]
    """
    caller = "zone_visit_counts"
    pts = as_pointset(points, caller=caller) if points is not None else None
    zn = _required_zones(zones, pts, caller)
    tr = trajectory_arrays(trajectories, pts, name="trajectories", caller=caller)
    return pd.Series(zone_counts_of(tr, zn, pts), index=zn.index, name="visits")


def od_counts(trajectories: Any, zones: Any = "auto", *, points: Any = None) -> pd.DataFrame:
    """Origin-destination counts: trajectories by the zone of their first and of their last vertex.

    Parameters
    ----------
    trajectories, zones, points
        As in :func:`zone_visit_counts`. Trajectories whose first or last vertex is outside every zone are
        left out.

    Returns
    -------
    pandas.DataFrame
        Long format, one row per non-empty pair: ``origin``, ``destination`` (zones' index labels) and
        ``count``, sorted by origin then destination position.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.02, 0.0], [0.0, 0.02]])
    >>> od_counts([[0, 1], [0, 2, 1], [2]], points=P).to_dict("list")
    {'origin': [0, 2], 'destination': [1, 2], 'count': [2.0, 1.0]}
    """
    caller = "od_counts"
    pts = as_pointset(points, caller=caller) if points is not None else None
    zn = _required_zones(zones, pts, caller)
    tr = trajectory_arrays(trajectories, pts, name="trajectories", caller=caller)
    keys, counts = od_of(tr, zn, pts)
    return pd.DataFrame(
        {
            "origin": zn.index[keys // zn.size],
            "destination": zn.index[keys % zn.size],
            "count": counts,
        }
    )


#: What zone_visit_error and od_flow_error return.
_L1_JSD = """
Returns
-------
dict
    Keys ``l1`` and ``jsd``."""


@doc(returns=_L1_JSD)
def zone_visit_error(
    original: Any, perturbed: Any, zones: Any = "auto", *, points: Any = None
) -> dict[str, float]:
    """Error of the visit density over zones: L1 and JSD of the normalised distinct-visit counts.

    With c(z) the number of distinct original trajectories visiting zone z (:func:`zone_visit_counts`) and
    ĉ(z) the same for the perturbed data (or an estimate of c), p = c / Σc and q = ĉ / Σĉ:

    - ``l1`` = Σ_z abs(p(z) − q(z)), in [0, 2] (0 best; 2 for disjoint supports);
    - ``jsd`` = ½ KL(p ‖ m) + ½ KL(q ‖ m), m = (p + q)/2, base 2, in [0, 1] (0 best).

    Both are NaN when either side has no visit in any zone. A constant release puts all its mass in one
    zone and scores close to 2 and 1.

    Parameters
    ----------
    original : GeoDataFrame, GeoSeries or sequence of array_like of int
        Original trajectories.
    perturbed : GeoDataFrame, GeoSeries, sequence of array_like of int, or counts
        Perturbed trajectories (any number of rows), or zone counts: an array in zone order, a Series indexed
        by the zones' index, or a DataFrame with an ``estimate`` column (e.g. a collector-side estimate).
        Negative counts are clipped to 0 before normalising.
    zones : "auto" or GeoDataFrame/GeoSeries of polygons, default "auto"
        See :func:`zone_visit_counts`.
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index input and for ``zones="auto"``.

    {returns}

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.02, 0.0], [0.0, 0.02]])
    >>> r = zone_visit_error([[0], [1]], [[0], [0]], points=P)   # p = (1/2, 1/2), q = (1, 0)
    >>> r["l1"], round(r["jsd"], 6)       # JSD = (1/2)(1/2 log2(2/3) + 1/2) + (1/2) log2(4/3)
    (1.0, 0.311278)
    """
    caller = "zone_visit_error"
    pts = as_pointset(points, caller=caller) if points is not None else None
    zn = _required_zones(zones, pts, caller)
    to = trajectory_arrays(original, pts, name="original", caller=caller)
    c = zone_counts_of(to, zn, pts)
    chat = _zone_side(perturbed, pts, zn, caller)
    l1, jsd = pmf_distances(normalise(c), normalise(chat))
    return {"l1": l1, "jsd": jsd}


def _is_counts(obj: Any) -> bool:
    return isinstance(obj, (pd.Series, pd.DataFrame)) or (
        isinstance(obj, np.ndarray) and obj.dtype.kind == "f"
    )


def _zone_side(obj: Any, pts: PointSet | None, zn: Zones, caller: str) -> np.ndarray:
    if _is_counts(obj):
        return counts_vector(obj, zn, caller, "zone counts")
    return zone_counts_of(trajectory_arrays(obj, pts, name="perturbed", caller=caller), zn, pts)


@doc(returns=_L1_JSD)
def od_flow_error(
    original: Any, perturbed: Any, zones: Any = "auto", *, points: Any = None
) -> dict[str, float]:
    """Error of the origin-destination flows between zones: L1 and JSD of the normalised OD matrices.

    With f(a, b) the number of original trajectories whose first vertex lies in zone a and last vertex in
    zone b (:func:`od_counts`), f̂ the same for the perturbed data (or an estimate), p = f / Σf and
    q = f̂ / Σf̂ over all zone pairs:

    - ``l1`` = Σ_{a,b} abs(p(a, b) − q(a, b)), in [0, 2] (0 best);
    - ``jsd``: Jensen-Shannon divergence of p and q, base 2, in [0, 1] (0 best).

    NaN when either side has no trajectory starting and ending in a zone.

    Parameters
    ----------
    original : GeoDataFrame, GeoSeries or sequence of array_like of int
        Original trajectories.
    perturbed : GeoDataFrame, GeoSeries, sequence of array_like of int, or counts
        Perturbed trajectories, or OD counts: an (n_zones, n_zones) float array (zone order) or a long
        DataFrame with ``origin``, ``destination`` (zones' index labels) and ``estimate`` or ``count``.
        Negative counts are clipped to 0.
    zones, points
        As in :func:`zone_visit_error`.

    {returns}

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.02, 0.0], [0.0, 0.02]])
    >>> od_flow_error([[0, 1], [1, 0]], [[0, 1], [0, 1]], points=P)["l1"]   # (½, ½) vs (1, 0)
    1.0
    """
    caller = "od_flow_error"
    pts = as_pointset(points, caller=caller) if points is not None else None
    zn = _required_zones(zones, pts, caller)
    to = trajectory_arrays(original, pts, name="original", caller=caller)
    l1, jsd = sparse_distances(od_of(to, zn, pts), _od_side(perturbed, pts, zn, caller))
    return {"l1": l1, "jsd": jsd}


def _od_side(obj: Any, pts: PointSet | None, zn: Zones, caller: str) -> tuple[np.ndarray, np.ndarray]:
    if _is_counts(obj):
        return od_sparse(obj, zn, caller, "OD counts")
    return od_of(trajectory_arrays(obj, pts, name="perturbed", caller=caller), zn, pts)
