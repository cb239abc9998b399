"""Tests of the built-in demo (geoldp.demo and ``geoldp demo``), at a small size."""

from __future__ import annotations

import importlib.util
import io
import json
import os

import geopandas as gpd
import numpy as np
import pytest
import shapely

from geoldp.cli import main
from geoldp.datasets import synthetic_city
from geoldp.demo import DEMO_PLAN_DESIGNS, run_demo, utility_table

SMALL = ["--n-trips", "40", "--n-points", "120"]


def test_demo_command_writes_files_and_prints_table(tmp_path, capsys):
    out_dir = tmp_path / "demo"
    assert main(["demo", "-o", str(out_dir), *SMALL]) == 0
    captured = capsys.readouterr()
    for label in ("NE_km", "PRQ_0.5km", "PRQ_1km", "PRQ_2km", "zone_l1", "od_l1", "range_query_error"):
        assert label in captured.out
    # one column per release: raw TP and ATP, ATP estimated and denoised, the two no-data baselines
    header = next(line for line in captured.out.splitlines() if line.lstrip().startswith("better"))
    assert header.split() == [
        "better",
        *("TP", "raw", "ATP", "raw", "ATP", "estimated", "ATP", "denoised"),
        *("uniform", "constant"),
    ]
    assert "Estimation time" in captured.out
    # the plan comes first: every design it compares and both baselines, one of them recommended
    plan_part = captured.out.split("Perturbing with TP and ATP")[0]
    for design in (*DEMO_PLAN_DESIGNS, "baseline:uniform", "baseline:constant"):
        assert f"\n{design} " in plan_part
    assert "Recommended design for zone visits" in plan_part or "No design beats" in plan_part
    names = {p.name for p in out_dir.iterdir()}
    assert {
        "points.geojson",
        "original.geojson",
        "tp.geojson",
        "atp.geojson",
        "map.png",
        "density.png",
    } <= names
    for png in ("map.png", "density.png"):
        assert (out_dir / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if importlib.util.find_spec("folium") is not None:  # the web map: release over the originals
        page = (out_dir / "map.html").read_text(encoding="utf-8")
        assert "L.map(" in page and '"released"' in page and '"original"' in page
    original = gpd.read_file(out_dir / "original.geojson")
    points = gpd.read_file(out_dir / "points.geojson")
    assert len(original) == 40
    assert len(points) == 120
    public = {tuple(c) for c in shapely.get_coordinates(points.geometry.values)}
    for name in ("tp", "atp"):
        frame = gpd.read_file(out_dir / f"{name}.geojson")
        assert len(frame) == 40
        np.testing.assert_array_equal(
            shapely.get_num_coordinates(frame.geometry.values),
            shapely.get_num_coordinates(original.geometry.values),
        )
        assert {tuple(c) for c in shapely.get_coordinates(frame.geometry.values)} <= public
        doc = json.loads((out_dir / f"{name}.geojson").read_text())
        assert doc["geoldp"]["mechanism"] == name
        assert doc["geoldp"]["rng"] == "seeded"


def test_demo_is_deterministic(tmp_path):
    a = run_demo(tmp_path / "a", n_trips=30, n_points=80, seed=5, plot=False, stream=io.StringIO())
    b = run_demo(tmp_path / "b", n_trips=30, n_points=80, seed=5, plot=False, stream=io.StringIO())
    assert a.table.equals(b.table)
    for name in ("tp", "atp"):
        assert (tmp_path / "a" / f"{name}.geojson").read_bytes() == (
            tmp_path / "b" / f"{name}.geojson"
        ).read_bytes()
    assert "map" not in a.files


def test_demo_without_output_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_demo(None, n_trips=20, n_points=60, stream=io.StringIO())
    assert result.files == {}
    assert list(result.table.index) == [
        *("TP raw", "ATP raw", "ATP estimated", "ATP denoised"),
        *("uniform", "constant"),
    ]
    est, den = result.table.loc["ATP estimated"], result.table.loc["ATP denoised"]
    assert np.isnan(est["NE_km"]) and np.isfinite(est[["zone_l1", "od_l1", "range_query_error"]]).all()
    assert np.isfinite(den[["NE_km", "zone_l1", "length_jsd"]]).all()
    assert list(tmp_path.iterdir()) == []


def test_utility_table_estimate_label_must_be_a_release():
    points, trips = synthetic_city(n_points=40, n_trips=10, seed=1)
    with pytest.raises(ValueError, match="estimate"):
        utility_table(trips, {"same": trips}, points=points, estimate=["other"])


def test_utility_table_identity_and_baseline_rows():
    points, trips = synthetic_city(n_points=50, n_trips=15, seed=1)
    table = utility_table(trips, {"same": trips}, points=points, deltas_km=(0.0, 1.0))
    assert table.index.tolist() == ["same", "uniform", "constant"]
    assert table.loc["same", "NE_km"] == 0.0
    assert table.loc["same", "PRQ_0km"] == 1.0
    assert table.loc["same", "zone_l1"] == 0.0
    row = table.loc["uniform"]
    assert 0.0 < row["NE_km"]
    # each original vertex is a public point, so at least 1/|P| of P lies within 0 km of it
    assert row["PRQ_0km"] == pytest.approx(1.0 / len(points))
    # the constant puts every trajectory in one zone: its visit distribution is far from the truth
    assert table.loc["constant", "zone_l1"] > table.loc["uniform", "zone_l1"]
    # without points only the pairwise columns remain, and no baseline
    bare = utility_table(trips, {"same": trips})
    assert bare.index.tolist() == ["same"] and bare.columns.tolist() == [
        "NE_km",
        "PRQ_0.5km",
        "PRQ_1km",
        "PRQ_2km",
        "length_jsd",
    ]


def test_demo_bad_epsilon_is_one_line_error(tmp_path, capsys):
    assert main(["demo", "-o", str(tmp_path / "d"), *SMALL, "--epsilon", "-2"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("geoldp: error: ")
    assert "epsilon" in err[0]


def test_demo_without_matplotlib_skips_the_map(tmp_path, monkeypatch):
    import importlib.util

    real_find_spec = importlib.util.find_spec

    def fake_find_spec(name, *args, **kwargs):
        return None if name == "matplotlib" else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", fake_find_spec)
    stream = io.StringIO()
    result = run_demo(tmp_path / "d", n_trips=20, n_points=60, stream=stream)
    assert "map" not in result.files
    assert "Map skipped" in stream.getvalue()
    assert (tmp_path / "d" / "atp.geojson").exists()


OUTPUTS = ["points.geojson", "original.geojson", "tp.geojson", "atp.geojson", "map.png", "density.png"]


@pytest.mark.parametrize("name", ["map.png", "density.png", "points.geojson", "atp.geojson"])
@pytest.mark.parametrize("overwrite", [False, True], ids=["plain", "overwrite"])
def test_demo_never_writes_through_a_symlinked_output(tmp_path, capsys, name, overwrite):
    out_dir = tmp_path / "demo"
    out_dir.mkdir()
    victim = tmp_path / "victim.bin"
    victim.write_bytes(b"an unrelated file")
    (out_dir / name).symlink_to(victim)
    argv = ["demo", "-o", str(out_dir), *SMALL, *(["--overwrite"] if overwrite else [])]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and name in err[0] and "symbolic link" in err[0]
    assert victim.read_bytes() == b"an unrelated file"
    assert os.listdir(out_dir) == [name]  # checked before anything was written


def test_demo_never_overwrites_an_existing_output_without_overwrite(tmp_path, capsys):
    out_dir = tmp_path / "demo"
    out_dir.mkdir()
    (out_dir / "density.png").write_bytes(b"my own figure")
    assert main(["demo", "-o", str(out_dir), *SMALL]) == 1
    err = capsys.readouterr().err.strip()
    assert "density.png" in err and "already exists" in err and "--overwrite" in err
    assert (out_dir / "density.png").read_bytes() == b"my own figure"
    assert os.listdir(out_dir) == ["density.png"]
    # --overwrite replaces the outputs, each atomically, and leaves no temporary file (no plot: faster)
    (out_dir / "points.geojson").write_bytes(b"my own points")
    assert main(["demo", "-o", str(out_dir), *SMALL, "--no-plot"]) == 1
    assert (out_dir / "points.geojson").read_bytes() == b"my own points"
    assert main(["demo", "-o", str(out_dir), *SMALL, "--no-plot", "--overwrite"]) == 0
    assert len(gpd.read_file(out_dir / "points.geojson")) == 120
    assert (out_dir / "density.png").read_bytes() == b"my own figure"  # not an output without a plot
    assert sorted(os.listdir(out_dir)) == sorted([*OUTPUTS[:4], "density.png"])


def test_demo_figures_refuse_an_existing_file(tmp_path):
    from geoldp.demo import save_comparison_map

    points, trips = synthetic_city(n_points=40, n_trips=6, seed=1)
    target = tmp_path / "map.png"
    target.write_bytes(b"keep me")
    with pytest.raises(ValueError, match="already exists"):
        save_comparison_map(trips, {"same": trips}, target, points=points, n=2)
    assert target.read_bytes() == b"keep me"
    save_comparison_map(trips, {"same": trips}, target, points=points, n=2, overwrite=True)
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
