"""A release carries its point-set recipe; estimates as GIS layers (geoldp.layers)."""

from __future__ import annotations

import json

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from shapely import LineString

import geoldp
from geoldp import PointSet, layers
from geoldp import points as gp

AREA = (116.30, 39.90, 116.40, 39.96)


@pytest.fixture(scope="module")
def P():
    return gp.grid(AREA, 1000)


@pytest.fixture(scope="module")
def release(P):
    rng = np.random.default_rng(0)
    lines = [
        LineString(zip(116.31 + rng.random(4) * 0.08, 39.91 + rng.random(4) * 0.04, strict=True))
        for _ in range(60)
    ]
    trips = gpd.GeoDataFrame({"user": [f"u{i % 7}" for i in range(60)]}, geometry=lines, crs="EPSG:4326")
    return trips, trips.ldp.perturb(P, epsilon=4.0, rng=0)


def test_ledger_holds_the_recipe_and_digest(P, release):
    _, out = release
    rec = out.attrs["geoldp"]["points"]
    assert rec["recipe"] == {
        "builder": "grid",
        "area": list(AREA),
        "spacing_m": 1000.0,
        "kind": "square",
        "crs": "EPSG:4326",
    }
    assert rec["size"] == len(P)
    rebuilt = gp.from_recipe(json.loads(json.dumps(rec["recipe"])))  # through JSON, as from a sidecar
    assert np.array_equal(rebuilt.geometry.x, P.geometry.x) and np.array_equal(
        rebuilt.geometry.y, P.geometry.y
    )
    assert gp.digest_of(rebuilt) == rec["digest"]


def test_digest_is_stable_across_crs_and_sensitive_to_changes(P):
    d = gp.digest_of(P)
    assert gp.digest_of(P.to_crs(3857)) == d
    assert gp.digest_of(PointSet.from_geodataframe(P)) == d
    assert gp.digest_of(P.iloc[::-1]) != d  # order matters: releases are indices into P
    assert gp.digest_of(P.iloc[1:]) != d
    moved = P.copy()
    moved.geometry = moved.geometry.translate(xoff=1e-5)  # about a metre
    assert gp.digest_of(moved) != d


def test_no_recipe_for_thinned_or_polygon_sets(P):
    assert gp.recipe_of(gp.thin(P, 10, rng=0)) is None
    poly = gpd.GeoDataFrame(geometry=gpd.GeoSeries.from_xy([116.35], [39.93]).buffer(0.02), crs=4326)
    assert gp.recipe_of(gp.grid(poly, 1000)) is None
    assert gp.recipe_of(PointSet([0.0, 1.0], [0.0, 0.0])) is None


def test_points_for_rebuilds_and_refuses_a_mismatch(P, release):
    _, out = release
    assert len(layers.points_for(out)) == len(P)
    assert layers.points_for(out, P) is P
    with pytest.raises(ValueError, match="do not match the release"):
        layers.points_for(out, gp.grid(AREA, 900))
    thinned = gp.thin(P, 30, rng=0)
    trips, _ = release
    other = trips.ldp.perturb(thinned, epsilon=4.0, rng=0)
    with pytest.raises(ValueError, match="no recipe"):
        layers.points_for(other)
    assert layers.points_for(other, thinned) is thinned


def test_estimate_layers_and_files(P, release, tmp_path):
    import pyogrio

    _, out = release
    lay = layers.estimate_layers(
        out, cell_km=3.0, rng=0, n_candidates=200, n_boot=5, layers=("zone_visits", "od_flows", "hotspots")
    )
    zv, od, hot = lay["zone_visits"], lay["od_flows"], lay["hotspots"]

    zones = geoldp.zone_grid(P, cell_km=3.0)
    assert len(zv) == len(zones) and zv["zone"].tolist() == list(zones.index)
    assert set(zv.geom_type) == {"Polygon"} and set(od.geom_type) == {"LineString"}
    for layer in (zv, od, hot):
        assert (layer["lower"] <= layer["estimate"] + 1e-9).all() and (
            layer["estimate"] <= layer["upper"] + 1e-9
        ).all()
        assert np.allclose(layer["width"], layer["upper"] - layer["lower"])
    # raw is the count on the release itself: each trajectory visits each zone at most once
    assert zv["raw"].max() <= len(out)
    assert hot["rank"].tolist() == list(range(1, len(hot) + 1))
    assert (np.diff(hot["estimate"].to_numpy()) <= 0).all()
    # OD lines run from the origin zone's centroid to the destination's
    first = od.iloc[0]
    c = zones.to_crs(zones.estimate_utm_crs()).centroid.to_crs(4326)
    assert first.geometry.coords[0] == pytest.approx((c.loc[first.origin].x, c.loc[first.origin].y))
    gpkg = tmp_path / "est.gpkg"
    layers.write_layers(lay, gpkg)
    names = [str(n) for n in pyogrio.list_layers(gpkg)[:, 0]]
    assert names == ["zone_visits", "od_flows", "hotspots"]
    back = gpd.read_file(gpkg, layer="od_flows")
    assert len(back) == len(od)
    with pytest.raises(ValueError, match="exist"):
        layers.write_layers(lay, gpkg)
    files = layers.write_layers(lay, tmp_path / "est.geojson")
    assert [f.name for f in files] == [
        "est.zone_visits.geojson",
        "est.od_flows.geojson",
        "est.hotspots.geojson",
    ]
    doc = json.loads(files[0].read_text())
    assert doc["features"][0]["properties"]["zone"] == 0


def test_split_release_parts_add_up(P, release):
    trips, _ = release
    out = trips.ldp.perturb(P, epsilon=4.0, rng=0, user_col="user", user_budget="split")
    kw = dict(cell_km=3.0, n_candidates=200, n_boot=0, layers=("zone_visits",))
    total = layers.estimate_layers(out, rng=0, **kw)["zone_visits"]
    from geoldp.budget_strategies import release_parts

    parts = [layers.estimate_layers(p, P, rng=0, **kw)["zone_visits"] for p in release_parts(out)]
    assert np.allclose(total["raw"], sum(p["raw"] for p in parts))
    assert total["raw"].sum() == pytest.approx(sum(p["raw"].sum() for p in parts))


def test_bad_layer_names(release):
    _, out = release
    with pytest.raises(ValueError, match="layers"):
        layers.estimate_layers(out, layers=("visits",))
    with pytest.raises(ValueError, match="regions"):
        layers.estimate_layers(out, layers=("range_counts",))


def test_estimators_refuse_another_point_set(P, release):
    from geoldp import estimate

    _, out = release
    with pytest.raises(ValueError, match="not the public point set of the release"):
        estimate.visit_counts(out, gp.grid(AREA, 900), n_boot=0, n_candidates=10, rng=0)
    with pytest.raises(ValueError, match="not the public point set of the release"):
        estimate.fit(out, P.iloc[::-1], rng=0)


def test_estimate_layers_reports_its_stages_and_the_layers_do_not_change(release, capsys):
    """progress=True: on the CLI one "geoldp: ..." line per stage (the fit's per length, each layer's);
    the layers are those without progress."""
    from geoldp._core import progress as _progress

    _, out = release
    kw = {"layers": ("zone_visits", "od_flows"), "rng": 0, "n_candidates": 200, "n_boot": 3}
    quiet = layers.estimate_layers(out, **kw)
    assert capsys.readouterr().err == ""
    _progress.use_lines()
    try:
        loud = layers.estimate_layers(out, progress=True, **kw)
    finally:
        _progress.use_lines(False)
    err = capsys.readouterr().err.splitlines()
    assert all(line.startswith("geoldp: ") for line in err)
    assert "geoldp: fitting the population model: simulating length 4 (1/2)" in err
    assert any(line.startswith("geoldp: estimate layers: od flows (2/2)") for line in err)
    assert any(line.startswith("geoldp: intervals: bootstrap of length 4") for line in err)
    for name in kw["layers"]:
        pd.testing.assert_frame_equal(pd.DataFrame(loud[name]), pd.DataFrame(quiet[name]))
    with pytest.raises(TypeError, match="'progress' parameter of estimate_layers"):
        layers.estimate_layers(out, progress="yes", **kw)
