"""Geometry on the sphere: the one degree→radian conversion, haversine, bearings and sectors.

These are broadcasting numpy wrappers over the numba kernels of :mod:`geoldp._core.kernels`, which hold the
one implementation of each formula (ALGORITHM §2). Coordinates are (lon, lat) in degrees, WGS 84;
distances are in metres; bearings are radians clockwise from north in [0, 2π).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from geoldp._core import kernels as _kernels
from geoldp._core.kernels import EARTH_RADIUS_M

__all__ = [
    "EARTH_RADIUS_M",
    "KM_PER_DEGREE",
    "bearing",
    "haversine_array_m",
    "haversine_m",
    "sector_index",
    "to_radians",
]

_DEG2RAD = math.pi / 180.0
#: Kilometres per degree of a great circle (of latitude) on the sphere of radius ``EARTH_RADIUS_M``.
KM_PER_DEGREE = EARTH_RADIUS_M / 1000.0 * math.pi / 180.0
_CONVENTIONS = ("centred", "floor")


def to_radians(lon: npt.ArrayLike, lat: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Convert (lon, lat) degrees to (λ, φ) radians: the only degree→radian conversion in geoldp.

    Returns float64 arrays (0-d for scalar input).

    Examples
    --------
    >>> lam, phi = to_radians(180.0, -90.0)
    >>> float(lam), float(phi)
    (3.141592653589793, -1.5707963267948966)
    """
    lam = np.asarray(lon, dtype=np.float64) * _DEG2RAD
    phi = np.asarray(lat, dtype=np.float64) * _DEG2RAD
    return lam, phi


def _apply4(kernel: Callable[..., Any], *deg: npt.ArrayLike) -> Any:
    # kernel(lam1, phi1, lam2, phi2, out) broadcast like a ufunc over (lon1, lat1, lon2, lat2) in degrees
    a, b, c, d = np.broadcast_arrays(*to_radians(deg[0], deg[1]), *to_radians(deg[2], deg[3]))
    shape = a.shape
    flat = [np.ascontiguousarray(x).reshape(-1) for x in (a, b, c, d)]
    out = np.empty(flat[0].shape[0], dtype=np.float64)
    kernel(flat[0], flat[1], flat[2], flat[3], out)
    res = out.reshape(shape)
    return res[()] if res.ndim == 0 else res


def haversine_m(lon1: npt.ArrayLike, lat1: npt.ArrayLike, lon2: npt.ArrayLike, lat2: npt.ArrayLike) -> Any:
    """Haversine distance in metres between (lon1, lat1) and (lon2, lat2), degrees (ALGORITHM §2.1).

    Broadcasts like a numpy ufunc; ``R = EARTH_RADIUS_M``; symmetric and 0 for identical points.

    Parameters
    ----------
    lon1, lat1, lon2, lat2 : array_like
        Coordinates in degrees.

    Returns
    -------
    float or numpy.ndarray
        Distances in metres.

    Examples
    --------
    >>> round(float(haversine_m(0, 0, 0, 1)), 6)
    111194.926645
    """
    return _apply4(_kernels.haversine_rad_many, lon1, lat1, lon2, lat2)


def haversine_array_m(
    lon1: npt.ArrayLike, lat1: npt.ArrayLike, lon2: npt.ArrayLike, lat2: npt.ArrayLike
) -> np.ndarray:
    """:func:`haversine_m` as a float64 array (0-d for scalar input), for array code."""
    return np.asarray(haversine_m(lon1, lat1, lon2, lat2), dtype=np.float64)


def bearing(lon1: npt.ArrayLike, lat1: npt.ArrayLike, lon2: npt.ArrayLike, lat2: npt.ArrayLike) -> Any:
    """Initial great-circle bearing from point 1 to point 2 in radians, clockwise from north, [0, 2π).

    Coordinates in degrees. Identical points give 0 (ALGORITHM §2.2). Broadcasts like a numpy ufunc.

    Examples
    --------
    >>> round(float(bearing(0, 0, 1, 0)), 12)
    1.570796326795
    """
    return _apply4(_kernels.bearing_rad_many, lon1, lat1, lon2, lat2)


def sector_index(theta: npt.ArrayLike, g: int, convention: str = "centred") -> Any:
    """Sector index in {0, …, g−1} of bearings ``theta`` in [0, 2π) for ``g >= 2`` sectors (ALGORITHM §2.4).

    Parameters
    ----------
    convention : {"centred", "floor"}, default "centred"
        ``"centred"``: sector d = [(2d−1)π/g, (2d+1)π/g) (sector 0 straddles north);
        ``"floor"``: sector d = [2dπ/g, 2(d+1)π/g) (the authors' code). Boundaries go to the higher
        sector (half-open intervals).

    Examples
    --------
    >>> int(sector_index(math.pi / 2, 2)), int(sector_index(math.pi / 2, 2, convention="floor"))
    (1, 0)
    """
    from geoldp._core.validation import check_int_range, check_option

    convention = check_option(convention, "convention", _CONVENTIONS, "sector_index")
    g = check_int_range(g, "g", caller="sector_index", minimum=2)
    arr = np.asarray(theta, dtype=np.float64)
    flat = np.ascontiguousarray(arr).reshape(-1)
    out = np.empty(flat.shape[0], dtype=np.int64)
    _kernels.sector_many(flat, g, convention == "centred", out)
    shaped = out.reshape(arr.shape)
    return shaped[()] if shaped.ndim == 0 else shaped
