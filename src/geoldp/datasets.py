"""Deterministic synthetic data: a clustered city of public points and trip-like trajectories.

The generator is meant for demos, examples, benchmarks and tests. It needs no download and no file. Its
output depends only on its arguments (including ``seed``), so the same call gives the same frames on every
machine that runs the same NumPy release.

The model (all distances in a local tangent plane around ``center``, in kilometres):

- **Public points.** A mixture of a dense Gaussian city centre, a few Gaussian hubs (stations, malls,
  campuses), points scattered along radial arterial roads, and sparse uniform suburbs, clipped to a square of
  side ``extent_km``. Points closer than 1 cm to an earlier point are redrawn, so the set never contains
  duplicates.
- **Trips.** The length n is uniform on ``min_len..max_len``. The origin and the destination are drawn from
  the points (density-weighted), half of the time from a hub or the centre, and are at least 0.5 km (or
  ``extent_km/20`` if smaller) apart. Intermediate vertices progress along the origin→destination segment at
  jittered, increasing fractions, bent by a smooth per-trip detour and a little per-vertex noise, and are
  snapped to the nearest public point that differs from the previous vertex (and, for the last intermediate
  vertex, from the destination). Every vertex of a trip is therefore a public point and no two consecutive
  vertices coincide.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from geoldp._core.geo import KM_PER_DEGREE
from geoldp._core.validation import MAX_COUNT, MAX_LENGTH

#: Most public points :func:`synthetic_city` draws (as many as :func:`geoldp.points.grid` builds).
MAX_CITY_POINTS = 2_000_000

__all__ = ["synthetic_city"]

_MIN_SEPARATION_KM = 1e-5  # 1 cm; PointSet treats < 1 mm as a duplicate
_SNAP_K = 8


def _range_error(kind: type[Exception], name: str, what: str, value: object) -> Exception:
    return kind(f"The '{name}' parameter of synthetic_city must be {what}. Got {value!r} instead.")


def _check_int(value: object, name: str, low: int, high: int | None = None) -> int:
    what = f"an int in the range [{low}, {'inf' if high is None else high}]"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _range_error(TypeError, name, what, value)
    if int(value) < low or (high is not None and int(value) > high):
        raise _range_error(ValueError, name, what, int(value))
    return int(value)


def _check_real(value: object, name: str, low: float, high: float, *, open_low: bool = False) -> float:
    what = f"a float in the range {'(' if open_low else '['}{low}, {high}]"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _range_error(TypeError, name, what, value)
    number = float(value)
    if not math.isfinite(number) or number < low or (open_low and number == low) or number > high:
        raise _range_error(ValueError, name, what, number)
    return number


def _draw_points(
    n_points: int, half: float, gen: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return (x_km, y_km, kind_code, hub_xy) for the clustered public points."""
    n_hubs = 5
    # Hubs on a ring at 35-70 % of the half-extent, evenly spread in angle with jitter.
    hub_angle = (np.arange(n_hubs) + gen.uniform(0.0, 0.6, n_hubs)) * (2.0 * math.pi / n_hubs)
    hub_rad = half * gen.uniform(0.35, 0.70, n_hubs)
    hub_xy = np.column_stack([hub_rad * np.sin(hub_angle), hub_rad * np.cos(hub_angle)])
    n_roads = 6
    road_angle = (np.arange(n_roads) + gen.uniform(-0.2, 0.2, n_roads)) * (2.0 * math.pi / n_roads)

    weights = np.array([0.35, 0.25, 0.25, 0.15])  # centre, hubs, roads, suburbs
    xs = np.empty(0)
    ys = np.empty(0)
    kinds = np.empty(0, dtype=np.int8)
    need = n_points
    while need > 0:
        batch = max(2 * need, 16)
        kind = gen.choice(4, size=batch, p=weights).astype(np.int8)
        x = np.empty(batch)
        y = np.empty(batch)
        # centre: isotropic Gaussian
        c = kind == 0
        x[c] = gen.normal(0.0, 0.16 * half, c.sum())
        y[c] = gen.normal(0.0, 0.16 * half, c.sum())
        # hubs: small Gaussian blobs
        h = kind == 1
        which = gen.integers(0, n_hubs, h.sum())
        x[h] = hub_xy[which, 0] + gen.normal(0.0, 0.05 * half, h.sum())
        y[h] = hub_xy[which, 1] + gen.normal(0.0, 0.05 * half, h.sum())
        # roads: along a radial line, denser near the centre, small lateral scatter
        r = kind == 2
        ang = road_angle[gen.integers(0, n_roads, r.sum())]
        along = half * np.sqrt(gen.uniform(0.0, 1.0, r.sum())) * 1.2
        lateral = gen.normal(0.0, 0.015 * half, r.sum())
        x[r] = along * np.sin(ang) + lateral * np.cos(ang)
        y[r] = along * np.cos(ang) - lateral * np.sin(ang)
        # suburbs: uniform over the square
        s = kind == 3
        x[s] = gen.uniform(-half, half, s.sum())
        y[s] = gen.uniform(-half, half, s.sum())
        keep = (np.abs(x) <= half) & (np.abs(y) <= half)
        xs = np.concatenate([xs, x[keep]])
        ys = np.concatenate([ys, y[keep]])
        kinds = np.concatenate([kinds, kind[keep]])
        xs, ys, kinds = xs[:n_points], ys[:n_points], kinds[:n_points]
        # Drop points within 1 cm of an earlier point (deterministic: keep the first).
        from scipy.spatial import cKDTree

        pairs = cKDTree(np.column_stack([xs, ys])).query_pairs(_MIN_SEPARATION_KM, output_type="ndarray")
        if len(pairs):
            drop = np.zeros(len(xs), dtype=bool)
            drop[pairs.max(axis=1)] = True
            xs, ys, kinds = xs[~drop], ys[~drop], kinds[~drop]
        need = n_points - len(xs)
    return xs, ys, kinds, hub_xy


def _draw_trips(
    xy: np.ndarray,
    kinds: np.ndarray,
    hub_xy: np.ndarray,
    n_trips: int,
    min_len: int,
    max_len: int,
    half: float,
    gen: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Return (flat_idx, offsets) of trip-like index sequences over the points ``xy``."""
    from scipy.spatial import cKDTree

    m = len(xy)
    tree = cKDTree(xy)
    lengths = gen.integers(min_len, max_len + 1, n_trips)
    # Attractors: the centre and the hubs. Each attractor's catchment = its 1.5 % of nearest points (>= 1).
    attractors = np.vstack([np.zeros((1, 2)), hub_xy])
    n_catch = max(1, min(m, int(round(0.015 * m))))
    _, catch = tree.query(attractors, k=n_catch)
    catch = np.asarray(catch).reshape(len(attractors), n_catch)
    min_trip_km = min(0.5, half / 10.0)

    def endpoint(size: int) -> np.ndarray:
        from_attr = gen.uniform(0.0, 1.0, size) < 0.5
        idx = gen.integers(0, m, size)
        a = gen.integers(0, len(attractors), size)
        c = gen.integers(0, n_catch, size)
        return np.where(from_attr, catch[a, c], idx)

    origin = endpoint(n_trips)
    dest = endpoint(n_trips)
    for _ in range(64):
        bad = np.hypot(*(xy[origin] - xy[dest]).T) < min_trip_km
        if not bad.any():
            break
        dest[bad] = endpoint(int(bad.sum()))
    else:  # tiny or degenerate point sets: accept any destination different from the origin
        same = origin == dest
        dest[same] = (origin[same] + 1) % m

    o_xy = xy[origin]
    d_xy = xy[dest]
    vec = d_xy - o_xy
    seg_len = np.hypot(vec[:, 0], vec[:, 1])
    normal = np.column_stack([-vec[:, 1], vec[:, 0]]) / np.maximum(seg_len, 1e-12)[:, None]
    bow = gen.normal(0.0, 0.15, n_trips) * seg_len  # smooth detour amplitude (km)
    wiggle = 0.03 * seg_len

    offsets = np.zeros(n_trips + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.empty(offsets[-1], dtype=np.int64)
    flat[offsets[:-1]] = origin
    flat[offsets[1:] - 1] = dest
    prev = origin.copy()
    k = min(_SNAP_K, m)
    for j in range(1, max_len - 1):
        act = np.flatnonzero(lengths > j + 1)  # trips whose position j is an intermediate vertex
        if len(act) == 0:
            break
        n_seg = lengths[act] - 1
        t = (j + gen.uniform(-0.35, 0.35, len(act))) / n_seg
        t = np.clip(t, 0.0, 1.0)
        lat_off = bow[act] * np.sin(math.pi * t) + gen.normal(0.0, 1.0, len(act)) * wiggle[act]
        target = o_xy[act] + t[:, None] * vec[act] + lat_off[:, None] * normal[act]
        target = np.clip(target, -half, half)
        _, cand = tree.query(target, k=k)
        cand = np.asarray(cand).reshape(len(act), k)
        is_last = lengths[act] == j + 2
        ok = cand != prev[act][:, None]
        ok &= ~(is_last[:, None] & (cand == dest[act][:, None]))
        first = np.argmax(ok, axis=1)
        none = ~ok.any(axis=1)
        if none.any():  # only possible for very small point sets: relax the destination condition
            ok2 = cand[none] != prev[act][none][:, None]
            first[none] = np.argmax(ok2, axis=1)
        chosen = cand[np.arange(len(act)), first]
        flat[offsets[act] + j] = chosen
        prev[act] = chosen
    return flat, offsets


def synthetic_city_arrays(
    n_points: int = 1000,
    n_trips: int = 2000,
    *,
    min_len: int = 2,
    max_len: int = 8,
    extent_km: float = 20.0,
    center: tuple[float, float] = (-87.6298, 41.8781),
    seed: Any = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Array form of :func:`synthetic_city` (no GeoPandas objects).

    Parameters
    ----------
    n_points, n_trips, min_len, max_len, extent_km, center, seed
        As in :func:`synthetic_city`.

    Returns
    -------
    lon, lat : ndarray of float64, shape (n_points,)
        Coordinates of the public points, WGS84 degrees.
    flat_idx : ndarray of int64
        The vertices of all trips, concatenated; each is an index into ``lon``/``lat``.
    offsets : ndarray of int64, shape (n_trips + 1,)
        Trip ``i`` is ``flat_idx[offsets[i]:offsets[i + 1]]``.
    kind : ndarray of int8, shape (n_points,)
        0 centre, 1 hub, 2 road, 3 suburb.
    """
    n_points = _check_int(n_points, "n_points", 2, MAX_CITY_POINTS)
    n_trips = _check_int(n_trips, "n_trips", 0, MAX_COUNT)
    min_len = _check_int(min_len, "min_len", 2)
    max_len = _check_int(max_len, "max_len", min_len, MAX_LENGTH)
    if n_trips * max_len > MAX_COUNT:
        raise ValueError(
            f"synthetic_city: n_trips={n_trips} trips of up to max_len={max_len} points would hold up to "
            f"{n_trips * max_len} points, more than {MAX_COUNT}. Ask for fewer or shorter trips."
        )
    extent_km = _check_real(extent_km, "extent_km", 0.0, 2000.0, open_low=True)
    try:
        lon0, lat0 = center
    except (TypeError, ValueError):
        raise TypeError(
            f"The 'center' parameter of synthetic_city must be a (lon, lat) pair. Got {center!r} instead."
        ) from None
    lon0 = _check_real(lon0, "center", -180.0, 180.0)
    lat0 = _check_real(lat0, "center", -80.0, 80.0)
    gen = np.random.default_rng(seed)
    half = extent_km / 2.0
    x, y, kind, hub_xy = _draw_points(n_points, half, gen)
    xy = np.column_stack([x, y])
    flat, offsets = _draw_trips(xy, kind, hub_xy, n_trips, min_len, max_len, half, gen)
    lat = lat0 + y / KM_PER_DEGREE
    lon = lon0 + x / (KM_PER_DEGREE * math.cos(math.radians(lat0)))
    lon = (lon + 180.0) % 360.0 - 180.0
    return lon, lat, flat, offsets, kind


_KIND_NAMES = np.array(["centre", "hub", "road", "suburb"], dtype=object)


def synthetic_city(
    n_points: int = 1000,
    n_trips: int = 2000,
    *,
    min_len: int = 2,
    max_len: int = 8,
    extent_km: float = 20.0,
    center: tuple[float, float] = (-87.6298, 41.8781),
    jitter_m: float = 0.0,
    seed: Any = 0,
) -> tuple[Any, Any]:
    """Generate a deterministic synthetic city: clustered public points and trip-like trajectories.

    Parameters
    ----------
    n_points : int, default 1000
        Number of public points (>= 2).
    n_trips : int, default 2000
        Number of trips (>= 0).
    min_len, max_len : int, default 2 and 8
        Trip lengths (number of vertices) are uniform on ``min_len..max_len``; ``2 <= min_len <= max_len``.
    extent_km : float, default 20
        Side of the square (centred on ``center``) that holds every public point.
    center : (float, float), default (-87.6298, 41.8781)
        (lon, lat) of the city centre in degrees; ``|lat| <= 80``.
    jitter_m : float, default 0
        Standard deviation (metres) of GPS-like Gaussian noise added to each trip vertex *in the trips frame*
        only. With 0, every trip vertex is exactly a public point.
    seed : int, SeedSequence, BitGenerator or Generator, default 0
        Seed for ``numpy.random.default_rng``. The data is synthetic and public; this is not a privacy RNG.

    Returns
    -------
    points : GeoDataFrame
        One Point per public point, EPSG:4326, columns ``point_id`` (0..n_points-1, also the order of a
        ``PointSet`` built from it) and ``kind`` ("centre", "hub", "road", "suburb").
    trips : GeoDataFrame
        One LineString per trip, EPSG:4326, columns ``trip_id`` and ``n_points`` (number of vertices).

    Raises
    ------
    TypeError, ValueError
        For a parameter of the wrong type or outside its range.

    Notes
    -----
    See the module docstring for the model. Trip vertices are public points (before jitter) and no two
    consecutive vertices of a trip are equal. Runtime is O((n_points + total vertices) log n_points).

    Examples
    --------
    >>> from geoldp.datasets import synthetic_city
    >>> points, trips = synthetic_city(200, 50, seed=1)
    >>> len(points), len(trips), points.crs.to_epsg()
    (200, 50, 4326)
    """
    import geopandas as gpd
    import shapely

    jitter_m = _check_real(jitter_m, "jitter_m", 0.0, 1e5)
    lon, lat, flat, offsets, kind = synthetic_city_arrays(
        n_points, n_trips, min_len=min_len, max_len=max_len, extent_km=extent_km, center=center, seed=seed
    )
    points = gpd.GeoDataFrame(
        {"point_id": np.arange(len(lon), dtype=np.int64), "kind": _KIND_NAMES[kind].astype(str)},
        geometry=shapely.points(lon, lat),
        crs="EPSG:4326",
    )
    tlon = lon[flat]
    tlat = lat[flat]
    if jitter_m > 0.0 and len(flat):
        # A separate, deterministic stream so that jitter does not change the trips themselves.
        jgen = np.random.default_rng(np.random.SeedSequence(entropy=_seed_entropy(seed), spawn_key=(1,)))
        tlat = tlat + jgen.normal(0.0, jitter_m, len(flat)) / (KM_PER_DEGREE * 1000.0)
        tlon = tlon + jgen.normal(0.0, jitter_m, len(flat)) / (
            KM_PER_DEGREE * 1000.0 * np.cos(np.radians(tlat))
        )
    n_trips = len(offsets) - 1
    lengths = np.diff(offsets)
    if n_trips:
        geoms = shapely.linestrings(
            np.column_stack([tlon, tlat]), indices=np.repeat(np.arange(n_trips), lengths)
        )
    else:
        geoms = np.empty(0, dtype=object)
    trips = gpd.GeoDataFrame(
        {"trip_id": np.arange(n_trips, dtype=np.int64), "n_points": lengths.astype(np.int64)},
        geometry=gpd.GeoSeries(geoms, crs="EPSG:4326"),
        crs="EPSG:4326",
    )
    return points, trips


def _seed_entropy(seed: Any) -> int:
    """Entropy for the jitter stream, derived deterministically from ``seed``."""
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return int(seed)
    # Generators, BitGenerators and SeedSequences: draw from a fresh generator built on the same seed.
    return int(np.random.default_rng(seed).integers(0, 2**63 - 1))
