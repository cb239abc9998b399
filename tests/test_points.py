"""geoldp.points: public point sets from public inputs (grid, H3, OSM road nodes, thinning) and the guard."""

from __future__ import annotations

import json
import math
import os
import sys
import warnings

import geopandas as gpd
import numpy as np
import pytest
import shapely
from pyproj import Geod
from scipy.spatial import cKDTree

import geoldp
from geoldp import points as gp

BBOX = (116.30, 39.90, 116.40, 39.95)  # central Beijing, lon/lat
GEOD = Geod(ellps="WGS84")
UTM50 = "EPSG:32650"


def _utm_xy(gdf):
    g = gdf.to_crs(UTM50).geometry
    return np.column_stack([g.x.to_numpy(), g.y.to_numpy()])


def _nn_distances(xy):
    d, _ = cKDTree(xy).query(xy, k=2)
    return d[:, 1]


# ------------------------------------------------------------------------------------------------------
# grid


def test_square_grid_lonlat_has_metric_spacing_and_covers_the_box():
    pts = gp.grid(BBOX, 500)
    assert isinstance(pts, gpd.GeoDataFrame) and pts.crs.equals("EPSG:4326")
    assert set(pts.geom_type) == {"Point"}
    x, y = pts.geometry.x.to_numpy(), pts.geometry.y.to_numpy()
    assert (x >= BBOX[0]).all() and (x <= BBOX[2]).all() and (y >= BBOX[1]).all() and (y <= BBOX[3]).all()
    # ellipsoidal distance to the nearest neighbour: 500 m up to the AEQD scale error over ~5 km (< 0.1 %)
    _, _, dist = GEOD.inv(x[:-1], y[:-1], x[1:], y[1:])
    nn = _nn_distances(_utm_xy(pts))
    assert np.all(np.abs(nn - 500) < 0.005 * 500)  # UTM scale factor ~0.9996..1.0004 here
    # the count is the box area over the cell area, up to one row and one column of edge effect
    w = GEOD.inv(BBOX[0], 39.925, BBOX[2], 39.925)[2]
    h = GEOD.inv(116.35, BBOX[1], 116.35, BBOX[3])[2]
    assert math.floor(w / 500) * math.floor(h / 500) <= len(pts) <= (w / 500 + 1) * (h / 500 + 1)
    assert np.min(dist) > 0


def test_grid_in_a_projected_crs_is_exact():
    # 6.5 x 4.5 km (UTM metres are true metres up to the scale factor 0.9996 near the central meridian)
    bbox = (500_000.0, 4_416_000.0, 506_500.0, 4_420_500.0)
    pts = gp.grid(bbox, 1000, crs=UTM50)
    assert pts.crs.equals(UTM50)
    xy = np.column_stack([pts.geometry.x, pts.geometry.y])
    assert len(pts) == 7 * 5
    np.testing.assert_allclose(_nn_distances(xy), 1000, rtol=2e-3)  # the AEQD vs UTM scale difference


def test_hex_grid_has_six_equidistant_neighbours_and_the_hex_density():
    sq = gp.grid(BBOX, 400)
    hx = gp.grid(BBOX, 400, kind="hex")
    xy = _utm_xy(hx)
    d, _ = cKDTree(xy).query(xy, k=7)
    interior = np.all(d[:, 1:] < 1.1 * 400, axis=1)
    assert interior.mean() > 0.6  # the rest are on the edge of the box
    np.testing.assert_allclose(d[interior, 1:], 400, rtol=5e-3)
    # a hexagonal lattice holds 2/sqrt(3) as many points per area as a square one
    assert len(hx) / len(sq) == pytest.approx(2 / math.sqrt(3), rel=0.05)


def test_grid_over_a_polygon_stays_inside_it():
    tri = shapely.Polygon([(116.30, 39.90), (116.40, 39.90), (116.30, 39.95)])
    area = gpd.GeoSeries([tri], crs="EPSG:4326")
    pts = gp.grid(area, 300)
    box_pts = gp.grid(BBOX, 300)
    assert shapely.contains_xy(tri.buffer(1e-9), pts.geometry.x, pts.geometry.y).all()
    assert len(pts) / len(box_pts) == pytest.approx(0.5, abs=0.05)  # the triangle is half the box
    assert "area=polygon" in pts.attrs["geoldp_points"]
    pts_gdf = gp.grid(gpd.GeoDataFrame(geometry=area), 300)
    assert pts_gdf.geometry.equals(pts.geometry)


def test_grid_respects_holes_and_multipolygons():
    outer = shapely.box(*BBOX)
    hole = shapely.box(116.33, 39.91, 116.37, 39.94)
    holed = gp.grid(gpd.GeoSeries([outer.difference(hole)], crs="EPSG:4326"), 400)
    assert not shapely.contains_xy(hole, holed.geometry.x, holed.geometry.y).any()
    full = gp.grid(BBOX, 400)
    share = hole.area / outer.area  # in degrees: fine for the share of a small box
    assert len(holed) / len(full) == pytest.approx(1 - share, abs=0.05)
    parts = gpd.GeoSeries(
        [shapely.box(116.30, 39.90, 116.32, 39.92), shapely.box(116.37, 39.93, 116.40, 39.95)], crs=4326
    )
    multi = gp.grid(parts, 400)
    inside = shapely.contains_xy(parts.union_all().buffer(1e-9), multi.geometry.x, multi.geometry.y)
    assert inside.all() and len(multi) > 2


def test_grid_provenance_has_no_coordinates():
    prov = gp.grid(BBOX, 500).attrs["geoldp_points"]
    assert prov == "grid(kind=square, spacing_m=500, area=bbox, crs=EPSG:4326)"
    assert "116" not in prov and "39.9" not in prov


@pytest.mark.parametrize(
    ("area", "kwargs", "exc", "match"),
    [
        (BBOX, {"spacing_m": -1}, ValueError, "spacing_m"),
        (BBOX, {"spacing_m": "500"}, TypeError, "spacing_m"),
        (BBOX, {"spacing_m": 500, "kind": "tri"}, ValueError, "kind"),
        ((116.4, 39.9, 116.3, 39.95), {"spacing_m": 500}, ValueError, "minx < maxx"),
        ((1, 2, 3), {"spacing_m": 500}, ValueError, "4 numbers"),
        ("116,39,117,40", {"spacing_m": 500}, TypeError, "bounding box"),
        ((0, 0, 500_000, 500_000), {"spacing_m": 500}, ValueError, "crs="),
        (BBOX, {"spacing_m": 1}, ValueError, "MAX_POINTS"),
        (BBOX, {"spacing_m": 50_000}, ValueError, "at least 2"),
        (BBOX, {"spacing_m": 500, "crs": "EPSG:99999"}, ValueError, "'crs'"),
    ],
)
def test_grid_rejects_bad_input(area, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        gp.grid(area, **kwargs)


def test_grid_rejects_bad_frames():
    poly = shapely.box(*BBOX)
    with pytest.raises(ValueError, match="no CRS"):
        gp.grid(gpd.GeoSeries([poly]), 500)
    with pytest.raises(TypeError, match="Polygons"):
        gp.grid(gpd.GeoSeries([shapely.Point(116.3, 39.9)], crs="EPSG:4326"), 500)
    with pytest.raises(ValueError, match="differs"):
        gp.grid(gpd.GeoSeries([poly], crs="EPSG:4326"), 500, crs=UTM50)


def test_grid_points_are_accepted_by_perturb_and_recorded_in_the_ledger(toy_lines):
    pts = gp.grid(BBOX, 1000)
    out = toy_lines.ldp.perturb(pts, epsilon=4.0, rng=1)
    assert out.attrs["geoldp"]["points"]["provenance"] == pts.attrs["geoldp_points"]
    # every output vertex is a grid point
    grid_xy = {(x, y) for x, y in zip(pts.geometry.x, pts.geometry.y, strict=True)}
    for line in out.geometry:
        assert set(line.coords) <= grid_xy
    ps = geoldp.PointSet.from_geodataframe(pts)
    assert len(ps) == len(pts)


def test_a_pointset_has_no_provenance(toy_lines, city_points):
    out = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=1)
    record = out.attrs["geoldp"]["points"]
    assert record["provenance"] is None and record["recipe"] is None
    assert record["digest"] == gp.digest_of(city_points) and record["size"] == len(city_points)
    assert gp.provenance_of(city_points) is None


# ------------------------------------------------------------------------------------------------------
# the guard: an area computed from the data being released


def test_area_from_the_released_frame_warns(toy_lines):
    pts = gp.grid(tuple(toy_lines.total_bounds), 300)
    with pytest.warns(geoldp.PrivacyWarning, match="bounds of the trajectories") as rec:
        toy_lines.ldp.perturb(pts, epsilon=4.0, rng=1)
    assert all("116." not in str(w.message) for w in rec)  # no coordinates in the message


def test_convex_hull_of_the_released_frame_warns(toy_lines):
    toy_lines = toy_lines.iloc[:3]  # union_all drops the degenerate (stationary) line of the 4th row
    hull = gpd.GeoSeries([toy_lines.union_all().convex_hull], crs=toy_lines.crs)
    pts = gp.grid(hull, 300)
    with pytest.warns(geoldp.PrivacyWarning, match="bounds of the trajectories"):
        toy_lines.ldp.perturb(pts, epsilon=4.0, rng=1)


def test_area_from_the_frame_in_another_crs_warns(toy_lines):
    projected = toy_lines.to_crs(UTM50)
    pts = gp.grid(tuple(toy_lines.total_bounds), 300)  # lon/lat bounds of the same data
    with pytest.warns(geoldp.PrivacyWarning, match="bounds of the trajectories"):
        projected.ldp.perturb(pts, epsilon=4.0, rng=1)


@pytest.mark.filterwarnings("ignore:.*told from no data:geoldp.GeoLDPWarning")  # a few toy reports
@pytest.mark.parametrize("cell_km", [None, 1.0])
@pytest.mark.parametrize("crs", ["EPSG:4326", UTM50])
def test_zones_over_the_released_trips_warn(toy_lines, crs, cell_km):
    # the same guard for zones: geoldp.zone_grid records the area of trajectories it was laid over, and
    # every release over zones (a report, the pilot, a coarse-to-fine design, the Dask report) compares it
    from geoldp.designs import Pilot, design

    lines = toy_lines.to_crs(crs)
    zones = geoldp.zone_grid(lines, 3) if cell_km is None else geoldp.zone_grid(lines, cell_km=cell_km)
    releases = [
        lambda: geoldp.report(toy_lines, zones, epsilon=4.0, rng=1),
        lambda: Pilot().release(toy_lines, epsilon=4.0, zones=zones, rng=1),
        lambda: design("report:visited_zone:coarse").release(toy_lines, epsilon=4.0, zones=zones, rng=1),
    ]
    for release in releases:
        with pytest.warns(geoldp.PrivacyWarning, match="public zones were built over an area") as rec:
            release()
        assert all("116." not in str(w.message) for w in rec)  # no coordinates in the message
    dask_geopandas = pytest.importorskip("dask_geopandas")
    from geoldp import dask as geoldp_dask

    ddf = dask_geopandas.from_geopandas(toy_lines, npartitions=2)
    with pytest.warns(geoldp.PrivacyWarning, match="public zones were built over an area"):
        geoldp_dask.report(ddf, zones, epsilon=4.0, rng=1)


@pytest.mark.filterwarnings("ignore:.*told from no data:geoldp.GeoLDPWarning")  # a few toy reports
def test_zones_over_p_or_a_box_do_not_warn(toy_lines):
    # trips that reach P's outermost points have P's bounds: zones over P, or over its bounds, are public
    from geoldp.designs import design

    xy = shapely.get_coordinates(toy_lines.geometry.values)
    pts = gpd.GeoDataFrame(geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=toy_lines.crs)
    assert tuple(pts.total_bounds) == tuple(toy_lines.total_bounds)
    with warnings.catch_warnings():
        warnings.simplefilter("error", geoldp.PrivacyWarning)
        for area in (pts, tuple(pts.total_bounds), BBOX):
            zones = geoldp.zone_grid(area, 3)
            geoldp.report(toy_lines, zones, epsilon=4.0, rng=1)
            design("report:visited_zone:coarse").release(toy_lines, epsilon=4.0, zones=zones, rng=1)
    from geoldp._core.area import area_record

    assert area_record(geoldp.zone_grid(pts, cell_km=1.0)) is None
    assert area_record(geoldp.zone_grid(toy_lines, 3))["bounds"] == list(toy_lines.total_bounds)


def test_a_public_area_does_not_warn(toy_lines):
    pts = gp.grid(BBOX, 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        toy_lines.ldp.perturb(pts, epsilon=4.0, rng=1)
    assert gp.warn_if_area_from(toy_lines, pts) is False


# ------------------------------------------------------------------------------------------------------
# thin


def test_thin_is_a_reproducible_ordered_subset():
    pts = gp.grid(BBOX, 500)
    a = gp.thin(pts, 40, rng=7)
    b = gp.thin(pts, 40, rng=7)
    assert len(a) == 40 and a.index.equals(b.index)
    assert a.index.is_monotonic_increasing and set(a.index) <= set(pts.index)
    assert a.crs.equals(pts.crs)
    assert a.attrs["geoldp_points"].endswith("; thin(n=40)")
    assert gp.thin(pts, len(pts) + 5, rng=7).index.equals(pts.index)
    assert len(pts) > 40  # input not mutated
    with pytest.raises(ValueError, match="'n'"):
        gp.thin(pts, 1)
    with pytest.raises(TypeError, match="'points'"):
        gp.thin(np.zeros(3), 2)


def test_thin_includes_every_point_with_probability_n_over_m():
    pts = gp.grid((500_000, 4_400_000, 504_500, 4_403_500), 1000, crs=UTM50)  # 5 x 4 = 20 points
    m, n, reps = len(pts), 5, 1000
    assert m == 20
    gen = np.random.default_rng(20261201)
    hits = np.zeros(m)
    for _ in range(reps):
        hits[pts.index.get_indexer(gp.thin(pts, n, rng=gen).index)] += 1
    p = n / m
    sd = math.sqrt(reps * p * (1 - p))
    # each count is Binomial(reps, n/m); 5 sd per point keeps the family-wise false alarm below 1e-5
    assert np.all(np.abs(hits - reps * p) < 5 * sd)


# ------------------------------------------------------------------------------------------------------
# h3


def test_h3_cells_are_the_cells_of_their_centres():
    h3 = pytest.importorskip("h3")
    pts = gp.h3_cells(BBOX, 8)
    assert list(pts["h3"]) == sorted(pts["h3"])
    lon, lat = pts.geometry.x.to_numpy(), pts.geometry.y.to_numpy()
    assert all(h3.latlng_to_cell(b, a, 8) == c for a, b, c in zip(lon, lat, pts["h3"], strict=True))
    assert shapely.contains_xy(shapely.box(*BBOX), lon, lat).all()
    # the cells tile the box: their total area is the box area, up to a band of half-cells on the edge
    box_km2 = abs(GEOD.geometry_area_perimeter(shapely.segmentize(shapely.box(*BBOX), 0.001))[0]) / 1e6
    cells_km2 = sum(h3.cell_area(c, unit="km^2") for c in pts["h3"])
    assert cells_km2 == pytest.approx(box_km2, rel=0.15)
    assert pts.attrs["geoldp_points"] == "h3_cells(resolution=8, area=bbox, crs=EPSG:4326)"
    with pytest.raises(ValueError, match="resolution"):
        gp.h3_cells(BBOX, 16)


def test_h3_cells_in_a_projected_crs():
    pytest.importorskip("h3")
    area = gpd.GeoSeries([shapely.box(*BBOX)], crs="EPSG:4326").to_crs(UTM50)
    pts = gp.h3_cells(area, 8)
    ref = gp.h3_cells(BBOX, 8)
    assert pts.crs.equals(UTM50)
    assert abs(len(pts) - len(ref)) <= 0.1 * len(ref)  # the projected box edges are slightly curved


# ------------------------------------------------------------------------------------------------------
# road nodes from a local OSM extract (built here: nothing is downloaded)

OSM_NODES = {
    1: (116.3000, 39.9000),
    2: (116.3100, 39.9000),
    3: (116.3200, 39.9000),
    4: (116.3100, 39.8900),
    5: (116.3100, 39.9100),
    6: (116.3200, 39.9100),
    7: (116.3300, 39.9000),
    8: (116.3300, 39.9050),
}
OSM_WAYS = [
    (101, [1, 2, 3], {"highway": "primary"}),
    (102, [4, 2, 5], {"highway": "residential"}),
    (103, [5, 6], {"highway": "service"}),
    (104, [3, 7, 8, 3], {"building": "yes"}),  # not a road: node 3 is no junction
]


def _write_osm(path):
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<osm version="0.6" generator="geoldp-tests">']
    for nid, (lon, lat) in OSM_NODES.items():
        lines.append(f'  <node id="{nid}" version="1" lat="{lat:.7f}" lon="{lon:.7f}"/>')
    for wid, refs, tags in OSM_WAYS:
        lines.append(f'  <way id="{wid}" version="1">')
        lines += [f'    <nd ref="{r}"/>' for r in refs]
        lines += [f'    <tag k="{k}" v="{v}"/>' for k, v in tags.items()]
        lines.append("  </way>")
    lines.append("</osm>")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_road_intersections_from_an_osm_extract(tmp_path):
    pytest.importorskip("osmium")
    path = _write_osm(tmp_path / "tiny.osm")
    pts = gp.road_nodes(path)
    assert list(pts["osm_id"]) == [2, 5]  # shared by two road ways; node 3 only by a building
    np.testing.assert_allclose(pts.geometry.x, [OSM_NODES[2][0], OSM_NODES[5][0]], atol=1e-7)
    np.testing.assert_allclose(pts.geometry.y, [OSM_NODES[2][1], OSM_NODES[5][1]], atol=1e-7)
    assert pts.crs.equals("EPSG:4326")
    assert pts.attrs["geoldp_points"] == "road_nodes(kind=intersections, file=tiny.osm)"
    every = gp.road_nodes(str(path), kind="all")
    assert list(every["osm_id"]) == [1, 2, 3, 4, 5, 6]


def test_road_nodes_errors(tmp_path):
    pytest.importorskip("osmium")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        gp.road_nodes(tmp_path / "missing.osm")
    with pytest.raises(ValueError, match="kind"):
        gp.road_nodes(tmp_path / "missing.osm", kind="junctions")
    global OSM_WAYS
    saved = OSM_WAYS
    try:
        OSM_WAYS = [(101, [1, 2, 3], {"highway": "primary"})]
        path = _write_osm(tmp_path / "one.osm")
    finally:
        OSM_WAYS = saved
    with pytest.raises(ValueError, match="at least 2"):
        gp.road_nodes(path)


# ------------------------------------------------------------------------------------------------------
# the command line: geoldp perturb --grid SPACING --area MINX,MINY,MAXX,MAXY

CHICAGO = "-87.76,41.79,-87.50,41.97"  # a public box around the synthetic city (chosen without its data)


@pytest.fixture
def trips_file(tmp_path):
    from geoldp.datasets import synthetic_city

    _, trips = synthetic_city(n_points=60, n_trips=12, max_len=5, seed=3)
    path = tmp_path / "trips.geojson"
    trips.to_file(path, driver="GeoJSON")
    return path, trips


def test_cli_grid_builds_the_public_grid(tmp_path, trips_file, capsys):
    from geoldp.cli import main

    path, trips = trips_file
    out = tmp_path / "out.geojson"
    code = main(
        [
            "perturb",
            str(path),
            f"--area={CHICAGO}",
            "--grid",
            "2000",
            "--epsilon",
            "4",
            "--seed",
            "1",
            "-o",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    released = geoldp.io.read_trajectories(out)
    grid_pts = gp.grid(tuple(float(v) for v in CHICAGO.split(",")), 2000)
    grid_xy = {
        (round(x, 9), round(y, 9)) for x, y in zip(grid_pts.geometry.x, grid_pts.geometry.y, strict=True)
    }
    for line in released.geometry:
        assert {(round(x, 9), round(y, 9)) for x, y in line.coords} <= grid_xy
    ledger = json.loads((tmp_path / "out.geojson.ledger.json").read_text())
    assert ledger["points"]["provenance"] == grid_pts.attrs["geoldp_points"]
    assert len(released) == len(trips)


def test_cli_grid_over_the_trips_bounds_warns(tmp_path, trips_file, capsys):
    from geoldp.cli import main

    path, trips = trips_file
    bounds = ",".join(repr(float(v)) for v in trips.total_bounds)
    code = main(
        [
            "perturb",
            str(path),
            f"--area={bounds}",
            "--grid",
            "2000",
            "--epsilon",
            "4",
            "-o",
            str(tmp_path / "o.geojson"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 0 and "PrivacyWarning" in err and "bounds of the trajectories" in err


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--grid", "2000"], "--grid needs --area"),
        ([f"--area={CHICAGO}"], "either --points"),
        ([], "either --points"),
        (["--grid", "2000", "--area=1,2,3"], "four numbers"),
        (["--grid", "-5", f"--area={CHICAGO}"], "positive"),
        (["--grid", "1", f"--area={CHICAGO}"], "MAX_POINTS"),
    ],
)
def test_cli_grid_usage_errors(tmp_path, trips_file, capsys, extra, match):
    from geoldp.cli import main

    path, _ = trips_file
    code = main(["perturb", str(path), *extra, "--epsilon", "4", "-o", str(tmp_path / "o.geojson")])
    err = capsys.readouterr().err
    assert code in (1, 2) and match in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_road_nodes_from_a_pbf_extract(tmp_path):
    osmium = pytest.importorskip("osmium")
    path = tmp_path / "tiny.osm.pbf"
    with osmium.SimpleWriter(str(path)) as writer:
        for nid, (lon, lat) in OSM_NODES.items():
            writer.add_node(osmium.osm.mutable.Node(id=nid, location=(lon, lat), version=1))
        for wid, refs, tags in OSM_WAYS:
            writer.add_way(osmium.osm.mutable.Way(id=wid, nodes=refs, tags=tags, version=1))
    pts = gp.road_nodes(path)
    assert list(pts["osm_id"]) == [2, 5]
    assert pts.attrs["geoldp_points"] == "road_nodes(kind=intersections, file=tiny.osm.pbf)"


@pytest.mark.parametrize(
    ("module", "call"), [("h3", lambda p: gp.h3_cells(BBOX, 8)), ("osmium", gp.road_nodes)]
)
def test_missing_optional_dependency_says_what_to_install(tmp_path, monkeypatch, module, call):
    path = _write_osm(tmp_path / "tiny.osm")
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    with pytest.raises(ImportError, match=r"geoldp\[points\]"):
        call(path)


# ------------------------------- road nodes: osmium's errors wrapped; grid and H3 size guards, up front


_OSM_BAD = {
    "garbage.osm.pbf": b"\x00\xffgarbage" * 10,
    "unknown.xyz": b"hello",
    "entity.osm": (
        b'<?xml version="1.0"?>\n<!DOCTYPE osm [<!ENTITY s SYSTEM "file:///etc/hostname">]>\n'
        b'<osm version="0.6"><node id="1" lat="1" lon="1" version="1"><tag k="n" v="&s;"/></node></osm>'
    ),
    "truncated.osm": b'<osm version="0.6"><node id="1" lat="1" lon="1"',
}


@pytest.mark.parametrize("name", sorted(_OSM_BAD))
def test_road_nodes_wraps_osmium_errors(tmp_path, name):
    pytest.importorskip("osmium")
    from geoldp import points

    path = tmp_path / name
    path.write_bytes(_OSM_BAD[name])
    with pytest.raises(ValueError, match=f"cannot read the OpenStreetMap extract '{name}'") as info:
        points.road_nodes(path)
    assert "hostname" not in str(info.value)


def test_road_nodes_refuses_a_fifo(tmp_path):
    pytest.importorskip("osmium")
    from geoldp import points

    fifo = tmp_path / "f.osm"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        points.road_nodes(fifo)


@pytest.mark.parametrize(
    "area, spacing, match",
    [
        (
            (-180, -90, 180, 90),
            1000,
            "would build about 5.1e\\+08 points, more than geoldp.points.MAX_POINTS",
        ),
        (
            (116.2, 39.8, 116.5, 40.0),
            0.5,
            "spacing_m=0.5 over an area of 569.1 km² would build about 2.28e\\+09",
        ),
        ((-180, -90, 180, 90), 500_000, "too large for one metric grid"),  # a few points, folded up
        ((-180, -60, 180, 60), 1_000_000, "too large for one metric grid"),
    ],
)
def test_grid_refuses_huge_or_global_areas_up_front(area, spacing, match):
    import time

    from geoldp import points

    start = time.process_time()
    with pytest.raises(ValueError, match=match):
        points.grid(area, spacing)
    assert time.process_time() - start < 3.0


def test_grid_limit_can_be_raised_and_lowered(monkeypatch):
    from geoldp import points

    box = (116.30, 39.90, 116.40, 39.96)  # about 8.5 km x 6.7 km: about 570 points at 300 m
    n = len(points.grid(box, 300))
    monkeypatch.setattr(points, "MAX_POINTS", n // 2)
    with pytest.raises(ValueError, match=f"MAX_POINTS = {n // 2}"):
        points.grid(box, 300)
    monkeypatch.setattr(points, "MAX_POINTS", n)
    assert len(points.grid(box, 300)) == n


@pytest.mark.parametrize("resolution", [13, 14, 15])
def test_h3_cells_refuses_fine_resolutions_over_a_city_up_front(resolution):
    pytest.importorskip("h3")
    import time

    from geoldp import points

    start = time.process_time()
    with pytest.raises(
        ValueError, match=f"resolution={resolution} over an area of .* more than geoldp.points"
    ):
        points.h3_cells((116.2, 39.8, 116.5, 40.0), resolution)
    assert time.process_time() - start < 3.0
