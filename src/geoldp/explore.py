"""Interactive web maps (folium/Leaflet) that compare a release with its original and the public points.

folium is an optional dependency (``pip install "geoldp[explore]"``); it is imported inside
:func:`explore_release`, so ``import geoldp.explore`` works without it. The method
``released.ldp.explore(...)`` calls :func:`explore_release`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LAYER_STYLES", "explore_estimates", "explore_release"]

#: Colour of each layer (the colour-blind-safe Okabe-Ito palette) and whether it is shown when the map opens.
LAYER_STYLES: dict[str, dict[str, Any]] = {
    "original": {"color": "#0072B2", "weight": 3, "opacity": 0.6, "show": True},
    "released": {"color": "#D55E00", "weight": 2, "opacity": 0.9, "show": True},
    "denoised": {"color": "#009E73", "weight": 2, "opacity": 0.9, "show": True},
    "public points": {"color": "#555555", "radius": 2, "show": False},
}


def _folium() -> Any:
    try:
        import folium
    except ImportError as exc:
        raise ImportError(
            'explore needs folium. Install it with `pip install "geoldp[explore]"` (or `pip install folium`).'
        ) from exc
    return folium


def _as_wgs84_geoseries(obj: Any, name: str) -> Any:
    """The geometries of ``obj`` (GeoDataFrame, GeoSeries or PointSet) in WGS 84; attributes are dropped."""
    import geopandas as gpd

    from geoldp.pointset import PointSet

    if isinstance(obj, PointSet):
        geoms = gpd.GeoSeries(gpd.points_from_xy(obj.lon, obj.lat), crs=obj.crs)
    elif isinstance(obj, gpd.GeoDataFrame):
        geoms = obj.geometry
    elif isinstance(obj, gpd.GeoSeries):
        geoms = obj
    else:
        raise TypeError(
            f"The '{name}' parameter of explore must be a geopandas.GeoDataFrame, a GeoSeries"
            f"{' or a geoldp.PointSet' if name == 'points' else ''}. Got {type(obj).__name__} instead."
        )
    if geoms.crs is None:
        raise ValueError(
            f"The '{name}' parameter of explore has no CRS; declare it first, e.g. .set_crs('EPSG:4326')."
        )
    return geoms.to_crs("EPSG:4326")


def explore_release(
    released: Any,
    original: Any = None,
    points: Any = None,
    *,
    denoised: Any = None,
    tiles: str | None = "OpenStreetMap",
    m: Any = None,
) -> Any:
    """An interactive map with one toggleable layer each for the trajectories and the public points.

    Parameters
    ----------
    released : geopandas.GeoDataFrame
        The release (output of ``perturb``), any CRS.
    original : geopandas.GeoDataFrame or geopandas.GeoSeries, optional
        The original trajectories, any CRS (rows in the same order as ``released``).
    points : geopandas.GeoDataFrame, geopandas.GeoSeries or geoldp.PointSet, optional
        The public point set (hidden when the map opens; tick it in the layer control).
    denoised : geopandas.GeoDataFrame or geopandas.GeoSeries, optional
        Trajectories estimated from the release by the collector.
    tiles : str or None, default "OpenStreetMap"
        The background, as in :class:`folium.Map`; ``None`` for none (the tiles load in the browser, so
        offline the background stays blank: pass ``None`` for a plain one). Ignored with ``m``.
    m : folium.Map, optional
        Add the layers to this map (e.g. one made by :func:`explore_estimates`) instead of a new one.

    Returns
    -------
    folium.Map
        Layers named ``"original"``, ``"released"``, ``"denoised"`` and ``"public points"`` (those given),
        a layer control, and a tooltip with the row label on every trajectory. Display it in a notebook or
        write it with ``.save("map.html")``.

    Raises
    ------
    ImportError
        folium is not installed.
    TypeError
        A frame is not a GeoDataFrame/GeoSeries (or PointSet for ``points``).
    ValueError
        A frame has no CRS.

    Notes
    -----
    Only geometries and row labels go into the map, no other column. A map that shows ``original``
    contains the private trajectories: it is as private as they are, so do not publish it.

    Examples
    --------
    >>> m = out.ldp.explore(original=trips, points=pois)  # doctest: +SKIP
    >>> m.save("compare.html")  # doctest: +SKIP
    """
    folium = _folium()
    layers = {
        layer: _as_wgs84_geoseries(obj, param)
        for layer, param, obj in (
            ("original", "original", original),
            ("released", "released", released),
            ("denoised", "denoised", denoised),
            ("public points", "points", points),
        )
        if obj is not None or layer == "released"
    }
    fmap = folium.Map(tiles=tiles, control_scale=True) if m is None else m
    for name, geoms in layers.items():
        style = LAYER_STYLES[name]
        group = folium.FeatureGroup(name=name, show=style["show"])
        if name == "public points":
            folium.GeoJson(
                geoms.to_json(drop_id=True),
                marker=folium.CircleMarker(
                    radius=style["radius"], color=style["color"], fill=True, fill_opacity=0.8, weight=0
                ),
            ).add_to(group)
        else:
            frame = geoms.to_frame("geometry")
            frame["row"] = [str(label) for label in geoms.index]
            color, weight, opacity = style["color"], style["weight"], style["opacity"]
            folium.GeoJson(
                frame.to_json(drop_id=True),
                style_function=lambda _f, c=color, w=weight, o=opacity: {
                    "color": c,
                    "weight": w,
                    "opacity": o,
                },
                tooltip=folium.GeoJsonTooltip(fields=["row"], aliases=[f"{name} row"]),
            ).add_to(group)
        group.add_to(fmap)
    folium.LayerControl(collapsed=False).add_to(fmap)
    bounds = [g.total_bounds for g in layers.values() if len(g) and not g.is_empty.all()]
    if bounds:
        minx = min(b[0] for b in bounds)
        miny = min(b[1] for b in bounds)
        maxx = max(b[2] for b in bounds)
        maxy = max(b[3] for b in bounds)
        fmap.fit_bounds([[miny, minx], [maxy, maxx]])
    return fmap


def explore_estimates(
    layer: Any,
    column: str = "estimate",
    *,
    m: Any = None,
    tiles: str | None = "OpenStreetMap",
    name: str | None = None,
    color: str = "#CC79A7",
) -> Any:
    """An interactive map of an estimate layer: zones or points shaded by ``column``, flows as lines.

    Every feature has a tooltip with its id, the estimate and its interval (``lower``, ``upper``) and the
    raw count on the release.

    Parameters
    ----------
    layer : geopandas.GeoDataFrame
        A layer of :func:`geoldp.layers.estimate_layers` (columns ``estimate``, ``lower``, ``upper``), any
        CRS.
    column : str, default "estimate"
        The column that sets the opacity of polygons and points and the weight of lines (``"width"`` maps
        the uncertainty).
    m : folium.Map, optional
        Add the layer to this map instead of a new one (several layers on one map).
    tiles : str or None, default "OpenStreetMap"
        Background of a new map, as in :class:`folium.Map`; ``None`` for a blank one (the tiles load in
        the browser, so offline they stay blank anyway).
    name : str, optional
        Layer name in the layer control (default: ``column``).
    color : str, default "#CC79A7"
        Fill or line colour.

    Returns
    -------
    folium.Map

    Raises
    ------
    ImportError
        folium is not installed.
    TypeError, ValueError
        Not a GeoDataFrame with a CRS; ``column`` missing.

    Notes
    -----
    An estimate is computed from the release alone (post-processing): the map is as public as the
    release.

    Examples
    --------
    >>> fmap = explore_estimates(layers["zone_visits"])  # doctest: +SKIP
    >>> explore_estimates(layers["od_flows"], m=fmap).save("estimates.html")  # doctest: +SKIP
    """
    import geopandas as gpd
    import numpy as np

    folium = _folium()
    if not isinstance(layer, gpd.GeoDataFrame) or layer.crs is None:
        raise TypeError("The 'layer' parameter of explore_estimates must be a GeoDataFrame with a CRS.")
    if column not in layer.columns:
        raise ValueError(
            f"The 'column' parameter of explore_estimates names no column of the layer: {column!r}."
        )
    z = layer.to_crs("EPSG:4326")
    values = np.clip(np.nan_to_num(z[column].to_numpy(dtype=np.float64), nan=0.0), 0.0, None)
    top = float(values.max()) if values.size and values.max() > 0 else 1.0
    ids = [c for c in ("rank", "zone", "point", "region", "origin", "destination") if c in z.columns]
    fields = ids + [c for c in ("estimate", "lower", "upper", "raw") if c in z.columns]
    frame = z[[*fields, z.geometry.name]].copy()
    for c in ("estimate", "lower", "upper"):
        frame[c] = frame[c].round(2)
    frame["_share"] = values / top
    fmap = folium.Map(tiles=tiles, control_scale=True) if m is None else m
    kinds = set(z.geom_type)

    def style(feature: Any) -> dict[str, Any]:
        share = float(feature["properties"]["_share"])
        if kinds <= {"LineString", "MultiLineString"}:
            return {"color": color, "weight": 0.5 + 7.0 * share, "opacity": 0.8}
        return {"color": "#777777", "weight": 0.3, "fillColor": color, "fillOpacity": 0.05 + 0.8 * share}

    group = folium.FeatureGroup(name=name or column, show=True)
    folium.GeoJson(
        frame.to_json(drop_id=True),
        style_function=style,
        marker=folium.CircleMarker(radius=4, fill=True, weight=0, fill_color=color, fill_opacity=0.7),
        tooltip=folium.GeoJsonTooltip(fields=fields),
    ).add_to(group)
    group.add_to(fmap)
    if m is None:
        folium.LayerControl(collapsed=False).add_to(fmap)
        if len(z) and not z.is_empty.all():
            b = z.total_bounds
            fmap.fit_bounds([[b[1], b[0]], [b[3], b[2]]])
    return fmap
