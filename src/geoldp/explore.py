"""Interactive web maps (folium/Leaflet) that compare a release with its original and the public points.

folium is an optional dependency (``pip install "geoldp[explore]"``); it is imported inside
:func:`explore_release`, so ``import geoldp.explore`` works without it. The method
``released.ldp.explore(...)`` calls :func:`explore_release`.

The maps work offline, Leaflet written into the page from the ``xstatic-leaflet`` package of the
``explore`` extra (:doc:`/user_guide`, "Looking at a release"); without that package the page loads
Leaflet from folium's CDN.
"""

from __future__ import annotations

from typing import Any

__all__ = ["explore_estimates", "explore_release"]

#: Trajectories drawn per layer by default: more rows are thinned to this many, evenly spaced (the map
#: says so)
MAX_ROWS = 2_000
#: Up to this many rows a layer is drawn with the opacity and weight of :data:`LAYER_STYLES`; more rows get
#: thinner, fainter lines (by ``sqrt(FULL_STYLE_ROWS / rows)``), so that overlapping lines build up density
#: instead of an opaque block.
FULL_STYLE_ROWS = 100

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

    from geoldp._core.pointset import PointSet

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


def _inline_leaflet(fmap: Any) -> bool:
    """Write Leaflet's JavaScript and CSS into the page of ``fmap`` instead of linking folium's CDNs.

    The page then renders offline. Returns False, changing nothing, without the ``xstatic-leaflet`` package.

    Only Leaflet is kept: folium's other default assets (jQuery, Bootstrap, icon fonts) serve markers and
    popups these maps do not use.
    """
    import base64
    import re
    from pathlib import Path

    try:
        import xstatic.pkg.leaflet as xleaflet
    except ImportError:
        return False
    folium = _folium()
    base = Path(xleaflet.BASE_DIR)
    js = (base / "leaflet.js").read_text(encoding="utf-8")
    css = (base / "leaflet.css").read_text(encoding="utf-8")

    def data_uri(match: Any) -> str:
        png = base / match.group(1)
        if not png.is_file():
            return match.group(0)
        return "url(data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii") + ")"

    css = re.sub(r"url\((images/[A-Za-z0-9_.-]+\.png)\)", data_uri, css)
    fmap.default_js = []
    fmap.default_css = []
    header = fmap.get_root().header
    header.add_child(folium.Element(f"<style>{css}</style>"), name="geoldp_leaflet_css")
    header.add_child(folium.Element(f"<script>{js}</script>"), name="geoldp_leaflet_js")
    return True


def _new_map(tiles: str | None) -> Any:
    """A folium map with a scale bar, Leaflet inlined where possible (see :func:`_inline_leaflet`)."""
    fmap = _folium().Map(tiles=tiles, control_scale=True)
    _inline_leaflet(fmap)
    return fmap


def _thin(n: int, max_rows: int | None) -> Any:
    """Positions of the rows drawn: all, or ``max_rows`` evenly spaced ones (the same for every layer)."""
    import numpy as np

    if max_rows is None or n <= max_rows:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_rows).round().astype(np.int64))


def _layer_style(name: str, n_drawn: int, style_kwds: dict[str, Any]) -> dict[str, Any]:
    """Leaflet path options of a trajectory layer: its own scaled to the rows drawn, then ``style_kwds``."""
    base = LAYER_STYLES[name]
    scale = min(1.0, (FULL_STYLE_ROWS / max(n_drawn, 1)) ** 0.5)
    style = {
        "color": base["color"],
        "weight": max(1.0, base["weight"] * scale**0.5),
        "opacity": max(0.08, base["opacity"] * scale),
    }
    style.update({k: v for k, v in style_kwds.items() if k not in LAYER_STYLES})
    own = style_kwds.get(name, {})
    if not isinstance(own, dict):
        raise TypeError(
            f"style_kwds[{name!r}] of explore must be a dict of Leaflet path options, e.g. "
            f"{{'{name}': {{'color': 'red', 'weight': 1}}}}. Got {type(own).__name__}."
        )
    style.update(own)
    return style


def _caption(fmap: Any, text: str) -> None:
    """A note in the map's lower left corner (which rows the map shows)."""
    html = (
        '<div class="geoldp-caption" style="position: fixed; left: 10px; bottom: 64px; z-index: 1000; '
        "background: rgba(255, 255, 255, 0.85); padding: 2px 6px; font: 12px sans-serif; "
        f'border-radius: 3px;">{text}</div>'
    )
    fmap.get_root().html.add_child(_folium().Element(html), name="geoldp_caption")


def explore_release(
    released: Any,
    original: Any = None,
    points: Any = None,
    *,
    denoised: Any = None,
    tiles: str | None = "OpenStreetMap",
    m: Any = None,
    max_rows: int | None = MAX_ROWS,
    style_kwds: dict[str, Any] | None = None,
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
    max_rows : int or None, default 2000
        Draw at most this many trajectories per layer: above it, evenly spaced rows (the same positions in
        every layer), and the map says how many of how many it shows. ``None`` draws every row (a page of
        10⁴ trajectories is several megabytes and slow to pan).
    style_kwds : dict, optional
        Leaflet path options (``color``, ``weight``, ``opacity``, ``dashArray`` ...) for every trajectory
        layer, as in ``GeoDataFrame.explore``; under a layer's name (``"original"``, ``"released"``,
        ``"denoised"``), a dict of options for that layer only, e.g.
        ``{"weight": 1, "released": {"color": "black"}}``. By default the colours of
        :data:`LAYER_STYLES`, with weight and opacity lowered as the rows drawn grow.

    Returns
    -------
    folium.Map
        Layers named ``"original"``, ``"released"``, ``"denoised"`` and ``"public points"`` (those given),
        a layer control, and a tooltip with the row label on every trajectory. Display it in a notebook or
        write it with ``.save("map.html")``; the page needs no network but for the background tiles.

    Raises
    ------
    ImportError
        folium is not installed.
    TypeError
        A frame is not a GeoDataFrame/GeoSeries (or PointSet for ``points``); ``style_kwds`` not a dict.
    ValueError
        A frame has no CRS; ``max_rows`` below 1.

    Notes
    -----
    Only geometries and row labels go into the map, no other column. A map that shows ``original``
    contains the private trajectories: it is as private as they are, so do not publish it.

    Examples
    --------
    >>> m = out.ldp.explore(original=trips, points=pois)  # doctest: +SKIP
    >>> m.save("compare.html")  # doctest: +SKIP
    """
    from geoldp._core.validation import check_int_min

    folium = _folium()
    if max_rows is not None:
        max_rows = check_int_min(max_rows, "max_rows", minimum=1, caller="explore")
    if style_kwds is None:
        style_kwds = {}
    if not isinstance(style_kwds, dict):
        raise TypeError(
            "The 'style_kwds' parameter of explore must be a dict of Leaflet path options, e.g. "
            f"{{'weight': 1, 'released': {{'color': 'black'}}}}. Got {type(style_kwds).__name__}."
        )
    # released first: drawn underneath, so the originals (and the estimate) stay visible on top of its noise
    layers = {
        layer: _as_wgs84_geoseries(obj, param)
        for layer, param, obj in (
            ("released", "released", released),
            ("denoised", "denoised", denoised),
            ("original", "original", original),
            ("public points", "points", points),
        )
        if obj is not None or layer == "released"
    }
    fmap = _new_map(tiles) if m is None else m
    thinned = []
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
            keep = _thin(len(geoms), max_rows)
            if len(keep) < len(geoms):
                thinned.append((name, len(keep), len(geoms)))
            shown = geoms.iloc[keep]
            # 1e-6 degrees (0.1 m) is finer than any public point set: the page is about half the size
            frame = shown.set_precision(1e-6, mode="pointwise").to_frame("geometry")
            frame["row"] = [str(label) for label in shown.index]
            path = _layer_style(name, len(keep), style_kwds)
            folium.GeoJson(
                frame.to_json(drop_id=True),
                style_function=lambda _f, path=path: path,
                tooltip=folium.GeoJsonTooltip(fields=["row"], aliases=[f"{name} row"]),
            ).add_to(group)
        group.add_to(fmap)
    if thinned:
        _, shown_n, total = thinned[0]
        _caption(
            fmap,
            f"showing {shown_n:,} of {total:,} trajectories per layer (evenly spaced rows; "
            "max_rows=None draws every row)",
        )
    folium.LayerControl(collapsed=False).add_to(fmap)
    _fit_bounds(fmap, layers.values())
    return fmap


def _fit_bounds(fmap: Any, frames: Any) -> None:
    """Show the frames' joint extent (WGS 84), if any is not empty."""
    import numpy as np

    bounds = [g.total_bounds for g in frames if len(g) and not g.is_empty.all()]
    if bounds:
        b = np.array(bounds)
        fmap.fit_bounds([[b[:, 1].min(), b[:, 0].min()], [b[:, 3].max(), b[:, 2].max()]])


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
    fmap = _new_map(tiles) if m is None else m
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
        _fit_bounds(fmap, [z])
    return fmap
