"""Tests of geoldp.estimate: collector-side estimators on synthetic populations with known truth.

The population: a public 12 x 12 grid over ~22 km and trajectories of length 2, 70 % inside one corner
(a strongly non-uniform truth that the mechanisms blur) and 30 % anywhere. Zones are a 4 x 4 grid.
Accuracy tests compare the L1 error of the normalised zone counts of the estimate with that of the raw
release over fixed seeds; the margin is a one-sided t-test on the per-seed differences (run-to-run spread).
"""

from __future__ import annotations

import inspect
import math
import warnings
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

from geoldp import PointSet, estimate, perturb_trajectories
from geoldp.designs import ANSWER_COLUMNS
from geoldp.estimate import _inputs

GRID = np.linspace(0.0, 0.2, 12)
LON, LAT = (a.ravel() for a in np.meshgrid(GRID, GRID))
P = PointSet(LON, LAT)
_STARTS = (-0.001, 0.049, 0.099, 0.149)
ZONES = gpd.GeoDataFrame(
    {"name": [f"z{i}" for i in range(16)]},
    geometry=[shapely.box(x, y, x + 0.052, y + 0.052) for x in _STARTS for y in _STARTS],
    crs="EPSG:4326",
).set_index("name")
FAST = dict(n_boot=0, n_candidates=1200, n_sims=12)
ZONE_OF = _inputs.zone_of_points(ZONES, P, caller="test")[0]


def population(seed: int, n: int = 800) -> list[np.ndarray]:
    gen = np.random.default_rng(seed)
    corner = np.flatnonzero((LON < 0.07) & (LAT < 0.07))
    everywhere = np.arange(P.size)
    return [gen.choice(corner if gen.random() < 0.7 else everywhere, size=2) for _ in range(n)]


def zone_truth(trajs) -> np.ndarray:
    out = np.zeros(len(ZONES))
    for t in trajs:
        out[np.unique(ZONE_OF[t])] += 1
    return out


def l1(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a / a.sum() - b / b.sum()).sum())


def improvement_is_significant(diffs) -> bool:
    """One-sided t-test (5 %) that the mean of ``diffs`` (raw error - estimate error) is positive."""
    from scipy.stats import t as student_t

    d = np.asarray(diffs)
    t = d.mean() / (d.std(ddof=1) / math.sqrt(d.size))
    return bool(t > student_t.ppf(0.95, d.size - 1))


@pytest.mark.parametrize("mech", ["tp", "atp", "pointem"])
def test_zone_visits_closer_to_truth_than_raw(mech):
    diffs = []
    for seed in range(4):
        trajs = population(seed)
        rel = perturb_trajectories(trajs, P, mechanism=mech, epsilon=8.0, rng=100 + seed)
        est = estimate.visit_counts(rel, P, mechanism=mech, epsilon=8.0, zones=ZONES, rng=seed, **FAST)
        truth = zone_truth(trajs)
        diffs.append(l1(est["raw"], truth) - l1(est["estimate"], truth))
    assert improvement_is_significant(diffs), diffs


def test_range_counts_of_the_model_closer_to_truth_than_raw():
    circles = [(0.03, 0.03, 3.0), (0.15, 0.15, 3.0), (0.03, 0.17, 3.0), (0.1, 0.1, 4.0)]
    errs_raw, errs_est = [], []
    for seed in range(4):
        trajs = population(seed)
        rel = perturb_trajectories(trajs, P, mechanism="atp", epsilon=8.0, rng=200 + seed)
        est = estimate.range_counts(rel, P, circles, mechanism="atp", epsilon=8.0, rng=seed, **FAST)
        members, _ = _inputs.region_members(circles, P, crs="EPSG:4326", caller="test")
        truth = np.array([sum(np.isin(t, m).any() for t in trajs) for m in members], dtype=float)
        # the model's own counts (a count the table does not flag supported is reported as the raw one)
        model = np.asarray(est.attrs["estimator"]["fallback"].get("model", est["estimate"]))
        unsupported = ~est["supported"].to_numpy()
        np.testing.assert_array_equal(
            est["estimate"].to_numpy()[unsupported], est["raw"].to_numpy()[unsupported]
        )
        errs_raw.append(np.mean(np.abs(est["raw"] - truth) / truth))
        errs_est.append(np.mean(np.abs(model - truth) / truth))
    assert improvement_is_significant(np.array(errs_raw) - np.array(errs_est)), (errs_raw, errs_est)


def test_denoise_beats_raw_release_on_ne():
    from geoldp._core.geo import haversine_m

    def ne(a, b):
        return np.mean(
            [np.mean(haversine_m(LON[x], LAT[x], LON[y], LAT[y])) for x, y in zip(a, b, strict=True)]
        )

    diffs = []
    for seed in range(4):
        trajs = population(seed, 300)
        rel = perturb_trajectories(trajs, P, mechanism="atp", epsilon=8.0, rng=300 + seed)
        den = estimate.denoise(rel, P, mechanism="atp", epsilon=8.0, rng=seed, n_candidates=600, n_sims=12)
        assert [d.shape for d in den] == [r.shape for r in rel]
        diffs.append(ne(trajs, rel) - ne(trajs, den))
    assert improvement_is_significant(diffs), diffs


# ----------------------------------------------------------------------------------------------------------
# shapes, indices, CRS, the ledger
# ----------------------------------------------------------------------------------------------------------


def released_frame(seed=0, crs="EPSG:3857", **options):
    trajs = population(seed, 120)
    lines = gpd.GeoDataFrame(
        {"trip": np.arange(len(trajs))},
        geometry=[shapely.LineString(np.column_stack([LON[t], LAT[t]])) for t in trajs],
        crs="EPSG:4326",
        index=np.arange(len(trajs))[::-1] * 10,
    )
    pts = gpd.GeoDataFrame(geometry=shapely.points(LON, LAT), crs="EPSG:4326")
    out = lines.to_crs(crs).ldp.perturb(pts, epsilon=8.0, rng=seed, **options)
    return out, pts


def test_shapes_indices_and_crs_are_preserved():
    out, pts = released_frame()
    v = estimate.visit_counts(out, pts, zones=ZONES.to_crs(3857), rng=0, **FAST)
    assert list(v.columns) == list(ANSWER_COLUMNS)  # the one answer table, as every design's
    assert v.attrs["question"] == "zone_visits" and v.attrs["design"] == out.ldp.ledger.mechanism
    assert v["supported"].dtype == bool and v["std_error"].isna().all()
    assert v.index.equals(ZONES.index)
    assert float(v["raw"].sum()) == float(zone_truth_of_release(out, pts).sum())
    p = estimate.visit_counts(out, pts, rng=0, **FAST)
    assert len(p) == P.size and p.index.name == "point"
    den = estimate.denoise(out, pts, rng=0, n_candidates=300, n_sims=4)
    assert isinstance(den, gpd.GeoDataFrame) and den.crs == out.crs and den.index.equals(out.index)
    assert list(den.columns) == list(out.columns) and den.attrs == out.attrs
    assert np.array_equal(den.geometry.count_coordinates(), out.geometry.count_coordinates())
    # every denoised vertex is a public point
    _inputs.released_sequences(den, P, caller="test")
    s = estimate.denoise(out.geometry, pts, mechanism="atp", epsilon=8.0, rng=0, n_candidates=300, n_sims=4)
    assert isinstance(s, gpd.GeoSeries) and s.index.equals(out.index)


def test_one_point_trajectories_among_lines_are_read_as_such():
    # a release collected in the field holds a device's one-point trajectory as a Point row among the
    # LineStrings (a release's input refuses the mix: see the frames tests)
    gen = np.random.default_rng(5)
    trajs = [gen.choice(P.size, size=1 if i % 4 == 0 else 3) for i in range(80)]
    released = perturb_trajectories(trajs, P, mechanism="atp", epsilon=4.0, rng=1)
    geoms = [
        shapely.Point(LON[t[0]], LAT[t[0]])
        if len(t) == 1
        else shapely.LineString(np.column_stack([LON[t], LAT[t]]))
        for t in released
    ]
    frame = gpd.GeoDataFrame(geometry=geoms, crs="EPSG:4326", index=np.arange(80) * 3)
    seqs = _inputs.released_sequences(frame, P, caller="test").seqs
    assert [len(s) for s in seqs] == [len(t) for t in released]
    assert all(np.array_equal(a, b) for a, b in zip(seqs, released, strict=True))
    v = estimate.visit_counts(frame, P, zones=ZONES, mechanism="atp", epsilon=4.0, rng=0, **FAST)
    assert float(v["raw"].sum()) == float(zone_truth(released).sum())
    den = estimate.denoise(frame, P, mechanism="atp", epsilon=4.0, rng=0, n_candidates=300, n_sims=4)
    assert den.index.equals(frame.index)
    assert list(den.geom_type) == list(frame.geom_type)
    assert np.array_equal(den.geometry.count_coordinates(), frame.geometry.count_coordinates())


def zone_truth_of_release(out, pts):
    seqs = _inputs.released_sequences(out, P, caller="test").seqs
    return zone_truth(seqs)


def test_intervals_contain_the_estimate_and_hotspots_are_ranked():
    out, pts = released_frame()
    kw = dict(rng=0, n_boot=10, n_candidates=300, n_sims=4)
    h = estimate.hotspots(out, pts, zones=ZONES, k=5, **kw)
    visits = estimate.visit_counts(out, pts, zones=ZONES, **kw)
    supported = visits[visits["supported"]]
    # ranked among the supported zones only: noise is never ranked
    assert h["supported"].all() and h.attrs["supported_cells"] == len(supported)
    assert list(h["rank"]) == list(range(1, min(5, len(supported)) + 1))
    assert set(h.index) == set(supported["estimate"].nlargest(len(h)).index)
    assert ("note" in h.attrs) == supported.empty
    assert np.all(np.diff(h["estimate"].to_numpy()) <= 0)
    assert np.all(h["lower"] <= h["estimate"]) and np.all(h["estimate"] <= h["upper"])
    od = estimate.od_flows(out, pts, ZONES, rng=0, n_boot=10, n_candidates=300, n_sims=4)
    assert list(od.columns) == list(ANSWER_COLUMNS) and od.attrs["question"] == "od_flows"
    assert od.index.names == ["origin", "destination"]
    o, d = (ZONES.index.get_indexer(od.index.get_level_values(level)) for level in od.index.names)
    assert (o >= 0).all() and (d >= 0).all() and np.all(np.diff(o * len(ZONES) + d) > 0)  # in zone order
    assert od["raw"].sum() == len(out)  # every trajectory starts and ends in some zone
    assert od["estimate"].sum() == pytest.approx(len(out), rel=1e-6)


def test_ledger_reproduces_the_mechanism_with_its_options():
    out, _ = released_frame(split="grouped", sw_buckets=512, mechanism="atp")
    mech = _inputs.resolve_release_mechanism(None, None, None, out, caller="test")
    from geoldp import ATP

    assert mech == ATP(epsilon=8.0, split="grouped", sw_buckets=512)


def test_same_inputs_same_estimate_and_no_originals_parameter():
    out, pts = released_frame()
    a = estimate.visit_counts(out, pts, zones=ZONES, rng=5, **FAST)
    b = estimate.visit_counts(out, pts, zones=ZONES, rng=5, **FAST)
    assert a.equals(b)
    for f in (
        estimate.visit_counts,
        estimate.range_counts,
        estimate.od_flows,
        estimate.hotspots,
        estimate.denoise,
    ):
        names = set(inspect.signature(f).parameters)
        assert not names & {"original", "originals", "trajectories", "truth"}


def test_release_is_not_mutated():
    out, pts = released_frame()
    before = out.copy()
    attrs = dict(out.attrs)
    estimate.denoise(out, pts, rng=0, n_candidates=200, n_sims=2)
    assert out.equals(before) and out.attrs == attrs


# ----------------------------------------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------------------------------------


def test_no_mechanism_and_no_ledger_is_an_error():
    with pytest.raises(ValueError, match="mechanism"):
        estimate.visit_counts([np.array([0, 1])], P)
    out, pts = released_frame()
    out.attrs = {}
    with pytest.raises(ValueError, match="ledger"):
        estimate.visit_counts(out, pts)


def test_vertex_not_a_public_point_is_an_error():
    out, pts = released_frame(crs="EPSG:4326")
    geoms = list(out.geometry)
    geoms[3] = shapely.LineString([(0.0101, 0.0), (0.0, 0.0)])
    out = out.set_geometry(gpd.GeoSeries(geoms, index=out.index, crs=out.crs))
    with pytest.raises(ValueError, match="Row position 3 .* not a public point") as exc:
        estimate.visit_counts(out, pts)
    assert "0.0101" not in str(exc.value)


def test_zones_without_crs_is_an_error():
    out, pts = released_frame()
    with pytest.raises(ValueError, match="no CRS"):
        estimate.visit_counts(out, pts, zones=gpd.GeoDataFrame(geometry=list(ZONES.geometry)))


def test_epsilon_conflicting_with_the_ledger_is_an_error():
    out, pts = released_frame()
    with pytest.raises(ValueError, match="conflicts with the ledger"):
        estimate.visit_counts(out, pts, epsilon=4.0)
    with pytest.raises(ValueError, match="conflicts with the ledger"):
        estimate.visit_counts(out, pts, mechanism="tp", epsilon=8.0)


def test_bad_options_are_errors():
    rel = [np.array([0, 1])]
    with pytest.raises(ValueError, match="n_sims"):
        estimate.visit_counts(rel, P, mechanism="tp", epsilon=1.0, n_sims=0)
    with pytest.raises(ValueError, match="level"):
        estimate.visit_counts(rel, P, mechanism="tp", epsilon=1.0, level=1.5)
    with pytest.raises(ValueError, match="how"):
        estimate.range_counts(rel, P, (0.0, 0.0, 1.0), mechanism="tp", epsilon=1.0, how="line")
    with pytest.raises(TypeError, match="regions"):
        estimate.range_counts(rel, P, "everywhere", mechanism="tp", epsilon=1.0)


# Every estimator's parameters: positional ones, then its own keywords, then the shared ones (defaults).
_MODEL_DEFAULTS = {
    "mechanism": None,
    "epsilon": None,
    "mechanism_options": None,
    "rng": None,
    "n_candidates": 3000,
    "n_sims": 16,
    "n_iter": "cv",
    "cell_km": None,
    "fit_rows": 5000,
    "progress": False,
}
_INTERVAL_DEFAULTS = {"n_boot": 30, "level": 0.95}
_ESTIMATORS = [
    ("fit", ["released", "points"], {}),
    ("visit_counts", ["released", "points"], {"zones": None}),
    ("range_counts", ["released", "points", "regions"], {"how": "points"}),
    ("od_flows", ["released", "points", "zones"], {}),
    ("hotspots", ["released", "points"], {"k": 10, "zones": None}),
    ("denoise", ["released", "points"], {}),
]


@pytest.mark.parametrize(("name", "positional", "own"), _ESTIMATORS)
def test_the_signature_shows_every_parameter_with_its_default(name, positional, own):
    # what help(), notebooks and the API docs show: the full list, not **kwargs
    params = inspect.signature(getattr(estimate, name)).parameters.values()
    shared = _MODEL_DEFAULTS if name == "denoise" else {**_MODEL_DEFAULTS, **_INTERVAL_DEFAULTS}
    assert [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD] == positional
    keywords = {p.name: p.default for p in params if p.kind is p.KEYWORD_ONLY}
    assert keywords == {**own, **shared} and list(keywords) == [*own, *shared]
    assert all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params)  # no **kwargs left
    assert {p.name for p in params if p.default is p.empty} == set(positional)


@pytest.mark.parametrize(("name", "positional", "own"), _ESTIMATORS)
def test_an_unknown_keyword_is_pythons_own_type_error(name, positional, own):
    fn = getattr(estimate, name)
    args = [[np.array([0, 1])], P, ZONES][: len(positional)]
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'n_bots'$"):
        fn(*args, mechanism="tp", epsilon=1.0, n_bots=3)
    if name == "denoise":  # a point estimate: no interval, so neither of its parameters
        for keyword in _INTERVAL_DEFAULTS:
            with pytest.raises(
                TypeError, match=f"^denoise\\(\\) got an unexpected keyword argument '{keyword}'$"
            ):
                fn(*args, mechanism="tp", epsilon=1.0, **{keyword: 1})
    with pytest.raises(TypeError, match="got multiple values for argument 'released'"):
        fn(*args, released=args[0])


@pytest.mark.slow
def test_mypy_checks_the_calls_of_the_estimators_and_the_accessor_methods(tmp_path, monkeypatch):
    """A type checker sees the full keyword list: unknown keywords and wrong types are flagged."""
    api = pytest.importorskip("mypy.api")
    calls = {
        "estimate.visit_counts([], [], zones=None, n_boot=0, level=0.9, rng=1)": None,
        "estimate.hotspots([], [], k=3, fit_rows=100, mechanism='tp')": None,
        "estimate.visit_counts([], [], n_bots=3)": 'Unexpected keyword argument "n_bots"',
        "estimate.hotspots([], [], n_bots=3)": 'Unexpected keyword argument "n_bots"',  # not **kwargs: Any
        "estimate.denoise([], [], level=0.9)": 'Unexpected keyword argument "level"',
        "estimate.fit([], [], n_boot='30')": "[arg-type]",
        "estimate.range_counts([], [], [], how=1)": "[arg-type]",
        "LDPAccessor(None).perturb([], epsilon=2.0, granularity=3)": None,
        "LDPAccessor(None).evaluate([], k=3, points=None)": None,
        "LDPAccessor(None).evaluate([], pints=None)": 'Unexpected keyword argument "pints"',
        "LDPAccessor(None).snap([], snap_max_km='1')": "[arg-type]",
        "LDPAccessor(None).perturb([], n_jobs='all')": "[arg-type]",
    }
    snippet = tmp_path / "calls.py"
    header = "from geoldp import estimate\nfrom geoldp.accessor import LDPAccessor\n"
    snippet.write_text(header + "\n".join(calls) + "\n")
    root = Path(__file__).resolve().parents[1]
    monkeypatch.setenv("MYPYPATH", str(root / "src"))  # this checkout of geoldp, not an installed one
    out, err, _ = api.run(
        [str(snippet), "--config-file", str(root / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache")]
    )
    lines = [line for line in out.splitlines() if line.startswith(str(snippet)) and ": error:" in line]
    errors = {int(line.split(":")[1]): line for line in lines}
    for number, (call, error) in enumerate(calls.items(), start=3):
        assert (error is None) == (number not in errors), (call, out + err)
        assert error is None or error in errors[number], (call, errors[number])


# ----------------------------------------------------------------------------------------------------------
# interval coverage (slow)
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mech", ["tp", "atp", "pointem"])
def test_zone_interval_coverage(mech):
    covered = []
    for seed in range(6):
        trajs = population(seed)
        rel = perturb_trajectories(trajs, P, mechanism=mech, epsilon=8.0, rng=400 + seed)
        est = estimate.visit_counts(rel, P, mechanism=mech, epsilon=8.0, zones=ZONES, rng=seed, n_boot=30)
        truth = zone_truth(trajs)
        covered.extend(((truth >= est["lower"]) & (truth <= est["upper"])).tolist())
    # nominal 0.95 over these 96 zone-seed cases, minus three binomial standard errors (0.022 each); the
    # model's interval alone covered 0.85 (PointEM), 0.62 (TP) and 0.50 (ATP) here: the channel check
    # widens it where the release hides the count (docs/collector.md)
    assert np.mean(covered) >= 0.95 - 3.0 * math.sqrt(0.95 * 0.05 / len(covered)), np.mean(covered)


def test_accessor_shortcuts_read_the_ledger():
    out, pts = released_frame()
    kw = dict(rng=0, n_boot=0, n_candidates=300, n_sims=4)
    direct = estimate.visit_counts(out, pts, zones=ZONES, **kw)
    assert out.ldp.estimate.visit_counts(pts, zones=ZONES, **kw).equals(direct)
    circle = [(0.05, 0.05, 2.0)]
    assert out.ldp.estimate.range_counts(pts, circle, **kw).equals(
        estimate.range_counts(out, pts, circle, **kw)
    )
    assert out.ldp.estimate.od_flows(pts, ZONES, **kw).equals(estimate.od_flows(out, pts, ZONES, **kw))
    assert out.ldp.estimate.hotspots(pts, k=3, zones=ZONES, **kw).equals(
        estimate.hotspots(out, pts, k=3, zones=ZONES, **kw)
    )
    den = out.ldp.estimate.denoise(pts, rng=0, n_candidates=200, n_sims=2)
    assert den.index.equals(out.index) and den.crs == out.crs
    assert out.ldp.estimate.fit(pts, **kw).visit_counts(ZONES).equals(direct)


# ----------------------------------------------------------------------------------------------------------
# the per-trajectory likelihood: a CPS-like population, PointEM's exact channel, bounded memory
# ----------------------------------------------------------------------------------------------------------

# a 3 km campus: 15 x 15 public points, zones a 3 x 3 grid of 1 km
_CGRID = np.linspace(0.0, 0.027, 15)
CLON, CLAT = (a.ravel() for a in np.meshgrid(_CGRID, _CGRID))
CP = PointSet(CLON, CLAT)
_CSTARTS = (-0.0005, 0.0090, 0.0180)
CZONES = gpd.GeoDataFrame(
    geometry=[shapely.box(x, y, x + 0.0095, y + 0.0095) for x in _CSTARTS for y in _CSTARTS], crs="EPSG:4326"
)
CZONE_OF = _inputs.zone_of_points(CZONES, CP, caller="test")[0]


def compact_population(seed: int, n: int = 500) -> list[np.ndarray]:
    """Trajectories of 4-8 points within ~250 m of a centre (most touch one or two zones).

    Centres: 70 % in the south-west zone, the rest anywhere (a non-uniform truth).
    """
    gen = np.random.default_rng(seed)
    corner = np.flatnonzero(CZONE_OF == 0)
    out = []
    for _ in range(n):
        c = gen.choice(corner) if gen.random() < 0.7 else gen.integers(CP.size)
        d = np.hypot(CLON - CLON[c], CLAT - CLAT[c])
        near = np.flatnonzero(d <= 0.0025)
        out.append(gen.choice(near, size=int(gen.integers(4, 9))))
    return out


@pytest.mark.slow  # an accuracy audit (CI's bounded slow step runs it)
@pytest.mark.parametrize(
    "mech",
    [
        "pointem",
        pytest.param(
            "atp",
            marks=pytest.mark.xfail(
                reason="measured L1 +0.01..+0.04 worse than raw: the composite (per-position) simulated "
                "likelihood does not see how compact a released ATP trajectory is"
            ),
        ),
    ],
)
def test_compact_campus_zone_visits_not_worse_than_raw(mech):
    """PointEM at ε = 4 spends ε/n per point on a campus-sized P: the channel is so flat that the held-out
    likelihoods of every model of a length group differ by about 1 nat over ~100 rows (a likelihood ratio
    near e). Those differences are consistent across rows, so they were once "significant", and the
    selection then chose the constant at P's 1-median or uniform draws in some groups (per-seed gains
    -0.029..+0.077). Below the evidence margin (``_model.EVIDENCE_NATS``) the release cannot tell the
    models apart and the selection keeps the release: the estimate is the release smoothed by the channel,
    never worse than raw, and better by a small amount."""

    def truth_of(trajs):
        out = np.zeros(len(CZONES))
        for t in trajs:
            out[np.unique(CZONE_OF[t])] += 1
        return out

    diffs = []
    for seed in range(8):  # per-seed gains of 0.006-0.05 L1: 8 seeds give the t-test its power
        trajs = compact_population(seed)
        rel = perturb_trajectories(trajs, CP, mechanism=mech, epsilon=4.0, rng=500 + seed)
        est = estimate.visit_counts(rel, CP, mechanism=mech, epsilon=4.0, zones=CZONES, rng=seed, **FAST)
        truth = truth_of(trajs)
        diffs.append(l1(est["raw"], truth) - l1(est["estimate"], truth))
    assert min(diffs) > -0.02, diffs  # never clearly worse than raw
    assert improvement_is_significant(diffs), diffs  # and better on average


def test_pointem_exact_channel_matches_the_mechanism():
    """The closed-form per-point channel equals the empirical output frequencies of PointEM (χ² test)."""
    from scipy.stats import chisquare

    from geoldp import PointEM
    from geoldp.estimate import _model

    small = PointSet(LON[:24], LAT[:24] + 0.01 * np.arange(24) % 0.05)
    mech = PointEM(epsilon=6.0)
    n, x, reps = 2, 5, 20_000
    rel = perturb_trajectories([np.array([x, 0])] * reps, small, mechanism=mech, rng=11)
    observed = np.bincount(np.array([r[0] for r in rel]), minlength=small.size)
    cand = np.array([[x, 0]])
    released = np.column_stack([np.arange(small.size), np.zeros(small.size, dtype=np.int64)])
    ll = _model._loglik_pointem(released, cand, small, mech)[:, 0]
    # the second position is fixed at point 0, so exp(ll) / pmf(0 | 0) is the first position's pmf
    pmf = np.exp(ll - ll.max())
    pmf /= pmf.sum()
    assert pmf.max() / pmf.min() > 1.5  # the channel is not flat: the test can fail
    assert chisquare(observed, reps * pmf).pvalue > 1e-3
    assert mech.point_budget(n) == pytest.approx(3.0)


def test_pointem_channel_needs_no_p_by_p_matrix():
    """|P| = 20,000: an |P|^2 float matrix would be 3.2 GB; the fit stays far below that."""
    import tracemalloc

    gen = np.random.default_rng(0)
    big = PointSet(gen.uniform(0, 0.5, 20_000), gen.uniform(0, 0.5, 20_000))
    rel = [gen.integers(0, big.size, size=3) for _ in range(40)]
    tracemalloc.start()
    try:
        est = estimate.visit_counts(rel, big, mechanism="pointem", epsilon=4.0, rng=0, n_boot=5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(est) == big.size
    assert peak < 400e6, peak


# ----------------------------------------------------------------------------------------------------------
# one fit for every query; model selection by cross-validation
# ----------------------------------------------------------------------------------------------------------


def test_fit_answers_every_query_like_the_functions():
    trajs = population(1, 200)
    rel = perturb_trajectories(trajs, P, mechanism="atp", epsilon=8.0, rng=11)
    kw = dict(mechanism="atp", epsilon=8.0, rng=5, n_boot=3, n_candidates=300, n_sims=4)
    pop = estimate.fit(rel, P, **kw)
    assert "not fitted" in repr(pop) and pop.n_trajectories == 200 and pop.mechanism == "atp"
    circles = [(0.03, 0.03, 3.0), (0.15, 0.15, 3.0)]
    assert pop.visit_counts(ZONES).equals(estimate.visit_counts(rel, P, zones=ZONES, **kw))
    assert "fitted" in repr(pop) and "not" not in repr(pop)
    assert pop.range_counts(circles).equals(estimate.range_counts(rel, P, circles, **kw))
    assert pop.od_flows(ZONES).equals(estimate.od_flows(rel, P, ZONES, **kw))
    assert pop.hotspots(3, zones=ZONES).equals(estimate.hotspots(rel, P, k=3, zones=ZONES, **kw))
    kw0 = dict(kw, n_boot=0)  # denoise needs no interval: the function fits without a bootstrap
    del kw0["n_boot"]
    den = estimate.fit(rel, P, n_boot=0, **kw0).denoise()
    for a, b in zip(den, estimate.denoise(rel, P, **kw0), strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="Population.visit_counts"):
        pop.visit_counts(ZONES.set_crs(None, allow_override=True))
    with pytest.raises(ValueError, match="'k' parameter"):
        pop.hotspots(0)


def test_release_that_says_nothing_keeps_the_raw_counts_and_a_wide_interval():
    """PointEM at ε = 0.2 per trajectory: the channel is nearly uniform, the held-out likelihood cannot tell
    populations apart, so cross-validation keeps the release (estimate near raw) rather than the proposal."""
    near, width = [], []
    for seed in range(3):
        trajs = population(seed, 400)
        rel = perturb_trajectories(trajs, P, mechanism="pointem", epsilon=0.2, rng=600 + seed)
        est = estimate.visit_counts(rel, P, mechanism="pointem", epsilon=0.2, zones=ZONES, rng=seed, n_boot=5)
        truth = zone_truth(trajs)
        near.append(l1(est["estimate"], est["raw"]) < 0.2 * l1(est["raw"], truth))
        width.append(np.mean((est["lower"] <= est["raw"]) & (est["raw"] <= est["upper"])))
    assert all(near), near
    assert min(width) >= 0.9, width


def test_cross_validation_leaves_out_the_library_copies_of_held_out_rows():
    """Each released row is explained only by its own library copy: with the copies of held-out rows left
    out, the release-as-population start predicts nothing held out, and the proposal (flat) must win."""
    from geoldp.estimate import _model

    n, k = 40, 10
    lik = np.full((n, k + n), 1e-6)
    lik[:, :k] = 1e-3  # proposals: every row alike, far less likely than a row's own copy
    lik[np.arange(n), k + np.arange(n)] = 1.0  # the copy of row j explains row j
    source = np.concatenate([np.full(k, -1), np.arange(n)])
    lk = _model.Lik.from_log(np.log(lik))
    (start, _), _ = _model.choose(lk, source, _model.STARTS[:4], (0,), np.random.default_rng(0))
    assert start != "released"


# ----------------------------------------------------------------------------------------------------------
# honest intervals and totals: what the release can say, measured by the simulated channel
# ----------------------------------------------------------------------------------------------------------


_WIDE = dict(n_candidates=1200, n_sims=12)


def _misses_are_plausible(misses: int, n: int, level: float = 0.95) -> bool:
    """True unless ``misses`` of ``n`` is more than a level-``level`` interval allows (one-sided 1 % test)."""
    from scipy.stats import binom

    return n == 0 or bool(binom.sf(misses - 1, n, 1.0 - level) > 0.01)


@pytest.mark.parametrize("mech", ["tp", "atp"])
def test_intervals_cover_or_say_the_release_cannot_support_the_count(mech):
    """At ε = 8 on the 4 x 4 zones the channel hardly tells whether a trajectory was in a zone (the release
    visits a zone 0.02-0.09 more often when the original did): the composite likelihood's own interval
    missed the truth in about half the zones, most of them flagged supported. The interval must cover
    (misses within a binomial tolerance of 5 %), overall and where supported."""
    inside, inside_supported = [], []
    for seed in range(2):
        trajs = population(seed)
        rel = perturb_trajectories(trajs, P, mechanism=mech, epsilon=8.0, rng=100 + seed)
        est = estimate.visit_counts(
            rel, P, mechanism=mech, epsilon=8.0, zones=ZONES, rng=seed, n_boot=20, **_WIDE
        )
        hit = ((zone_truth(trajs) >= est["lower"]) & (zone_truth(trajs) <= est["upper"])).to_numpy()
        inside += hit.tolist()
        inside_supported += hit[est["supported"].to_numpy()].tolist()
    assert _misses_are_plausible(len(inside) - sum(inside), len(inside)), inside
    assert _misses_are_plausible(len(inside_supported) - sum(inside_supported), len(inside_supported))


def test_total_has_an_interval_that_covers_and_says_when_the_release_cannot_tell_it():
    """The sum of the estimated zone visits (the total) comes with its own interval in ``attrs["total"]``.

    At ε = 8 the release's distinct-zone count of a trajectory hardly depends on the original's (the
    channel's slope is not significant), so no estimate of the total is learned from the release: the
    interval must still cover the truth and the total must be flagged unsupported. At ε = 36 (near the top
    of the release range) with PointEM the channel is informative: the interval covers and is narrower than
    half the true total."""
    covered, n_cases = 0, 0
    for mech, eps, seed in [("tp", 8.0, 0), ("atp", 8.0, 1), ("pointem", 8.0, 2), ("pointem", 36.0, 3)]:
        trajs = population(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ε = 36 is above the range the paper evaluates
            rel = perturb_trajectories(trajs, P, mechanism=mech, epsilon=eps, rng=700 + seed)
            est = estimate.visit_counts(
                rel, P, mechanism=mech, epsilon=eps, zones=ZONES, rng=seed, n_boot=10, n_candidates=600
            )
        total, truth = est.attrs["total"], float(zone_truth(trajs).sum())
        assert total["estimate"] == pytest.approx(float(est["estimate"].sum()), rel=1e-9)
        assert total["raw"] == pytest.approx(float(est["raw"].sum()))
        assert total["lower"] <= total["estimate"] <= total["upper"]
        covered += int(total["lower"] <= truth <= total["upper"])
        n_cases += 1
        if eps == 8.0 and mech != "pointem":
            assert not total["supported"], (mech, total)
        if eps == 36.0:
            assert total["upper"] - total["lower"] < 0.5 * truth, total
    assert _misses_are_plausible(n_cases - covered, n_cases), covered


def test_unseeded_estimates_are_reproducible_from_the_files():
    # estimation is post-processing: without rng its randomness comes from a digest of the release and the
    # settings, so two analysts get the same table; another rng draws another one; attrs say which
    out, pts = released_frame()
    kw = dict(n_boot=5, n_candidates=300, n_sims=4)
    one = estimate.visit_counts(out, pts, zones=ZONES, **kw)
    two = estimate.visit_counts(out.copy(), pts, zones=ZONES, **kw)
    pd.testing.assert_frame_equal(one, two)
    assert one.attrs["estimator"]["randomness"] == "digest of the release"
    seeded = estimate.visit_counts(out, pts, zones=ZONES, rng=1, **kw)
    assert seeded.attrs["estimator"]["randomness"] == "rng"
    assert not seeded["estimate"].equals(one["estimate"])
    other = estimate.visit_counts(out, pts, zones=ZONES, **{**kw, "n_sims": 5})  # other settings, other key
    assert not other["estimate"].equals(one["estimate"])
