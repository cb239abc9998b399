"""The public box of a continuous-space release (TraCS) and the plane it is released in (private module).

TraCS-D and TraCS-C work on planar coordinates inside a public box. :func:`planar_box` turns a box given
in the trajectories' CRS into that plane:

* a **projected** CRS is used as it is (the box is already planar, in its units);
* for a **geographic** CRS (longitude/latitude), a local azimuthal equidistant projection centred on the
  box's centre (on the sphere of radius 6,371 km that geoldp's distances use) is derived from the box
  alone (public), and the planar box is the bounding rectangle of
  the projected box boundary (densified, so it contains the whole lon/lat box). Distances and directions
  from the centre are exact in this projection; any other distance is scaled by at most the
  ``max_scale_distortion`` recorded with the release (about (ρ/R)²/6 at distance ρ from the centre,
  R the Earth's radius: 5·10⁻⁶ for a box 50 km across, 1.3 % for one 2,000 km across). Outputs can fall
  in the corners of the rectangle just outside the lon/lat box.

Nothing here reads a trajectory except :func:`warn_if_box_from`, which compares the box with the data's
bounds and discards them.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyproj import CRS, Transformer

from geoldp._core.area import same_bounds
from geoldp._core.errors import GeoLDPWarning, PrivacyWarning
from geoldp._core.frames import WGS84
from geoldp._core.kernels import EARTH_RADIUS_M

__all__ = ["PlanarBox", "planar_box", "warn_if_box_from", "warn_outside"]

#: Points per side of the box when its boundary is projected (the rectangle must contain the whole box).
_DENSIFY = 256


_LOCAL = threading.local()


def _transformer(src: CRS, dst: CRS) -> Transformer:
    """A Transformer from ``src`` to ``dst`` (always_xy), built once per thread.

    Building one takes ~50 ms, and a Transformer must not be shared between threads. The cache holds
    public CRSs only.
    """
    cache = getattr(_LOCAL, "cache", None)
    if cache is None:
        cache = _LOCAL.cache = {}
    key = (src.to_wkt(), dst.to_wkt())
    tr = cache.get(key)
    if tr is None:
        if len(cache) >= 16:
            cache.clear()
        tr = cache[key] = Transformer.from_crs(src, dst, always_xy=True)
    return tr


@dataclass(frozen=True)
class PlanarBox:
    """A public box and the plane a continuous-space release works in (public values only).

    Attributes
    ----------
    bounds : tuple of float
        The box as given, ``(minx, miny, maxx, maxy)`` in ``crs``.
    crs : pyproj.CRS
        The trajectories' CRS (the output's).
    plane : pyproj.CRS
        The planar CRS of the release: ``crs`` itself when projected, else the local azimuthal
        equidistant projection.
    planar_bounds : tuple of float
        The box in ``plane`` (for a geographic ``crs``, the rectangle containing the projected box).
    max_scale_distortion : float
        Largest |scale − 1| of ``plane`` over the box (0 for a projected ``crs``).
    """

    bounds: tuple[float, float, float, float]
    crs: CRS
    plane: CRS
    planar_bounds: tuple[float, float, float, float]
    max_scale_distortion: float
    #: How the plane is defined: "the trajectories' CRS", or the PROJ string of the local projection.
    plane_definition: str = "the trajectories' CRS"

    def to_plane(self, lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """WGS 84 coordinates (as the frame boundary extracts them) to the plane."""
        x, y = _transformer(CRS.from_user_input(WGS84), self.plane).transform(lon, lat)
        return np.ascontiguousarray(x, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64)

    def to_crs(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Planar coordinates to the trajectories' CRS (the output's)."""
        if self.plane.equals(self.crs):
            return np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        ox, oy = _transformer(self.plane, self.crs).transform(x, y)
        return np.asarray(ox, dtype=np.float64), np.asarray(oy, dtype=np.float64)

    def to_wgs84(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Planar coordinates to WGS 84 (to snap released locations to public points)."""
        lon, lat = _transformer(self.plane, CRS.from_user_input(WGS84)).transform(x, y)
        return np.asarray(lon, dtype=np.float64), np.asarray(lat, dtype=np.float64)

    def record(self) -> dict[str, Any]:
        """The box's provenance: the box, its CRS, the plane and its distortion."""
        return {
            "bounds": [float(v) for v in self.bounds],
            "crs": self.crs.to_string(),
            "plane": self.plane_definition,
            "planar_bounds": [float(v) for v in self.planar_bounds],
            "max_scale_distortion": float(self.max_scale_distortion),
        }


def planar_box(bounds: tuple[float, float, float, float], crs: Any, *, caller: str) -> PlanarBox:
    """The plane and planar box of a public box ``bounds`` (already validated) given in ``crs``.

    Refuses a geographic box outside [−180, 180] × [−90, 90], or one that reaches a pole (the local
    projection is not defined there).
    """
    crs = CRS.from_user_input(crs)
    x0, y0, x1, y1 = bounds
    if not crs.is_geographic:
        return PlanarBox(bounds, crs, crs, bounds, 0.0)
    if not (-180.0 <= x0 and x1 <= 180.0 and -90.0 < y0 and y1 < 90.0):
        raise ValueError(
            f"The 'bounds' parameter of {caller} is in a longitude/latitude CRS and must lie within "
            "[-180, 180] x (-90, 90) (a box across the antimeridian or a pole is not supported: use a "
            "projected CRS)."
        )
    lon0, lat0 = Transformer.from_crs(crs, WGS84, always_xy=True).transform(0.5 * (x0 + x1), 0.5 * (y0 + y1))
    # on geoldp's sphere (the radius of every haversine distance): 6x faster than the ellipsoidal form
    definition = (
        f"+proj=aeqd +lat_0={float(lat0)!r} +lon_0={float(lon0)!r} +R={EARTH_RADIUS_M!r} +units=m +no_defs"
    )
    plane = CRS.from_proj4(definition)
    t = np.linspace(0.0, 1.0, _DENSIFY + 1)
    bx = np.r_[x0 + (x1 - x0) * t, np.full_like(t, x1), x1 - (x1 - x0) * t, np.full_like(t, x0)]
    by = np.r_[np.full_like(t, y0), y0 + (y1 - y0) * t, np.full_like(t, y1), y1 - (y1 - y0) * t]
    px, py = Transformer.from_crs(crs, plane, always_xy=True).transform(bx, by)
    planar = (float(np.min(px)), float(np.min(py)), float(np.max(px)), float(np.max(py)))
    return PlanarBox(bounds, crs, plane, planar, _max_distortion(plane, bx, by, crs), definition)


def _max_distortion(plane: CRS, bx: np.ndarray, by: np.ndarray, crs: CRS) -> float:
    """Largest |scale − 1| (meridional or parallel) of the projection on the box boundary."""
    from pyproj import Proj

    lon, lat = Transformer.from_crs(crs, WGS84, always_xy=True).transform(bx, by)
    factors = Proj(plane).get_factors(lon, lat)
    scales = np.r_[factors.meridional_scale, factors.parallel_scale]
    return float(np.max(np.abs(scales[np.isfinite(scales)] - 1.0), initial=0.0))


def warn_if_box_from(frame: Any, box: PlanarBox, *, stacklevel: int = 2) -> bool:
    """Warn (PrivacyWarning) when the box has exactly the bounds of ``frame`` (so it came from the data).

    The bounds of ``frame`` are computed, compared and discarded (:func:`~geoldp._core.area.same_bounds`);
    the message holds no coordinates.
    """
    same = same_bounds(frame, box.bounds, box.crs)
    if same:
        warnings.warn(
            "The 'bounds' box has exactly the bounds of the trajectories being released, so it was "
            "probably computed from them: the box must be public (a city's or a region's extent, fixed "
            "before the data is seen), or it reveals the extreme locations of the data.",
            PrivacyWarning,
            stacklevel=stacklevel + 1,
        )
    return same


def warn_outside(ft: Any, x: np.ndarray, y: np.ndarray, box: PlanarBox, *, caller: str) -> int:
    """Warn (GeoLDPWarning, counts only) about vertices outside the planar box; return their number.

    They are released as the nearest point of the box (the guarantee holds for any input), so their
    outputs cannot reflect where they were.
    """
    x0, y0, x1, y1 = box.planar_bounds
    outside = (x < x0) | (x > x1) | (y < y0) | (y > y1)
    count = int(outside.sum())
    if count:
        rows = int(np.unique(ft.vertex_rows[outside]).size)
        warnings.warn(
            f"{count} vertex(es) in {rows} row(s) of the trajectories passed to {caller} lie outside the "
            "'bounds' box: each is released as the nearest point of the box, so its output cannot reflect "
            "where it was. Use a public box that covers the area of the collection.",
            GeoLDPWarning,
            stacklevel=5,
        )
    return count
