"""A public point set's identity in a release's ledger: its provenance, its recipe and its digest.

The release pipelines record P with every release (:func:`ledger_record`) and the estimators check a
release against the P they are given (:func:`digest_of`); neither needs the builders of
:mod:`geoldp.points`, which set the provenance this module reads (``attrs["geoldp_points"]``, and the
area of :mod:`geoldp._core.area`). Everything here is public: P is public.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geoldp._core.area import AREA_KEY

#: ``attrs`` key of a point set's provenance string.
PROVENANCE_KEY = "geoldp_points"


def provenance_of(points: Any) -> str | None:
    """The provenance string of a point set built here, or ``None`` (a PointSet or a hand-made frame).

    Examples
    --------
    >>> provenance_of(None) is None
    True
    """
    attrs = getattr(points, "attrs", None)
    if not isinstance(attrs, dict):
        return None
    value = attrs.get(PROVENANCE_KEY)
    return value if isinstance(value, str) else None


_GRID_RE = r"^grid\(kind=(square|hex), spacing_m=([^,]+), area=bbox, crs=(EPSG:\d+)\)$"
_H3_RE = r"^h3_cells\(resolution=(\d+), area=bbox, crs=(EPSG:\d+)\)$"


def recipe_of(points: Any) -> dict[str, Any] | None:
    """The public recipe that rebuilds a point set: builder, bounding box, spacing or resolution, CRS.

    Only a :func:`geoldp.points.grid` or :func:`geoldp.points.h3_cells` over a bounding box has one (a
    polygon area, road nodes or a thinned set are recorded by their digest, :func:`digest_of`). The box is
    public by construction.

    Returns
    -------
    dict or None
        ``{"builder": "grid", "area": [minx, miny, maxx, maxy], "spacing_m": ..., "kind": ...,
        "crs": "EPSG:..."}`` (or ``"resolution"`` for H3), or ``None``.

    Examples
    --------
    >>> recipe_of(geoldp.points.grid((116.30, 39.90, 116.32, 39.92), 500))["area"]  # doctest: +SKIP
    [116.3, 39.9, 116.32, 39.92]
    """
    import re

    attrs = getattr(points, "attrs", None)
    if not isinstance(attrs, dict):
        return None
    prov, area = attrs.get(PROVENANCE_KEY), attrs.get(AREA_KEY)
    if not isinstance(prov, str) or not isinstance(area, dict):
        return None
    box = [float(b) for b in area.get("bounds", ())]
    if (m := re.match(_GRID_RE, prov)) is not None:
        kind, spacing, crs = m.groups()
        return {"builder": "grid", "area": box, "spacing_m": float(spacing), "kind": kind, "crs": crs}
    if (m := re.match(_H3_RE, prov)) is not None:
        return {"builder": "h3_cells", "area": box, "resolution": int(m.group(1)), "crs": m.group(2)}
    return None


#: Decimal places of the WGS 84 degrees hashed by :func:`digest_of` (1e-7 degree is about 1 cm).
DIGEST_DECIMALS = 7


def digest_of(points: Any) -> str:
    """A SHA-256 digest of a point set: its size and its WGS 84 coordinates (to 1e-7 degree), in order.

    Equal for the same points read back from any file format or CRS; different when a point is added,
    dropped, moved by more than about a centimetre, or reordered (the indices of a release refer to P's
    order).

    Parameters
    ----------
    points : PointSet, GeoDataFrame or GeoSeries of Points

    Returns
    -------
    str
        ``"sha256:<64 hex digits>"``.

    Examples
    --------
    >>> from geoldp import PointSet
    >>> digest_of(PointSet([0.0, 1.0], [0.0, 0.0])) == digest_of(PointSet([0.0, 1.0 + 1e-12], [0.0, 0.0]))
    True
    """
    import hashlib

    import geopandas as gpd

    from geoldp._core.pointset import PointSet

    if isinstance(points, gpd.GeoDataFrame):
        points = PointSet.from_geodataframe(points)
    elif isinstance(points, gpd.GeoSeries):
        points = PointSet.from_geoseries(points)
    if not isinstance(points, PointSet):
        raise TypeError(
            f"digest_of needs a PointSet or a GeoDataFrame/GeoSeries of Points. Got {type(points).__name__}."
        )
    scale = 10.0**DIGEST_DECIMALS
    xy = np.column_stack([np.rint(points.lon * scale), np.rint(points.lat * scale)]).astype(np.int64)
    h = hashlib.sha256(b"geoldp-points-v1")
    h.update(np.int64(xy.shape[0]).tobytes())
    h.update(np.ascontiguousarray(xy).astype("<i8").tobytes())
    return "sha256:" + h.hexdigest()


def ledger_record(points: Any, ps: Any = None) -> dict[str, Any]:
    """The ``"points"`` member of a release's ledger: provenance, recipe, digest and size of P.

    ``ps`` is P as the release resolved it (a :class:`~geoldp.PointSet`), to avoid converting it twice.
    Everything in it is public (P is public).
    """
    ps = points if ps is None else ps
    return {
        "provenance": provenance_of(points),
        "recipe": recipe_of(points),
        "digest": digest_of(ps),
        "size": int(len(ps)),
    }
