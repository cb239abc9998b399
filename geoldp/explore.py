"""Interactive web maps (folium/Leaflet) that compare a release with its original and the public points.

folium is an optional dependency (``pip install "geoldp[explore]"``); it is imported inside
:func:`explore_release`, so ``import geoldp.explore`` works without it. The method
``released.ldp.explore(...)`` calls :func:`explore_release`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LAYER_STYLES", "explore_release"]

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
        The background, as in :class:`folium.Map`; ``None`` for none (the tiles load in the browser).

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
    fmap = folium.Map(tiles=tiles, control_scale=True)
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
