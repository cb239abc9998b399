"""released.ldp.explore(): a folium map with one layer per frame (skipped without folium)."""

from __future__ import annotations

import json

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
    assert list(layers) == ["original", "released", "public points"]
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
