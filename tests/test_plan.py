"""The planner: public inputs only, a table with both baselines, a recommendation, the registry, the CLI."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import geoldp
from geoldp import cli, nodata, planner, shrinkage, zone_grid
from geoldp.designs import ANSWER_COLUMNS, BaselineDesign, ReportDesign

PTS = np.random.default_rng(0).uniform(0.0, 1.0, size=(150, 2))
ZONES = zone_grid((0.0, 0.0, 1.0, 1.0), cells=4)


@pytest.mark.parametrize("question", planner.QUESTIONS)
def test_table_has_every_design_and_both_baselines(question):
    t = geoldp.plan(PTS, ZONES, epsilon=4.0, n=500, lengths=[2, 3, 5], question=question, rng=1)
    assert {"baseline:uniform", "baseline:constant", "tp", "atp", "pointem", "ldptrace"} <= set(t.index)
    assert any(i.startswith("report:") for i in t.index)
    assert t["recommended"].sum() == 1
    assert t.attrs["recommended"] == t.index[t["recommended"]][0]
    assert np.isfinite(t["error"]).all() and (t["error"] >= 0).all()
    best = t.loc[t.attrs["recommended"], "error"]
    if t.attrs["beats_baselines"]:
        assert best <= t["error"].min() + 1e-12
        assert best < t[t["kind"] == "baseline"]["error"].min()
    else:
        assert t.loc[t.attrs["recommended"], "kind"] == "baseline"


@pytest.mark.parametrize("population", planner.POPULATIONS)
def test_every_population(population):
    t = geoldp.plan(PTS, ZONES, epsilon=4.0, n=300, lengths=3, population=population, designs=["tp"], rng=0)
    assert t.attrs["population"] == f"random walks ({population})"


def test_ldptrace_design_learns_more_with_more_budget():
    # LDPTrace's synthetic population approaches the simulated one's zone visits as ε grows; at ε = 0.5 its
    # model is mostly noise (3 repetitions each; the gap is several error_sd wide)
    errs = {}
    for eps in (0.5, 32.0):
        t = geoldp.plan(PTS, ZONES, epsilon=eps, n=5000, lengths=[3, 4], designs=["ldptrace"], rng=3)
        errs[eps] = t.loc["ldptrace", ["error", "error_sd"]]
        assert t.loc["ldptrace", "kind"] == "synthesis"
    assert errs[32.0]["error"] + 2 * errs[32.0]["error_sd"] < errs[0.5]["error"] - 2 * errs[0.5]["error_sd"]


def test_seeded_plan_is_reproducible():
    a = geoldp.plan(PTS, ZONES, epsilon=2.0, n=300, lengths=3, question="od_flows", rng=4)
    b = geoldp.plan(PTS, ZONES, epsilon=2.0, n=300, lengths=3, question="od_flows", rng=4)
    assert a.equals(b)


def test_report_error_shrinks_with_more_users_and_epsilon():
    # the closed-form variance: 16x the users must lower the report's expected OD error
    kw = dict(lengths=3, question="od_flows", designs=["report:od"], rng=2)
    small = geoldp.plan(PTS, ZONES, epsilon=1.0, n=200, **kw).loc["report:od", "error"]
    large = geoldp.plan(PTS, ZONES, epsilon=1.0, n=3200, **kw).loc["report:od", "error"]
    high = geoldp.plan(PTS, ZONES, epsilon=8.0, n=200, **kw).loc["report:od", "error"]
    assert large < small and high < small


def test_users_needed_reaches_the_target():
    t = geoldp.plan(
        PTS, ZONES, epsilon=4.0, n=400, lengths=3, question="zone_visits", target_error=0.5, rng=3
    )
    need = t.loc["report:visited_zone", "users_needed"]
    assert np.isfinite(need)
    again = geoldp.plan(
        PTS,
        ZONES,
        epsilon=4.0,
        n=int(need),
        lengths=3,
        question="zone_visits",
        designs=["report:visited_zone"],
        rng=3,
    )
    assert again.loc["report:visited_zone", "error"] <= 0.5 * 1.25  # simulation noise


class _OraclePeek(ReportDesign):
    """A design that 'simulates' the exact answer: the planner must rank it first."""

    @property
    def name(self):
        return "oracle-peek"

    def simulate(self, sim, question):
        return [sim.visits(sim.seqs) * (sim.n / len(sim.seqs))], None


def test_registry_takes_a_new_design():
    planner.register_design(_OraclePeek())
    try:
        t = geoldp.plan(PTS, ZONES, epsilon=1.0, n=100, lengths=2, designs=["oracle-peek", "tp"], rng=0)
        assert t.loc["oracle-peek", "error"] == pytest.approx(0.0)
        assert t.attrs["recommended"] == "oracle-peek"
    finally:
        del planner.DESIGNS["oracle-peek"]


def test_prior_population():
    import geopandas as gpd
    from shapely.geometry import LineString

    prior = gpd.GeoDataFrame(geometry=[LineString([PTS[0], PTS[1], PTS[2]])] * 20, crs="EPSG:4326")
    t = geoldp.plan(PTS, ZONES, epsilon=8.0, n=1000, lengths=3, prior=prior, rng=0)
    assert t.attrs["population"] == "prior"


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"question": "speeds"}, ValueError, "question"),
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"n": 0}, ValueError, "'n'"),
        ({"lengths": "abc"}, TypeError, "lengths"),
        ({"lengths": [0, 1]}, ValueError, "lengths"),
        ({"designs": ["magic"]}, ValueError, "magic"),
        ({"target_error": -1.0}, ValueError, "target_error"),
        ({"population": "crowd"}, ValueError, "population"),
    ],
)
def test_bad_input(kwargs, exc, match):
    args = {"epsilon": 1.0, "n": 100, "lengths": 3, **kwargs}
    with pytest.raises(exc, match=match):
        geoldp.plan(PTS, ZONES, **args)


def test_cli_plan(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("lon,lat\n" + "\n".join(f"{x:.6f},{y:.6f}" for x, y in PTS * 0.1 + [-87.7, 41.8]) + "\n")
    out, err = io.StringIO(), io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["plan", str(path), "--epsilon", "4", "--n", "300", "--seed", "0", "--cell-km", "3"])
    assert code == 0, err.getvalue()
    assert "recommended:" in out.getvalue() and "baseline:uniform" in out.getvalue()
    assert "geoldp: planning: atp" in err.getvalue() and "planning: done in" in err.getvalue()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        bad = cli.main(["plan", str(path), "--epsilon", "4", "--n", "300", "--lengths", "a,b"])
    assert bad == 2 and "Traceback" not in err.getvalue() and "--lengths" in err.getvalue()  # a usage error


def test_cli_pilot_then_plan_then_collect(tmp_path, capsys):
    # a campaign with no prior and no private lengths: pilot reports, a plan fitted to them, and the
    # recommended design run by the command the plan prints
    from geoldp.datasets import synthetic_city

    pts, trips = synthetic_city(n_points=200, n_trips=300, seed=8)
    pts.to_file(tmp_path / "P.gpkg")
    trips.iloc[:100].to_file(tmp_path / "pilot_trips.gpkg")
    trips.iloc[100:].to_file(tmp_path / "trips.gpkg")
    pilot = tmp_path / "pilot.csv"
    common = ["--points", str(tmp_path / "P.gpkg"), "--cell-km", "3"]
    assert (
        cli.main(["pilot", str(tmp_path / "pilot_trips.gpkg"), "--epsilon", "20", "-o", str(pilot), *common])
        == 0
    )
    assert "pilot reports of 100 trips" in capsys.readouterr().err
    plan_args = [
        "plan",
        str(tmp_path / "P.gpkg"),
        "--epsilon",
        "4",
        "--n",
        "200",
        "--cell-km",
        "3",
        "--seed",
        "0",
    ]
    assert cli.main([*plan_args, "--pilot", str(pilot)]) == 0
    out = capsys.readouterr().out
    assert "recommended:" in out
    name = out.split("recommended: ")[1].split()[0]
    answer = tmp_path / "answer.gpkg"
    if name.startswith("baseline:"):  # a no-data answer: nothing to collect
        name = "report:visited_zone"
    code = cli.main(
        [
            "collect",
            str(tmp_path / "trips.gpkg"),
            "--design",
            name,
            "--epsilon",
            "4",
            "-o",
            str(answer),
            *common,
        ]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    assert "cells supported" in err and answer.exists()
    # a pilot file must be one: another CSV is refused with one line
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    assert cli.main([*plan_args, "--pilot", str(other)]) != 0
    err = capsys.readouterr().err
    assert "no pilot ledger" in err and "Traceback" not in err


def test_cli_plan_help(capsys):
    assert cli.main(["plan", "--help"]) == 0
    out = capsys.readouterr().out
    assert "geoldp plan" in out and "--population" in out


def test_shrink_returns_the_baseline_when_the_release_is_noise():
    # the gap to the baseline (norm² 9 + 1 + 1 = 11) is below the noise (3 × 100²): weight 0
    out = shrinkage.shrink_to_baseline([7.0, 1.0, 4.0], [100.0] * 3, [2.0, 1.0, 1.0])
    assert out.tolist() == pytest.approx([6.0, 3.0, 3.0])


def test_shrink_keeps_a_precise_release_and_its_total():
    est = np.array([50.0, 30.0, 20.0, 0.0])
    out = shrinkage.shrink_to_baseline(est, [0.1] * 4, [1.0, 1.0, 1.0, 1.0])
    assert out.sum() == pytest.approx(est.sum())
    assert np.abs(out - est).max() < 0.05  # weight 1 − 0.04 / 1400 on a gap of at most 25
    assert (out >= 0).all()


def test_shrink_lowers_the_squared_error_of_noisy_releases():
    # positive-part James–Stein toward a fixed target: lower mean squared error than the unbiased estimate
    # when the noise is comparable to the signal (200 seeded draws; a weight stuck at 1 would tie, at 0 lose
    # on the precise draws of the test above)
    gen = np.random.default_rng(5)
    truth = gen.uniform(0, 20, size=50)
    se = np.full(50, 8.0)
    raw = shrunk = 0.0
    for _ in range(200):
        est = truth + se * gen.standard_normal(50)
        raw += np.sum((est - truth) ** 2)
        shrunk += np.sum((shrinkage.shrink_to_baseline(est, se, np.ones(50)) - truth) ** 2)
    assert shrunk < 0.8 * raw


def test_empirical_bayes_returns_the_fitted_shape_when_the_release_is_noise():
    # least squares: c = (2·12 + 9 + 3) / (4 + 1 + 1) = 6, target (12, 6, 6); the deviations (0, 3, −3)
    # are below the noise (se 10), so τ² = 0 and every cell takes the target
    out = shrinkage.shrink_empirical_bayes([12.0, 9.0, 3.0], [10.0] * 3, [2.0, 1.0, 1.0])
    assert out.tolist() == pytest.approx([12.0, 6.0, 6.0])


def test_empirical_bayes_fits_a_mix_of_shapes_and_keeps_a_precise_release():
    shapes = np.array([[1.0, 0.0, 1.0, 2.0], [0.0, 1.0, 1.0, 0.0]])
    est = 3.0 * shapes[0] + 5.0 * shapes[1]  # on the span: the target is the estimate itself
    assert shrinkage.shrink_empirical_bayes(est, [50.0] * 4, shapes) == pytest.approx(est)
    off = np.array([50.0, 30.0, 20.0, 0.0])  # far from the span, precise: kept, with its total
    out = shrinkage.shrink_empirical_bayes(off, [0.1] * 4, shapes)
    assert out.sum() == pytest.approx(off.sum())
    assert np.abs(out - off).max() < 0.05
    assert (out >= 0).all()


def test_empirical_bayes_beats_one_weight_when_counts_differ_in_size():
    # true counts deviate from the shape by about 30 % of their size; five large zones and 45 small ones,
    # equal noise: one James–Stein weight must serve both, the per-cell weights keep the large zones'
    # estimates and pull the small ones in (200 seeded draws)
    gen = np.random.default_rng(7)
    shape = np.concatenate([np.full(5, 200.0), np.full(45, 5.0)])
    se = np.full(50, 10.0)
    raw = one = per_cell = 0.0
    for _ in range(200):
        truth = shape * np.exp(0.3 * gen.standard_normal(50))
        est = truth + se * gen.standard_normal(50)
        raw += np.sum((est - truth) ** 2)
        one += np.sum((shrinkage.shrink_to_baseline(est, se, shape) - truth) ** 2)
        per_cell += np.sum((shrinkage.shrink_empirical_bayes(est, se, shape) - truth) ** 2)
    assert per_cell < 0.7 * one < 0.7 * raw


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([1.0, 2.0], [1.0, 1.0], [1.0, 1.0, 1.0]), "one value per cell"),
        (([np.nan, 2.0], [1.0, 1.0], [1.0, 1.0]), "finite estimates"),
        (([1.0, 2.0], [-1.0, 1.0], [1.0, 1.0]), "non-negative standard errors"),
        (([1.0, 2.0], [1.0, 1.0], [1.0, -1.0]), "shapes .* non-negative"),
    ],
)
def test_empirical_bayes_refuses_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        shrinkage.shrink_empirical_bayes(*args)


def test_no_data_shapes_are_the_baselines():
    zp = np.array([0, 0, 1, 2, 1])
    rows = nodata.no_data_shapes(zp, 2, [1, 4], od=False)
    assert rows[0] == pytest.approx(nodata.uniform_answer(zp, 2, od=False))
    assert rows[1] == pytest.approx(nodata.uniform_visits(zp, 2, [1, 4]))
    assert nodata.no_data_shapes(zp, 2, [1, 4], od=True).shape == (1, 4)


def _report_estimates(statistic, **kwargs):
    import geopandas as gpd
    import shapely

    from geoldp.reports import estimate_counts

    gen = np.random.default_rng(3)
    lines = [shapely.linestrings(PTS[gen.integers(0, len(PTS), 3)]) for _ in range(400)]
    trips = gpd.GeoDataFrame(geometry=lines, crs="EPSG:4326")
    with warnings.catch_warnings():  # few reports for 17² OD pairs: the no-data-level warning is expected
        warnings.simplefilter("ignore", geoldp.GeoLDPWarning)
        rep = geoldp.report(trips, ZONES, statistic=statistic, epsilon=2.0, rng=4)
    return estimate_counts(rep, ZONES, **kwargs)


@pytest.mark.parametrize("statistic", ["visited_zone", "od"])
def test_shrunk_counts_keep_the_table_index_and_total(statistic):
    est = _report_estimates(statistic)
    out = shrinkage.shrunk_counts(est, PTS, ZONES, lengths=[2, 3])
    assert out.index.equals(est.index) and out.name == "shrunk"
    assert (out >= 0).all() and out.sum() == pytest.approx(max(est["estimate"].sum(), 0.0))


def test_shrunk_counts_take_the_uniform_visits_shape_with_lengths():
    # an estimate on the uniform-visits shape, with noise far above its deviations: with the lengths the
    # shape is in the span and comes back; without them the target is P's shares, which differ from it
    est = _report_estimates("visited_zone")
    from geoldp.zones import check_zones, zone_of_vertices

    zp = zone_of_vertices(check_zones(ZONES, caller="test"), PTS[:, 0], PTS[:, 1])
    shape = nodata.uniform_visits(zp, len(ZONES), [40]) * 30.0
    noisy = est.assign(estimate=shape, std_error=1e6)
    assert shrinkage.shrunk_counts(noisy, PTS, ZONES, lengths=[40]).to_numpy() == pytest.approx(shape)
    shares = shrinkage.shrunk_counts(noisy, PTS, ZONES).to_numpy()
    assert np.abs(shares - shape).max() > 1.0


def test_shrunk_counts_refuse_another_table():
    est = _report_estimates("visited_zone", include_outside=True)
    with pytest.raises(ValueError, match="without include_outside"):
        shrinkage.shrunk_counts(est, PTS, ZONES)
    with pytest.raises(TypeError, match="lengths"):
        shrinkage.shrunk_counts(_report_estimates("visited_zone"), PTS, ZONES, lengths=[2.5])
    with pytest.raises(TypeError, match="'estimates'"):
        shrinkage.shrunk_counts([1.0, 2.0], PTS, ZONES)


def test_hybrid_and_shrunk_designs_are_in_the_table():
    t = geoldp.plan(PTS, ZONES, epsilon=4.0, n=500, lengths=[2, 3], question="od_flows", rng=2)
    assert {"report:od:shrunk", "hybrid:atp+report@0.5"} <= set(t.index)
    assert t.loc["hybrid:atp+report@0.5", "kind"] == "hybrid"


def test_walk_steps_follow_the_displacement_law():
    # steps ∝ (d + 1.5 km)^-1.75 per point: on a 40 km square most steps are short, unlike uniform jumps
    gen = np.random.default_rng(0)
    pts = gen.uniform(0.0, 0.36, size=(800, 2))  # about 40 km × 40 km at the equator
    ps = geoldp.PointSet(pts[:, 0], pts[:, 1])
    walks = nodata.random_walks(ps, np.full(400, 6), gen)
    a = np.concatenate([w[:-1] for w in walks])
    b = np.concatenate([w[1:] for w in walks])
    from geoldp._core.geo import haversine_array_m

    step = haversine_array_m(pts[a, 0], pts[a, 1], pts[b, 0], pts[b, 1])
    rand = haversine_array_m(pts[a, 0], pts[a, 1], pts[gen.permutation(a), 0], pts[gen.permutation(a), 1])
    assert np.median(step) < 0.5 * np.median(rand)
    assert np.mean(step > 10_000) > 0.05  # long moves happen too (the law's heavy tail)


def test_robust_population_picks_the_smallest_worst_regret():
    t = geoldp.plan(
        PTS,
        ZONES,
        epsilon=8.0,
        n=2000,
        lengths=3,
        population="robust",
        designs=["report:visited_zone"],
        rng=6,
    )
    per = t[[f"error_{p}" for p in planner.POPULATIONS[:3]]]
    assert np.allclose(t["regret"], (per - per.min(axis=0)).max(axis=1))
    assert np.allclose(t["error"], per.mean(axis=1))
    assert t.attrs["recommended"] == t["regret"].idxmin()


def test_padded_and_coarse_designs_are_in_the_table():
    t = geoldp.plan(PTS, ZONES, epsilon=4.0, n=500, lengths=[2, 3], question="zone_visits", rng=2)
    pads = {f"report:visited_zone:pad{k}" for k in (2, 5)} | {"report:visited_zone:padded:shrunk"}
    assert pads | {"report:visited_zone:coarse", "report:visited_zone:coarse:pad5"} <= set(t.index)
    od = geoldp.plan(PTS, ZONES, epsilon=4.0, n=500, lengths=[2, 3], question="od_flows", rng=2)
    assert "report:od:coarse" in od.index and np.isnan(od.loc["report:od:coarse", "interval_width"])
    eb = {"report:visited_zone:eb", "report:visited_zone:pad2:eb", "report:visited_zone:padded:eb"}
    assert eb <= set(t.index) and "report:od:eb" in od.index


def test_padded_reports_count_visits_where_one_sample_counts_shares():
    # walks of 6-8 points visit several of 16 zones: ℓ = 1 estimates each trajectory's 1/|set| share per
    # zone (visit counts biased low by that factor), ℓ = 5 scales the padded frequencies to visit counts
    names = ["report:visited_zone", "report:visited_zone:pad5"]
    t = geoldp.plan(
        PTS, ZONES, epsilon=8.0, n=20000, lengths=[6, 8], question="range_counts", designs=names, rng=0
    )
    one, padded = t.loc[names[0], "error"], t.loc[names[1], "error"]
    assert padded < 0.25 * one
    assert t.attrs["recommended"] == names[1]


def test_uniform_baseline_counts_the_visits_of_trajectories_of_uniform_points():
    # the no-data population "every point a uniform draw from P": a trajectory of length L visits a zone
    # of share s with probability 1 - (1 - s)^L, so the expected visits are not s * n (one point each)
    rng = np.random.default_rng(5)
    zone_of_point = rng.integers(0, 7, size=500)  # zone 6 = outside
    k = 6
    lengths = rng.integers(1, 9, size=4000)
    simulated = np.zeros(k)
    for length in lengths:
        z = np.unique(zone_of_point[rng.integers(0, 500, size=length)])
        simulated[z[z < k]] += 1
    expected = nodata.uniform_visits(zone_of_point, k, lengths)
    sd = np.sqrt(expected * (1 - expected / lengths.size))  # a sum of independent Bernoullis: at most this
    assert np.all(np.abs(simulated - expected) <= 4 * sd)
    share = nodata.uniform_answer(zone_of_point, k, od=False)
    assert np.all(expected > 1.5 * share * lengths.size)  # the one-point answer is far below it
    np.testing.assert_allclose(nodata.uniform_visits(zone_of_point, k, np.ones(10, int)), 10 * share)


def test_spread_walks_start_anywhere_and_hub_walks_at_a_few_points():
    # "spread" draws each start uniformly from P (many distinct starts), "hubs" from at most 10 points;
    # given starts (a pilot's), "spread" keeps them as they are
    ps = geoldp.PointSet(PTS[:, 0], PTS[:, 1])
    lengths = np.full(600, 2)
    spread = nodata.random_walks(ps, lengths, np.random.default_rng(0), population="spread")
    hubs = nodata.random_walks(ps, lengths, np.random.default_rng(0), population="hubs")
    assert len({int(s[0]) for s in hubs}) <= 10
    # 600 uniform draws from 150 points leave about 150·(1 − e^−4) ≈ 147 distinct; far above 10
    assert len({int(s[0]) for s in spread}) > 100
    given = np.arange(600) % 150
    kept = nodata.random_walks(ps, lengths, np.random.default_rng(0), population="spread", starts=given)
    assert [int(s[0]) for s in kept] == given.tolist()


# -- a no-data recommendation is a design too: it runs, from P and the zones alone, and spends nothing


def _trips(n: int, seed: int = 0):
    import geopandas as gpd
    import shapely

    gen = np.random.default_rng(seed)
    lines = [shapely.linestrings(PTS[gen.integers(0, len(PTS), 3)]) for _ in range(n)]
    return gpd.GeoDataFrame({"user": np.arange(n) % 7}, geometry=lines, crs="EPSG:4326")


def _shares() -> np.ndarray:
    """Each zone's share of P, counted here with shapely (a point on a shared edge: the first zone)."""
    import shapely

    pts = shapely.points(PTS)
    inside = np.column_stack([shapely.covers(zone, pts) for zone in ZONES.geometry])
    first = np.where(inside.any(axis=1), inside.argmax(axis=1), len(ZONES))
    return np.bincount(first, minlength=len(ZONES) + 1)[: len(ZONES)] / len(PTS)


@pytest.mark.parametrize(
    ("question", "kind"), [("zone_visits", "shares"), ("hotspots", "uniform"), ("od_flows", "uniform")]
)
def test_a_baseline_recommendation_runs_from_public_inputs_and_spends_nothing(question, kind):
    # at ε = 0.5 for 200 users no release beats knowing nothing here (checked: the plan says so)
    t = geoldp.plan(PTS, ZONES, epsilon=0.5, n=200, lengths=[2, 3, 5], question=question, rng=1)
    assert not t.attrs["beats_baselines"] and t.attrs["recommended"] == f"baseline:{kind}"
    best = t.best
    assert isinstance(best, BaselineDesign) and best.name == f"baseline:{kind}" and best.lengths == (2, 3, 5)
    trips = _trips(200)
    before = trips.copy()
    acc = geoldp.BudgetAccountant(total_epsilon=1.0)
    released = best.release(trips, epsilon=0.5, points=PTS, zones=ZONES, accountant=acc, user_col="user")
    assert best.ledger(0.5) == {} and acc.spent == {}  # nothing released, nothing charged
    assert released.shape == (200, 0) and released.index.equals(trips.index) and trips.equals(before)
    answer = best.answer(released, question, points=PTS, zones=ZONES)
    ranked = ["rank"] if question == "hotspots" else []  # a hotspots answer ranks every zone first
    assert list(answer.columns) == [*ranked, *ANSWER_COLUMNS]
    assert answer[["lower", "upper", "raw"]].isna().all().all()
    s = _shares()
    if kind == "shares":  # one visit per trajectory, spread like P's points
        expected = 200 * s
    elif question == "od_flows":  # every point a uniform draw: origin and destination independent
        expected = 200 * np.outer(s, s).reshape(-1)
    else:  # a zone of share s is visited by a trajectory of length L with probability 1 - (1 - s)^L
        expected = 200 * np.mean([1 - (1 - s) ** length for length in (2, 3, 5)], axis=0)
    np.testing.assert_allclose(answer["estimate"].to_numpy(), expected, rtol=1e-12)


def test_the_constant_baseline_puts_everyone_at_the_1_median():
    import shapely

    lon, lat = np.radians(PTS[:, 0]), np.radians(PTS[:, 1])  # haversine sums, written out here
    dlat, dlon = lat[:, None] - lat[None, :], lon[:, None] - lon[None, :]
    h = np.sin(dlat / 2) ** 2 + np.cos(lat[:, None]) * np.cos(lat[None, :]) * np.sin(dlon / 2) ** 2
    median = int(np.argmin(np.arcsin(np.sqrt(h)).sum(axis=1)))
    zone = int(np.flatnonzero(shapely.covers(ZONES.geometry.values, shapely.points(PTS[median])))[0])
    design = geoldp.designs.design("baseline:constant")
    released, answer = design.collect(_trips(50), "zone_visits", epsilon=1.0, points=PTS, zones=ZONES)
    expected = np.zeros(len(ZONES))
    expected[zone] = 50
    np.testing.assert_array_equal(answer["estimate"].to_numpy(), expected)
    od = design.answer(released, "od_flows", points=PTS, zones=ZONES)["estimate"].to_numpy()
    assert od.sum() == 50 and od[zone * len(ZONES) + zone] == 50


def test_baseline_designs_refuse_what_they_cannot_answer():
    trips = _trips(20)
    with pytest.raises(ValueError, match="answer_kind must be one of"):
        geoldp.designs.design("baseline:median")
    with pytest.raises(ValueError, match="od_flows"):
        geoldp.designs.design("baseline:shares").collect(
            trips, "od_flows", epsilon=1.0, points=PTS, zones=ZONES
        )
    with pytest.raises(ValueError, match="public trajectory lengths"):
        geoldp.designs.design("baseline:uniform").collect(
            trips, "zone_visits", epsilon=1.0, points=PTS, zones=ZONES
        )
    with pytest.raises(TypeError, match="lengths"):
        BaselineDesign("uniform", lengths=(2.5,))
    bounded = geoldp.designs.design("baseline:uniform").bounded(4)
    assert bounded.lengths == (2, 3, 4)  # as the plan draws lengths under a public bound


def test_cli_plan_prints_a_runnable_baseline_and_collect_runs_it(tmp_path, capsys):
    import geopandas as gpd

    pts = gpd.GeoDataFrame(geometry=gpd.points_from_xy(PTS[:, 0], PTS[:, 1]), crs="EPSG:4326")
    pts.to_file(tmp_path / "P.gpkg")
    _trips(200).to_file(tmp_path / "T.gpkg")
    argv = ["plan", str(tmp_path / "P.gpkg"), "--epsilon", "0.5", "--n", "200", "--lengths", "2,3,5"]
    assert cli.main([*argv, "--question", "hotspots", "--cell-km", "30", "--seed", "1"]) == 0
    run = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("run it: "))
    assert "--design baseline:uniform" in run and "--lengths 2,3,5" in run and "no epsilon spent" in run
    words = run.removeprefix("run it: geoldp ").split("  (")[0].split()
    words[words.index("TRIPS")] = str(tmp_path / "T.gpkg")
    words[words.index("ANSWER.gpkg")] = str(tmp_path / "A.gpkg")
    assert cli.main(words) == 0, capsys.readouterr().err
    assert "nothing released, no epsilon spent" in capsys.readouterr().err
    layer = gpd.read_file(tmp_path / "A.gpkg")
    zones = geoldp.zone_grid(pts, cell_km=30)  # the command's zones
    python = BaselineDesign("uniform", lengths=(2, 3, 5)).collect(
        _trips(200), "hotspots", epsilon=0.5, points=pts, zones=zones
    )[1]
    np.testing.assert_allclose(layer["estimate"].to_numpy(), python["estimate"].to_numpy(), rtol=1e-12)
    # nothing to keep as a release; --lengths belongs to the no-data design
    assert cli.main([*words, "--overwrite", "--release-out", str(tmp_path / "r.csv")]) == 2
    assert "releases nothing" in capsys.readouterr().err
    atp = [*words[: words.index("--design") + 1], "atp", *words[words.index("--design") + 2 :]]
    assert cli.main([*atp, "--overwrite"]) == 2
    assert "--lengths goes with a no-data design" in capsys.readouterr().err
