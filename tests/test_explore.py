"""released.ldp.explore(): a folium map with one layer per frame (skipped without folium)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import geopandas as gpd
import numpy as np
import pytest
import shapely

import geoldp
from geoldp.datasets import synthetic_city

folium = pytest.importorskip("folium")


@pytest.fixture(scope="module")
def city():
    pois, trips = synthetic_city(n_points=40, n_trips=6, max_len=5, seed=11)
    out = trips.ldp.perturb(pois, mechanism="tp", epsilon=4.0, rng=5)
    return pois, trips, out


def _layers(fmap) -> dict[str, list[dict]]:
    """Layer name -> the GeoJSON features inside that FeatureGroup."""
    found = {}
    for child in fmap._children.values():
        if isinstance(child, folium.FeatureGroup):
            feats = []
            for sub in child._children.values():
                if isinstance(sub, folium.GeoJson):
                    feats.extend(sub.data["features"])
            found[child.layer_name] = feats
    return found


def test_layers_for_every_frame_given(city):
    pois, trips, out = city
    fmap = out.ldp.explore(original=trips, points=pois)
    assert isinstance(fmap, folium.Map)
    layers = _layers(fmap)
    assert list(layers) == ["released", "original", "public points"]  # the release drawn underneath
    assert len(layers["original"]) == len(trips) and len(layers["released"]) == len(out)
    assert len(layers["public points"]) == len(pois)
    html = fmap.get_root().render()
    assert "L.control.layers" in html  # the toggles
    for name in layers:
        assert json.dumps(name) in html


def test_released_only_and_denoised(city):
    pois, trips, out = city
    assert list(_layers(out.ldp.explore())) == ["released"]
    assert list(_layers(out.ldp.explore(denoised=trips))) == ["released", "denoised"]


def test_coordinates_are_wgs84_and_only_geometry_and_row_label_are_embedded(city):
    pois, trips, out = city
    projected = out.to_crs("EPSG:3857").assign(secret="do-not-embed")
    layers = _layers(projected.ldp.explore(points=pois.to_crs("EPSG:3857")))
    coords = np.array([xy for f in layers["released"] for xy in f["geometry"]["coordinates"]])
    np.testing.assert_allclose(coords, shapely.get_coordinates(np.asarray(out.geometry.values)), atol=1e-9)
    assert all(set(f["properties"]) == {"row"} for f in layers["released"])
    assert [f["properties"]["row"] for f in layers["released"]] == [str(i) for i in out.index]
    assert "do-not-embed" not in projected.ldp.explore().get_root().render()


def test_accepts_a_pointset(city):
    pois, trips, out = city
    ps = geoldp.PointSet.from_geoseries(pois.geometry)
    assert len(_layers(out.ldp.explore(points=ps))["public points"]) == ps.size


def test_bad_inputs_name_the_parameter(city):
    pois, trips, out = city
    with pytest.raises(TypeError, match="'original' parameter of explore"):
        out.ldp.explore(original=trips.geometry.to_list())
    with pytest.raises(ValueError, match="'points' parameter of explore has no CRS"):
        out.ldp.explore(points=gpd.GeoSeries(list(pois.geometry)))
    before = out.copy()
    out.ldp.explore(original=trips, points=pois)
    assert out.equals(before) and out.crs == before.crs  # input not mutated


# ------------------------------------------------------------------------------------------------------
# 10^4 rows: thinned, fainter, styled, offline


@pytest.fixture(scope="module")
def big_city():
    pois, trips = synthetic_city(n_points=1_000, n_trips=10_000, max_len=6, seed=12)
    out = trips.ldp.perturb(pois, mechanism="tp", epsilon=4.0, rng=6)
    return pois, trips, out


def _styles(fmap) -> dict[str, dict]:
    found = {}
    for child in fmap._children.values():
        if isinstance(child, folium.FeatureGroup):
            for sub in child._children.values():
                if isinstance(sub, folium.GeoJson) and sub.style_function is not None:
                    found[child.layer_name] = sub.style_function(None)
    return found


def test_many_rows_are_thinned_the_map_says_so_and_lines_get_fainter(big_city, city):
    from geoldp.explore import LAYER_STYLES, MAX_ROWS

    _, trips, out = big_city
    fmap = out.ldp.explore(original=trips, tiles=None)
    layers = _layers(fmap)
    assert len(layers["released"]) == len(layers["original"]) == MAX_ROWS
    # the same rows in both layers: each release next to its original
    assert [f["properties"]["row"] for f in layers["released"]] == [
        f["properties"]["row"] for f in layers["original"]
    ]
    html = fmap.get_root().render()
    assert f"showing {MAX_ROWS:,} of {len(out):,} trajectories per layer" in html
    assert len(_layers(out.ldp.explore(max_rows=None, tiles=None))["released"]) == len(out)
    small = _styles(city[2].ldp.explore(original=city[1]))
    large = _styles(fmap)
    for name in ("original", "released"):
        assert small[name]["opacity"] == LAYER_STYLES[name]["opacity"]  # few rows: the base style
        assert 0.05 <= large[name]["opacity"] < 0.5 * small[name]["opacity"]
        assert 1.0 <= large[name]["weight"] <= small[name]["weight"]
        assert large[name]["color"] == LAYER_STYLES[name]["color"]
    with pytest.raises(ValueError, match="max_rows"):
        out.ldp.explore(max_rows=0)


def test_style_kwds_pass_through_for_every_layer_and_per_layer(city):
    pois, trips, out = city
    fmap = out.ldp.explore(
        original=trips, style_kwds={"weight": 5, "dashArray": "4 2", "released": {"color": "black"}}
    )
    styles = _styles(fmap)
    assert styles["released"]["color"] == "black" and styles["original"]["color"] != "black"
    assert all(s["weight"] == 5 and s["dashArray"] == "4 2" for s in styles.values())
    with pytest.raises(TypeError, match="style_kwds"):
        out.ldp.explore(style_kwds=["red"])
    with pytest.raises(TypeError, match=r"style_kwds\['released'\]"):
        out.ldp.explore(style_kwds={"released": "red"})


def test_the_page_loads_nothing_from_the_network(city):
    pytest.importorskip("xstatic.pkg.leaflet")
    pois, trips, out = city
    html = out.ldp.explore(original=trips, points=pois, tiles=None).get_root().render()
    assert "L.map(" in html and "leaflet" in html.lower()
    remote = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?:[^"]+)"', html)
    assert remote == []  # Leaflet is in the page
    assert "url(images/" not in html  # its images too


CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome", "chrome")) if p), None
)


# a headless browser: in the slow tier, which CI runs after installing Chromium (with the docs' checks)
@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (apt-get install chromium)")
def test_a_browser_offline_shows_both_layers_of_a_map_of_ten_thousand_rows(big_city, tmp_path):
    """Headless Chromium with every host unreachable renders the saved map; both the originals (blue) and
    the release (orange) show in the screenshot."""
    pytest.importorskip("xstatic.pkg.leaflet")
    from matplotlib.image import imread

    _, trips, out = big_city
    page = tmp_path / "map.html"
    out.ldp.explore(original=trips, tiles=None).save(str(page))
    png = tmp_path / "map.png"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,800", "--virtual-time-budget=10000",
           "--host-resolver-rules=MAP * ~NOTFOUND", f"--screenshot={png}", page.as_uri()]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert png.is_file(), proc.stderr[-2000:]
    rgb = imread(png)[..., :3] * 255.0
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    blue = (b > r + 25) & (b > g)  # the originals' #0072B2 over white
    orange = (r > b + 25) & (r > g)  # the release's #D55E00
    assert blue.mean() > 0.01 and orange.mean() > 0.01, (blue.mean(), orange.mean())
    assert (blue | orange).mean() < 0.9  # lines, not an opaque block
