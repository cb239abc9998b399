"""Input handling shared by the collector-side estimators (reusable by evaluate, the demo and the CLI).

- :func:`resolve_release_mechanism`: the public mechanism, from a name + ε + options, a mechanism object, a
  ledger dict, or the release's own ledger; conflicts are errors.
- :func:`resolve_public_points`: a :class:`~geoldp.PointSet` from a PointSet, a GeoDataFrame/GeoSeries of
  Points or an (m, 2) array of (lon, lat).
- :func:`released_sequences`: released LineStrings (any CRS) or index arrays → index arrays into P. A
  released vertex must be a public point (within 1 mm), otherwise the release and P do not match.
- :func:`zone_of_points`, :func:`region_members`: which public points lie in each zone / region.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import shapely
from pyproj import CRS

from geoldp._core import frames as _frames
from geoldp._core.geo import haversine_m
from geoldp._core.ledger import ReleaseLedger, ledger_of, record_problem
from geoldp._core.pointset import PointSet
from geoldp._core.validation import check_release_epsilon
from geoldp.trajectory import engine
from geoldp.zones import check_polygons, first_zone, lonlat_to

__all__ = [
    "check_release_points",
    "Release",
    "region_members",
    "released_sequences",
    "resolve_public_points",
    "resolve_release_mechanism",
    "zone_of_points",
]

#: A released vertex farther than this from every public point means the release does not match P.
MATCH_TOLERANCE_M = 1e-3
_LEDGER_SKIP = ("mechanism", "epsilon", "granularity_value")


def check_release_points(released: Any, ps: PointSet, *, caller: str) -> None:
    """Refuse public points that are not those the release's ledger records (by their digest)."""
    from geoldp._core.point_record import digest_of

    ledger = ledger_of(released)
    record: Any = ledger.points if ledger is not None else None
    record = record if isinstance(record, dict) else {}
    digest = record.get("digest")
    if isinstance(digest, str) and digest_of(ps) != digest:
        raise ValueError(
            f"The 'points' parameter of {caller} is not the public point set of the release: its ledger "
            f"records another one ({record.get('size')} points; these have {ps.size}, or they differ in "
            "place or order). Pass the exact points the release was perturbed onto "
            "(geoldp.layers.points_for rebuilds them from the ledger's recipe)."
        )


def _refuse_continuous(name: str, caller: str) -> None:
    """The estimators simulate releases over P with TP, ATP or PointEM; a TraCS release is not one."""
    cls = engine.MECHANISMS.get(str(name).lower())
    if getattr(cls, "continuous", False):
        raise ValueError(
            f"The release given to {caller} was made with {str(name).lower()!r}: geoldp's estimators model "
            "TP, ATP and PointEM releases (their population model runs the mechanism over P), not "
            "continuous-space ones. Its answer is its own counts, snapped to P: "
            f"geoldp.designs.design({str(name).lower()!r}).answer(release, question, points=P, zones=zones) "
            "(no interval); geoldp evaluate scores it against originals."
        )


def _mechanism_from_ledger(ledger: ReleaseLedger, caller: str) -> Any:
    rule = ledger.user_budget
    if isinstance(rule, dict) and rule.get("strategy") == "split":  # rows with different budgets
        raise ValueError(
            f"The release given to {caller} shares each user's epsilon over her trips (user_budget='split'), "
            "so its rows have different budgets; estimate each part of "
            "geoldp.budget_strategies.release_parts(released) and add the estimates."
        )
    name, eps = ledger.mechanism, ledger.epsilon
    _refuse_continuous(name, caller)
    opts = dict(ledger.settings.get("options") or {})
    for key in _LEDGER_SKIP:
        opts.pop(key, None)
    # JSON forms back to the option types (the ledger stores Fractions as strings, tuples as lists)
    if "fractions" in opts:
        opts["fractions"] = tuple(Fraction(f) for f in opts["fractions"])
    if "epsilon_fraction" in opts:
        opts["epsilon_fraction"] = Fraction(opts["epsilon_fraction"])
    if "granularity_candidates" in opts:
        opts["granularity_candidates"] = tuple(opts["granularity_candidates"])
    if isinstance(opts.get("granularity"), list):
        opts["granularity"] = tuple((float(b), int(g)) for b, g in opts["granularity"])
    return engine.resolve_mechanism(name, float(eps), opts, caller=caller)


def resolve_release_mechanism(
    mechanism: Any, epsilon: Any, options: dict | None, released: Any, *, caller: str
) -> Any:
    """The mechanism that produced ``released`` (public configuration only).

    Parameters
    ----------
    mechanism : None, str, TP/ATP/PointEM object or dict
        ``None`` reads the release's ledger (:func:`geoldp.ledger_of`; none is an error); a dict is such a
        ledger's record. A name must agree with the ledger's.
    epsilon : float, optional
        Needed with a name; must agree with the object's or the ledger's ε when both are given.
    options : dict, optional
        Mechanism options with a name.
    """
    ledger = ledger_of(released)
    if isinstance(mechanism, dict):
        problem = record_problem(mechanism)
        if problem is not None:
            raise ValueError(
                f"The ledger given to {caller} is not a geoldp ledger ({problem}); pass mechanism= and "
                "epsilon= explicitly."
            )
        ledger, mechanism = ReleaseLedger.from_record(mechanism), None
    if mechanism is None:
        if ledger is None:
            raise ValueError(
                f"{caller} needs the mechanism's public configuration: pass mechanism= (a name with "
                "epsilon=, or a TP/ATP/PointEM object), or a release that carries its ledger (the "
                "output of GeoDataFrame.ldp.perturb, or a release file read with its ledger)."
            )
        mech = _mechanism_from_ledger(ledger, caller)
        if options:
            raise TypeError(f"{caller} got mechanism options together with a ledger; pass only one of them.")
    else:
        if epsilon is not None:  # the one range of every release, before a mechanism is built (or warns)
            check_release_epsilon(epsilon, caller=caller)
        mech = engine.resolve_mechanism(mechanism, epsilon, options, caller=caller)
        _refuse_continuous(mech.name, caller)
        epsilon = None  # checked against the object by the engine
    if epsilon is not None:
        from geoldp._core.validation import check_epsilon

        eps = check_epsilon(epsilon, caller=caller)
        if eps != mech.epsilon:
            raise ValueError(
                f"The 'epsilon' parameter of {caller} ({eps!r}) conflicts with the ledger of the release "
                f"(epsilon={mech.epsilon!r}); omit epsilon= to use the ledger's."
            )
    if ledger is not None and mechanism is not None:
        led_name, led_eps = ledger.mechanism, ledger.epsilon
        if led_name.lower() != mech.name or led_eps != mech.epsilon:
            raise ValueError(
                f"The mechanism given to {caller} ({mech.name}, epsilon={mech.epsilon!r}) conflicts with the "
                f"ledger of the release ({led_name}, epsilon={led_eps!r}); omit mechanism= to use the ledger."
            )
    check_release_epsilon(mech.epsilon, caller=caller)  # the range every release is made in
    return mech


def resolve_public_points(points: Any, *, caller: str) -> tuple[PointSet, Any]:
    """``(PointSet, source)`` for a PointSet, a GeoDataFrame/GeoSeries of Points or an (m, 2) array."""
    if isinstance(points, np.ndarray | list | tuple) and not isinstance(points, PointSet):
        arr = np.asarray(points, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != 2:
            raise TypeError(
                f"The 'points' parameter of {caller} must be a PointSet, a GeoDataFrame/GeoSeries of "
                "Points or an (m, 2) array of (lon, lat)."
            )
        return PointSet(arr[:, 0], arr[:, 1]), None
    return _frames.resolve_points(points, caller=caller)


@dataclass(frozen=True)
class Release:
    """Released trajectories as index arrays into P, and how to put results back into the input's shape."""

    seqs: list
    frame: Any = None  # the released GeoDataFrame (None for index input)
    ft: Any = None  # its TrajectoryArrays


def released_sequences(released: Any, ps: PointSet, *, caller: str) -> Release:
    """Index arrays into P of the released trajectories (GeoDataFrame/GeoSeries in any CRS, or index arrays).

    Refuses a released vertex that is not a public point (farther than 1 mm from every point of P),
    naming its row position, never coordinates.
    """
    import geopandas as gpd

    if isinstance(released, gpd.GeoSeries):
        released = gpd.GeoDataFrame(geometry=released)
    if isinstance(released, gpd.GeoDataFrame):
        frame = _frames.check_frame(released, caller=caller, name="released")
        ledger = ledger_of(released)
        traj_id_col = None if ledger is None else (ledger.settings.get("input") or {}).get("traj_id_col")
        if traj_id_col is not None and traj_id_col not in frame.columns:
            traj_id_col = None
        # a release collected in the field keeps a device's one-point trajectory as a Point row
        ft = _frames.extract(
            frame, traj_id_col=traj_id_col, caller=caller, warn_zm=False, one_point_rows=True
        )
        idx, dist = ps.nearest(ft.lon, ft.lat)
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        far = np.asarray(dist).reshape(-1) > MATCH_TOLERANCE_M
        if far.any():
            row = int(ft.vertex_rows[np.flatnonzero(far)[0]])
            raise ValueError(
                f"Row position {row} of the released trajectories passed to {caller} has a vertex that is "
                f"not a public point ({int(far.sum())} such vertices in all). Pass the same public point "
                "set the mechanism used."
            )
        seqs = [idx[a:b] for a, b in zip(ft.offsets[:-1], ft.offsets[1:], strict=True)]
        return Release(seqs, frame, ft)
    seqs = engine.validate_trajectories(released, ps.size, caller=caller)
    return Release(list(seqs))


def zone_of_points(zones: Any, ps: PointSet, *, caller: str) -> tuple[np.ndarray, Any]:
    """Zone position of every public point (-1 outside every zone; the first zone when they overlap)."""
    series, geoms, crs = check_polygons(zones, name="zones", caller=caller)
    x, y = lonlat_to(ps.lon, ps.lat, crs)
    return first_zone(geoms, x, y, outside=-1), series.index


def region_members(regions: Any, ps: PointSet, *, crs: Any, caller: str) -> tuple[list[np.ndarray], Any]:
    """Public points in each region: circles ``(lon, lat, radius_km)`` (haversine) or polygons.

    A bare shapely polygon (or a list of them) is in ``crs`` (the release's CRS; EPSG:4326 for index input).
    """
    import geopandas as gpd
    import pandas as pd

    if isinstance(regions, gpd.GeoDataFrame | gpd.GeoSeries):
        series, geoms, gcrs = check_polygons(regions, name="regions", caller=caller, allow_empty=True)
        x, y = lonlat_to(ps.lon, ps.lat, gcrs)
        return [np.flatnonzero(shapely.intersects_xy(g, x, y)) for g in geoms], series.index
    if _frames.is_circle(regions) or isinstance(regions, shapely.Geometry):
        regions = [regions]
    if not isinstance(regions, list | tuple):
        raise TypeError(
            f"The 'regions' parameter of {caller} must be circles (lon, lat, radius_km), polygons, a list of "
            f"those, or a GeoDataFrame/GeoSeries of polygons. Got {type(regions).__name__} instead."
        )
    out = []
    xy = None
    for i, r in enumerate(regions):
        if _frames.is_circle(r):
            lon, lat, rad = (float(v) for v in r)
            if not (np.isfinite([lon, lat, rad]).all() and -90 <= lat <= 90 and rad >= 0):
                raise ValueError(f"Region {i} of {caller} must be a finite (lon, lat, radius_km >= 0).")
            d = np.asarray(haversine_m(ps.lon, ps.lat, lon, lat))
            out.append(np.flatnonzero(d <= rad * 1000.0))
        elif isinstance(r, shapely.Geometry) and shapely.get_type_id(r) in (3, 6):
            if xy is None:
                xy = lonlat_to(ps.lon, ps.lat, CRS.from_user_input(crs))
            out.append(np.flatnonzero(shapely.intersects_xy(r, xy[0], xy[1])))
        else:
            raise TypeError(
                f"Region {i} of {caller} must be a circle (lon, lat, radius_km) or a Polygon/MultiPolygon."
            )
    return out, pd.RangeIndex(len(out), name="region")


def digest_key(seqs: list[np.ndarray], ps: PointSet, mech: Any, options: Any) -> np.ndarray:
    """A 256-bit stream key (``uint32[8]``) from a digest of the release and the public configuration.

    The release (its index sequences, in order), P's coordinates, the mechanism's public configuration
    and the estimator's settings: the same files and settings give the same key, on any machine.
    """
    h = hashlib.sha256(b"geoldp.estimate key v1")
    lengths = np.array([s.shape[0] for s in seqs], dtype=np.int64)
    h.update(lengths.tobytes())
    h.update(np.concatenate(seqs).astype(np.int64).tobytes() if seqs else b"")
    h.update(np.ascontiguousarray(ps.lon, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(ps.lat, dtype=np.float64).tobytes())
    h.update(repr(mech).encode())
    h.update(repr(sorted(dataclasses.asdict(options).items())).encode())
    return np.frombuffer(h.digest(), dtype=np.uint32).copy()
