"""geoldp.prepare: points → LineStrings, duplicate removal, resampling, simplification, budget per point."""

from __future__ import annotations

import re
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from conftest import LINE_COORDS

from geoldp import GeoLDPWarning, PrivacyWarning
from geoldp import prepare as prep
from geoldp._core.geo import haversine_m


def coords_of(geom):
    return shapely.get_coordinates(geom)


# ---------------------------------------------------------------------------------------------- budget


def test_point_budget_is_epsilon_over_n():
    assert prep.point_budget("tp", 8, epsilon=4.0) == pytest.approx(0.5)
    assert prep.point_budget("atp", 1, epsilon=2.0) == pytest.approx(2.0)
    with pytest.raises(ValueError, match=r"'n' parameter of point_budget must be an int >= 1"):
        prep.point_budget("tp", 0, epsilon=1.0)


def test_suggest_max_points():
    assert prep.suggest_max_points("atp", epsilon=4.0) == 40
    assert prep.suggest_max_points("tp", epsilon=1.0, threshold=0.25) == 4
    assert prep.suggest_max_points("tp", epsilon=0.05) == 0
    assert prep.suggest_max_points("atp", epsilon=4.0, limit=12) == 12
    with pytest.raises(ValueError, match="'threshold' parameter"):
        prep.suggest_max_points("tp", epsilon=1.0, threshold=0)


def test_near_uniform_warning_counts_only_and_advice(city_points):
    long = np.column_stack([np.linspace(116.33, 116.44, 12), np.linspace(39.90, 39.96, 12)])
    gdf = gpd.GeoDataFrame(
        geometry=[shapely.linestrings(long)] * 3 + [shapely.LineString(LINE_COORDS[0])], crs="EPSG:4326"
    )
    with pytest.warns(PrivacyWarning, match=r"^3 trajectory\(ies\).*resample\(gdf, max_points=10\)"):
        gdf.ldp.perturb(city_points, mechanism="tp", epsilon=1.0, rng=0)
    one = gpd.GeoDataFrame(geometry=[shapely.Point(116.33, 39.9)], crs="EPSG:4326")
    with pytest.warns(PrivacyWarning, match="Even a single point gets less than that: use a larger epsilon"):
        one.ldp.perturb(city_points, mechanism="pointem", epsilon=0.05, rng=0)


def test_no_warning_at_the_threshold(city_points):
    line = np.column_stack([np.linspace(116.33, 116.44, 10), np.linspace(39.90, 39.96, 10)])
    gdf = gpd.GeoDataFrame(geometry=[shapely.linestrings(line)], crs="EPSG:4326")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gdf.ldp.perturb(city_points, mechanism="tp", epsilon=1.0, rng=0)  # ε/n = 0.1 exactly


# ---------------------------------------------------------------------------------------------- from points


def test_trajectories_from_points_keeps_per_trajectory_columns(toy_point_frame, city_points):
    df = toy_point_frame.assign(user=toy_point_frame["traj_id"].map({"a": "u1", "b": "u2", "c": "u1"}))
    out = prep.trajectories_from_points(df, "traj_id", "time", min_points=1, keep=["user"])
    assert list(out.columns[-2:]) == ["user", "geometry"]
    assert dict(zip(out["traj_id"], out["user"], strict=True)) == {"a": "u1", "b": "u2", "c": "u1"}
    assert "speed" not in out.columns  # only what was asked for
    # the kept user id feeds the accountant's user_col
    from geoldp import BudgetAccountant

    acc = BudgetAccountant(8.0)
    out[out["n_points"] >= 2].ldp.perturb(
        city_points, mechanism="tp", epsilon=2.0, rng=0, accountant=acc, user_col="user"
    )
    assert acc.spent == {"u1": pytest.approx(2.0), "u2": pytest.approx(2.0)}


@pytest.mark.parametrize(
    "keep, message",
    [
        (["speed"], "'keep' column 'speed' .* changes within a trajectory segment"),
        (["nope"], "'keep' parameter .* not in the frame: 'nope'"),
        (["time"], "'keep' column 'time' .* clashes with an output column"),
        (["traj_id"], "clashes with an output column"),
    ],
)
def test_trajectories_from_points_keep_errors(toy_point_frame, keep, message):
    with pytest.raises(ValueError, match=message):
        prep.trajectories_from_points(toy_point_frame, "traj_id", "time", min_points=1, keep=keep)


def test_trajectories_from_points_groups_sorts_and_splits(toy_point_frame):
    out = prep.trajectories_from_points(toy_point_frame, "traj_id", "time", min_points=1)
    assert list(out["traj_id"]) == ["b", "a", "c"]
    assert list(out["n_points"]) == [3, 3, 1]
    assert out.crs == toy_point_frame.crs and isinstance(out.index, pd.RangeIndex)
    g = toy_point_frame.geometry
    np.testing.assert_array_equal(coords_of(out.geometry.iloc[0]), coords_of(g.iloc[[4, 0, 6]].values))
    np.testing.assert_array_equal(coords_of(out.geometry.iloc[1]), coords_of(g.iloc[[2, 1, 5]].values))
    # a one-point segment becomes a stationary LineString (two identical vertices)
    assert shapely.get_num_coordinates(out.geometry.iloc[2]) == 2
    assert out["time_start"].iloc[0] == toy_point_frame["time"].iloc[4]
    assert out["time_end"].iloc[0] == toy_point_frame["time"].iloc[6]


def test_trajectories_from_points_max_gap_and_min_points(toy_point_frame):
    with pytest.warns(GeoLDPWarning, match=r"^2 segment\(s\) with fewer than 2 point\(s\) were dropped"):
        out = prep.trajectories_from_points(toy_point_frame, "traj_id", "time", max_gap="90s")
    # b: t=0 | t=2,2 -> segments [1 pt] dropped, [2 pts]; a: t=0,1,2 stays; c: 1 pt dropped
    assert list(out["traj_id"]) == ["b", "a"]
    assert list(out["segment"]) == [1, 0]
    assert list(out["n_points"]) == [2, 3]


def test_trajectories_from_points_numeric_time():
    gdf = gpd.GeoDataFrame(
        {"id": [1] * 5, "t": [0.0, 1.0, 2.0, 10.0, 11.0]},
        geometry=gpd.points_from_xy(np.linspace(116.3, 116.4, 5), [39.9] * 5),
        crs=4326,
    )
    out = prep.trajectories_from_points(gdf, "id", "t", max_gap=5)
    assert list(out["n_points"]) == [3, 2] and list(out["segment"]) == [0, 1]
    with pytest.raises(TypeError, match="'max_gap' parameter .* must be a number"):
        prep.trajectories_from_points(gdf, "id", "t", max_gap="5min")


def test_trajectories_from_points_errors(toy_point_frame, toy_lines):
    with pytest.raises(ValueError, match="needs time_col"):
        prep.trajectories_from_points(toy_point_frame, "traj_id", max_gap="1h")
    with pytest.raises(ValueError, match=r"\['nope'\] not found"):
        prep.trajectories_from_points(toy_point_frame, "nope", "time")
    with pytest.raises(TypeError, match="needs Point rows"):
        prep.trajectories_from_points(toy_lines, "user")
    with pytest.raises(ValueError, match="'max_gap' parameter .* must be positive"):
        prep.trajectories_from_points(toy_point_frame, "traj_id", "time", max_gap="-1h")
    bad = toy_point_frame.copy()
    bad.loc[2, "time"] = pd.NaT
    with pytest.raises(ValueError, match=r"Row position 2 .*missing time"):
        prep.trajectories_from_points(bad, "traj_id", "time")


def test_trajectories_from_points_then_perturb(toy_point_frame, city_points):
    lines = prep.trajectories_from_points(toy_point_frame, "traj_id", "time", min_points=1)
    out = lines.ldp.perturb(city_points, epsilon=4.0, rng=0)
    assert list(out.columns) == ["geometry"]  # times/ids dropped by default
    assert len(out) == 3


# ---------------------------------------------------------------------------------------------- duplicates


def test_drop_consecutive_duplicates_exact(toy_lines):
    gdf = toy_lines.copy()
    gdf.loc[10, "geometry"] = shapely.LineString(
        [(116.32, 39.90), (116.32, 39.90), (116.33, 39.91), (116.32, 39.90)]
    )
    out = prep.drop_consecutive_duplicates(gdf)
    assert out.index.equals(gdf.index) and list(out.columns) == list(gdf.columns)
    assert shapely.get_num_coordinates(out.geometry.values).tolist() == [3, 2, 4, 2]
    # the stationary row keeps its two identical vertices (a LineString needs two)
    np.testing.assert_array_equal(coords_of(out.geometry.loc[5]), coords_of(gdf.geometry.loc[5]))
    assert gdf.geometry.loc[10].equals(
        shapely.LineString([(116.32, 39.90), (116.32, 39.90), (116.33, 39.91), (116.32, 39.90)])
    )  # input unchanged


def test_drop_consecutive_duplicates_snapped(city_points):
    # four fixes around one venue, then one at another
    coords = [(116.3201, 39.9011), (116.3202, 39.9009), (116.3199, 39.9012), (116.4051, 39.9488)]
    gdf = gpd.GeoDataFrame(geometry=[shapely.LineString(coords)], crs="EPSG:4326")
    out = prep.drop_consecutive_duplicates(gdf, city_points)
    np.testing.assert_array_equal(coords_of(out.geometry.iloc[0]), np.asarray(coords)[[0, 3]])
    same = gpd.GeoDataFrame(geometry=[shapely.LineString(coords[:3])], crs="EPSG:4326")
    out = prep.drop_consecutive_duplicates(same, city_points)
    assert shapely.get_num_coordinates(out.geometry.iloc[0]) == 2


# ---------------------------------------------------------------------------------------------- resample


def _line(n, crs="EPSG:4326"):
    coords = np.column_stack([np.linspace(116.30, 116.40, n), np.linspace(39.90, 39.95, n)])
    return gpd.GeoDataFrame({"k": [1]}, geometry=[shapely.linestrings(coords)], crs=crs)


def test_resample_max_points():
    gdf = pd.concat([_line(50), _line(3)], ignore_index=True)
    out = prep.resample(gdf, max_points=10)
    assert shapely.get_num_coordinates(out.geometry.values).tolist() == [10, 3]
    c_in, c_out = coords_of(gdf.geometry.iloc[0]), coords_of(out.geometry.iloc[0])
    np.testing.assert_array_equal(c_out[[0, -1]], c_in[[0, -1]])
    assert out.geometry.iloc[1].equals_exact(gdf.geometry.iloc[1], 0)  # short rows untouched
    assert list(out.columns) == ["k", "geometry"]


def test_resample_spacing_m():
    gdf = _line(5)
    c = coords_of(gdf.geometry.iloc[0])
    total = float(np.sum(haversine_m(c[:-1, 0], c[:-1, 1], c[1:, 0], c[1:, 1])))
    out = prep.resample(gdf, spacing_m=1000.0)
    n = shapely.get_num_coordinates(out.geometry.iloc[0])
    assert n == int(np.ceil(total / 1000.0)) + 1
    o = coords_of(out.geometry.iloc[0])
    steps = haversine_m(o[:-2, 0], o[:-2, 1], o[1:-1, 0], o[1:-1, 1])
    np.testing.assert_allclose(steps, 1000.0, rtol=1e-3)
    out = prep.resample(gdf, spacing_m=1000.0, max_points=4)
    assert shapely.get_num_coordinates(out.geometry.iloc[0]) == 4


def test_resample_keeps_crs():
    gdf = _line(30).to_crs("EPSG:32650")
    out = prep.resample(gdf, max_points=5)
    assert out.crs == gdf.crs
    np.testing.assert_allclose(
        coords_of(out.geometry.iloc[0])[[0, -1]], coords_of(gdf.geometry.iloc[0])[[0, -1]], atol=1e-6
    )


def test_resample_errors(toy_point_frame):
    with pytest.raises(ValueError, match="needs max_points or spacing_m"):
        prep.resample(_line(4))
    with pytest.raises(ValueError, match="'max_points' parameter of resample must be an int >= 2"):
        prep.resample(_line(4), max_points=1)
    with pytest.raises(ValueError, match="'spacing_m' parameter of resample"):
        prep.resample(_line(4), spacing_m=-5)
    with pytest.raises(TypeError, match="'spacing_m' parameter of resample"):
        prep.resample(_line(4), spacing_m="5")
    with pytest.raises(TypeError, match="works on LineString rows.*trajectories_from_points"):
        prep.resample(toy_point_frame, max_points=3)


def test_resample_then_no_near_uniform_warning(city_points):
    gdf = _line(200)
    with pytest.warns(PrivacyWarning, match="budget per point"):
        gdf.ldp.perturb(city_points, mechanism="atp", epsilon=4.0, rng=0)
    short = prep.resample(gdf, max_points=prep.suggest_max_points("atp", epsilon=4.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        short.ldp.perturb(city_points, mechanism="atp", epsilon=4.0, rng=0)


# ---------------------------------------------------------------------------------------------- simplify


def test_simplify_keeps_original_vertices():
    # a straight line with a small wiggle and one big detour
    lon = np.linspace(116.30, 116.40, 11)
    lat = np.full(11, 39.90)
    lat[3] += 1e-6  # ~0.1 m wiggle: removed
    lat[6] += 0.01  # ~1.1 km detour: kept
    gdf = gpd.GeoDataFrame(geometry=[shapely.linestrings(np.column_stack([lon, lat]))], crs="EPSG:4326")
    out = prep.simplify(gdf, 50.0)
    got = coords_of(out.geometry.iloc[0])
    orig = coords_of(gdf.geometry.iloc[0])
    assert {tuple(r) for r in got} <= {tuple(r) for r in orig}  # bit-identical original vertices
    assert len(got) == 5  # endpoints, the detour and its two neighbours
    np.testing.assert_array_equal(got[[0, -1]], orig[[0, -1]])
    assert prep.simplify(gdf, 0.0).geometry.iloc[0].equals_exact(gdf.geometry.iloc[0], 0)


def test_simplify_stationary_and_max_points():
    gdf = gpd.GeoDataFrame(
        geometry=[shapely.LineString([(116.3, 39.9)] * 4), _line(40).geometry.iloc[0]], crs="EPSG:4326"
    )
    out = prep.simplify(gdf, 5.0, max_points=3)
    n = shapely.get_num_coordinates(out.geometry.values)
    assert n[0] >= 2 and n[1] <= 3


def test_simplify_errors():
    with pytest.raises(ValueError, match="'tolerance_m' parameter of simplify"):
        prep.simplify(_line(4), -1.0)
    with pytest.raises(TypeError, match="'tolerance_m' parameter of simplify"):
        prep.simplify(_line(4), None)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: prep.point_budget("tp", 2.0, epsilon=1.0), "'n' parameter of point_budget"),
        (lambda: prep.suggest_max_points("tp", epsilon=1.0, threshold="0.1"), "'threshold' parameter"),
        (lambda: prep.suggest_max_points("tp", epsilon=1.0, limit=2.5), "'limit' parameter"),
        (lambda: prep.resample(_line(4), max_points="3"), "'max_points' parameter of resample"),
        (lambda: prep.simplify(_line(4), None), "'tolerance_m' parameter of simplify"),
    ],
)
def test_wrong_types_raise_type_error_naming_the_parameter(call, name):
    # a type error is a TypeError (not ValueError, not a raw float()/int() message)
    with pytest.raises(TypeError, match=name):
        call()


def test_min_points_type_error(toy_point_frame):
    with pytest.raises(TypeError, match="'min_points' parameter of trajectories_from_points"):
        prep.trajectories_from_points(toy_point_frame, "traj_id", min_points=2.0)


def test_budget_helpers_live_with_the_release_pipeline():
    from geoldp import _release

    # one implementation, re-exported under its public path
    assert prep.point_budget is _release.point_budget
    assert prep.suggest_max_points is _release.suggest_max_points
    assert prep.NEAR_UNIFORM_EPSILON == _release.NEAR_UNIFORM_EPSILON


# -- prepare checks what a release checks ------------------------------------------------------------------


def _prepare_cli(argv, capsys):
    from geoldp.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _fix_table(tmp_path, n=40, step="1min"):
    df = pd.DataFrame(
        {
            "tid": ["a"] * (n // 2) + ["b"] * (n - n // 2),
            "time": pd.date_range("2020-01-01", periods=n, freq=step).astype(str),
            "lon": 116.3 + np.arange(n) * 1e-3,
            "lat": 39.9 + np.arange(n) * 1e-3,
        }
    )
    path = tmp_path / "fixes.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    "wkt, match",
    [
        ("LINESTRING (525021 5038593, 525100 5038700)", "outside lon \\[-180, 180\\]"),
        ("LINESTRING (116.3 39.9, NaN 39.95, 116.4 39.96)", "NaN coordinate"),
    ],
    ids=["utm metres as lon/lat", "nan"],
)
def test_prepare_refuses_coordinates_a_release_refuses(tmp_path, capsys, wkt, match):
    path = tmp_path / "trips.csv"
    path.write_text(f'id,geometry\n1,"LINESTRING (116.3 39.9, 116.4 39.95)"\n2,"{wkt}"\n')
    code, _, err = _prepare_cli(["prepare", path, "-o", tmp_path / "out.geojson"], capsys)
    assert code == 1 and not (tmp_path / "out.geojson").exists()
    (line,) = [x for x in err.splitlines() if x.startswith("geoldp: error:")]
    assert re.search("Row position 1 .*" + match, line)
    # the Python twin
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # shapely: "invalid value encountered" (NaN)
        geoms = shapely.from_wkt(["LINESTRING (0 0, 1 1)", wkt])
    frame = gpd.GeoDataFrame({"id": [1, 2]}, geometry=geoms, crs=4326)
    with pytest.raises(ValueError, match="Row position 1 .*" + match):
        prep.drop_short_trips(frame)


def test_min_points_applies_to_linestring_input(tmp_path, toy_lines, capsys):
    with pytest.warns(GeoLDPWarning, match=r"^2 trip\(s\) with fewer than 3 point\(s\) were dropped"):
        out = prep.drop_short_trips(toy_lines, min_points=3)
    assert list(out.index) == [toy_lines.index[0], toy_lines.index[2]]
    assert out.crs == toy_lines.crs and list(out.columns) == list(toy_lines.columns)
    path = tmp_path / "trips.geojson"
    toy_lines.to_file(path, driver="GeoJSON")
    code, _, err = _prepare_cli(["prepare", path, "--min-points", 3, "-o", tmp_path / "a.geojson"], capsys)
    assert code == 0 and "geoldp: warning: GeoLDPWarning: 2 trip(s) with fewer than 3" in err
    assert len(gpd.read_file(tmp_path / "a.geojson")) == 2
    code, _, err = _prepare_cli(
        ["prepare", path, "--min-points", 10**9, "-o", tmp_path / "b.geojson"], capsys
    )
    assert code == 1 and "no trip is left: every trip has fewer than --min-points 1000000000 points" in err
    assert "--area" not in err and "--max-km" not in err


def test_an_empty_result_blames_the_option_that_emptied_it(tmp_path, capsys):
    fixes = _fix_table(tmp_path)
    base = ["prepare", fixes, "--traj-id-col", "tid", "--time-col", "time"]
    code, _, err = _prepare_cli([*base, "--max-gap", "10s", "-o", tmp_path / "a.gpkg"], capsys)
    assert code == 1 and "no trip is left after splitting at --max-gap 10s" in err and "--area" not in err
    code, _, err = _prepare_cli([*base, "--min-points", "100", "-o", tmp_path / "b.gpkg"], capsys)
    assert code == 1 and "fewer than --min-points 100 points" in err and "--area" not in err
    code, _, err = _prepare_cli([*base, "--area=0,0,1,1", "-o", tmp_path / "c.gpkg"], capsys)
    assert code == 1 and "no trip is left after --area" in err and "--max-km" not in err


@pytest.mark.parametrize("gap", ["10", "2.5", " 10 "])
def test_max_gap_needs_a_unit_for_date_times(tmp_path, capsys, gap):
    fixes = _fix_table(tmp_path)
    argv = ["prepare", fixes, "--traj-id-col", "tid", "--time-col", "time", "--max-gap", gap]
    code, _, err = _prepare_cli([*argv, "-o", tmp_path / "a.gpkg"], capsys)
    assert code == 1 and "needs a unit" in err and "min'" in err and not (tmp_path / "a.gpkg").exists()
    code, _, _ = _prepare_cli([*argv[:-1], "10min", "-o", tmp_path / "b.gpkg"], capsys)
    assert code == 0


def test_max_gap_bare_number_python(toy_point_frame):
    for gap in (10, 2.5, "10", np.int64(3)):
        with pytest.raises(ValueError, match="'max_gap' parameter .* needs a unit .* a bare number"):
            prep.trajectories_from_points(toy_point_frame, "traj_id", "time", max_gap=gap)
    gdf = gpd.GeoDataFrame(
        {"id": [1] * 5, "t": [0.0, 1.0, 2.0, 10.0, 11.0]},
        geometry=gpd.points_from_xy(np.linspace(116.3, 116.4, 5), [39.9] * 5),
        crs=4326,
    )
    # a numeric time column takes a number, also as the text the command line passes
    assert list(prep.trajectories_from_points(gdf, "id", "t", max_gap="5")["n_points"]) == [3, 2]


# -------------------------------------------------- resample's size guard and suggest_max_points' limit


@pytest.mark.parametrize("spacing", [0.01, 1e-300, 5e-324])
def test_resample_refuses_tiny_spacing_up_front(toy_lines, spacing):
    import time
    import warnings

    from geoldp import prepare

    big = pd.concat([toy_lines] * 500, ignore_index=True)  # 2,000 rows of a few km each
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning on the way
        with pytest.raises(ValueError, match="'spacing_m' parameter of resample .*MAX_VERTICES"):
            prepare.resample(big, spacing_m=spacing)
    assert time.process_time() - start < 5.0


def test_resample_limit_counts_max_points_and_can_be_raised(toy_lines, monkeypatch):
    from geoldp import prepare

    monkeypatch.setattr(prepare, "MAX_VERTICES", 40)
    with pytest.raises(ValueError, match="MAX_VERTICES = 40"):
        prepare.resample(toy_lines, spacing_m=10.0)
    out = prepare.resample(toy_lines, spacing_m=10.0, max_points=5)  # at most 4 x 5 vertices
    assert shapely.get_num_coordinates(np.asarray(out.geometry.values)).max() <= 5
    monkeypatch.setattr(prepare, "MAX_VERTICES", 10**9)
    assert len(prepare.resample(toy_lines, spacing_m=10.0)) == len(toy_lines)


@pytest.mark.parametrize(
    "limit, exc", [(0, ValueError), (-1, ValueError), (1.0, TypeError), (True, TypeError)]
)
def test_suggest_max_points_limit(limit, exc):
    from geoldp.prepare import suggest_max_points

    with pytest.raises(exc, match="'limit' parameter of suggest_max_points"):
        suggest_max_points("atp", epsilon=4.0, limit=limit)
    assert suggest_max_points("atp", epsilon=4.0, limit=1) == 1
