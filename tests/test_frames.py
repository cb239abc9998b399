"""GeoPandas layer: the bad-input matrix I1–I31 of TESTING.md §7 (tier F)."""

from __future__ import annotations

import json
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from conftest import CITY_LAT, CITY_LON, LINE_COORDS
from pyproj import Transformer

import geoldp
from geoldp import GeoLDPWarning, PointSet
from geoldp import accessor as acc
from geoldp import io as gio

EPS = 4.0


def run(gdf, points, **kw):
    kw.setdefault("epsilon", EPS)
    kw.setdefault("rng", 0)
    return gdf.ldp.perturb(points, **kw)


def lines_gdf(coords=None, crs="EPSG:4326", **cols):
    coords = LINE_COORDS if coords is None else coords
    with np.errstate(invalid="ignore"):  # shapely flags NaN coordinates; the tests want them
        geoms = [
            None if c is None else (c if isinstance(c, shapely.Geometry) else shapely.LineString(c))
            for c in coords
        ]
    return gpd.GeoDataFrame(cols or None, geometry=geoms, crs=crs)


def snapshot(gdf):
    return gdf.copy(deep=True), gdf.crs, dict(gdf.attrs)


def assert_unchanged(gdf, snap):
    before, crs, attrs = snap
    pd.testing.assert_frame_equal(gdf, before)
    assert gdf.crs == crs
    assert gdf.attrs == attrs
    assert gdf.geometry.name == before.geometry.name


# ---------------------------------------------------------------------------------------------- I1–I5


def test_I1_accessor_on_plain_dataframe():
    df = pd.DataFrame({"a": [1, 2]})
    with pytest.raises(
        AttributeError, match=r"requires a geopandas\.GeoDataFrame.*GeoDataFrame\(df, geometry="
    ):
        df.ldp  # noqa: B018


@pytest.mark.parametrize("obj", [pd.DataFrame({"a": [1]}), pd.Series([1, 2]), [shapely.Point(0, 0)]])
def test_I2_non_geodataframe_to_free_function(obj, city_points):
    with pytest.raises(TypeError, match=r"must be a geopandas\.GeoDataFrame"):
        acc.perturb(obj, city_points, epsilon=EPS)


def test_I3_geometry_column_holding_ints(city_points):
    gdf = gpd.GeoDataFrame({"a": [1, 2]}, geometry=[shapely.Point(0, 0)] * 2, crs="EPSG:4326")
    with pytest.warns(UserWarning, match="does not contain geometry"):
        gdf["geometry"] = [1, 2]
    with pytest.raises(TypeError, match=r"geometry column 'geometry' .* does not hold geometries"):
        run(gdf, city_points)


def test_I4_no_active_geometry(city_points):
    gdf = gpd.GeoDataFrame({"a": [1, 2]})
    with pytest.raises(ValueError, match=r"no active geometry column.*set_geometry\(\)"):
        run(gdf, city_points)


def test_I5_zero_rows(city_points):
    gdf = lines_gdf().iloc[:0]
    with pytest.raises(ValueError, match="has no rows"):
        run(gdf, city_points)


# ---------------------------------------------------------------------------------------------- I6–I11


def test_I6_none_geometry_raises_with_position(city_points):
    gdf = lines_gdf([LINE_COORDS[0], None, LINE_COORDS[1]])
    with pytest.raises(ValueError, match=r"Row position 1 .*missing \(None\) geometry"):
        run(gdf, city_points)


def test_I6_on_invalid_null(city_points):
    gdf = lines_gdf([LINE_COORDS[0], None, LINE_COORDS[1], shapely.LineString()])
    out = run(gdf, city_points, on_invalid="null")
    assert out.geometry.iloc[1] is None and out.geometry.iloc[3] is None
    assert shapely.get_num_coordinates(out.geometry.iloc[0]) == 3
    assert shapely.get_num_coordinates(out.geometry.iloc[2]) == 2
    assert out.attrs["geoldp"]["input"]["on_invalid"] == "null"


def test_on_invalid_bad_value(toy_lines, city_points):
    with pytest.raises(ValueError, match=r"on_invalid='skip'.*one of \('raise', 'null'\)"):
        run(toy_lines, city_points, on_invalid="skip")


def test_I7_empty_linestring(city_points):
    gdf = lines_gdf([LINE_COORDS[0], LINE_COORDS[1], shapely.LineString()])
    with pytest.raises(ValueError, match=r"Row position 2 .*empty geometry"):
        run(gdf, city_points)


def test_I7_empty_point(city_points):
    gdf = gpd.GeoDataFrame(geometry=[shapely.Point(116.32, 39.90), shapely.Point()], crs="EPSG:4326")
    with pytest.raises(ValueError, match=r"Row position 1 .*empty geometry"):
        run(gdf, city_points)


def test_I8_identical_vertices_accepted(city_points):
    gdf = lines_gdf([[(116.4589, 39.9372), (116.4589, 39.9372)], [(116.32, 39.901)] * 3])
    assert not gdf.geometry.is_valid.all()  # shapely calls them invalid; geoldp accepts them
    out = run(gdf, city_points)
    assert list(shapely.get_num_coordinates(out.geometry.values)) == [2, 3]


def test_I9_nan_coordinate(city_points):
    gdf = lines_gdf([LINE_COORDS[0], [(116.3, 39.9), (np.nan, 39.91)]])
    with pytest.raises(ValueError, match=r"Row position 1 .*NaN coordinate"):
        run(gdf, city_points)


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_I10_inf_coordinate(city_points, bad):
    gdf = lines_gdf([[(116.3, 39.9), (116.31, bad)], LINE_COORDS[0]])
    with pytest.raises(ValueError, match=r"Row position 0 .*infinite coordinate"):
        run(gdf, city_points)


@pytest.mark.parametrize("xy", [(116.3, 95.0), (116.3, -90.5), (180.5, 39.9), (-181.0, 39.9)])
def test_I11_out_of_range_geographic(city_points, xy):
    gdf = lines_gdf([LINE_COORDS[0], LINE_COORDS[1], [(116.3, 39.9), xy]])
    with pytest.raises(ValueError, match=r"Row position 2 .*outside lon \[-180, 180\] / lat \[-90, 90\]"):
        run(gdf, city_points)


def test_I11_edge_values_accepted(city_points):
    gdf = lines_gdf([[(180.0, 90.0), (-180.0, -90.0)], LINE_COORDS[0]])
    with pytest.warns(GeoLDPWarning, match="farther from the nearest public point than the diameter"):
        out = run(gdf, city_points)
    assert len(out) == 2


# ---------------------------------------------------------------------------------------------- I12–I15


def test_I12_z_and_m_dropped_with_one_warning(city_points):
    z = shapely.LineString([(116.3213, 39.9031, 5.0), (116.3482, 39.9249, 6.0)])
    m = shapely.from_wkt("LINESTRING M (116.4031 39.947 1, 116.4335 39.9052 2)")
    gdf = lines_gdf([z, m, LINE_COORDS[0]])
    with pytest.warns(GeoLDPWarning, match=r"Z/M values of 2 row\(s\) were dropped") as rec:
        out = run(gdf, city_points)
    assert len([w for w in rec if issubclass(w.category, GeoLDPWarning)]) == 1
    assert not shapely.has_z(out.geometry.values).any()
    assert not shapely.has_m(out.geometry.values).any()


def test_I13_multilinestring(city_points):
    mls = shapely.MultiLineString([LINE_COORDS[0], LINE_COORDS[1]])
    gdf = lines_gdf([LINE_COORDS[0], mls])
    with pytest.raises(TypeError, match=r"Row position 1 .*MultiLineString.*explode\(.*own epsilon"):
        run(gdf, city_points)


@pytest.mark.parametrize(
    ("geom", "name"),
    [
        (shapely.Polygon([(116.3, 39.9), (116.4, 39.9), (116.4, 40.0)]), "Polygon"),
        (shapely.MultiPoint([(116.3, 39.9), (116.4, 39.9)]), "MultiPoint"),
        (shapely.GeometryCollection([shapely.Point(116.3, 39.9)]), "GeometryCollection"),
        (shapely.LinearRing([(116.3, 39.9), (116.4, 39.9), (116.4, 40.0)]), "LinearRing"),
        (shapely.MultiPolygon([shapely.box(116.3, 39.9, 116.4, 40.0)]), "MultiPolygon"),
    ],
)
def test_I14_other_geometry_types(city_points, geom, name):
    gdf = lines_gdf([LINE_COORDS[0], geom])
    with pytest.raises(TypeError, match=rf"Row position 1 .*is a {name}; geoldp accepts LineString"):
        run(gdf, city_points)


def test_I15_mixed_types_name_first_offender(city_points):
    gdf = lines_gdf([LINE_COORDS[0], LINE_COORDS[1], shapely.Point(116.3, 39.9), shapely.Point(116.4, 39.9)])
    with pytest.raises(
        TypeError, match=r"Mixed geometry types.*row position 0 is a LineString but row position 2"
    ):
        run(gdf, city_points)


def test_type_errors_take_precedence_over_value_errors(city_points):
    gdf = lines_gdf([None, shapely.Polygon([(0, 0), (1, 0), (1, 1)])])
    with pytest.raises(TypeError, match="Row position 1"):
        run(gdf, city_points)


# ---------------------------------------------------------------------------------------------- I16–I22


def test_I16_missing_crs_on_trajectories(city_points):
    gdf = lines_gdf(crs=None)
    with pytest.raises(ValueError, match=r"no CRS\. Use set_crs\(\)"):
        run(gdf, city_points)


def test_I16_missing_crs_on_points(toy_lines, city_points_gdf):
    pts = city_points_gdf.set_crs(None, allow_override=True)
    with pytest.raises(ValueError, match=r"public points .* no CRS\. Use set_crs\(\)"):
        run(toy_lines, pts)


@pytest.mark.parametrize("crs", ["EPSG:32650", "EPSG:3857", "EPSG:4269"])
def test_I17_I18_other_crs(toy_lines, city_points, crs):
    base = run(toy_lines, city_points, rng=11)
    other = toy_lines.to_crs(crs)
    out = run(other, city_points, rng=11)
    assert out.crs == other.crs
    # same snapped indices, same draws: the output is the 4326 output in the other CRS
    tr = Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    px, py = tr.transform(np.asarray(city_points.lon), np.asarray(city_points.lat))
    got = shapely.get_coordinates(out.geometry.values)
    want_idx = _indices(base, city_points.lon, city_points.lat)
    np.testing.assert_array_equal(got[:, 0], np.asarray(px)[want_idx])
    np.testing.assert_array_equal(got[:, 1], np.asarray(py)[want_idx])


def _indices(out, x, y):
    coords = shapely.get_coordinates(out.geometry.values)
    lookup = {(float(a), float(b)): i for i, (a, b) in enumerate(zip(x, y, strict=True))}
    return np.array([lookup[(float(a), float(b))] for a, b in coords])


def test_I19_points_in_another_crs(toy_lines, city_points_gdf):
    trips = toy_lines.to_crs("EPSG:3857")
    out = run(trips, city_points_gdf)  # points in EPSG:4326
    tr = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    px, py = tr.transform(CITY_LON, CITY_LAT)
    public = {(float(a).hex(), float(b).hex()) for a, b in zip(px, py, strict=True)}
    got = shapely.get_coordinates(out.geometry.values)
    assert {(float(a).hex(), float(b).hex()) for a, b in got} <= public
    again = run(trips, city_points_gdf)
    assert out.geometry.equals(again.geometry)  # deterministic


def test_I19_points_in_same_projected_crs_keep_their_coordinates(toy_lines, city_points_gdf):
    trips = toy_lines.to_crs("EPSG:32650")
    pts = city_points_gdf.to_crs("EPSG:32650")
    out = run(trips, pts)
    public = {(float(a).hex(), float(b).hex()) for a, b in shapely.get_coordinates(pts.geometry.values)}
    got = shapely.get_coordinates(out.geometry.values)
    assert {(float(a).hex(), float(b).hex()) for a, b in got} <= public


def test_I20_axis_order(city_points):
    ok = gpd.GeoDataFrame(geometry=[shapely.Point(116.35, 39.92)], crs="EPSG:4326")
    swapped = gpd.GeoDataFrame(geometry=[shapely.Point(39.92, 116.35)], crs="EPSG:4326")
    seq = ok.ldp.snap(city_points)
    assert seq[0][0] == int(np.argmin((CITY_LON - 116.35) ** 2 + (CITY_LAT - 39.92) ** 2))
    with pytest.raises(ValueError, match=r"Row position 0 .*x must be the longitude"):
        run(swapped, city_points)


def test_I21_duplicate_index(toy_lines, city_points):
    gdf = toy_lines.copy()
    gdf.index = pd.Index([7, 7, 1, 7], name="trip")
    out = run(gdf, city_points)
    assert out.index.equals(gdf.index) and out.index.name == "trip"


def test_I22_float32_coordinates(city_points):
    coords = np.asarray(LINE_COORDS[0], dtype=np.float32)
    gdf = gpd.GeoDataFrame(geometry=[shapely.linestrings(coords)], crs="EPSG:4326")
    out = run(gdf, city_points)
    assert shapely.get_num_coordinates(out.geometry.iloc[0]) == 3


# ---------------------------------------------------------------------------------------------- I23–I27


def test_I23_missing_group_columns(toy_point_frame, city_points):
    with pytest.raises(ValueError, match=r"\['trip'\] not found.*Available columns: \['traj_id', 'time'"):
        run(toy_point_frame, city_points, traj_id_col="trip")
    with pytest.raises(ValueError, match=r"\['t'\] not found"):
        run(toy_point_frame, city_points, traj_id_col="traj_id", time_col="t")


def test_I24_nan_id_and_nat_time(toy_point_frame, city_points):
    gdf = toy_point_frame.copy()
    gdf.loc[3, "traj_id"] = None
    with pytest.raises(ValueError, match=r"Row position 3 .*missing trajectory id in column 'traj_id'"):
        run(gdf, city_points, traj_id_col="traj_id")
    gdf = toy_point_frame.copy()
    gdf.loc[5, "time"] = pd.NaT
    with pytest.raises(ValueError, match=r"Row position 5 .*missing time in column 'time'"):
        run(gdf, city_points, traj_id_col="traj_id", time_col="time")


def test_I24_nat_time_names_the_original_row_when_invalid_rows_are_nulled(toy_point_frame, city_points):
    # rows 0 and 1 are invalid (None geometry) and skipped; the missing time sits at row position 5
    gdf = toy_point_frame.copy()
    gdf.loc[[0, 1], "geometry"] = None
    gdf.loc[5, "time"] = pd.NaT
    with pytest.raises(ValueError, match=r"Row position 5 .*missing time in column 'time'"):
        run(gdf, city_points, traj_id_col="traj_id", time_col="time", on_invalid="null")


def test_I25_I26_time_order_stable_ties(toy_point_frame, city_points):
    seqs = toy_point_frame.ldp.snap(city_points, traj_id_col="traj_id", time_col="time")
    # trajectories in order of first appearance: b, a, c
    # b: rows 4 (t=0), 0 (t=2), 6 (t=2, after row 0); a: rows 2, 1, 5; c: row 3
    direct, _ = city_points.nearest(
        toy_point_frame.geometry.x.to_numpy(), toy_point_frame.geometry.y.to_numpy()
    )
    assert [list(s) for s in seqs] == [list(direct[[4, 0, 6]]), list(direct[[2, 1, 5]]), list(direct[[3]])]
    out = run(toy_point_frame, city_points, traj_id_col="traj_id", time_col="time")
    assert out.index.equals(toy_point_frame.index)  # rows keep the input order; none dropped
    assert list(out["traj_id"]) == list(toy_point_frame["traj_id"])
    assert (out.geom_type == "Point").all()


def test_point_rows_output_follow_trajectory_positions(toy_point_frame, city_points):
    out = run(toy_point_frame, city_points, traj_id_col="traj_id", time_col="time", rng=5)
    seqs = toy_point_frame.ldp.snap(city_points, traj_id_col="traj_id", time_col="time")
    ref = geoldp.perturb_trajectories(seqs, city_points, mechanism="atp", epsilon=EPS, rng=5)
    idx = _indices(out, city_points.lon, city_points.lat)
    rows_in_traj_order = [4, 0, 6, 2, 1, 5, 3]
    np.testing.assert_array_equal(idx[rows_in_traj_order], np.concatenate(ref))


def test_point_rows_without_traj_id_are_one_point_trajectories(toy_point_frame, city_points):
    toy_point_frame = toy_point_frame.drop(columns=["traj_id", "time"])  # one-point trips, not fixes
    seqs = toy_point_frame.ldp.snap(city_points)
    assert [len(s) for s in seqs] == [1] * len(toy_point_frame)
    out = run(toy_point_frame, city_points)
    assert list(out.columns) == ["geometry"]
    assert (out.geom_type == "Point").all() and out.index.equals(toy_point_frame.index)
    assert out.attrs["geoldp"]["ledger"]["by_length"].keys() == {"1"}


def test_I27_far_points_accepted_with_one_count_warning(city_points):
    far = [(121.47, 31.23), (121.48, 31.24)]  # Shanghai, > 1000 km from the Beijing points
    gdf = lines_gdf([LINE_COORDS[0], far, far])
    with pytest.warns(GeoLDPWarning, match=r"^4 vertex\(es\) in 2 row\(s\) are farther") as rec:
        out = run(gdf, city_points)
    assert len(rec) == 1 and "121.4" not in str(rec[0].message)
    assert len(out) == 3


def test_snap_max_km_error_names_row(city_points):
    gdf = lines_gdf([LINE_COORDS[0], [(116.32, 39.901), (116.9, 39.9)]])
    with pytest.raises(ValueError, match=r"1 vertex\(es\) in 1 row\(s\).*snap_max_km=1 km.*row position 1"):
        run(gdf, city_points, snap_max_km=1)
    out = run(gdf, city_points, snap_max_km=100.0)
    assert out.attrs["geoldp"]["snap"]["snap_max_km"] == 100.0


@pytest.mark.parametrize(
    ("bad", "exc"),
    [(0, ValueError), (-1.0, ValueError), (np.nan, ValueError), ("1", TypeError), (True, TypeError)],
)
def test_snap_max_km_validation(toy_lines, city_points, bad, exc):
    with pytest.raises(exc, match="'snap_max_km' parameter"):
        run(toy_lines, city_points, snap_max_km=bad)


def test_snap_distances_are_local_only(toy_lines, city_points):
    seqs, dists = toy_lines.ldp.snap(city_points, return_distances=True)
    assert [len(d) for d in dists] == [3, 2, 4, 2]
    assert all((d >= 0).all() and (d < 1000).all() for d in dists)
    out = run(toy_lines, city_points)
    assert "max_km" not in out.attrs["geoldp"]["snap"]


# ---------------------------------------------------------------------------------------------- I28–I31


def test_I28_public_set_problems(toy_lines):
    one = gpd.GeoDataFrame(geometry=[shapely.Point(116.3, 39.9)], crs="EPSG:4326")
    with pytest.raises(ValueError, match="2"):
        run(toy_lines, one)
    nan = gpd.GeoDataFrame(
        geometry=[shapely.Point(116.3, 39.9), shapely.Point(np.nan, 39.9)], crs="EPSG:4326"
    )
    with pytest.raises(ValueError, match=r"(?i)finite|nan"):
        run(toy_lines, nan)
    lines = gpd.GeoDataFrame(geometry=[shapely.LineString(LINE_COORDS[0])] * 2, crs="EPSG:4326")
    with pytest.raises(TypeError, match=r"(?i)point"):
        run(toy_lines, lines)
    empty = gpd.GeoDataFrame(geometry=[], crs="EPSG:4326")
    with pytest.raises(ValueError, match="2"):
        run(toy_lines, empty)
    with pytest.raises(TypeError, match=r"'points' parameter .* must be a geoldp\.PointSet"):
        run(toy_lines, [(116.3, 39.9), (116.4, 39.9)])


def test_I28_duplicate_public_points_warn(toy_lines):
    dup = gpd.GeoDataFrame(
        geometry=gpd.points_from_xy([116.3, 116.3, 116.4], [39.9, 39.9, 39.95]), crs="EPSG:4326"
    )
    with pytest.warns(GeoLDPWarning, match=r"(?i)duplicate"):
        PointSet.from_geodataframe(dup)


class _CountingSource:
    """Wraps a seeded source and counts every draw (validation must precede the first one)."""

    def __init__(self):
        from geoldp._core.randomness import resolve_rng

        self.inner = resolve_rng(0)
        self.calls = 0
        self.policy = "seeded"

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if callable(attr):

            def wrapped(*a, **k):
                self.calls += 1
                return attr(*a, **k)

            return wrapped
        return attr


@pytest.mark.parametrize(
    ("kw", "exc", "match"),
    [
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"epsilon": float("nan")}, ValueError, "epsilon"),
        ({"epsilon": True}, TypeError, "epsilon"),
        ({"epsilon": "1"}, TypeError, "epsilon"),
        ({"epsilon": None}, TypeError, "epsilon"),
        (
            {"mechanism": "xyz"},
            ValueError,
            r"mechanism='xyz'.*one of \('tp', 'atp', 'pointem', 'tracs-d', 'tracs-c'\)",
        ),
        ({"mechanism": 3}, TypeError, "'mechanism' parameter"),
        ({"granularity": "north"}, (ValueError, TypeError), "granularity"),
        ({"keep_columns": ["nope"]}, ValueError, r"'keep_columns' .*\['nope'\]"),
        ({"progress": "yes"}, TypeError, "'progress' parameter"),
    ],
)
def test_I29_I30_invalid_arguments_before_any_draw(toy_lines, city_points, kw, exc, match):
    src = _CountingSource()
    args = {"epsilon": EPS, "rng": src, **kw}
    with pytest.raises(exc, match=match):
        toy_lines.ldp.perturb(city_points, **args)
    assert src.calls == 0


@pytest.mark.parametrize("bad_rng", ["seed", 1.5, True, object()])
def test_I29_invalid_rng(toy_lines, city_points, bad_rng):
    with pytest.raises(TypeError, match="'rng'"):
        run(toy_lines, city_points, rng=bad_rng)


def test_I29_mechanism_object_conflicts(toy_lines, city_points):
    mech = geoldp.TP(epsilon=2.0)
    with pytest.raises(ValueError, match="conflicts with the mechanism object's epsilon"):
        toy_lines.ldp.perturb(city_points, mechanism=mech, epsilon=3.0)
    with pytest.raises(TypeError, match=r"options \['split'\] together with a mechanism object"):
        toy_lines.ldp.perturb(city_points, mechanism=mech, split="grouped")


def _bad_frames():
    yield lines_gdf([LINE_COORDS[0], None])
    yield lines_gdf([LINE_COORDS[0], shapely.MultiLineString([LINE_COORDS[0]])])
    yield lines_gdf([[(116.3, 39.9), (116.3, 95.0)]])
    yield lines_gdf(crs=None)


def test_I31_input_unchanged_after_success(toy_lines, toy_point_frame, city_points_gdf):
    for gdf, kw in [
        (toy_lines, {}),
        (toy_lines.to_crs(3857), {"keep_columns": ["user"]}),
        (toy_point_frame, {"traj_id_col": "traj_id", "time_col": "time"}),
    ]:
        gdf.attrs["mine"] = {"note": "kept"}
        snap = snapshot(gdf)
        pts_snap = snapshot(city_points_gdf)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", geoldp.PrivacyWarning)
            run(gdf, city_points_gdf, **kw)
        gdf.ldp.snap(city_points_gdf, **{k: v for k, v in kw.items() if k != "keep_columns"})
        assert_unchanged(gdf, snap)
        assert_unchanged(city_points_gdf, pts_snap)


def test_I31_input_unchanged_after_failure(city_points):
    for gdf in _bad_frames():
        snap = snapshot(gdf)
        with pytest.raises((TypeError, ValueError), match="(?i)row position|crs"):
            run(gdf, city_points)
        assert_unchanged(gdf, snap)


def test_renamed_geometry_column_and_all_null(city_points):
    gdf = gpd.GeoDataFrame(
        {"k": [1, 2], "geom": [shapely.LineString(LINE_COORDS[0]), None]}, geometry="geom", crs="EPSG:4326"
    )
    out = run(gdf, city_points, on_invalid="null")
    assert out.geometry.name == "geom" and list(out.columns) == ["geom"]
    assert out.geometry.iloc[1] is None
    nulls = gpd.GeoDataFrame(geometry=[None, None], crs="EPSG:4326")
    out = run(nulls, city_points, on_invalid="null")
    assert out.geometry.isna().all() and out.index.equals(nulls.index)


def test_multiindex_preserved(toy_lines, city_points):
    gdf = toy_lines.copy()
    gdf.index = pd.MultiIndex.from_tuples([("a", 1), ("a", 2), ("b", 1), ("a", 1)], names=["u", "n"])
    out = run(gdf, city_points)
    assert out.index.equals(gdf.index) and out.index.names == ["u", "n"]


@pytest.mark.slow
def test_I32_scale_one_long_trajectory_many_points():
    import tracemalloc

    g = np.random.default_rng(32)
    m, n = 10_000, 100_000
    pts = PointSet(g.uniform(116.0, 116.8, m), g.uniform(39.6, 40.2, m))
    coords = np.column_stack([g.uniform(116.0, 116.8, n), g.uniform(39.6, 40.2, n)])
    gdf = gpd.GeoDataFrame(geometry=[shapely.linestrings(coords)], crs="EPSG:4326")
    tracemalloc.start()
    try:
        with pytest.warns(geoldp.PrivacyWarning, match="budget per point"):
            out = gdf.ldp.perturb(pts, mechanism="atp", epsilon=4.0, rng=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert shapely.get_num_coordinates(out.geometry.iloc[0]) == n
    assert peak < 1024**3


# --- the analysis side of the boundary: public points, trajectories as arrays ----------------------


def test_as_pointset_is_the_one_normalisation_of_public_points():
    from geoldp._core import frames as _frames

    ps = PointSet([0.0, 0.01, 0.02], [0.0, 0.0, 0.01])
    assert _frames.as_pointset(ps, caller="t") is ps
    arr = np.array([[0.0, 0.0], [0.0, 0.0], [0.01, 0.0]])  # a duplicate: analyses count per position
    got = _frames.as_pointset(arr, caller="t")
    assert isinstance(got, PointSet) and len(got) == 3
    gs = gpd.GeoSeries(gpd.points_from_xy(arr[:, 0], arr[:, 1]), crs="EPSG:4326").to_crs(3857)
    np.testing.assert_allclose(_frames.as_pointset(gs, caller="t").lon, arr[:, 0], atol=1e-9)
    with pytest.raises(ValueError, match="set_crs"):
        _frames.as_pointset(gs.set_crs(None, allow_override=True), caller="t")
    with pytest.raises(ValueError, match="at least 2 finite"):
        _frames.as_pointset(arr[:1], caller="t")
    with pytest.raises(TypeError, match="'points' parameter of t"):
        _frames.as_pointset("P", caller="t")


def test_trajectory_arrays_from_geometries_and_indices_agree():
    from geoldp._core import frames as _frames

    ps = PointSet([0.0, 0.01, 0.02], [0.0, 0.0, 0.01])
    lines = gpd.GeoSeries(
        [shapely.LineString([(0.0, 0.0), (0.01, 0.0)]), shapely.LineString([(0.02, 0.01), (0.0, 0.0)])],
        crs="EPSG:4326",
    )
    a = _frames.trajectory_arrays(lines, name="gdf", caller="t")
    b = _frames.trajectory_arrays([[0, 1], [2, 0]], ps, name="gdf", caller="t")
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_allclose(a.lon, b.lon)
    np.testing.assert_allclose(a.lat, b.lat)
    assert a.index is None and b.index.tolist() == [0, 1, 2, 0]
    with pytest.raises(
        ValueError, match=r"Row position 1 of the 'gdf' trajectories .* index outside \[0, 3\)"
    ):
        _frames.trajectory_arrays([[0], [3]], ps, name="gdf", caller="t")


def test_one_reader_of_public_points_one_wording(toy_lines):
    # the same bad public points get the same message from a release and from an analysis
    from geoldp._core import frames as _frames

    good = gpd.GeoDataFrame(geometry=gpd.points_from_xy([116.3, 116.4], [39.9, 39.95]), crs="EPSG:4326")
    bad = {
        "no CRS": good.set_crs(None, allow_override=True),
        "a line": gpd.GeoDataFrame(
            geometry=[shapely.Point(116.3, 39.9), shapely.LineString(LINE_COORDS[0])], crs="EPSG:4326"
        ),
        "an empty row": gpd.GeoDataFrame(geometry=[shapely.Point(116.3, 39.9), shapely.Point()], crs=4326),
        "one point": good.iloc[:1],
    }
    for points in bad.values():
        texts = []
        for release in (True, False):
            with pytest.raises((TypeError, ValueError)) as err:
                _frames.as_pointset(points, caller="CALLER", release=release)
            texts.append((type(err.value), str(err.value)))
        assert texts[0] == texts[1]
        with pytest.raises(texts[0][0]) as err:
            toy_lines.ldp.perturb(points, epsilon=4.0, rng=1)
        assert str(err.value) == texts[0][1].replace("CALLER", "GeoDataFrame.ldp.perturb")


@pytest.mark.parametrize(
    "geometry, problem",
    [
        (None, "has a missing (None) geometry."),
        (shapely.LineString(), "has an empty geometry."),
        ([(116.3, 39.9), (np.nan, 39.9)], "has a NaN coordinate."),
        ([(116.3, 39.9), (np.inf, 39.9)], "has an infinite coordinate."),
    ],
)
def test_both_trajectory_readers_word_a_bad_row_alike(geometry, problem):
    from geoldp._core import frames as _frames

    if isinstance(geometry, list):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # shapely warns about non-finite vertices
            geometry = shapely.LineString(geometry)
    good = shapely.LineString([(116.3, 39.9), (116.31, 39.91)])
    gdf = gpd.GeoDataFrame(geometry=[good, geometry], crs="EPSG:4326")
    with pytest.raises(ValueError) as release:
        _frames.extract(gdf, caller="C")
    with pytest.raises(ValueError) as analysis:
        _frames.trajectory_arrays(gdf, name="released", caller="C")
    assert str(release.value).startswith(f"Row position 1 of the trajectories passed to C {problem} Drop or")
    assert (
        str(analysis.value)
        == f"Row position 1 of the 'released' trajectories passed to C {problem} Drop or repair it."
    )
    ft, ta = (
        _frames.extract(gdf.iloc[:1], caller="C"),
        _frames.trajectory_arrays(gdf.iloc[:1], name="r", caller="C"),
    )
    for attr in ("lon", "lat", "offsets", "vertex_rows", "traj_rows", "valid"):  # one container, alike
        np.testing.assert_array_equal(getattr(ft, attr), getattr(ta, attr))
    assert type(ft) is type(ta) and ft.kind == ta.kind == "LineString" and ft.n_trajectories == 1


def test_a_missing_value_in_any_column_is_worded_alike(toy_point_frame, city_points):
    # a missing time, trajectory id or user id: one sentence, naming the row position and the column
    frame = toy_point_frame.assign(user="u")
    acc = geoldp.BudgetAccountant(10.0)
    kw = dict(epsilon=1.0, traj_id_col="traj_id", time_col="time", accountant=acc, user_col="user", rng=0)
    for column, what in (("time", "time"), ("traj_id", "trajectory id"), ("user", "user id")):
        bad = frame.astype({column: object})
        bad.iloc[2, bad.columns.get_loc(column)] = None
        with pytest.raises(ValueError) as err:
            bad.ldp.perturb(city_points, **kw)
        assert str(err.value) == (
            f"Row position 2 of the trajectories passed to GeoDataFrame.ldp.perturb has a missing {what} in "
            f"column {column!r}. Fill or drop such rows first."
        )
    assert acc.spent == {}


# -- Point rows that look like GPS fixes of longer trips warn before a full-ε release each ----------------


def _fixes_frame(**cols):
    n = 12
    return gpd.GeoDataFrame(
        cols,
        geometry=gpd.points_from_xy(116.33 + np.arange(n) * 1e-3, 39.91 + np.arange(n) * 1e-4),
        crs="EPSG:4326",
    )


FIX_COLUMNS = {
    "time column": {"time": pd.date_range("2020-01-01", periods=12, freq="1min")},
    "text time named ts": {"ts": [f"2020-01-01T00:{m:02d}:00" for m in range(12)]},
    "repeated trip id": {"trip_id": np.repeat([1, 2, 3], 4)},
    "repeated tracker": {"tracker": np.repeat(["a", "b"], 6)},
}


def _release_kinds(city_points):
    from geoldp import zone_grid

    zones = zone_grid(
        city_points.to_geodataframe() if hasattr(city_points, "to_geodataframe") else city_points
    )
    return {
        "perturb": lambda f, **kw: f.ldp.perturb(city_points, epsilon=4.0, rng=0, **kw),
        "report": lambda f, **kw: geoldp.report(f, zones, epsilon=4.0, rng=0, **kw),
        "synthesize": lambda f, **kw: geoldp.synthesize(f, epsilon=4.0, points=city_points, rng=0, **kw),
        "hybrid": lambda f, **kw: geoldp.hybrid(f, city_points, zones, epsilon=4.0, rng=0, **kw),
    }


@pytest.mark.filterwarnings("ignore::geoldp.GeoLDPWarning")  # near-uniform and no-data-level notes
@pytest.mark.parametrize("kind", ["perturb", "report", "synthesize", "hybrid"])
@pytest.mark.parametrize("cols", list(FIX_COLUMNS), ids=list(FIX_COLUMNS))
def test_point_rows_that_look_like_fixes_warn(city_points_gdf, kind, cols):
    from geoldp._core.errors import PrivacyWarning

    call = _release_kinds(city_points_gdf)[kind]
    frame = _fixes_frame(**FIX_COLUMNS[cols])
    col = next(iter(FIX_COLUMNS[cols]))
    option = "" if kind == "report" else r"traj_id_col="
    with pytest.warns(
        PrivacyWarning, match=rf"12 Point rows .* no trajectory id.* column '{col}' .*{option}"
    ):
        call(frame)


@pytest.mark.filterwarnings("ignore::geoldp.GeoLDPWarning")
def test_point_rows_with_an_id_or_without_fix_columns_do_not_warn(city_points_gdf):
    from geoldp._core.errors import PrivacyWarning

    kinds = _release_kinds(city_points_gdf)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        kinds["perturb"](_fixes_frame(trip_id=np.repeat([1, 2, 3], 4)), traj_id_col="trip_id")
        kinds["synthesize"](_fixes_frame(trip_id=np.repeat([1, 2, 3], 4)), traj_id_col="trip_id")
        kinds["perturb"](_fixes_frame(poi_id=np.arange(12), name=[f"p{i}" for i in range(12)]))  # unique ids
        acc = geoldp.BudgetAccountant(100.0)
        kinds["report"](_fixes_frame(user=np.repeat([1, 2], 6)), user_col="user", accountant=acc)  # declared


def test_cli_point_rows_that_look_like_fixes_warn(tmp_path, city_points_gdf, capsys):
    from geoldp.cli import main

    n = 12
    pd.DataFrame(
        {
            "trip": np.repeat(["a", "b", "c"], 4),
            "lon": 116.33 + np.arange(n) * 1e-3,
            "lat": 39.91 + np.arange(n) * 1e-4,
        }
    ).to_csv(tmp_path / "fixes.csv", index=False)
    city_points_gdf.to_file(tmp_path / "P.geojson", driver="GeoJSON")
    base = ["perturb", str(tmp_path / "fixes.csv"), "--points", str(tmp_path / "P.geojson"), "--epsilon", "4"]
    assert main([*base, "-o", str(tmp_path / "a.csv")]) == 0
    err = capsys.readouterr().err
    assert "geoldp: warning: PrivacyWarning: The 12 Point rows" in err and "--traj-id-col" in err
    assert main([*base, "--traj-id-col", "trip", "-o", str(tmp_path / "b.csv")]) == 0
    assert "PrivacyWarning: The 12 Point rows" not in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::geoldp.GeoLDPWarning")
def test_dask_point_rows_with_a_time_column_warn_from_the_schema(city_points_gdf):
    dask_geopandas = pytest.importorskip("dask_geopandas")
    import geoldp.dask
    from geoldp import zone_grid
    from geoldp._core.errors import PrivacyWarning

    frame = _fixes_frame(time=pd.date_range("2020-01-01", periods=12, freq="1min"))
    ddf = dask_geopandas.from_geopandas(frame, npartitions=2)
    with pytest.warns(PrivacyWarning, match=r"Point rows passed to .* no trajectory id.* column 'time'"):
        geoldp.dask.perturb(ddf, city_points_gdf, epsilon=4.0, rng=0)
    with pytest.warns(PrivacyWarning, match=r"Point rows passed to .* no trajectory id.* column 'time'"):
        geoldp.dask.report(ddf, zone_grid(city_points_gdf), epsilon=4.0, rng=0)
    plain = dask_geopandas.from_geopandas(_fixes_frame(name=[f"p{i}" for i in range(12)]), npartitions=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        geoldp.dask.perturb(plain, city_points_gdf, epsilon=4.0, rng=0)


# ----------------------------------------------------- the time column of Point rows: one kind of value


def _point_rows(times):
    return gpd.GeoDataFrame(
        {"tid": ["a"] * len(times), "t": pd.Series(times, dtype=object)},
        geometry=[shapely.Point(116.32 + 0.01 * i, 39.91) for i in range(len(times))],
        crs="EPSG:4326",
    )


@pytest.mark.parametrize(
    "times",
    [[3, "2020-01-01T00:00:00", 1], [1.5, "x", 2.5], [pd.Timestamp("2020-01-01"), 5, 6]],
    ids=["int and iso text", "float and text", "datetime and int"],
)
def test_time_column_mixing_kinds_is_refused(city_points, times):
    with pytest.raises(ValueError, match="time column 't' .* mixes kinds of value"):
        _point_rows(times).ldp.perturb(city_points, epsilon=4.0, rng=0, traj_id_col="tid", time_col="t")


def test_time_column_of_one_kind_is_accepted(city_points):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the near-uniform budget warning is not the point here
        out = _point_rows([3, 2.5, 1]).ldp.perturb(
            city_points, epsilon=4.0, rng=0, traj_id_col="tid", time_col="t"
        )
    assert len(out) == 3


@pytest.mark.filterwarnings("ignore:GDAL reported:geoldp.GeoLDPWarning")  # GDAL: mixed field types
@pytest.mark.parametrize("values", [[1, "2020-01-01T00:00:00Z", 3], [1, "later", 3]])
def test_time_column_mixing_kinds_in_a_file_is_refused(tmp_path, values):
    feats = [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [116.3 + 0.01 * i, 39.9]},
            "properties": {"tid": "a", "t": v},
        }
        for i, v in enumerate(values)
    ]
    path = tmp_path / "m.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
    with pytest.raises(ValueError, match="time column 't'"):
        gio.read_trajectories(path, traj_id_col="tid", time_col="t")
    # an object column of numbers and text built in memory is refused by the reader's parser too
    frame = _point_rows(values)
    with pytest.raises(ValueError, match="mixes kinds"):
        gio._parse_time(frame, "t", "read_trajectories")
