"""Bounds checked before any work (pad_length, Square-Wave buckets, combine's bootstrap), and the progress
of report, combine and evaluate (one line per stage on the command line; results unchanged)."""

from __future__ import annotations

import contextlib
import io
import time
import warnings

import pandas as pd
import pytest

import geoldp
from geoldp import datasets, zone_grid
from geoldp._core import progress as _progress
from geoldp.cli import main
from geoldp.reports import MAX_PAD_LENGTH


@pytest.fixture(scope="module")
def city():
    points, trips = datasets.synthetic_city(n_points=60, n_trips=40, max_len=5, seed=4)
    return points, trips, zone_grid(points, cells=3)


def test_pad_length_is_bounded_before_any_work(city):
    points, trips, zones = city
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"'pad_length' .*\[1, 10000\] \(geoldp.reports.MAX_PAD_LENGTH\)"):
        geoldp.report(trips, zones, epsilon=2.0, pad_length=10**12, rng=0)
    assert time.perf_counter() - t0 < 2.0  # no draw, no compile
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few reports for that many values
        rep = geoldp.report(trips, zones, epsilon=2.0, pad_length=MAX_PAD_LENGTH, rng=0)
    assert geoldp.ledger_of(rep).settings["domain"]["pad_length"] == MAX_PAD_LENGTH


def test_cli_pad_length_is_a_usage_error(tmp_path, city):
    _, trips, _ = city
    trips.to_file(tmp_path / "T.geojson")
    err = io.StringIO()
    argv = ["report", str(tmp_path / "T.geojson"), "--zones", "Z.geojson", "--epsilon", "2"]
    with contextlib.redirect_stderr(err):
        code = main([*argv, "--pad-length", "1000000000000", "-o", str(tmp_path / "o.csv")])
    assert code == 2
    assert "--pad-length: must be an integer in [1, 10000] (geoldp.reports.MAX_PAD_LENGTH)" in err.getvalue()


@pytest.mark.parametrize("make", ["SquareWave", "ATP"])
def test_square_wave_buckets_are_bounded(city, make):
    from geoldp.mechanisms import SquareWave
    from geoldp.mechanisms._base import MAX_SW_BUCKETS

    build = {
        "SquareWave": lambda m: SquareWave(epsilon=1.0, buckets=m),
        "ATP": lambda m: geoldp.ATP(epsilon=2.0, sw_buckets=m),
    }[make]
    assert build(MAX_SW_BUCKETS) is not None
    with pytest.raises(ValueError, match=r"buckets' parameter of .*\[2, 1000000\]"):
        build(10**12)  # tried to allocate terabytes (18 GB resident before it was killed)


def test_combine_bootstrap_count_is_bounded(city):
    _, trips, zones = city
    rep = geoldp.report(trips, zones, epsilon=2.0, rng=0)
    with pytest.raises(ValueError, match=r"'n_boot' parameter of geoldp.combine .*\[2, 10000\]"):
        geoldp.combine([rep], zones, n_boot=10**9)


def _lines(call):
    out = io.StringIO()
    _progress.use_lines()
    try:
        with contextlib.redirect_stderr(out):
            result = call()
    finally:
        _progress.use_lines(False)
    return result, out.getvalue().splitlines()


def test_report_reports_its_stages_and_the_table_does_not_change(city):
    _, trips, zones = city
    quiet = geoldp.report(trips, zones, epsilon=2.0, rng=3)
    loud, lines = _lines(lambda: geoldp.report(trips, zones, epsilon=2.0, rng=3, progress=True))
    pd.testing.assert_frame_equal(loud, quiet)
    assert lines[0] == f"geoldp: reporting: checking {len(trips)} rows (1/3)"
    assert lines[2].startswith("geoldp: reporting: ") and lines[2].endswith("(3/3)")
    assert lines[-1].startswith("geoldp: reporting: done in ")
    with pytest.raises(TypeError, match="'progress' parameter of geoldp.report"):
        geoldp.report(trips, zones, epsilon=2.0, progress="yes")


def test_combine_reports_each_part(city):
    _, trips, zones = city
    a = geoldp.report(trips, zones, epsilon=2.0, rng=1)
    b = geoldp.report(trips, zones, epsilon=2.0, oracle="krr", rng=2)
    quiet = geoldp.combine([a, b], zones)
    loud, lines = _lines(lambda: geoldp.combine([a, b], zones, progress=True))
    pd.testing.assert_frame_equal(loud, quiet)
    assert lines[:2] == [
        f"geoldp: combining: part 0: debiasing the reports of {len(trips)} trajectories (1/2)",
        f"geoldp: combining: part 1: debiasing the reports of {len(trips)} trajectories (2/2)",
    ]


def test_evaluate_reports_its_stages(city):
    points, trips, _ = city
    rel = trips.ldp.perturb(points, epsilon=4.0, rng=0)
    quiet = geoldp.evaluate(trips, rel, points=points)
    loud, lines = _lines(lambda: geoldp.evaluate(trips, rel, points=points, progress=True))
    pd.testing.assert_frame_equal(loud, quiet)
    assert lines[:3] == [
        f"geoldp: evaluating: the {len(trips)} original trajectories (1/3)",
        "geoldp: evaluating: scoring 'ATP raw' (2/3)",
        "geoldp: evaluating: the no-data baselines (3/3)",
    ]


def test_tiny_grid_spacing_is_refused_by_its_limit_not_a_zero_division():
    with pytest.raises(ValueError, match=r"spacing_m=1e-300 .* about inf points, more than .*MAX_POINTS"):
        geoldp.points.grid((116.3, 39.9, 116.4, 40.0), 1e-300)


@pytest.mark.parametrize(
    ("gap", "match"),
    [
        ("1e12s", r"must be a duration such as '30min'.* Got '1e12s'"),  # beyond pandas' range
        ("soon", r"must be a duration such as '30min'.* Got 'soon'"),
        ("nan", r"e\.g\. '10min' or '10s'\. Got 'nan', a bare number"),
    ],
)
def test_max_gap_text_that_is_no_duration(gap, match):
    import geopandas as gpd

    fixes = gpd.GeoDataFrame(
        {
            "trip": [1, 1, 1],
            "t": pd.to_datetime(["2026-01-01 00:00", "2026-01-01 00:01", "2026-01-01 00:30"]),
        },
        geometry=gpd.points_from_xy([0.0, 0.001, 0.002], [0.0, 0.0, 0.0]),
        crs="EPSG:4326",
    )
    with pytest.raises(ValueError, match=match):
        geoldp.prepare.trajectories_from_points(fixes, "trip", "t", max_gap=gap)


def test_explicit_oue_over_a_huge_domain_is_refused_before_any_draw(city):
    from geoldp.reports import MAX_OUE_DOMAIN, scheme

    assert scheme("transitions", 1000, 2.0, oracle="oue", caller="t").d <= MAX_OUE_DOMAIN  # 1001² + 1 values
    with pytest.raises(
        ValueError, match=r"'oue' over 1212202 values, more than geoldp.reports.MAX_OUE_DOMAIN"
    ):
        scheme("transitions", 1100, 2.0, oracle="oue", caller="t")  # 1101² + 1 values: 148 KiB a report


# --------------------------------------------- the kernel stage shown before the release's progress bar


@pytest.mark.parametrize(
    ("state", "stage"), [("compile", "compiling kernels (first run only)"), ("ready", None)]
)
def test_progress_shows_the_kernel_stage_before_the_bar(monkeypatch, toy_lines, city_points, state, stage):
    from geoldp import _release
    from geoldp.trajectory import engine

    bars: list[dict] = []

    class Bar:  # records what geoldp asks tqdm for
        def __init__(self, **kwargs):
            bars.append(dict(kwargs, updates=0))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, n):
            bars[-1]["updates"] += n

    plain = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=5)
    monkeypatch.setattr(_release, "_tqdm", lambda: Bar)
    monkeypatch.setattr(engine, "kernel_state", lambda mechanism: state)
    shown = toy_lines.ldp.perturb(city_points, epsilon=4.0, rng=5, progress=True)
    assert shown.geometry.equals(plain.geometry)  # the warm-up uses none of the release's randomness
    descs = [b["desc"] for b in bars]
    if stage is None:
        assert descs == ["geoldp"]
    else:  # the stage first, then the bar (whose rate and ETA start after it)
        assert descs == [f"geoldp: {stage}", "geoldp"] and bars[0]["updates"] == 1
    assert bars[-1]["total"] == len(toy_lines) == bars[-1]["updates"]
