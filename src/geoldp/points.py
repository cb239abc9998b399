"""Public point sets built from public inputs: grids, H3 cells, road intersections, thinning.

Every builder returns a :class:`geopandas.GeoDataFrame` of Points that is accepted everywhere a point set
is (``gdf.ldp.perturb(points, ...)``, :class:`geoldp.PointSet.from_geodataframe`, the CLI), and records
where it came from in ``points.attrs["geoldp_points"]`` (a short string such as
``"grid(kind=square, spacing_m=500, area=bbox, crs=EPSG:4326)"``). A release perturbed onto such a point
set carries that string in its ledger (``geoldp.ledger_of(released).points``), with what a collector
needs to rebuild or check P: the recipe of a grid or H3 set over a bounding box (the public box, spacing or
resolution, CRS; :func:`recipe_of`, :func:`from_recipe`) and a digest of P's coordinates
(:func:`digest_of`).

**The point set is public only if its inputs are**: an area or points taken from the trajectories being
released void the ε-LDP guarantee (:doc:`/user_guide`, "Building a public point set"). When the area
handed to a builder has exactly the bounds of a frame later perturbed with the points, ``perturb`` raises
a :class:`~geoldp.PrivacyWarning` (:func:`warn_if_area_from`).
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

import numpy as np

from geoldp._core.area import AREA_KEY, record_area, warn_if_area_from
from geoldp._core.point_record import PROVENANCE_KEY, digest_of, ledger_record, provenance_of, recipe_of
from geoldp._core.validation import check_int_range, check_real

__all__ = [
    "digest_of",
    "from_recipe",
    "grid",
    "h3_cells",
    "ledger_record",
    "provenance_of",
    "recipe_of",
    "road_nodes",
    "thin",
    "warn_if_area_from",
]

#: Suffix of the file that keeps a point set's provenance and area next to its data file (a file format
#: drops ``attrs``): ``P.gpkg`` → ``P.gpkg.points.json``.
SIDECAR_SUFFIX = ".points.json"
#: Largest point set a builder returns. A finer grid (or H3 resolution) is refused up front, from the
#: area's size, with a ``ValueError`` giving the size it would have; set ``geoldp.points.MAX_POINTS``
#: higher to allow it.
MAX_POINTS = 2_000_000
_KINDS = ("square", "hex")
_ROAD_KINDS = ("intersections", "all")


# ------------------------------------------------------------------------------------------------------
# areas


def _area(area: Any, crs: Any, *, caller: str) -> tuple[Any, Any, str]:
    """``(polygon, CRS, "bbox" | "polygon")`` for a bbox tuple or a polygon GeoSeries/GeoDataFrame."""
    import geopandas as gpd
    import shapely
    from pyproj import CRS

    if isinstance(area, gpd.GeoDataFrame | gpd.GeoSeries):
        if area.crs is None:
            raise ValueError(
                f"The 'area' parameter of {caller} has no CRS. Declare it with area.set_crs(...)."
            )
        if crs is not None and not CRS.from_user_input(crs).equals(area.crs):
            raise ValueError(
                f"The 'crs' parameter of {caller} differs from the CRS of 'area'. Omit 'crs' for a "
                "GeoSeries/GeoDataFrame area (its own CRS is used), or reproject the area with to_crs()."
            )
        geoms = np.asarray(area.geometry.values if isinstance(area, gpd.GeoDataFrame) else area.values)
        if len(geoms) == 0:
            raise ValueError(f"The 'area' parameter of {caller} has no rows.")
        bad = np.flatnonzero(shapely.is_missing(geoms) | shapely.is_empty(geoms))
        if bad.size:
            raise ValueError(
                f"The 'area' parameter of {caller}: row position {int(bad[0])} is missing or empty."
            )
        types = shapely.get_type_id(geoms)
        bad = np.flatnonzero(~np.isin(types, (3, 6)))  # Polygon, MultiPolygon
        if bad.size:
            raise TypeError(
                f"The 'area' parameter of {caller} must hold Polygons or MultiPolygons; row position "
                f"{int(bad[0])} is a {geoms[bad[0]].geom_type}. Buffer or polygonize it first."
            )
        return shapely.union_all(geoms), CRS.from_user_input(area.crs), "polygon"
    if isinstance(area, str | bytes) or not hasattr(area, "__len__"):
        raise TypeError(
            f"The 'area' parameter of {caller} must be a bounding box (minx, miny, maxx, maxy) or a "
            f"GeoSeries/GeoDataFrame of polygons. Got {type(area).__name__}."
        )
    if len(area) != 4:
        raise ValueError(
            f"The 'area' parameter of {caller} must be a bounding box of 4 numbers (minx, miny, maxx, maxy). "
            f"Got {len(area)} values."
        )
    names = ("minx", "miny", "maxx", "maxy")
    minx, miny, maxx, maxy = (
        check_real(v, f"area[{i}] ({n})", caller=caller)
        for i, (v, n) in enumerate(zip(area, names, strict=True))
    )
    if not all(math.isfinite(v) for v in (minx, miny, maxx, maxy)):
        raise ValueError(f"The 'area' parameter of {caller} must hold finite numbers.")
    if not (minx < maxx and miny < maxy):
        raise ValueError(
            f"The 'area' parameter of {caller} must be ordered (minx, miny, maxx, maxy) with minx < maxx and "
            "miny < maxy."
        )
    try:
        out_crs = CRS.from_user_input("EPSG:4326" if crs is None else crs)
    except Exception:  # pyproj's CRSError
        raise ValueError(
            f"The 'crs' parameter of {caller} is not a CRS pyproj understands; pass e.g. 'EPSG:4326'."
        ) from None
    if out_crs.is_geographic and not (-180 <= minx and maxx <= 180 and -90 <= miny and maxy <= 90):
        raise ValueError(
            f"The 'area' parameter of {caller} is outside the longitude/latitude range of its geographic "
            "CRS. Pass crs=... if the bounding box is in a projected CRS."
        )
    return shapely.box(minx, miny, maxx, maxy), out_crs, "bbox"


def _crs_name(crs: Any) -> str:
    epsg = crs.to_epsg()
    return f"EPSG:{epsg}" if epsg is not None else str(crs.name)


def _local_metric_crs(polygon: Any, crs: Any) -> Any:
    """An azimuthal equidistant projection centred on the area: metres, true distances from the centre."""
    import shapely
    from pyproj import CRS, Transformer

    c = polygon.centroid if not polygon.is_empty else shapely.Point(0, 0)
    lon, lat = Transformer.from_crs(crs, "EPSG:4326", always_xy=True).transform(c.x, c.y)
    return CRS.from_proj4(f"+proj=aeqd +lat_0={lat:.10f} +lon_0={lon:.10f} +datum=WGS84 +units=m +no_defs")


def _to_crs(geom: Any, src: Any, dst: Any) -> Any:
    import shapely
    from pyproj import Transformer

    tr = Transformer.from_crs(src, dst, always_xy=True)
    return shapely.transform(geom, lambda xy: np.column_stack(tr.transform(xy[:, 0], xy[:, 1])))


def _points_frame(
    x: np.ndarray, y: np.ndarray, crs: Any, provenance: str, bounds: Any, extra: Any = None
) -> Any:
    import geopandas as gpd

    data = {} if extra is None else dict(extra)
    gdf = gpd.GeoDataFrame(data, geometry=gpd.points_from_xy(x, y), crs=crs)
    gdf.attrs[PROVENANCE_KEY] = provenance
    if bounds is not None:
        record_area(gdf, bounds, crs)
    return gdf


_EARTH_RADIUS_M = 6_371_008.8


def _true_area_m2(polygon: Any, crs: Any) -> float:
    """The area's size in m²: equal-area for a lon/lat polygon, planar (in metres) for a projected one."""
    import shapely

    if crs.is_geographic:
        # the polygon as a region of the lon/lat plane, in Lambert's cylindrical equal-area projection
        def cea(xy: np.ndarray) -> np.ndarray:
            lat = np.radians(np.clip(xy[:, 1], -90.0, 90.0))
            return np.column_stack((np.radians(xy[:, 0]) * _EARTH_RADIUS_M, np.sin(lat) * _EARTH_RADIUS_M))

        return float(shapely.transform(shapely.segmentize(polygon, 0.01), cea).area)
    unit = crs.axis_info[0].unit_conversion_factor if crs.axis_info else 1.0
    return float(polygon.area) * float(unit) ** 2


def _check_estimate(estimate: float, area_m2: float, caller: str, what: str, fix: str) -> None:
    """Refuse up front (before any array is built) a point set larger than MAX_POINTS."""
    if not estimate <= MAX_POINTS:  # NaN too
        raise ValueError(
            f"{caller}: {what} over an area of {area_m2 / 1e6:.4g} km² would build about {estimate:.3g} "
            f"points, more than geoldp.points.MAX_POINTS = {MAX_POINTS}. Use {fix}, a smaller area, or raise "
            "geoldp.points.MAX_POINTS if you have the memory."
        )


def _check_count(n: int, caller: str, what: str) -> None:
    if n > MAX_POINTS:
        raise ValueError(
            f"{caller} would build {n} points, more than geoldp.points.MAX_POINTS = {MAX_POINTS}; use a "
            f"larger {what}, or raise geoldp.points.MAX_POINTS if you have the memory."
        )
    if n < 2:
        raise ValueError(
            f"{caller} built {n} point(s); a public point set needs at least 2. Use a smaller {what} or a "
            "larger area."
        )


# ------------------------------------------------------------------------------------------------------
# builders


def grid(area: Any, spacing_m: float, *, kind: str = "square", crs: Any = None) -> Any:
    """A regular grid of public points over a public area, with a metric spacing in any CRS.

    The lattice is laid out in an azimuthal equidistant projection centred on the area (metres), centred
    in the area's extent, and clipped to the area; the points are returned in the area's CRS.

    Parameters
    ----------
    area : tuple of 4 floats, geopandas.GeoSeries or geopandas.GeoDataFrame
        A bounding box ``(minx, miny, maxx, maxy)`` in ``crs``, or Polygon/MultiPolygon rows (their
        union is used) in their own CRS. **It must be public**: never the bounds, hull or buffer of the
        trajectories you are about to release (see the module notes).
    spacing_m : float
        Distance between neighbouring points, metres (> 0).
    kind : {"square", "hex"}, default "square"
        A square lattice, or a hexagonal (triangular) lattice: rows ``spacing_m·√3/2`` apart, every
        other row shifted by ``spacing_m/2``, so all six neighbours are ``spacing_m`` away.
    crs : CRS-like, optional
        The CRS of a bounding-box ``area`` (default EPSG:4326, lon/lat). For a GeoSeries/GeoDataFrame
        the area's own CRS is used (``crs`` must be omitted or equal).

    Returns
    -------
    geopandas.GeoDataFrame
        One Point per grid node inside the area, in the area's CRS, ordered row by row (south to north,
        west to east in the local projection). ``attrs["geoldp_points"]`` holds the provenance.

    Raises
    ------
    TypeError, ValueError
        A malformed area or spacing, a missing CRS, fewer than 2 or more than :data:`MAX_POINTS` points.

    Examples
    --------
    >>> pts = grid((116.30, 39.90, 116.32, 39.92), 500)  # doctest: +SKIP
    >>> pts.attrs["geoldp_points"]  # doctest: +SKIP
    'grid(kind=square, spacing_m=500, area=bbox, crs=EPSG:4326)'
    """
    import shapely

    caller = "geoldp.points.grid"
    spacing = check_real(spacing_m, "spacing_m", caller=caller)
    if not (0.0 < spacing < math.inf):
        raise ValueError(f"The 'spacing_m' parameter of {caller} must be a positive finite number of metres.")
    if not isinstance(kind, str) or kind.lower() not in _KINDS:
        raise ValueError(f"The 'kind' parameter of {caller} must be one of {_KINDS!r}.")
    kind = kind.lower()
    polygon, area_crs, what = _area(area, crs, caller=caller)
    dy = spacing if kind == "square" else spacing * math.sqrt(3.0) / 2.0
    true_area = _true_area_m2(polygon, area_crs)
    _check_estimate(  # divided in turn: spacing·dy underflows to 0 for spacings near 1e-300
        true_area / spacing / dy, true_area, caller, f"spacing_m={spacing:g}", "a larger spacing_m"
    )
    metric = _local_metric_crs(polygon, area_crs)
    # densify before projecting so that the edges of a lon/lat box follow their true (curved) shape
    # (in a projected CRS at most about 100,000 vertices, whatever the spacing)
    step = 0.01 if area_crs.is_geographic else max(spacing / 4.0, polygon.length / 100_000.0, 1e-9)
    local = _to_crs(shapely.segmentize(polygon, step), area_crs, metric)
    if area_crs.is_geographic and true_area > 0 and not 0.9 <= local.area / true_area <= 1.25:
        # the whole world, or more than about a hemisphere: one azimuthal projection folds it up
        raise ValueError(
            f"The 'area' of {caller} is too large for one metric grid: on the local azimuthal equidistant "
            f"projection it covers {local.area / true_area:.0%} of its true size. Split it into areas "
            "smaller than a few thousand km across, or use geoldp.points.h3_cells for a global grid."
        )
    minx, miny, maxx, maxy = local.bounds
    nx = int(math.floor((maxx - minx) / spacing)) + 1
    ny = int(math.floor((maxy - miny) / dy)) + 1
    _check_count(nx * ny, caller, "spacing_m")
    x0 = minx + ((maxx - minx) - (nx - 1) * spacing) / 2.0  # centre the lattice in the extent
    y0 = miny + ((maxy - miny) - (ny - 1) * dy) / 2.0
    jj, ii = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
    xs = x0 + ii.ravel() * spacing
    if kind == "hex":
        xs = xs + (jj.ravel() % 2) * (spacing / 2.0)
    ys = y0 + jj.ravel() * dy
    shapely.prepare(local)
    inside = shapely.intersects_xy(local, xs, ys)
    xs, ys = xs[inside], ys[inside]
    _check_count(int(xs.size), caller, "spacing_m")
    from pyproj import Transformer

    x, y = Transformer.from_crs(metric, area_crs, always_xy=True).transform(xs, ys)
    prov = f"grid(kind={kind}, spacing_m={spacing:g}, area={what}, crs={_crs_name(area_crs)})"
    return _points_frame(np.asarray(x), np.asarray(y), area_crs, prov, polygon.bounds)


def h3_cells(area: Any, resolution: int, *, crs: Any = None) -> Any:
    """The centres of the H3 cells of one resolution whose centres lie in a public area.

    Needs the optional dependency ``h3`` (``pip install geoldp[points]``).

    Parameters
    ----------
    area : tuple of 4 floats, geopandas.GeoSeries or geopandas.GeoDataFrame
        As for :func:`grid`; **public** (never derived from the trajectories being released).
    resolution : int
        H3 resolution, 0 (coarsest) to 15. Resolution 9 cells are about 170 m across, resolution 8 about
        460 m.
    crs : CRS-like, optional
        The CRS of a bounding-box ``area`` (default EPSG:4326).

    Returns
    -------
    geopandas.GeoDataFrame
        One Point per cell (its centre) in the area's CRS, with the cell id in column ``"h3"``, ordered by
        cell id. ``attrs["geoldp_points"]`` holds the provenance.

    Raises
    ------
    ImportError
        ``h3`` is not installed.
    TypeError, ValueError
        As for :func:`grid`; a resolution outside 0..15.

    Examples
    --------
    >>> pts = h3_cells((116.30, 39.90, 116.32, 39.92), 9)  # doctest: +SKIP
    """
    caller = "geoldp.points.h3_cells"
    resolution = check_int_range(resolution, "resolution", caller=caller, minimum=0, maximum=15)
    try:
        import h3
    except ImportError:  # optional extra
        raise ImportError(f"{caller} needs the 'h3' package: pip install 'geoldp[points]'.") from None
    polygon, area_crs, what = _area(area, crs, caller=caller)
    true_area = _true_area_m2(polygon, area_crs)
    per_cell = float(h3.average_hexagon_area(resolution, unit="m^2"))
    _check_estimate(
        true_area / per_cell, true_area, caller, f"resolution={resolution}", "a smaller resolution number"
    )
    lonlat = polygon if area_crs.equals("EPSG:4326") else _to_crs(polygon, area_crs, "EPSG:4326")
    cells = sorted(h3.geo_to_cells(lonlat, resolution))
    _check_count(len(cells), caller, "resolution (smaller number)")
    lat, lon = (
        np.asarray(v, dtype=np.float64) for v in zip(*(h3.cell_to_latlng(c) for c in cells), strict=True)
    )
    if not area_crs.equals("EPSG:4326"):
        from pyproj import Transformer

        lon, lat = Transformer.from_crs("EPSG:4326", area_crs, always_xy=True).transform(lon, lat)
    prov = f"h3_cells(resolution={resolution}, area={what}, crs={_crs_name(area_crs)})"
    return _points_frame(np.asarray(lon), np.asarray(lat), area_crs, prov, polygon.bounds, {"h3": cells})


def _osm_error(exc: Exception, name: str, caller: str) -> ValueError:
    """A ValueError naming the extract for an error of libosmium (its message can quote the file)."""
    text = str(exc).lower()
    if "detect file format" in text or "unknown file format" in text:
        why = (
            "its format cannot be told from its name; name it .osm, .osm.pbf, .osm.bz2 or .osm.gz "
            "(any format libosmium reads)"
        )
    elif "entit" in text:
        why = "it declares XML entities, which are refused (they can make a parser read other files)"
    else:
        why = "it is malformed, truncated or not an OpenStreetMap extract"
    return ValueError(f"{caller}: cannot read the OpenStreetMap extract '{name}': {why}.")


def road_nodes(path: str | os.PathLike[str], *, kind: str = "intersections") -> Any:
    """Road nodes of a local OpenStreetMap extract (.osm XML or .pbf) as public points.

    Needs the optional dependency ``osmium`` (pyosmium; ``pip install geoldp[points]``). Only ways with a
    ``highway`` tag count as roads. Nothing is downloaded: pass a file you have (e.g. a Geofabrik extract
    of your city; an extract is public data).

    Parameters
    ----------
    path : str or os.PathLike
        The extract (``.osm``, ``.osm.pbf``, ``.pbf``, ... any format libosmium reads).
    kind : {"intersections", "all"}, default "intersections"
        ``"intersections"``: nodes shared by at least two road ways (junctions). ``"all"``: every node of
        every road way.

    Returns
    -------
    geopandas.GeoDataFrame
        One Point per node in EPSG:4326, with the OSM node id in column ``"osm_id"``, ordered by id.
        ``attrs["geoldp_points"]`` holds the provenance (kind and file name, not its directory).

    Raises
    ------
    ImportError
        ``osmium`` is not installed.
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        Unknown ``kind``; fewer than 2 nodes found; a file that libosmium cannot read (malformed,
        truncated, an unknown format, XML entities), naming the file.

    Examples
    --------
    >>> pts = road_nodes("beijing.osm.pbf")  # doctest: +SKIP
    """
    caller = "geoldp.points.road_nodes"
    if not isinstance(kind, str) or kind.lower() not in _ROAD_KINDS:
        raise ValueError(f"The 'kind' parameter of {caller} must be one of {_ROAD_KINDS!r}.")
    kind = kind.lower()
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"The 'path' parameter of {caller} must be a file path. Got {type(path).__name__}.")
    if not os.path.isfile(path):
        if os.path.exists(path):
            raise ValueError(
                f"The 'path' parameter of {caller} is not a regular file (a directory, FIFO or device); "
                "name an OpenStreetMap extract."
            )
        raise FileNotFoundError(f"The OpenStreetMap extract given as 'path' to {caller} does not exist.")
    try:
        import osmium
    except ImportError:  # optional extra
        raise ImportError(f"{caller} needs the 'osmium' package: pip install 'geoldp[points]'.") from None
    ways: dict[int, int] = {}  # node id -> number of road ways using it
    where: dict[int, tuple[float, float]] = {}
    try:
        fp = osmium.FileProcessor(os.fspath(path), osmium.osm.NODE | osmium.osm.WAY).with_locations()
        obj: Any
        for obj in fp:
            if not obj.is_way() or "highway" not in obj.tags:
                continue
            seen = set()
            for ref in obj.nodes:
                if ref.ref in seen or not ref.location.valid():
                    continue
                seen.add(ref.ref)
                ways[ref.ref] = ways.get(ref.ref, 0) + 1
                where[ref.ref] = (ref.location.lon, ref.location.lat)
    except (RuntimeError, ValueError) as exc:  # libosmium's errors; their text is not passed on
        raise _osm_error(exc, os.path.basename(os.fspath(path)), caller) from None
    ids = sorted(n for n, k in ways.items() if kind == "all" or k >= 2)
    _check_count(len(ids), caller, "extract (or kind='all')")
    from pyproj import CRS

    lon = np.fromiter((where[i][0] for i in ids), dtype=np.float64, count=len(ids))
    lat = np.fromiter((where[i][1] for i in ids), dtype=np.float64, count=len(ids))
    prov = f"road_nodes(kind={kind}, file={os.path.basename(os.fspath(path))})"
    ids_arr = np.asarray(ids, dtype=np.int64)
    return _points_frame(lon, lat, CRS.from_epsg(4326), prov, None, {"osm_id": ids_arr})


def thin(points: Any, n: int, *, rng: Any = None) -> Any:
    """A uniformly random subset of ``n`` public points, in their original order.

    Thinning a public point set is post-processing of public data: it does not touch the privacy budget.
    Use it to reach a target size (the EM cost grows with the number of points).

    Parameters
    ----------
    points : geopandas.GeoDataFrame or geopandas.GeoSeries
        The public points (e.g. from :func:`grid` or :func:`road_nodes`).
    n : int
        Target size, 2 ≤ n. If ``n >= len(points)`` a copy of all points is returned.
    rng : {None, int, SeedSequence, BitGenerator, Generator}, optional
        ``None`` uses the operating system's CSPRNG; a seed makes the subset reproducible.

    Returns
    -------
    geopandas.GeoDataFrame or geopandas.GeoSeries
        The selected rows (index, columns and CRS kept), with ``attrs["geoldp_points"]`` extended by
        ``"; thin(n=...)"``.

    Examples
    --------
    >>> small = thin(grid((116.30, 39.90, 116.40, 39.95), 100), 500, rng=1)  # doctest: +SKIP
    """
    import geopandas as gpd

    from geoldp._core.randomness import resolve_rng

    caller = "geoldp.points.thin"
    if not isinstance(points, gpd.GeoDataFrame | gpd.GeoSeries):
        raise TypeError(
            f"The 'points' parameter of {caller} must be a GeoDataFrame or GeoSeries of Points. "
            f"Got {type(points).__name__}."
        )
    n = check_int_range(n, "n", caller=caller, minimum=2)
    source = resolve_rng(rng)
    m = len(points)
    if n >= m:
        out = points.copy()
    else:
        # the n smallest of m uniform keys: a uniformly random n-subset (ties are broken by position)
        keys = np.asarray(source.uniform(size=m), dtype=np.float64)
        keep = np.sort(np.argsort(keys, kind="stable")[:n])
        out = points.iloc[keep].copy()
    out.attrs = dict(points.attrs)
    base = points.attrs.get(PROVENANCE_KEY, "user points")
    out.attrs[PROVENANCE_KEY] = f"{base}; thin(n={n})"
    return out


# ------------------------------------------------------------------------------------------------------
# a point set rebuilt from its recipe, and its provenance kept beside a file (its identity in a release's
# ledger, provenance_of, recipe_of, digest_of and ledger_record, is geoldp._core.point_record)


def from_recipe(recipe: Any) -> Any:
    """Rebuild a point set from :func:`recipe_of` output (e.g. from a release's ledger).

    Raises
    ------
    ValueError
        Not a recipe this version knows.
    """
    if not isinstance(recipe, dict) or recipe.get("builder") not in ("grid", "h3_cells"):
        raise ValueError(
            "The point-set recipe must be a dict with builder 'grid' or 'h3_cells' (as written by "
            "geoldp.points.recipe_of); pass the public points file instead."
        )
    try:
        area = tuple(float(v) for v in recipe["area"])
        if recipe["builder"] == "grid":
            return grid(area, float(recipe["spacing_m"]), kind=str(recipe["kind"]), crs=recipe["crs"])
        return h3_cells(area, int(recipe["resolution"]), crs=recipe["crs"])
    except (KeyError, TypeError):
        raise ValueError(
            "The point-set recipe is incomplete: it needs area, crs and the builder's size."
        ) from None


def _sidecar(path: Any) -> Any:
    from pathlib import Path

    p = Path(path)
    return p.with_name(p.name + SIDECAR_SUFFIX)


def save_provenance(points: Any, path: Any, *, overwrite: bool = False) -> Any:
    """Keep a point set's provenance and area next to the file it was written to, for :func:`load_provenance`.

    A file format keeps no ``attrs``; this writes ``<path>.points.json`` (atomically) with the provenance,
    the area (so the recipe of a grid or H3 set, :func:`recipe_of`) and the digest of the points
    (:func:`digest_of`), which ties it to exactly these points. Everything in it is public. Returns the
    file written, or ``None`` (nothing written) when ``points`` carry no provenance.
    """
    import json

    from geoldp._core.safe_write import write_bytes

    attrs = getattr(points, "attrs", None) or {}
    if not isinstance(attrs.get(PROVENANCE_KEY), str):
        return None
    record = {"provenance": attrs[PROVENANCE_KEY], "digest": digest_of(points)}
    if isinstance(attrs.get(AREA_KEY), dict):
        record["area"] = attrs[AREA_KEY]
    side = _sidecar(path)
    write_bytes(side, json.dumps(record, indent=1, sort_keys=True).encode("utf-8"), overwrite=overwrite)
    return side


def load_provenance(points: Any, path: Any) -> Any:
    """``points`` read from ``path``, with the provenance and area kept by :func:`save_provenance`.

    The record is used only if it describes exactly these points (its digest): a file edited since, or
    a record of another file, is ignored with a :class:`~geoldp.GeoLDPWarning`. Without a record the
    points are returned unchanged; with one, a copy with ``attrs`` set.
    """
    import json
    from pathlib import Path

    from geoldp._core.errors import GeoLDPWarning

    side = _sidecar(path)
    try:
        text = side.read_text(encoding="utf-8")
    except FileNotFoundError:
        return points
    except OSError as exc:
        warnings.warn(
            f"Cannot read {side.name} ({exc.strerror}); the points' recipe is not kept.",
            GeoLDPWarning,
            stacklevel=2,
        )
        return points
    try:
        record = json.loads(text)
        ok = (
            isinstance(record, dict)
            and isinstance(record.get("provenance"), str)
            and record.get("digest") == digest_of(points)
            and isinstance(record.get("area", {}), dict)
        )
    except ValueError:
        ok = False
    if not ok:
        warnings.warn(
            f"{side.name} does not describe the points in {Path(path).name} (edited since, or another "
            "file's); their provenance and recipe are not kept. Write it again with 'geoldp points'.",
            GeoLDPWarning,
            stacklevel=2,
        )
        return points
    out = points.copy()
    out.attrs = dict(points.attrs, **{PROVENANCE_KEY: record["provenance"]})
    if "area" in record:
        out.attrs[AREA_KEY] = record["area"]
    return out
