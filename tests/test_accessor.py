"""The ``.ldp`` accessor: engine equality, no-leak rules O1–O9, RNG rules R1–R5 (TESTING.md §8–9)."""

from __future__ import annotations

import inspect
import json
import pickle
import random
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from conftest import CITY_LAT, CITY_LON, SECRET_ID, SECRET_TIME
from routes_support import route_points, route_series

import geoldp
from geoldp import GeoLDPWarning, PrivacyWarning
from geoldp import accessor as acc

EPS = 4.0
MECHS = ["tp", "atp", "pointem"]


def public_bytes(x, y):
    return {(float(a).hex(), float(b).hex()) for a, b in zip(x, y, strict=True)}


def out_indices(out, x=CITY_LON, y=CITY_LAT):
    lookup = {(float(a), float(b)): i for i, (a, b) in enumerate(zip(x, y, strict=True))}
    coords = shapely.get_coordinates(out.geometry.values)
    return np.array([lookup[(float(a), float(b))] for a, b in coords], dtype=np.int64)


def many_lines(n=40, seed=3):
    g = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        k = int(g.integers(2, 6))
        lon = g.uniform(116.30, 116.47, k) + 1e-4 * np.pi  # off the public set
        lat = g.uniform(39.89, 39.98, k)
        rows.append(shapely.linestrings(np.column_stack([lon, lat])))
    return gpd.GeoDataFrame({"v": np.arange(n)}, geometry=rows, crs="EPSG:4326")


# ---------------------------------------------------------------------------------------------- basics


def test_registered_and_documented(toy_lines):
    assert isinstance(toy_lines.ldp, acc.LDPAccessor)
    assert acc.LDPAccessor.__doc__ and "stateless" in acc.LDPAccessor.__doc__.lower()
    for name in ("perturb", "snap", "to_geojson", "range_count", "visit_counts", "evaluate"):
        assert getattr(acc.LDPAccessor, name).__doc__


def test_accessor_is_stateless(toy_lines):
    a = toy_lines.ldp
    assert not hasattr(a, "__dict__")
    assert acc.LDPAccessor.__slots__ == ("_obj",)
    assert a._obj is toy_lines


@pytest.mark.parametrize(("method", "target"), [("perturb", acc.perturb), ("snap", acc.snap)])
def test_wrapper_signature_matches_free_function(method, target):
    wrapper = inspect.signature(getattr(acc.LDPAccessor, method))
    free = inspect.signature(target)
    assert list(wrapper.parameters)[1:] == list(free.parameters)[1:]
    for name in list(free.parameters)[1:]:
        assert wrapper.parameters[name].default == free.parameters[name].default
        assert wrapper.parameters[name].kind == free.parameters[name].kind


def test_contract_keywords_present():
    params = inspect.signature(acc.LDPAccessor.perturb).parameters
    for name in (
        "mechanism",
        "epsilon",
        "rng",
        "keep_columns",
        "snap_max_km",
        "traj_id_col",
        "time_col",
        "progress",
        "options",
    ):
        assert name in params
    assert params["mechanism"].default == "atp"


@pytest.mark.parametrize("mechanism", MECHS)
def test_accessor_equals_engine(toy_lines, city_points, mechanism):
    out = toy_lines.ldp.perturb(city_points, mechanism=mechanism, epsilon=EPS, rng=42)
    seqs = toy_lines.ldp.snap(city_points)
    ref = geoldp.perturb_trajectories(seqs, city_points, mechanism=mechanism, epsilon=EPS, rng=42)
    np.testing.assert_array_equal(out_indices(out), np.concatenate(ref))


def test_accessor_equals_engine_with_mechanism_object(toy_lines, city_points):
    mech = geoldp.TP(epsilon=3.0, granularity=4)
    out = toy_lines.ldp.perturb(city_points, mechanism=mech, rng=7)
    ref = geoldp.perturb_trajectories(toy_lines.ldp.snap(city_points), city_points, mechanism=mech, rng=7)
    np.testing.assert_array_equal(out_indices(out), np.concatenate(ref))
    assert out.attrs["geoldp"]["granularity"] == 4


def test_points_as_geodataframe_or_geoseries_give_same_result(toy_lines, city_points, city_points_gdf):
    a = toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=1)
    b = toy_lines.ldp.perturb(city_points_gdf, epsilon=EPS, rng=1)
    c = toy_lines.ldp.perturb(city_points_gdf.geometry, epsilon=EPS, rng=1)
    assert a.geometry.equals(b.geometry) and a.geometry.equals(c.geometry)


def test_progress_bar_is_chunk_invariant(city_points, capsys):
    pytest.importorskip("tqdm")
    gdf = many_lines(120)
    a = gdf.ldp.perturb(city_points, epsilon=EPS, rng=9)
    b = gdf.ldp.perturb(city_points, epsilon=EPS, rng=9, progress=True)
    assert a.geometry.equals(b.geometry)  # R5: chunked run == single run


# ---------------------------------------------------------------------------------------------- O-series


GEOMETRY_MIXES = ["lines", "lines_utm", "points_grouped", "points_single", "lines_dup_index"]


def _mix(name, toy_lines, toy_point_frame):
    if name == "lines":
        return toy_lines, {}
    if name == "lines_utm":
        return toy_lines.to_crs("EPSG:32650"), {}
    if name == "points_grouped":
        return toy_point_frame, {"traj_id_col": "traj_id", "time_col": "time"}
    if name == "points_single":  # one-point trips: no column that looks like fixes of longer trips
        return toy_point_frame.drop(columns=["traj_id", "time"]), {}
    g = toy_lines.copy()
    g.index = pd.Index(["x", "x", "y", "x"])
    return g, {}


@pytest.mark.parametrize("mix", GEOMETRY_MIXES)
def test_O1_O3_shape_index_order_crs_type_vertices(mix, toy_lines, toy_point_frame, city_points):
    gdf, kw = _mix(mix, toy_lines, toy_point_frame)
    out = gdf.ldp.perturb(city_points, epsilon=EPS, rng=3, **kw)
    assert out is not gdf and isinstance(out, gpd.GeoDataFrame)
    assert len(out) == len(gdf)
    assert out.index.equals(gdf.index) and out.index.name == gdf.index.name
    assert out.crs == gdf.crs
    assert list(out.geom_type) == list(gdf.geom_type)
    np.testing.assert_array_equal(
        shapely.get_num_coordinates(out.geometry.values), shapely.get_num_coordinates(gdf.geometry.values)
    )
    assert out.geometry.name == gdf.geometry.name


@pytest.mark.parametrize("mix", GEOMETRY_MIXES)
def test_O2_vertices_bit_identical_to_public_points(mix, toy_lines, toy_point_frame, city_points):
    from pyproj import Transformer

    gdf, kw = _mix(mix, toy_lines, toy_point_frame)
    out = gdf.ldp.perturb(city_points, epsilon=EPS, rng=4, **kw)
    if gdf.crs.to_epsg() == 4326:
        px, py = CITY_LON, CITY_LAT
    else:
        px, py = Transformer.from_crs("EPSG:4326", gdf.crs, always_xy=True).transform(CITY_LON, CITY_LAT)
    got = shapely.get_coordinates(out.geometry.values)
    assert public_bytes(got[:, 0], got[:, 1]) <= public_bytes(px, py)


def test_O4_columns_default_and_keep(toy_lines, toy_point_frame, city_points):
    out = toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=0)
    assert list(out.columns) == ["geometry"]
    out = toy_point_frame.ldp.perturb(city_points, epsilon=EPS, rng=0, traj_id_col="traj_id", time_col="time")
    assert list(out.columns) == ["traj_id", "geometry"]
    assert out.attrs["geoldp"]["unprotected_columns"] == ["traj_id"]  # the id is released as it is
    with pytest.warns(PrivacyWarning, match=r"^keep_columns releases \['user', 'speed'\] unprotected") as rec:
        out = toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=0, keep_columns=["user", "speed"])
    assert SECRET_ID not in str(rec[0].message)
    assert list(out.columns) == ["user", "speed", "geometry"]  # input order
    pd.testing.assert_series_equal(out["user"], toy_lines["user"])
    assert out.attrs["geoldp"]["unprotected_columns"] == ["user", "speed"]


def test_O4_keep_columns_string_and_empty(toy_lines, city_points):
    with pytest.warns(PrivacyWarning, match=r"\['user'\]"):
        out = toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=0, keep_columns="user")
    assert list(out.columns) == ["user", "geometry"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=0, keep_columns=[])
    assert list(out.columns) == ["geometry"]


def _float_bytes(values):
    return {np.float64(v).tobytes() for v in np.asarray(values, dtype=np.float64).ravel()}


def _scan_bytes(out):
    blobs = [out.to_wkb().geometry.map(bytes).sum() if len(out) else b""]
    for col in out.columns:
        if col != out.geometry.name:
            blobs.append(pickle.dumps(out[col].to_numpy()))
    blobs.append(json.dumps(out.attrs).encode())
    blobs.append(pickle.dumps(out.attrs))
    return b"".join(blobs)


def test_O5_no_input_coordinates_anywhere(toy_lines, city_points):
    z = toy_lines.copy()
    z["geometry"] = shapely.force_3d(z.geometry.values, 123.456)
    with pytest.warns(GeoLDPWarning, match="Z/M values"):
        out = z.ldp.perturb(city_points, epsilon=EPS, rng=0)
    blob = _scan_bytes(out)
    coords = shapely.get_coordinates(toy_lines.geometry.values)
    for b in _float_bytes(coords) | _float_bytes([123.456]):
        assert b not in blob
    assert not shapely.has_z(out.geometry.values).any()


ALLOWED_KEYS = {
    "mechanism",
    "epsilon",
    "unit",
    "split",
    "granularity",
    "sector_convention",
    "options",
    "ledger",
    "snap",
    "input",
    "unprotected_columns",
    "geoldp_version",
    "rng",
    "release_id",  # uuid4 (a digest of the release when seeded): pandas never merges different releases
    "points",  # the public point set's provenance (geoldp.points)
    "accounting",  # BudgetAccountant settings, when one is used
}


@pytest.mark.parametrize("rng", [None, 987654321])
def test_O6_attrs_are_provenance_only(toy_lines, city_points, rng):
    out = toy_lines.ldp.perturb(city_points, mechanism="atp", epsilon=EPS, rng=rng)
    assert set(out.attrs) == {"geoldp"}
    prov = out.attrs["geoldp"]
    assert set(prov) <= ALLOWED_KEYS
    assert prov["mechanism"] == "atp" and prov["epsilon"] == EPS
    assert prov["rng"] == ("os-csprng" if rng is None else "seeded")
    assert prov["geoldp_version"] == geoldp.__version__
    text = json.dumps(prov)  # JSON-able
    assert "987654321" not in text

    def keys(d):
        for k, v in d.items():
            yield k.lower()
            if isinstance(v, dict):
                yield from keys(v)

    for key in keys(prov):
        for forbidden in (
            "seed",
            "state",
            "transcript",
            "true",
            "r_max",
            "diagnostic",
            "distance",
            "max_snap",
        ):
            assert forbidden not in key.replace("distance_mapping", ""), key
    # exactly as used (L6)
    mech = geoldp.ATP(epsilon=EPS)
    assert prov["options"] == json.loads(json.dumps(mech.options(), default=str))
    assert prov["granularity"] == mech.granularity_value
    led = mech.ledger(3)
    assert prov["ledger"]["by_length"]["3"] == pytest.approx(led.by_kind())


def test_O6_input_attrs_not_copied(toy_lines, city_points):
    toy_lines.attrs["secret"] = SECRET_ID
    out = toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=0)
    assert set(out.attrs) == {"geoldp"}


def test_O7_mechanism_and_accessor_keep_no_data(toy_lines, city_points):
    mech = geoldp.ATP(epsilon=EPS)
    before = pickle.dumps(mech)
    ps_before = pickle.dumps(city_points)
    toy_lines.ldp.perturb(city_points, mechanism=mech, rng=0)
    assert pickle.dumps(mech) == before
    assert pickle.dumps(city_points) == ps_before
    a = toy_lines.ldp
    a.perturb(city_points, epsilon=EPS, rng=0)
    assert [s for s in acc.LDPAccessor.__slots__] == ["_obj"] and not hasattr(a, "__dict__")


def _secret_frame():
    lines = [
        [(12.3456789, 39.9), (116.3, 39.9)],
        [(116.35, 39.92), (116.36, np.nan)],
    ]
    with np.errstate(invalid="ignore"):
        geoms = [shapely.LineString(c) for c in lines]
    return gpd.GeoDataFrame(
        {"id": [SECRET_ID, SECRET_ID], "t": [SECRET_TIME, SECRET_TIME]}, geometry=geoms, crs="EPSG:4326"
    )


SECRETS = ("12.3456789", "12.345", "SECRET-ID", "2001-02-03", "04:05:06", "116.36", "39.9")


def test_O8_messages_leak_nothing(city_points, caplog):
    gdf = _secret_frame()
    msgs = []
    for kw in [{}, {"snap_max_km": 1.0}, {"on_invalid": "null"}, {"on_invalid": "null", "snap_max_km": 0.5}]:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            try:
                gdf.ldp.perturb(city_points, epsilon=EPS, rng=0, **kw)
            except (ValueError, TypeError) as exc:
                msgs.append(str(exc))
        msgs += [str(w.message) for w in rec]
    pts = gdf.copy()
    pts["geometry"] = shapely.points([(12.3456789, 39.9), (116.35, 39.92)])
    for kw in [{"traj_id_col": "id", "time_col": "t"}]:
        bad = pts.copy()
        bad.loc[1, "t"] = pd.NaT
        with pytest.raises(ValueError, match="Row position 1") as exc:
            bad.ldp.perturb(city_points, epsilon=EPS, rng=0, **kw)
        msgs.append(str(exc.value))
    msgs += [r.getMessage() for r in caplog.records]
    assert len(msgs) >= 4
    for m in msgs:
        for s in SECRETS:
            assert s not in m, (s, m)


def test_O9_output_is_materialised(toy_lines, city_points):
    out = toy_lines.ldp.perturb(city_points, epsilon=EPS)
    first = out.to_wkb()
    assert out.to_wkb().equals(first)
    assert out.copy().geometry.equals(out.geometry)


# ---------------------------------------------------------------------------------------------- R-series


def test_R1_default_is_os_csprng_and_varies(city_points):
    gdf = many_lines(60)
    a = gdf.ldp.perturb(city_points, epsilon=EPS)
    b = gdf.ldp.perturb(city_points, epsilon=EPS)
    assert a.attrs["geoldp"]["rng"] == "os-csprng"
    assert not a.geometry.equals(b.geometry)


def test_R2_seeding(toy_lines, city_points):
    gdf = many_lines(30)

    def go(rng):
        return out_indices(gdf.ldp.perturb(city_points, epsilon=EPS, rng=rng))

    np.testing.assert_array_equal(go(5), go(5))
    np.testing.assert_array_equal(go(np.random.SeedSequence(5)), go(np.random.SeedSequence(5)))
    np.testing.assert_array_equal(go(np.random.PCG64(5)), go(np.random.PCG64(5)))
    np.testing.assert_array_equal(go([1, 2, 3]), go([1, 2, 3]))
    gen = np.random.default_rng(5)
    assert not np.array_equal(go(gen), go(gen))  # a reused Generator advances
    assert not np.array_equal(go(5), go(6))


def test_R3_global_random_state_untouched(toy_lines, city_points):
    np_state = np.random.get_state()
    py_state = random.getstate()
    toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=0)
    toy_lines.ldp.perturb(city_points, epsilon=EPS)
    after = np.random.get_state()
    assert np_state[0] == after[0] and np.array_equal(np_state[1], after[1]) and np_state[2:] == after[2:]
    assert random.getstate() == py_state


def test_R4_identical_rows_get_independent_outputs(city_points):
    """1 000 identical one-point rows (PointEM): identical-pair count matches the pmf (binomial, α=1e-6)."""
    from scipy import stats

    from geoldp.mechanisms import ExponentialMechanism

    n = 1000
    x = (116.3611, 39.9733)
    gdf = gpd.GeoDataFrame(geometry=[shapely.Point(*x)] * n, crs="EPSG:4326")
    eps = 1.0
    out = gdf.ldp.perturb(city_points, mechanism="pointem", epsilon=eps, rng=123)
    idx = out_indices(out)
    snapped = int(gdf.ldp.snap(city_points)[0][0])
    em = ExponentialMechanism(epsilon=eps, points=city_points)
    pmf = np.zeros(len(city_points))
    pmf[np.asarray(em.support)] = em.probabilities(city_points.lon[snapped], city_points.lat[snapped])
    counts = np.bincount(idx, minlength=len(city_points))
    # chi-square goodness of fit of the output frequencies: reused randomness would concentrate them
    stat = float(((counts - n * pmf) ** 2 / (n * pmf)).sum())
    assert stat < stats.chi2.isf(1e-6, len(pmf) - 1)
    assert len(np.unique(idx)) > 1


def test_R5_seeded_output_does_not_depend_on_chunking(city_points):
    gdf = many_lines(50)
    whole = gdf.ldp.perturb(city_points, epsilon=EPS, rng=77)
    from geoldp._core.randomness import resolve_rng
    from geoldp.trajectory import engine

    seqs = gdf.ldp.snap(city_points)
    from geoldp._release import resolve_mechanism

    mech = resolve_mechanism("atp", EPS, {}, caller="test")
    key = resolve_rng(77).stream_key()
    parts = []
    for start in range(0, len(seqs), 17):
        parts += engine.run_with_key(seqs[start : start + 17], city_points, mech, key=key, offset=start)
    np.testing.assert_array_equal(out_indices(whole), np.concatenate(parts))


@pytest.mark.parametrize("mechanism", ["atp", "tp", "pointem"])
def test_seeded_output_does_not_depend_on_n_jobs(city_points, mechanism):
    gdf = many_lines(60)
    one = gdf.ldp.perturb(city_points, mechanism=mechanism, epsilon=EPS, rng=5)
    two = gdf.ldp.perturb(city_points, mechanism=mechanism, epsilon=EPS, rng=5, n_jobs=2)
    assert one.geometry.equals(two.geometry) and one.attrs["geoldp"] == two.attrs["geoldp"]


@pytest.mark.parametrize("bad", [0, -2, 1.5, "2"])
def test_bad_n_jobs_is_refused_before_any_draw(toy_lines, city_points, bad):
    gen = np.random.default_rng(3)
    state = gen.bit_generator.state
    with pytest.raises((TypeError, ValueError), match="n_jobs"):
        toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=gen, n_jobs=bad)
    assert gen.bit_generator.state == state


# ---------------------------------------------------------------------------------------------- wrappers


def test_to_geojson_wrapper(tmp_path, toy_lines, city_points):
    out = toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=0)
    path = out.ldp.to_geojson(tmp_path / "o.geojson")
    doc = json.loads(path.read_text())
    assert doc["geoldp"]["mechanism"] == "atp"


@pytest.mark.parametrize(
    ("method", "module", "name"),
    [
        ("perturb", "geoldp.accessor", "perturb"),
        ("snap", "geoldp.accessor", "snap"),
        ("to_geojson", "geoldp.io", "to_geojson"),
        ("range_count", "geoldp.queries", "range_count"),
        ("visit_counts", "geoldp.queries", "visit_counts"),
        ("evaluate", "geoldp.metrics", "evaluate"),
    ],
)
def test_every_wrapper_signature_equals_its_target(method, module, name):
    import importlib

    target = inspect.signature(getattr(importlib.import_module(module), name))
    wrapper = inspect.signature(getattr(acc.LDPAccessor, method))
    tp = list(target.parameters.values())[1:]
    wp = list(wrapper.parameters.values())[1:]
    assert [(p.name, p.kind, p.default) for p in wp] == [(p.name, p.kind, p.default) for p in tp]


@pytest.mark.parametrize("method", ["perturb", "snap", "evaluate"])
def test_a_method_made_from_its_function_belongs_to_the_accessor(toy_lines, method):
    # the name help(), Sphinx and doctest see; the bound method's signature starts after self
    fn = getattr(acc.LDPAccessor, method)
    assert (fn.__name__, fn.__qualname__, fn.__module__) == (method, f"LDPAccessor.{method}", acc.__name__)
    bound = list(inspect.signature(getattr(toy_lines.ldp, method)).parameters)
    assert bound[0] == ("perturbed" if method == "evaluate" else "points")


@pytest.mark.parametrize("method", ["snap", "evaluate"])
def test_an_unknown_keyword_of_a_method_is_pythons_own_type_error(toy_lines, city_points, method):
    with pytest.raises(TypeError, match=rf"^{method}\(\) got an unexpected keyword argument 'pints'$"):
        getattr(toy_lines.ldp, method)(city_points, pints=city_points)


def test_query_wrappers_delegate():
    import geoldp.queries

    assert acc.LDPAccessor.range_count.__wrapped__ is geoldp.queries.range_count
    assert acc.LDPAccessor.visit_counts.__wrapped__ is geoldp.queries.visit_counts


def test_query_and_metric_wrappers_run(toy_lines, city_points):
    out = toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=0)
    region = (116.39, 39.93, 5.0)
    assert toy_lines.ldp.range_count(region) == geoldp.queries.range_count(toy_lines, region)
    np.testing.assert_array_equal(
        out.ldp.visit_counts(city_points), geoldp.queries.visit_counts(out, city_points)
    )
    table = toy_lines.ldp.evaluate(out, points=city_points)
    pd.testing.assert_frame_equal(table, geoldp.evaluate(toy_lines, out, points=city_points))


def test_near_uniform_privacy_warning(city_points):
    coords = np.column_stack([np.linspace(116.33, 116.44, 60), np.linspace(39.90, 39.96, 60)])
    gdf = gpd.GeoDataFrame(
        geometry=[shapely.linestrings(coords), shapely.LineString(coords[:3])], crs="EPSG:4326"
    )
    with pytest.warns(PrivacyWarning, match=r"^1 trajectory\(ies\) get a budget per point .*max_points=40"):
        gdf.ldp.perturb(city_points, mechanism="tp", epsilon=EPS, rng=0)


def test_ledger_summary_caps_distinct_lengths(city_points):
    coords = [
        np.column_stack([np.linspace(116.33, 116.44, k), np.linspace(39.90, 39.96, k)]) for k in range(2, 22)
    ]
    gdf = gpd.GeoDataFrame(geometry=[shapely.linestrings(c) for c in coords], crs="EPSG:4326")
    out = gdf.ldp.perturb(city_points, mechanism="tp", epsilon=4.0, rng=0)
    led = out.attrs["geoldp"]["ledger"]
    assert led["lengths"] == {"min": 2, "max": 21, "distinct": 20}
    assert set(led["by_length"]) == {"2", "21"}
    assert led["by_length"]["21"] == pytest.approx(geoldp.TP(epsilon=4.0).ledger(21).by_kind(), rel=0, abs=0)
    assert led["max_total_epsilon"] <= 4.0


def test_progress_without_tqdm(monkeypatch, toy_lines, city_points):
    import sys

    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import fails: no bar, same result
    a = toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=2, progress=True)
    b = toy_lines.ldp.perturb(city_points, epsilon=EPS, rng=2)
    assert a.geometry.equals(b.geometry)


@pytest.mark.parametrize(
    "name",
    [
        "perturb",
        "snap",
        "to_geojson",
        "range_count",
        "visit_counts",
        "evaluate",
        "explore",
        "estimate.fit",
        "estimate.visit_counts",
        "estimate.range_counts",
        "estimate.od_flows",
        "estimate.hotspots",
        "estimate.denoise",
    ],
)
def test_accessor_methods_have_full_numpydoc_docstrings(name):
    # what Shift-Tab / help() show in a notebook: every section, and every parameter of the signature
    owner, _, attr = name.rpartition(".")
    method = getattr(acc.EstimateAccessor if owner else acc.LDPAccessor, attr)
    doc = inspect.getdoc(method)
    for section in ("Parameters", "Returns", "Raises", "Examples"):
        assert f"\n{section}\n{'-' * len(section)}\n" in doc, (name, section)
    documented = set()
    for line in doc.split("\nParameters\n----------\n")[1].split("\nReturns\n")[0].splitlines():
        if line.strip() and not line.startswith(" "):  # an entry: "name : type", "a, b" or "**kwargs"
            documented.update(p.strip() for p in line.split(" : ")[0].split(","))
    params = inspect.signature(method).parameters.values()
    expected = {("**" + p.name) if p.kind is p.VAR_KEYWORD else p.name for p in params if p.name != "self"}
    assert documented == expected, name


# -------------------------------------------- GeoSeries.ldp: the frame path for a series of LineStrings


@pytest.mark.parametrize("mechanism", ["tp", "atp", "pointem"])
def test_geoseries_accessor_equals_the_frame_path(mechanism):
    s, pts = route_series(), route_points()
    before = s.copy()
    out = s.ldp.perturb(pts, mechanism=mechanism, epsilon=6.0, rng=7)
    frame = gpd.GeoDataFrame(geometry=s.rename("geometry"), crs=s.crs)
    ref = frame.ldp.perturb(pts, mechanism=mechanism, epsilon=6.0, rng=7)
    assert isinstance(out, gpd.GeoSeries)
    assert out.index.equals(s.index) and out.name == "route" and out.crs == s.crs
    assert shapely.equals_exact(np.asarray(out.values), np.asarray(ref.geometry.values), tolerance=0).all()
    assert list(shapely.get_num_coordinates(out.values)) == [3, 2, 4]
    ledger = out.attrs["geoldp"]
    assert ledger["mechanism"] == mechanism and ledger["epsilon"] == 6.0
    assert shapely.equals_exact(np.asarray(before.values), np.asarray(s.values), tolerance=0).all()


def test_geoseries_accessor_refuses_frame_only_arguments_and_plain_series():
    import pandas as pd

    with pytest.raises(TypeError, match=r"'keep_columns'.*GeoDataFrame"):
        route_series().ldp.perturb(route_points(), epsilon=4.0, keep_columns=["x"])
    with pytest.raises(TypeError, match="'user_col'"):
        route_series().ldp.perturb(route_points(), epsilon=4.0, user_col="u")
    assert not hasattr(pd.Series([1.0, 2.0]), "ldp")
    with pytest.raises(AttributeError, match="GeoSeries"):
        pd.Series([1.0]).ldp  # noqa: B018


def test_geoseries_snap_equals_frame_snap():
    s, pts = route_series(), route_points()
    frame = gpd.GeoDataFrame(geometry=s.rename("geometry"), crs=s.crs)
    got = s.ldp.snap(pts)
    ref = frame.ldp.snap(pts)
    assert [a.tolist() for a in got] == [b.tolist() for b in ref]


def test_series_accessor_registered_lazily_without_warnings():
    import subprocess
    import sys

    code = (
        "import warnings; warnings.simplefilter('error'); import geoldp, pandas as pd, geopandas as gpd; "
        "import shapely; s = gpd.GeoSeries([shapely.Point(0, 0)], crs='EPSG:4326'); "
        "print(type(s.ldp).__name__, type(gpd.GeoDataFrame(geometry=s).ldp).__name__)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["GeoSeriesLDPAccessor", "LDPAccessor"]
