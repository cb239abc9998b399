"""geoldp.combine: one estimate per query from several releases of the same trajectories.

Randomised tests use fixed seeds; coverage tolerances are binomial (three standard deviations).
"""

from __future__ import annotations

import functools
import math

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from shapely.geometry import LineString, Point

import geoldp
from geoldp import zone_grid
from geoldp.designs import ANSWER_COLUMNS
from geoldp.designs.combine import combine, part_estimates
from geoldp.reports import estimate_counts, report, true_counts
from geoldp.reports.estimators import Z95, debiased_counts

pytestmark = pytest.mark.filterwarnings("ignore:.*told from no data:geoldp.GeoLDPWarning")

ZONES = zone_grid((0.0, 0.0, 2.0, 2.0), cells=2)
C = [(0.5, 0.5), (1.5, 0.5), (0.5, 1.5), (1.5, 1.5)]


@functools.lru_cache(maxsize=2)
def population(n=3000, seed=0):
    """Skewed trips over the 4 zones, 2 or 3 vertices (at most 3 visited zones)."""
    rng = np.random.default_rng(seed)
    w = np.array([0.55, 0.25, 0.15, 0.05])
    lines = [LineString([C[i] for i in rng.choice(4, size=rng.integers(2, 4), p=w)]) for _ in range(n)]
    return gpd.GeoDataFrame(geometry=lines, crs="EPSG:4326")


def test_combined_intervals_cover_and_are_never_wider_than_the_best_part():
    gdf = population()
    truth = true_counts(gdf, ZONES).to_numpy(np.float64)
    reps = 40
    covered, se_ratio, err_comb, err_parts = [], [], [], []
    for seed in range(reps):
        a = report(gdf, ZONES, epsilon=2.0, oracle="oue", pad_length=3, rng=1000 + seed)
        b = report(gdf, ZONES, epsilon=1.0, oracle="krr", pad_length=3, rng=2000 + seed)
        out = combine([a, b], ZONES, max_set_size=3)  # public: every trip has at most 3 vertices
        parts = [estimate_counts(t, ZONES) for t in (a, b)]
        # each part's standard error at the same count, the combined estimate
        at = [debiased_counts(t, ZONES).std_error_at(out["raw"].to_numpy()) for t in (a, b)]
        best = np.minimum(*at)
        se_ratio.append(out["std_error"].to_numpy() / best)
        covered.append((out["lower"].to_numpy() <= truth) & (truth <= out["upper"].to_numpy()))
        err_comb.append(out["estimate"].to_numpy() - truth)
        err_parts.append([p["estimate"].to_numpy() - truth for p in parts])
        assert (out["parts"] == 2).all()
    rate = np.mean(covered)
    m = np.size(covered)
    assert rate >= 0.95 - 3.0 * math.sqrt(0.95 * 0.05 / m), rate
    assert np.max(se_ratio) <= 1.0 + 1e-12  # never wider than the best single part
    # and it is more accurate than either part: the mean squared error over the seeds
    mse_comb = np.mean(np.square(err_comb))
    mse_parts = np.mean(np.square(err_parts), axis=(0, 2))
    assert mse_comb < mse_parts.min(), (mse_comb, mse_parts)


def test_weights_follow_the_variances_at_the_combined_estimate():
    gdf = population()
    a = report(gdf, ZONES, epsilon=2.0, oracle="oue", pad_length=3, rng=1)
    b = report(gdf, ZONES, epsilon=4.0, oracle="krr", pad_length=3, rng=2)
    ests, ses, described = part_estimates([a, b], ZONES, max_set_size=3)
    out = combine([a, b], ZONES, max_set_size=3)
    # each report's variance formula evaluated at the combined estimate (not at its own) gives the weights
    c = out["raw"].to_numpy()  # the combination itself; ``estimate`` is it kept inside [0, n]
    se = np.column_stack([debiased_counts(t, ZONES).std_error_at(c) for t in (a, b)])
    w = 1.0 / se**2
    expected = (w * ests.to_numpy()).sum(axis=1) / w.sum(axis=1)
    np.testing.assert_allclose(c, expected, rtol=1e-9)
    np.testing.assert_allclose(out["std_error"].to_numpy(), 1.0 / np.sqrt(w.sum(axis=1)), rtol=1e-9)
    # part_estimates keeps each part's own standard error (its variance at its own estimate)
    np.testing.assert_allclose(ses["part0"].to_numpy(), estimate_counts(a, ZONES)["std_error"].to_numpy())
    info = out.attrs["combine"]["parts"]
    assert [d["used"] for d in info] == [True, True] and all(d["unbiased"] for d in info)
    assert info[1]["mean_weight"] > info[0]["mean_weight"]  # the larger budget weighs more
    assert math.isclose(info[0]["mean_weight"] + info[1]["mean_weight"], 1.0)
    assert (out["padded_weight"] == 0).all()
    np.testing.assert_allclose(out["upper"] - out["raw"], out["raw"] - out["lower"])


def test_reports_of_one_design_weigh_equally_whatever_their_draws():
    # two reports of the same design differ only in their noise: neither should weigh more for having
    # drawn a lower (or higher) estimate, so the combination is their plain mean
    gdf = population()
    a = report(gdf, ZONES, epsilon=1.0, oracle="oue", pad_length=3, rng=31)
    b = report(gdf, ZONES, epsilon=1.0, oracle="oue", pad_length=3, rng=32)
    ests, _, _ = part_estimates([a, b], ZONES, max_set_size=3)
    assert np.abs(ests["part0"] - ests["part1"]).max() > 100.0  # the draws differ
    out = combine([a, b], ZONES, max_set_size=3)
    np.testing.assert_allclose(out["raw"].to_numpy(), ests.mean(axis=1).to_numpy(), rtol=1e-12)
    info = out.attrs["combine"]["parts"]
    assert math.isclose(info[0]["mean_weight"], 0.5) and math.isclose(info[1]["mean_weight"], 0.5)


@functools.lru_cache(maxsize=2)
def wide_population(n=2000, seed=4):
    """Trips of 1 to 6 vertices over the 4 zones: 1 to 4 visited zones (never outside), many above ℓ = 2."""
    rng = np.random.default_rng(seed)
    w = np.array([0.4, 0.3, 0.2, 0.1])
    lines = []
    for _ in range(n):
        k = int(rng.integers(1, 7))
        pts = [C[i] for i in rng.choice(4, size=k, p=w)]
        lines.append(LineString(pts + pts[-1:]) if k == 1 else LineString(pts))
    return gpd.GeoDataFrame(geometry=lines, crs="EPSG:4326")


def test_a_padded_report_alone_keeps_its_own_interval_which_covers_the_visits():
    gdf = wide_population()
    truth = true_counts(gdf, ZONES).to_numpy(np.float64)
    rep = report(gdf, ZONES, epsilon=4.0, oracle="oue", pad_length=2, rng=41)
    out = combine([rep], ZONES)
    own = estimate_counts(rep, ZONES)
    for col, own_col in (("raw", "estimate"), ("std_error",) * 2, ("lower",) * 2, ("upper",) * 2):
        np.testing.assert_allclose(out[col].to_numpy(), own[own_col].to_numpy(), rtol=1e-12, err_msg=col)
    info = out.attrs["combine"]["parts"][0]
    assert not info["unbiased"] and "padded" in info["reason"]
    assert (out["padded_weight"] == 1.0).all()
    # the padded estimate is far below the visits (many trips visit more than 2 zones): an interval
    # symmetric about it would miss them; the upper end allows for the visits the padding misses
    assert np.all(out["raw"] + Z95 * out["std_error"] < truth)
    assert np.all((out["lower"] <= truth) & (truth <= out["upper"]))
    # with a public bound M ≤ ℓ the same report is unbiased and its interval symmetric
    bounded = combine([rep], ZONES, max_set_size=2)
    assert (bounded["padded_weight"] == 0).all() and bounded.attrs["combine"]["parts"][0]["unbiased"]


def test_padded_reports_combined_cover_the_visits():
    # two padded reports (ℓ = 2 and 3 below the public bound M = 4): the combination estimates neither's
    # count, its upper end allows for what both miss
    gdf = wide_population()
    truth = true_counts(gdf, ZONES).to_numpy(np.float64)
    reps = 40
    covered, below, errors = [], [], []
    for seed in range(reps):
        a = report(gdf, ZONES, epsilon=3.0, oracle="oue", pad_length=2, rng=5000 + seed)
        b = report(gdf, ZONES, epsilon=2.0, oracle="olh", pad_length=3, rng=6000 + seed)
        out = combine([a, b], ZONES, max_set_size=4)
        info = out.attrs["combine"]["parts"]
        assert [(d["used"], d["unbiased"]) for d in info] == [(True, False), (True, False)]
        assert np.allclose(out["padded_weight"], 1.0)
        covered.append((out["lower"].to_numpy() <= truth) & (truth <= out["upper"].to_numpy()))
        below.append(out["raw"].to_numpy() + Z95 * out["std_error"].to_numpy() < truth)
        errors.append(out["raw"].to_numpy() - truth)
    m = np.size(covered)
    rate = np.mean(covered)
    assert rate >= 0.95 - 3.0 * math.sqrt(0.95 * 0.05 / m), rate
    # an interval symmetric about the estimate (the one combine gave before) misses far more than 5 %
    assert np.mean(below) > 0.05 + 3.0 * math.sqrt(0.95 * 0.05 / m), np.mean(below)
    assert np.all(np.mean(errors, axis=0) < 0)  # biased low, as the padding makes it


def test_an_unbiased_report_leaves_padded_ones_out():
    gdf = wide_population()
    truth = true_counts(gdf, ZONES).to_numpy(np.float64)
    covered = []
    for seed in range(40):
        a = report(gdf, ZONES, epsilon=3.0, oracle="oue", pad_length=2, rng=5000 + seed)
        c = report(gdf, ZONES, epsilon=2.0, oracle="oue", pad_length=4, rng=7000 + seed)
        out = combine([a, c], ZONES, max_set_size=4)
        info = out.attrs["combine"]["parts"]
        assert not info[0]["used"] and "left out" in info[0]["reason"] and info[1]["used"]
        alone = combine([c], ZONES, max_set_size=4)
        pd.testing.assert_frame_equal(out, alone, check_exact=False, rtol=1e-12)
        covered.append((out["lower"].to_numpy() <= truth) & (truth <= out["upper"].to_numpy()))
    m = np.size(covered)
    assert np.mean(covered) >= 0.95 - 3.0 * math.sqrt(0.95 * 0.05 / m), np.mean(covered)


def test_the_answer_is_the_one_table_and_a_count_within_its_interval_and_0_to_n():
    # OD pairs no trip takes (most of the 16) have a true count of 0: the unbiased combination falls
    # below it about half the time; the answer does not
    gdf = population(n=400)
    a = report(gdf, ZONES, statistic="od", epsilon=0.5, rng=23)
    b = report(gdf, ZONES, statistic="od", epsilon=0.5, oracle="krr", rng=24)
    out = combine([a, b], ZONES, question="od_flows")
    assert list(out.columns) == [*ANSWER_COLUMNS, "parts", "padded_weight"]
    assert out.attrs["question"] == "od_flows" and "interval" in out.attrs["covers"]
    assert (out["raw"] < 0).any()  # the case the projection is for
    assert (out["lower"] >= 0).all() and (out["upper"] <= len(gdf)).all()
    assert ((out["lower"] <= out["estimate"]) & (out["estimate"] <= out["upper"])).all()
    inside = (out["raw"] >= out["lower"]) & (out["raw"] <= out["upper"])
    assert out.loc[inside, "estimate"].equals(out.loc[inside, "raw"])  # moved only where it was outside


def test_od_flows_from_reports_index_is_every_ordered_pair():
    gdf = population()
    a = report(gdf, ZONES, statistic="od", epsilon=2.0, rng=3)
    b = report(gdf, ZONES, statistic="od", epsilon=3.0, oracle="krr", rng=4)
    out = combine([a, b], ZONES, question="od_flows")
    truth = true_counts(gdf, ZONES, statistic="od")
    assert out.index.equals(truth.index)
    assert len(out) == 16


def test_a_report_of_another_statistic_is_left_out_and_listed():
    gdf = population()
    a = report(gdf, ZONES, epsilon=2.0, pad_length=3, rng=5)
    t = report(gdf, ZONES, statistic="transitions", epsilon=2.0, rng=6)
    out = combine([a, t], ZONES)
    info = out.attrs["combine"]["parts"]
    assert info[0]["used"] and not info[1]["used"] and "transitions" in info[1]["reason"]
    pd.testing.assert_series_equal(out["raw"], estimate_counts(a, ZONES)["estimate"], check_names=False)
    with pytest.raises(ValueError, match="No part .* answers od_flows"):
        combine([a, t], ZONES, question="od_flows")


def test_parts_about_other_zones_or_populations_or_the_same_release_are_refused():
    gdf = population()
    a = report(gdf, ZONES, epsilon=2.0, rng=7)
    other_zones = zone_grid((0.0, 0.0, 2.0, 2.0), cells=(2, 1))
    b = report(gdf, other_zones, epsilon=2.0, rng=8)
    with pytest.raises(ValueError, match="other zones"):
        combine([a, b], ZONES)
    c = report(gdf.iloc[:2000], ZONES, epsilon=2.0, rng=9)
    with pytest.raises(ValueError, match="not about the same population: 3000 and 2000"):
        combine([a, c], ZONES)
    with pytest.raises(ValueError, match="same release"):
        combine([a, a], ZONES)
    again = report(gdf, ZONES, epsilon=2.0, rng=7)  # the same seed: the same noise, the same id
    with pytest.raises(ValueError, match="same release"):
        combine([a, again], ZONES)


@pytest.mark.parametrize(
    ("parts", "kwargs", "exc", "match"),
    [
        ("frame", {}, TypeError, "must be a list"),
        ("empty", {}, ValueError, "is empty"),
        ("plain", {}, ValueError, "not a geoldp release"),
        ("ok", {"question": "hotspots"}, ValueError, "question"),
        ("ok", {"level": 1.5}, ValueError, "level"),
        ("ok", {"n_boot": 1}, ValueError, "n_boot"),
    ],
)
def test_bad_parameters_name_themselves(parts, kwargs, exc, match):
    gdf = population()
    a = report(gdf, ZONES, epsilon=2.0, rng=10)
    given = {
        "frame": a,
        "empty": [],
        "plain": [pd.DataFrame({"report": [1, 2]})],
        "ok": [a],
    }[parts]
    with pytest.raises(exc, match=match):
        combine(given, ZONES, **kwargs)


def test_hybrid_trajectory_and_report_parts_combine():
    # both halves of one hybrid call: one population, independent noise, one budget
    rng = np.random.default_rng(3)
    pts = gpd.GeoDataFrame(
        geometry=[Point(x, y) for x in np.linspace(0.1, 1.9, 6) for y in np.linspace(0.1, 1.9, 6)],
        crs="EPSG:4326",
    )
    coords = np.column_stack([pts.geometry.x, pts.geometry.y])
    lines = [LineString(coords[rng.choice(36, size=3, replace=False)]) for _ in range(300)]
    gdf = gpd.GeoDataFrame(geometry=lines, crs="EPSG:4326")
    traj, rep = geoldp.hybrid(
        gdf, pts, ZONES, epsilon=6.0, mechanism="pointem", report_options={"pad_length": 3}, rng=11
    )
    opts = {"n_candidates": 200, "n_boot": 10}
    out = combine([traj, rep], ZONES, points=pts, max_set_size=3, estimate_options=opts, rng=12)
    ests, ses, info = part_estimates(
        [traj, rep], ZONES, points=pts, max_set_size=3, estimate_options=opts, rng=12
    )
    assert [d["kind"] for d in info] == ["trajectory", "report"]
    assert not info[0]["unbiased"] and info[1]["unbiased"]
    # without the public bound the report (ℓ = 3 of 4 zones and the outside) is padded: it still weighs,
    # beside the model-based part, and the upper ends allow for the visits it misses
    padded = combine([traj, rep], ZONES, points=pts, estimate_options=opts, rng=12)
    truth = true_counts(gdf, ZONES).to_numpy(np.float64)
    assert (padded["padded_weight"] > 0).all() and not padded.attrs["combine"]["parts"][1]["unbiased"]
    assert np.all(padded["upper"] - padded["raw"] >= padded["raw"] - padded["lower"])
    assert np.all((padded["lower"] <= truth) & (truth <= padded["upper"]))
    s = ses.to_numpy()
    best = np.where(np.isfinite(s) & (s > 0), s, np.inf).min(axis=1)
    assert np.all(out["std_error"].to_numpy() <= best + 1e-12)
    assert out["estimate"].notna().all() and (out["parts"] >= 1).all()
    # without an interval (no bootstrap, a fixed iteration count) the trajectory part weighs on nothing
    bare = combine(
        [traj, rep],
        ZONES,
        points=pts,
        estimate_options={"n_candidates": 200, "n_boot": 0, "n_iter": 5},
        rng=12,
    )
    assert (bare["parts"] == 1).all()
    pd.testing.assert_series_equal(bare["raw"], estimate_counts(rep, ZONES)["estimate"], check_names=False)
    # unseeded, the answer is a function of the releases and the settings: the same twice, and the same
    # for a copy of the releases (post-processing draws from a digest of what it analyses)
    first = combine([traj, rep], ZONES, points=pts, max_set_size=3, estimate_options=opts)
    second = combine([traj.copy(), rep.copy()], ZONES, points=pts, max_set_size=3, estimate_options=opts)
    pd.testing.assert_frame_equal(first, second)


def test_synthetic_part_has_a_bootstrap_variance_of_the_right_size():
    # the synthetic count's spread over independent collections, against the bootstrap's estimate of it
    gdf = population(n=2000, seed=1)
    box = (0.0, 0.0, 2.0, 2.0)
    counts, ses = [], []
    for seed in range(12):
        syn = geoldp.synthesize(gdf, epsilon=4.0, bounds=box, grid_size=2, rng=300 + seed)
        ests, se, info = part_estimates([syn], ZONES, n_boot=12, rng=seed)
        assert info[0]["kind"] == "synthetic" and not info[0]["unbiased"]
        counts.append(ests["part0"].to_numpy())
        ses.append(se["part0"].to_numpy())
    spread = np.std(counts, axis=0, ddof=1)
    boot = np.mean(ses, axis=0)
    # the sample sd of 12 draws is within a factor 2 of the true sd with high probability
    assert np.all(boot > 0)
    assert np.all((boot / spread > 0.4) & (boot / spread < 2.5)), (boot, spread)


def test_range_counts_over_regions_are_visits_of_the_regions():
    gdf = population()
    a = report(gdf, ZONES, epsilon=2.0, pad_length=3, rng=21)
    b = report(gdf, ZONES, epsilon=3.0, pad_length=3, oracle="krr", rng=22)
    visits = combine([a, b], ZONES)
    ranges = combine([a, b], ZONES, question="range_counts")
    assert ranges.index.name == "region" and visits.index.name == "zone"
    np.testing.assert_array_equal(ranges["estimate"].to_numpy(), visits["estimate"].to_numpy())


def test_synthetic_od_flows_cover_every_pair():
    gdf = population(n=2000, seed=1)
    syn = geoldp.synthesize(gdf, epsilon=4.0, bounds=(0.0, 0.0, 2.0, 2.0), grid_size=2, rng=5)
    ests, ses, info = part_estimates([syn], ZONES, question="od_flows", n_boot=5, rng=1)
    assert ests.shape == (16, 1) and np.isfinite(ses.to_numpy()).all()
    # the synthetic trips' pairs, scaled to the number of users, sum to that number (every trip has one)
    assert math.isclose(ests["part0"].sum(), 2000.0)
    assert info[0]["trajectories"] == 2000
