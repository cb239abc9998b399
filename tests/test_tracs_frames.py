"""TraCS-D and TraCS-C through the frame layer: accessor, GeoSeries, Dask, accountant, ledger, boxes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import shapely

import geoldp
from geoldp._core.box import planar_box
from geoldp._core.errors import PrivacyWarning
from geoldp.datasets import synthetic_city

pytestmark = pytest.mark.filterwarnings("ignore:.*close to uniform noise:geoldp.PrivacyWarning")
MECHS = ["tracs-d", "tracs-c"]


@pytest.fixture(scope="module")
def city():
    points, trips = synthetic_city(n_points=80, n_trips=37, max_len=7, seed=11)
    return points, trips


def public_box(trips) -> tuple[float, float, float, float]:
    # a box fixed beforehand (here: wider than the data by a round margin, as a city's extent would be)
    x0, y0, x1, y1 = trips.total_bounds
    return (
        float(np.floor(x0 * 10) / 10),
        float(np.floor(y0 * 10) / 10),
        float(np.ceil(x1 * 10) / 10),
        float(np.ceil(y1 * 10) / 10),
    )


@pytest.mark.parametrize("mechanism", MECHS)
def test_accessor_continuous_output_inside_box(city, mechanism):
    _, trips = city
    box = public_box(trips)
    out = trips.ldp.perturb(mechanism=mechanism, epsilon=4.0, bounds=box, rng=1)
    assert out.index.equals(trips.index) and out.crs == trips.crs
    assert list(out.geometry.geom_type) == list(trips.geometry.geom_type)
    assert np.array_equal(
        shapely.get_num_coordinates(out.geometry.values), shapely.get_num_coordinates(trips.geometry.values)
    )
    xy = shapely.get_coordinates(out.geometry.values)
    slack = 1e-6  # the plane's rectangle contains the lon/lat box; outputs can reach just beyond its edge
    assert np.all(xy[:, 0] >= box[0] - 0.05) and np.all(xy[:, 0] <= box[2] + 0.05)
    assert np.all(xy[:, 1] >= box[1] - slack) and np.all(xy[:, 1] <= box[3] + 0.05)
    prov = out.attrs["geoldp"]
    assert prov["mechanism"] == mechanism and prov["epsilon"] == 4.0
    assert prov["box"]["bounds"] == list(box) and prov["box"]["plane"].startswith("+proj=aeqd")
    assert prov["box"]["max_scale_distortion"] < 1e-4
    n = int(trips.geometry.iloc[0].coords.__len__())
    loc = prov["per_location"][str(n)]
    assert loc["epsilon"] == pytest.approx(4.0 / n)
    assert sum(loc["stages"].values()) <= loc["epsilon"]
    # the same seed gives the same release; rng=None draws fresh randomness
    again = trips.ldp.perturb(mechanism=mechanism, epsilon=4.0, bounds=box, rng=1)
    assert out.geometry.geom_equals_exact(again.geometry, tolerance=0).all()
    a = trips.ldp.perturb(mechanism=mechanism, epsilon=4.0, bounds=box)
    b = trips.ldp.perturb(mechanism=mechanism, epsilon=4.0, bounds=box)
    assert a.attrs["geoldp"]["rng"] == "os-csprng"
    assert not a.geometry.geom_equals_exact(b.geometry, tolerance=0).all()


@pytest.mark.parametrize("mechanism", MECHS)
def test_snapping_to_public_points_is_post_processing(city, mechanism):
    points, trips = city
    box = public_box(trips)
    out = trips.ldp.perturb(points, mechanism=mechanism, epsilon=4.0, bounds=box, rng=3)
    pxy = {tuple(p) for p in shapely.get_coordinates(points.geometry.values)}
    assert all(tuple(v) in pxy for v in shapely.get_coordinates(out.geometry.values))
    # the same release, snapped afterwards: identical to snapping the continuous release
    cont = trips.ldp.perturb(mechanism=mechanism, epsilon=4.0, bounds=box, rng=3)
    ps = geoldp.PointSet.from_geodataframe(points)
    xy = shapely.get_coordinates(cont.geometry.values)
    idx, _ = ps.nearest(xy[:, 0], xy[:, 1])
    assert np.array_equal(
        shapely.get_coordinates(out.geometry.values), shapely.get_coordinates(points.geometry.values)[idx]
    )
    assert "post-processing" in out.attrs["geoldp"]["snap"]["method"]


def test_projected_frame_and_mechanism_object(city):
    _, trips = city
    proj = trips.to_crs(32650 if trips.total_bounds[0] > 100 else trips.estimate_utm_crs())
    x0, y0, x1, y1 = proj.total_bounds
    box = (x0 - 1000.0, y0 - 1000.0, x1 + 1000.0, y1 + 1000.0)
    mech = geoldp.trajectory.TraCSD(epsilon=3.0, bounds=box)
    out = proj.ldp.perturb(mechanism=mech, rng=4)
    same = proj.ldp.perturb(mechanism="tracs-d", epsilon=3.0, bounds=box, rng=4)
    assert out.geometry.geom_equals_exact(same.geometry, tolerance=0).all()
    xy = shapely.get_coordinates(out.geometry.values)
    assert np.all((xy[:, 0] >= box[0]) & (xy[:, 0] <= box[2]) & (xy[:, 1] >= box[1]) & (xy[:, 1] <= box[3]))
    assert out.attrs["geoldp"]["box"]["plane"] == "the trajectories' CRS"
    with pytest.raises(ValueError, match="longitude/latitude"):
        trips.ldp.perturb(mechanism=mech)


def test_geoseries_and_point_rows(city):
    _, trips = city
    box = public_box(trips)
    s = trips.geometry
    out = s.ldp.perturb(mechanism="tracs-c", epsilon=2.0, bounds=box, rng=0)
    assert out.index.equals(s.index) and out.attrs["geoldp"]["mechanism"] == "tracs-c"
    pts = trips.head(3).geometry.apply(lambda g: shapely.Point(g.coords[0]))
    pts = trips.head(3).set_geometry(pts.values)
    outp = pts.ldp.perturb(mechanism="tracs-d", epsilon=2.0, bounds=box, rng=0)
    assert list(outp.geometry.geom_type) == ["Point"] * 3


def test_errors_and_the_box_warning(city):
    points, trips = city
    box = public_box(trips)
    with pytest.raises(TypeError, match="bounds="):
        trips.ldp.perturb(mechanism="tracs-d", epsilon=1.0)
    with pytest.raises(TypeError, match="public points"):
        trips.ldp.perturb(mechanism="tp", epsilon=1.0)
    with pytest.raises(ValueError, match="bounds"):
        trips.ldp.perturb(mechanism="tracs-d", epsilon=1.0, bounds=(box[2], box[1], box[0], box[3]))
    with pytest.raises(ValueError, match="snap_max_km"):
        trips.ldp.perturb(points, mechanism="tracs-c", epsilon=1.0, bounds=box, snap_max_km=1.0)
    with pytest.raises(ValueError, match="antimeridian"):
        trips.ldp.perturb(mechanism="tracs-c", epsilon=1.0, bounds=(-190.0, 0.0, 10.0, 1.0))
    with pytest.warns(PrivacyWarning, match="exactly the bounds"):
        trips.ldp.perturb(mechanism="tracs-c", epsilon=1.0, bounds=tuple(trips.total_bounds), rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        trips.ldp.perturb(mechanism="tracs-c", epsilon=8.0, bounds=box, rng=0)
    x0, y0, x1, y1 = box
    with pytest.warns(geoldp.GeoLDPWarning, match=r"vertex\(es\) in \d+ row\(s\).*outside the 'bounds' box"):
        trips.ldp.perturb(mechanism="tracs-d", epsilon=1.0, bounds=(x0, y0, 0.5 * (x0 + x1), y1), rng=0)
    before = trips.copy()
    trips.ldp.perturb(mechanism="tracs-d", epsilon=1.0, bounds=box, rng=0)
    assert trips.equals(before)


def test_estimators_refuse_a_tracs_release(city):
    points, trips = city
    out = trips.ldp.perturb(points, mechanism="tracs-c", epsilon=4.0, bounds=public_box(trips), rng=1)
    with pytest.raises(ValueError, match="estimators model TP, ATP and PointEM"):
        out.ldp.estimate.visit_counts(points)
    with pytest.raises(ValueError, match="estimators model TP, ATP and PointEM"):
        mech = geoldp.trajectory.TraCSD(epsilon=4.0, bounds=(0.0, 0.0, 1.0, 1.0))
        geoldp.estimate.visit_counts(out, points, mechanism=mech)
    # the call the message advises: the release's own counts, as the one answer table
    zones = geoldp.zone_grid(points, cells=3)
    answer = geoldp.designs.design("tracs-c").answer(out, "zone_visits", points=points, zones=zones)
    counts = geoldp.metrics.zone_visit_counts(out, zones).to_numpy()
    np.testing.assert_array_equal(answer["estimate"].to_numpy(), counts)
    assert answer["estimate"].sum() > 0 and answer[["lower", "upper"]].isna().all().all()


def test_accountant_and_per_user_budget(city):
    _, trips = city
    box = public_box(trips)
    trips = trips.assign(user=np.arange(len(trips)) % 5)
    acc = geoldp.BudgetAccountant(20.0)
    trips.ldp.perturb(mechanism="tracs-d", epsilon=2.0, bounds=box, accountant=acc, user_col="user", rng=1)
    assert acc.spent == {0: 16.0, 1: 16.0, 2: 14.0, 3: 14.0, 4: 14.0}
    with pytest.raises(geoldp.BudgetError):
        trips.ldp.perturb(
            mechanism="tracs-d", epsilon=0.75, bounds=box, accountant=acc, user_col="user", rng=1
        )
    out = trips.ldp.perturb(
        mechanism="tracs-c", epsilon=4.0, bounds=box, user_col="user", user_budget="split", rng=1
    )
    assert np.allclose(out.groupby(trips["user"])["epsilon"].sum(), 4.0)


def test_planar_box_of_a_lon_lat_box_contains_it():
    box = planar_box((-88.0, 41.6, -87.5, 42.0), "EPSG:4326", caller="test")
    x0, y0, x1, y1 = box.planar_bounds
    x, y = box.to_plane(np.array([-88.0, -87.5, -87.75, -88.0]), np.array([41.6, 42.0, 41.8, 42.0]))
    assert np.all((x >= x0) & (x <= x1) & (y >= y0) & (y <= y1))
    assert abs(x[2]) < 1e-6 and abs(y[2]) < 1e-6  # the centre of the box is the origin of the plane
    assert 0 < box.max_scale_distortion < 1e-5


def test_cli_perturb_tracs(tmp_path, city, capsys):
    import json

    import geopandas as gpd

    from geoldp.cli import main

    points, trips = city
    trips_path, points_path = tmp_path / "trips.geojson", tmp_path / "points.geojson"
    trips.to_file(trips_path, driver="GeoJSON")
    points.to_file(points_path, driver="GeoJSON")
    box = ",".join(str(v) for v in public_box(trips))
    out = tmp_path / "out.geojson"
    args = ["perturb", str(trips_path), "--mechanism", "tracs-d", "--epsilon", "4", f"--bounds={box}"]
    assert main([*args, "-o", str(out), "--seed", "1"]) == 0
    ledger = json.loads((tmp_path / "out.geojson.ledger.json").read_text())
    assert ledger["mechanism"] == "tracs-d" and ledger["box"]["bounds"] == list(public_box(trips))
    assert len(gpd.read_file(out)) == len(trips)
    snapped = tmp_path / "snapped.geojson"
    assert main([*args, "--points", str(points_path), "-o", str(snapped)]) == 0
    pxy = {tuple(p) for p in shapely.get_coordinates(points.geometry.values).round(9)}
    got = shapely.get_coordinates(gpd.read_file(snapped).geometry.values).round(9)
    assert all(tuple(v) in pxy for v in got)
    capsys.readouterr()
    base = ["perturb", str(trips_path), "--epsilon", "4", "-o", str(tmp_path / "x.geojson")]
    assert main([*base, "--mechanism", "tracs-c"]) == 2
    assert "--bounds" in capsys.readouterr().err
    assert main([*base, "--points", str(points_path), f"--bounds={box}"]) == 2
    assert "--bounds goes with" in capsys.readouterr().err


dask_geopandas = pytest.importorskip("dask_geopandas")


@pytest.mark.parametrize("mechanism", MECHS)
def test_dask_equals_in_memory(city, mechanism):
    import geoldp.dask

    points, trips = city
    box = public_box(trips)
    ddf = dask_geopandas.from_geopandas(trips, npartitions=4)
    out = geoldp.dask.perturb(ddf, mechanism=mechanism, epsilon=3.0, bounds=box, rng=7).compute()
    expected = trips.ldp.perturb(mechanism=mechanism, epsilon=3.0, bounds=box, rng=7)
    assert out.geometry.geom_equals_exact(expected.geometry, tolerance=0).all()
    assert out.attrs["geoldp"]["box"] == expected.attrs["geoldp"]["box"]
    snapped = geoldp.dask.perturb(ddf, points, mechanism=mechanism, epsilon=3.0, bounds=box, rng=7).compute()
    assert snapped.geometry.geom_equals_exact(
        trips.ldp.perturb(points, mechanism=mechanism, epsilon=3.0, bounds=box, rng=7).geometry, tolerance=0
    ).all()
