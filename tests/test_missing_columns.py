"""A ``*_col`` parameter naming a column the frame lacks: the error names the parameter and lists the
available columns (in-memory frames), or counts them without quoting (files, on the command line)."""

from __future__ import annotations

import contextlib
import io
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest

import geoldp
from geoldp import budget_strategies, datasets
from geoldp.accounting import BudgetAccountant
from geoldp.cli import main


@pytest.fixture(scope="module")
def city():
    points, trips = datasets.synthetic_city(n_points=40, n_trips=12, seed=3)
    xy = trips.get_coordinates(index_parts=False).reset_index(names="trip")
    fixes = gpd.GeoDataFrame(
        {"trip": xy["trip"], "t": np.arange(len(xy)), "user": xy["trip"] % 4},
        geometry=gpd.points_from_xy(xy.x, xy.y),
        crs="EPSG:4326",
    )
    lines = trips.assign(user=np.arange(len(trips)) % 4)
    return geoldp.PointSet.from_geodataframe(points), fixes, lines


def _calls(ps, fixes, lines):
    acc = BudgetAccountant(total_epsilon=10)
    table = pd.DataFrame({"estimate": [1.0], "lower": [0.0], "upper": [2.0], "zone": [0]})
    return {
        "perturb user_col": lambda: fixes.ldp.perturb(
            ps, epsilon=2, traj_id_col="trip", user_col="nope", accountant=acc, rng=0
        ),
        "perturb user_col max_per_user": lambda: lines.ldp.perturb(
            ps, epsilon=2, user_col="nope", max_per_user=1, rng=0
        ),
        "perturb user_col split": lambda: lines.ldp.perturb(
            ps, epsilon=2, user_col="nope", user_budget="split", accountant=acc, rng=0
        ),
        "perturb traj_id_col": lambda: fixes.ldp.perturb(ps, epsilon=2, traj_id_col="nope", rng=0),
        "perturb time_col": lambda: fixes.ldp.perturb(
            ps, epsilon=2, traj_id_col="trip", time_col="nope", rng=0
        ),
        "synthesize user_col": lambda: geoldp.synthesize(
            lines, epsilon=2, bounds=tuple(lines.total_bounds), user_col="nope", accountant=acc, rng=0
        ),
        "select_per_user user_col": lambda: budget_strategies.select_per_user(lines, "nope", 1),
        "select_per_user traj_id_col": lambda: budget_strategies.select_per_user(
            fixes, "user", 1, traj_id_col="nope"
        ),
        "charge_release user_col": lambda: geoldp.accounting.charge_release(acc, lines, "nope", 1.0),
        "trajectories_from_points keep": lambda: geoldp.prepare.trajectories_from_points(
            fixes, "trip", keep=["nope"]
        ),
        "plot_intervals label_col": lambda: geoldp.plotting.plot_intervals(table, label_col="nope"),
    }


CALLS = list(_calls(None, None, None))


@pytest.mark.parametrize("name", CALLS)
def test_missing_column_lists_the_available_ones(city, name):
    ps, fixes, lines = city
    before = (fixes.copy(), lines.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. the privacy warnings of the set-up
        with pytest.raises(ValueError, match=r"'nope'.*Available columns: \[") as info:
            _calls(ps, fixes, lines)[name]()
    message = str(info.value)
    assert ("'zone'" if "label_col" in name else "'user'") in message  # an available column, listed
    pd.testing.assert_frame_equal(fixes, before[0])
    pd.testing.assert_frame_equal(lines, before[1])


def test_many_columns_are_listed_up_to_a_limit():
    from geoldp._core.validation import MAX_LISTED_COLUMNS, missing_column

    message = str(missing_column("user_col", "f", "nope", [f"c{i}" for i in range(500)]))
    assert f"c{MAX_LISTED_COLUMNS - 1}'" in message and f"c{MAX_LISTED_COLUMNS}'" not in message
    assert message.endswith(f"and {500 - MAX_LISTED_COLUMNS} more.")


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


@pytest.fixture(scope="module")
def files(tmp_path_factory, city):
    d = tmp_path_factory.mktemp("cols")
    _, fixes, lines = city
    points, _ = datasets.synthetic_city(n_points=40, n_trips=1, seed=3)
    points[["geometry"]].to_file(d / "points.geojson")
    pd.DataFrame(
        {
            "trip": fixes["trip"],
            "t": fixes["t"],
            "user": fixes["user"],
            "lon": fixes.geometry.x,
            "lat": fixes.geometry.y,
        }
    ).to_csv(d / "fixes.csv", index=False)
    lines.to_file(d / "lines.gpkg")
    pd.DataFrame({"lon": [0.0], "lat": [0.0]}).to_csv(d / "not_polygons.csv", index=False)
    return d


CLI_CASES = {
    "perturb --user-col": [
        "perturb",
        "fixes.csv",
        "--traj-id-col",
        "trip",
        "--user-col",
        "nope",
        "--max-per-user",
        "1",
    ],
    "perturb --keep-columns": [
        "perturb",
        "fixes.csv",
        "--traj-id-col",
        "trip",
        "--keep-columns",
        "user",
        "nope",
    ],
    "prepare --user-col": ["prepare", "fixes.csv", "--traj-id-col", "trip", "--user-col", "nope"],
    "prepare --keep": ["prepare", "fixes.csv", "--traj-id-col", "trip", "--keep", "nope"],
    "report --user-col": [
        "report",
        "lines.gpkg",
        "--cell-km",
        "5",
        "--user-col",
        "nope",
        "--max-per-user",
        "1",
    ],
    "synthesize --user-col": ["synthesize", "lines.gpkg", "--user-col", "nope", "--max-per-user", "1"],
}


@pytest.mark.parametrize("name", CLI_CASES)
def test_cli_missing_column_names_the_option(files, name):
    argv = [str(files / a) if a.endswith((".csv", ".gpkg")) else a for a in CLI_CASES[name]]
    if argv[0] != "prepare":
        argv += ["--epsilon", "2"]
    argv += ["-o", str(files / f"out_{name.split()[0]}.csv")]
    if argv[0] in ("perturb", "report", "synthesize"):
        argv += ["--points", str(files / "points.geojson")]
    code, err = _run(argv)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err
    option = name.split()[1]
    assert lines[0].startswith(f"geoldp: error: {option} names a column that is not in "), err
    assert "'nope'" in lines[0] and "not quoted here" in lines[0]
    assert "user'" not in lines[0]  # the file's own names are counted, not quoted


def test_cli_zones_file_without_geometry_is_one_line(files):
    argv = ["report", str(files / "lines.gpkg"), "--zones", str(files / "not_polygons.csv"), "--epsilon", "2"]
    code, err = _run([*argv, "-o", str(files / "o_zones.csv")])
    assert code == 1 and err.startswith("geoldp: error: the polygons") and "no geometry column" in err, err
