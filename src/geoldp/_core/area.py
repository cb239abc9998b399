"""The guard of public areas: a point set, zones or a box compared with the bounds of the data released.

A public parameter computed from the data being released (P built over ``trips.total_bounds``, zones laid
over the trips, TraCS's box) voids the ε-LDP guarantee. The builders record the area they were given
(:func:`record_area`: :mod:`geoldp.points`, :func:`geoldp.zone_grid`); a release compares it with its data's
bounds (:func:`same_bounds`) inside the call and warns. The data's bounds are computed, compared and
discarded: nothing of them outlives the call, and no message holds a coordinate.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from geoldp._core.errors import PrivacyWarning

__all__ = ["AREA_KEY", "area_record", "record_area", "same_bounds", "warn_if_area_from"]

#: ``attrs`` key of the bounds and CRS of the area a point set (or a zone grid) was built over.
AREA_KEY = "geoldp_points_area"
#: A frame whose bounds match an area to this fraction of its span is taken as its source.
_BOUNDS_RTOL = 1e-9


def record_area(gdf: Any, bounds: Any, crs: Any) -> None:
    """Record on ``gdf`` (its ``attrs``) the public area it was built over: its bounds in ``crs``."""
    from pyproj import CRS

    crs = CRS.from_user_input(crs)
    epsg = crs.to_epsg()
    srs = f"EPSG:{epsg}" if epsg is not None else crs.to_wkt()
    gdf.attrs[AREA_KEY] = {"bounds": [float(b) for b in bounds], "crs": srs}


def area_record(built: Any) -> dict[str, Any] | None:
    """The area ``built`` was built over (``{"bounds": [...], "crs": ...}``), if it records one, else None."""
    attrs = getattr(built, "attrs", None)
    record = attrs.get(AREA_KEY) if isinstance(attrs, dict) else None
    return record if isinstance(record, dict) else None


def same_bounds(frame: Any, bounds: Any, crs: Any) -> bool:
    """Whether the bounds of ``frame`` (in ``crs``) are ``bounds``, to 10⁻⁹ of their span."""
    from pyproj import CRS

    if getattr(frame, "crs", None) is None or len(frame) == 0:
        return False
    geo = frame.geometry
    if not CRS.from_user_input(frame.crs).equals(CRS.from_user_input(crs)):
        geo = geo.to_crs(crs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-empty frames give NaN bounds
        data = np.asarray(geo.total_bounds, dtype=np.float64)
    del geo
    area = np.asarray(bounds, dtype=np.float64)
    span = max(area[2] - area[0], area[3] - area[1])
    same = bool(np.all(np.isfinite(data)) and np.all(np.abs(data - area) <= _BOUNDS_RTOL * span))
    del data  # private: never outlives the call
    return same


def warn_if_area_from(frame: Any, points: Any, *, what: str = "points", stacklevel: int = 2) -> bool:
    """Warn (PrivacyWarning) when ``points`` were built over an area with exactly the bounds of ``frame``.

    Such an area was almost certainly computed from the trajectories being released
    (``frame.total_bounds``, their envelope or convex hull), which makes the point set (or the zones)
    private. The bounds of ``frame`` are computed here, compared, and discarded; the message holds no
    coordinates.

    Parameters
    ----------
    frame : geopandas.GeoDataFrame
        The (private) frame about to be released.
    points : any
        The public points (or zones); only the frames of :mod:`geoldp.points`' builders and of
        :func:`geoldp.zone_grid` laid over trajectories carry an area record, others are ignored.
    what : str, default "points"
        What ``points`` are, in the message: ``"points"`` or ``"zones"``.
    stacklevel : int, default 2
        Passed to :func:`warnings.warn`.

    Returns
    -------
    bool
        Whether a warning was raised.
    """
    record = area_record(points)
    same = record is not None and same_bounds(frame, record["bounds"], record["crs"])
    if same:
        warnings.warn(
            f"The public {what} were built over an area with exactly the bounds of the trajectories being "
            f"released. An area (or {what} built over one) computed from the data being released is "
            f"private and voids the LDP guarantee: build the {what} over a public area chosen without the "
            "data (a city boundary, a fixed bounding box).",
            PrivacyWarning,
            stacklevel=stacklevel + 1,
        )
    return same
