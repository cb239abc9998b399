"""Every public callable refuses a bad value with a TypeError/ValueError that names the parameter, and its
twins (the ``.ldp`` accessor method, the Dask function, the CLI command) refuse it the same way.

One table (:data:`CASES`): a public callable, a valid call, and bad values per parameter (a wrong type, NaN,
a negative or zero budget, an unknown option string, an empty frame ...). Each case asserts that the call
raises TypeError or ValueError whose message names the parameter (quoted, as ``'epsilon'``, or as
``epsilon=``) and, for an option string, lists every allowed value. The twins are the same callable
reached another way, so they get the same cases: :data:`TWINS` maps a callable to its accessor method and
Dask function, and :data:`CLI_CASES` feeds bad option values to the command line, which must end with exit
status 1 or 2 and one line on stderr naming the option, without a traceback.

The valid call of each row is run once too (:func:`test_the_valid_call_works`), so that a bad value is the
only thing wrong in each case. Small synthetic data (geoldp.datasets.synthetic_city) keeps the file fast.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import geoldp
from geoldp.datasets import synthetic_city

NAN = math.nan


# ------------------------------------------------------------------------------------------------------
# the data: a small city, its zones and a release


@pytest.fixture(scope="module")
def city() -> dict[str, Any]:
    points, trips = synthetic_city(n_points=40, n_trips=12, max_len=5, seed=2)
    zones = geoldp.zone_grid(points, cells=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few trips, small budgets: the no-data-level warnings
        released = trips.ldp.perturb(points, epsilon=4.0, rng=0)
        reports = geoldp.report(trips, zones, epsilon=4.0, rng=0)
    return {"points": points, "trips": trips, "zones": zones, "released": released, "reports": reports}


# ------------------------------------------------------------------------------------------------------
# the table


@dataclass(frozen=True)
class Callable_:
    """A public callable: ``call(city, **overrides)`` runs it on the city with the valid arguments."""

    name: str
    call: Callable[..., Any]
    valid: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Bad:
    """A bad value of one parameter; ``allowed`` lists an option's values the message must name."""

    param: str
    value: Any
    allowed: tuple[str, ...] = ()
    why: str = ""
    #: a known gap (the message does not name the parameter yet, or the value is accepted): strict xfail
    gap: str = ""


def _perturb(c: dict[str, Any], **kw: Any) -> Any:
    from geoldp import accessor

    return accessor.perturb(c["trips"], c["points"], **kw)


def _report(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.report(c["trips"], c["zones"], **kw)


def _synthesize(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.synthesize(c["trips"], points=c["points"], **kw)


def _hybrid(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.hybrid(c["trips"], c["points"], c["zones"], **kw)


def _plan(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.plan(c["points"], c["zones"], **kw)


def _evaluate(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.evaluate(c["trips"], c["released"], **kw)


def _zone_grid(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.zone_grid(c["points"], **kw)


def _grid(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.points.grid((116.30, 39.90, 116.32, 39.92), **kw)


def _engine(c: dict[str, Any], **kw: Any) -> Any:
    ps = geoldp.PointSet.from_geodataframe(c["points"])
    return geoldp.perturb_trajectories([[0, 1, 2], [3, 4]], ps, **kw)


def _mechanism(cls: type) -> Callable[..., Any]:
    def make(c: dict[str, Any], **kw: Any) -> Any:
        return cls(**kw)

    return make


def _accountant(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.BudgetAccountant(**kw)


def _pointset(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.PointSet(**kw)


def _resample(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.prepare.resample(c["trips"], **kw)


def _simplify(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.prepare.simplify(c["trips"], **kw)


def _combine(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.combine([c["released"]], c["zones"], points=c["points"], **kw)


def _visit_counts(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.estimate.visit_counts(c["released"], c["points"], zones=c["zones"], **kw)


def _hotspots(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.estimate.hotspots(c["released"], c["points"], zones=c["zones"], **kw)


def _od_flows(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.estimate.od_flows(c["released"], c["points"], c["zones"], **kw)


def _estimate_counts(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.reports.estimate_counts(c["reports"], c["zones"], **kw)


def _suggest_max_points(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.prepare.suggest_max_points(**kw)


def _thin(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.points.thin(c["points"], **kw)


def _design(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.designs.design(**kw)


def _choose_oracle(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.reports.choose_oracle(**kw)


def _krr(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.mechanisms.KRR(**kw)


def _tracs(c: dict[str, Any], **kw: Any) -> Any:
    return geoldp.trajectory.TraCSD(**kw)


def _empty(c: dict[str, Any]) -> Any:
    return c["trips"].iloc[:0]


MECHANISMS = ("tp", "atp", "pointem")
CASES: dict[str, tuple[Callable_, list[Bad]]] = {
    "perturb": (
        Callable_("geoldp.accessor.perturb", _perturb, {"epsilon": 4.0, "rng": 0}),
        [
            Bad("epsilon", NAN),
            Bad("epsilon", -1.0),
            Bad("epsilon", 0.0),
            Bad("epsilon", "4", why="a string, not a number"),
            Bad("mechanism", "nope", MECHANISMS),
            Bad("snap_max_km", -1.0),
            Bad("snap_max_km", NAN),
            Bad("keep_columns", ["no_such_column"]),
            Bad("on_invalid", "nope", ("raise", "null")),
            Bad("user_budget", "nope", ("trajectory", "split")),
            Bad("select_trips", "nope", ("first", "last", "random")),
            Bad("n_jobs", 0),
            Bad("rng", "seed"),
        ],
    ),
    "report": (
        Callable_("geoldp.report", _report, {"epsilon": 4.0, "rng": 0}),
        [
            Bad("epsilon", NAN),
            Bad("epsilon", -2.0),
            Bad("statistic", "nope", ("visited_zone", "od", "transitions")),
            Bad("oracle", "nope", ("auto", "krr", "oue", "olh")),
            Bad("pad_length", 0),
            Bad("pad_length", 2.5),
            Bad("on_invalid", "nope", ("raise", "null")),
        ],
    ),
    "synthesize": (
        Callable_("geoldp.synthesize", _synthesize, {"epsilon": 4.0, "rng": 0}),
        [
            Bad("epsilon", NAN),
            Bad("epsilon", -1.0),
            Bad("grid_size", 0),
            Bad("grid_size", "huge"),
            Bad("quantile", 1.5),
            Bad("n_synthetic", 0),
        ],
    ),
    "hybrid": (
        Callable_("geoldp.hybrid", _hybrid, {"epsilon": 4.0, "rng": 0}),
        [
            Bad("epsilon", NAN),
            Bad("fraction", 1.5),
            Bad("fraction", NAN),
            Bad("mechanism", "nope", MECHANISMS),
            Bad("statistic", "nope", ("visited_zone", "od", "transitions")),
        ],
    ),
    "plan": (
        Callable_(
            "geoldp.plan", _plan, {"epsilon": 4.0, "n": 100, "lengths": 3, "rng": 0, "designs": ["atp"]}
        ),
        [
            Bad("epsilon", NAN),
            Bad("epsilon", -1.0),
            Bad("n", 0),
            Bad("n", 2.5),
            Bad("max_length", 0),
            Bad("question", "nope", ("zone_visits", "hotspots", "od_flows", "range_counts")),
            Bad("population", "nope", ("spread", "hubs", "mixed", "robust")),
            Bad("target_error", -1.0),
        ],
    ),
    "evaluate": (
        Callable_("geoldp.evaluate", _evaluate, {}),
        [
            Bad("k", 0),
            Bad("k", 2.5),
            Bad("bins", 0),
            Bad("epsilon", NAN),
        ],
    ),
    "zone_grid": (
        Callable_("geoldp.zone_grid", _zone_grid, {"cells": 3}),
        [
            Bad("cells", 0),
            Bad("cells", "three"),
            Bad("cell_km", -1.0),
            Bad("cell_km", NAN),
        ],
    ),
    "points.grid": (
        Callable_("geoldp.points.grid", _grid, {"spacing_m": 500.0}),
        [
            Bad("spacing_m", -1.0),
            Bad("spacing_m", NAN),
            Bad("spacing_m", "500"),
            Bad("kind", "nope", ("square", "hex")),
        ],
    ),
    "perturb_trajectories": (
        Callable_("geoldp.perturb_trajectories", _engine, {"epsilon": 4.0, "rng": 0}),
        [Bad("epsilon", NAN), Bad("epsilon", -1.0), Bad("mechanism", "nope", MECHANISMS), Bad("n_jobs", 0)],
    ),
    "TP": (
        Callable_("geoldp.TP", _mechanism(geoldp.TP), {"epsilon": 4.0}),
        [Bad("epsilon", NAN), Bad("epsilon", -1.0), Bad("epsilon", "4")],
    ),
    "ATP": (
        Callable_("geoldp.ATP", _mechanism(geoldp.ATP), {"epsilon": 4.0}),
        [Bad("epsilon", NAN), Bad("sector_convention", "nope", ("centred", "floor"))],
    ),
    "PointEM": (
        Callable_("geoldp.PointEM", _mechanism(geoldp.PointEM), {"epsilon": 4.0}),
        [Bad("epsilon", NAN), Bad("epsilon", 0.0)],
    ),
    "BudgetAccountant": (
        Callable_("geoldp.BudgetAccountant", _accountant, {"total_epsilon": 8.0}),
        [Bad("total_epsilon", NAN), Bad("total_epsilon", -1.0), Bad("total_epsilon", "8")],
    ),
    "PointSet": (
        Callable_("geoldp.PointSet", _pointset, {"lon": [116.3, 116.31], "lat": [39.9, 39.91]}),
        [Bad("lon", [NAN, 116.31]), Bad("lat", [39.9, 95.0]), Bad("lat", [39.9])],
    ),
    "prepare.resample": (
        Callable_("geoldp.prepare.resample", _resample, {"max_points": 4}),
        [Bad("max_points", 1), Bad("max_points", 2.5), Bad("spacing_m", -1.0)],
    ),
    "prepare.simplify": (
        Callable_("geoldp.prepare.simplify", _simplify, {"tolerance_m": 10.0}),
        [Bad("tolerance_m", -1.0), Bad("tolerance_m", NAN), Bad("max_points", 1)],
    ),
    "combine": (
        Callable_("geoldp.combine", _combine, {"rng": 0, "n_boot": 2}),
        [
            Bad("question", "nope", ("zone_visits", "od_flows")),
            Bad("level", 1.5),
            Bad("n_boot", -1),
        ],
    ),
    "estimate.visit_counts": (
        Callable_("geoldp.estimate.visit_counts", _visit_counts, {"rng": 0, "n_boot": 0, "n_candidates": 50}),
        [Bad("n_boot", -1), Bad("level", 1.5), Bad("n_candidates", 0)],
    ),
    "estimate.hotspots": (
        Callable_("geoldp.estimate.hotspots", _hotspots, {"rng": 0, "n_boot": 0, "n_candidates": 50, "k": 2}),
        [Bad("k", 0), Bad("k", 1.5), Bad("n_boot", -1)],
    ),
    "estimate.od_flows": (
        Callable_("geoldp.estimate.od_flows", _od_flows, {"rng": 0, "n_boot": 0, "n_candidates": 50}),
        [Bad("n_boot", -1), Bad("level", 0.0)],
    ),
    "reports.estimate_counts": (
        Callable_("geoldp.reports.estimate_counts", _estimate_counts, {}),
        [Bad("max_set_size", 0), Bad("max_set_size", 2.5)],
    ),
    "prepare.suggest_max_points": (
        Callable_(
            "geoldp.prepare.suggest_max_points", _suggest_max_points, {"mechanism": "atp", "epsilon": 4.0}
        ),
        [
            Bad("mechanism", "nope", MECHANISMS),
            Bad("epsilon", NAN),
            Bad("limit", 0),
            Bad("limit", 1.0),
        ],
    ),
    "points.thin": (
        Callable_("geoldp.points.thin", _thin, {"n": 10, "rng": 0}),
        [Bad("n", 0), Bad("n", "ten"), Bad("rng", "seed")],
    ),
    "designs.design": (
        Callable_("geoldp.designs.design", _design, {"name": "atp"}),
        [
            Bad("name", "nope", ("atp", "tp", "pointem", "report")),
        ],
    ),
    "reports.choose_oracle": (
        Callable_("geoldp.reports.choose_oracle", _choose_oracle, {"d": 10, "epsilon": 2.0}),
        [
            Bad("d", -1),
            Bad("epsilon", NAN),
        ],
    ),
    "mechanisms.KRR": (
        Callable_("geoldp.mechanisms.KRR", _krr, {"epsilon": 1.0, "k": 4}),
        [Bad("epsilon", NAN), Bad("k", 1), Bad("k", "4")],
    ),
    "trajectory.TraCSD": (
        Callable_("geoldp.trajectory.TraCSD", _tracs, {"epsilon": 1.0, "bounds": (0.0, 0.0, 1.0, 1.0)}),
        [Bad("epsilon", NAN), Bad("bounds", (0.0, 0.0, -1.0, 1.0)), Bad("origin", "nope")],
    ),
}

#: An empty frame (or point set) where a call needs rows: refused, never an empty release.
EMPTY_FRAME: dict[str, Callable[[dict[str, Any]], Any]] = {
    "perturb": lambda c: _empty(c).ldp.perturb(c["points"], epsilon=4.0, rng=0),
    "report": lambda c: geoldp.report(_empty(c), c["zones"], epsilon=4.0, rng=0),
    "synthesize": lambda c: geoldp.synthesize(_empty(c), points=c["points"], epsilon=4.0, rng=0),
    "hybrid": lambda c: geoldp.hybrid(_empty(c), c["points"], c["zones"], epsilon=4.0, rng=0),
    "evaluate": lambda c: geoldp.evaluate(_empty(c), c["released"].iloc[:0]),
    "plan": lambda c: geoldp.plan(c["points"].iloc[:0], c["zones"], epsilon=4.0, n=10, lengths=3),
    "zone_grid": lambda c: geoldp.zone_grid(c["points"].iloc[:0], cells=3),
    "prepare.resample": lambda c: geoldp.prepare.resample(_empty(c), max_points=4),
}


def _names_the_parameter(message: str, param: str) -> bool:
    return bool(re.search(rf"'{re.escape(param)}'|`{re.escape(param)}`|\b{re.escape(param)}=", message))


def _check(exc: BaseException, bad: Bad) -> None:
    assert isinstance(exc, TypeError | ValueError), f"{type(exc).__name__}: {exc}"
    message = str(exc.args[0]) if exc.args else str(exc)
    assert _names_the_parameter(message, bad.param), f"the message does not name {bad.param!r}: {message}"
    missing = [v for v in bad.allowed if v not in message]
    assert not missing, f"the message does not list the allowed values {missing}: {message}"


def _raised(call: Callable[[], Any]) -> BaseException:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call()
        except Exception as exc:  # the kind is checked by _check
            return exc
    raise AssertionError("no error raised")


def _marks(bad: Bad) -> list[Any]:
    return [pytest.mark.xfail(reason=bad.gap, strict=True)] if bad.gap else []


def _params() -> list[Any]:
    return [
        pytest.param(key, bad, id=f"{key}-{bad.param}={bad.value!r}", marks=_marks(bad))
        for key, (_, bads) in CASES.items()
        for bad in bads
    ]


@pytest.mark.parametrize("key", list(CASES))
def test_the_valid_call_works(city, key):
    target, _ = CASES[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        target.call(city, **target.valid)


@pytest.mark.parametrize(("key", "bad"), _params())
def test_a_bad_value_is_refused_naming_the_parameter(city, key, bad):
    target, _ = CASES[key]
    kwargs = {**target.valid, bad.param: bad.value}
    _check(_raised(lambda: target.call(city, **kwargs)), bad)


@pytest.mark.parametrize("key", list(EMPTY_FRAME))
def test_an_empty_frame_is_refused(city, key):
    exc = _raised(lambda: EMPTY_FRAME[key](city))
    assert isinstance(exc, ValueError), f"{type(exc).__name__}: {exc}"
    assert re.search(r"no rows|at least (one|2)|got 0", str(exc)), str(exc)


# ------------------------------------------------------------------------------------------------------
# the twins: the .ldp accessor method and the Dask function get the same cases


def _accessor(method: str) -> Callable[..., Any]:
    def call(c: dict[str, Any], **kw: Any) -> Any:
        if method == "perturb":
            return c["trips"].ldp.perturb(c["points"], **kw)
        if method == "report":
            return c["trips"].ldp.report(c["zones"], **kw)
        if method == "synthesize":
            return c["trips"].ldp.synthesize(points=c["points"], **kw)
        if method == "hybrid":
            return c["trips"].ldp.hybrid(c["points"], c["zones"], **kw)
        if method == "evaluate":
            return c["trips"].ldp.evaluate(c["released"], **kw)
        if method == "estimate.visit_counts":
            return c["released"].ldp.estimate.visit_counts(c["points"], zones=c["zones"], **kw)
        if method == "estimate.hotspots":
            return c["released"].ldp.estimate.hotspots(c["points"], zones=c["zones"], **kw)
        if method == "estimate.od_flows":
            return c["released"].ldp.estimate.od_flows(c["points"], c["zones"], **kw)
        raise AssertionError(method)

    return call


def _dask(name: str) -> Callable[..., Any]:
    def call(c: dict[str, Any], **kw: Any) -> Any:
        dask_geopandas = pytest.importorskip("dask_geopandas")
        import geoldp.dask

        ddf = dask_geopandas.from_geopandas(c["trips"], npartitions=2)
        if name == "perturb":
            return geoldp.dask.perturb(ddf, c["points"], **kw).compute()
        return geoldp.dask.report(ddf, c["zones"], **kw).compute()

    return call


#: The parameters a twin does not take (a frame-only option of the in-memory call).
NOT_IN_TWIN = {
    ("dask", "perturb"): {"on_invalid", "user_budget", "select_trips", "n_jobs"},
    ("dask", "report"): {"on_invalid"},
}

TWINS: dict[str, list[tuple[str, Callable[..., Any]]]] = {
    "perturb": [("accessor", _accessor("perturb")), ("dask", _dask("perturb"))],
    "report": [("accessor", _accessor("report")), ("dask", _dask("report"))],
    "synthesize": [("accessor", _accessor("synthesize"))],
    "hybrid": [("accessor", _accessor("hybrid"))],
    "evaluate": [("accessor", _accessor("evaluate"))],
    "estimate.visit_counts": [("accessor", _accessor("estimate.visit_counts"))],
    "estimate.hotspots": [("accessor", _accessor("estimate.hotspots"))],
    "estimate.od_flows": [("accessor", _accessor("estimate.od_flows"))],
}


def _twin_params() -> list[Any]:
    out = []
    for key, twins in TWINS.items():
        for kind, call in twins:
            for bad in CASES[key][1]:
                if bad.param in NOT_IN_TWIN.get((kind, key), set()):
                    continue
                out.append(
                    pytest.param(
                        key, kind, call, bad, id=f"{kind}.{key}-{bad.param}={bad.value!r}", marks=_marks(bad)
                    )
                )
    return out


@pytest.mark.parametrize(("key", "kind", "call", "bad"), _twin_params())
def test_a_twin_refuses_a_bad_value_as_its_callable_does(city, key, kind, call, bad):
    target, _ = CASES[key]
    kwargs = {**target.valid, bad.param: bad.value}
    _check(_raised(lambda: call(city, **kwargs)), bad)


@pytest.mark.parametrize(("key", "kind", "call"), [(k, kind, c) for k, t in TWINS.items() for kind, c in t])
def test_a_twin_valid_call_works(city, key, kind, call):
    target, _ = CASES[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        call(city, **target.valid)


# ------------------------------------------------------------------------------------------------------
# the CLI twin: a bad option value ends with one line naming the option, no traceback


@pytest.fixture(scope="module")
def files(city, tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("cli")
    city["trips"].to_file(d / "T.geojson", driver="GeoJSON")
    city["points"].to_file(d / "P.geojson", driver="GeoJSON")
    geoldp.io.write_file(city["released"], d / "R.gpkg")
    return {"T": str(d / "T.geojson"), "P": str(d / "P.geojson"), "R": str(d / "R.gpkg"), "D": str(d)}


#: ``(command line with {T} TRIPS, {P} POINTS, {R} a release, {O} an output; the option; its bad value)``.
CLI_CASES = [
    ("perturb {T} --points {P} --epsilon 4 -o {O}.geojson", "--epsilon", "nan"),
    ("perturb {T} --points {P} --epsilon 4 -o {O}.geojson", "--epsilon", "-1"),
    ("perturb {T} --points {P} --epsilon 4 -o {O}.geojson", "--epsilon", "four"),
    ("perturb {T} --points {P} --epsilon 4 -o {O}.geojson", "--mechanism", "nope"),
    ("perturb {T} --points {P} --epsilon 4 -o {O}.geojson", "--snap-max-km", "-1"),
    ("perturb {T} --points {P} --epsilon 4 -o {O}.geojson", "--keep-columns", "no_such_column"),
    ("perturb {T} --points {P} --epsilon 4 -o {O}.geojson", "--granularity", "many"),
    ("perturb {T} --points {P} --epsilon 4 -o {O}.geojson", "--seed", "-1"),
    ("report {T} --points {P} --epsilon 4 -o {O}.csv", "--epsilon", "nan"),
    ("report {T} --points {P} --epsilon 4 -o {O}.csv", "--statistic", "nope"),
    ("report {T} --points {P} --epsilon 4 -o {O}.csv", "--oracle", "nope"),
    ("report {T} --points {P} --epsilon 4 -o {O}.csv", "--pad-length", "0"),
    ("report {T} --points {P} --epsilon 4 -o {O}.csv", "--cell-km", "-1"),
    ("synthesize {T} --points {P} --epsilon 4 -o {O}.geojson", "--epsilon", "nan"),
    ("synthesize {T} --points {P} --epsilon 4 -o {O}.geojson", "--grid-size", "0"),
    ("synthesize {T} --points {P} --epsilon 4 -o {O}.geojson", "--quantile", "1.5"),
    ("plan {P} --epsilon 4 --n 100", "--epsilon", "nan"),
    ("plan {P} --epsilon 4 --n 100", "--n", "0"),
    ("plan {P} --epsilon 4 --n 100", "--question", "nope"),
    ("plan {P} --epsilon 4 --n 100", "--population", "nope"),
    ("plan {P} --epsilon 4 --n 100", "--max-length", "0"),
    ("evaluate {T} {R}", "--cell-km", "0"),
    ("evaluate {T} {R}", "--mechanism", "nope"),
    ("points --area 116.3,39.9,116.32,39.92 --grid 500 -o {O}.geojson", "--grid", "-5"),
    ("points --area 116.3,39.9,116.32,39.92 --grid 500 -o {O}.geojson", "--kind", "nope"),
    ("points --area 116.3,39.9,116.32,39.92 --h3 8 -o {O}.geojson", "--h3", "16"),
    ("estimate {R} -o {O}.gpkg", "--n-boot", "-1"),
    ("estimate {R} -o {O}.gpkg", "--layers", "nope"),
    ("collect {T} --design atp --points {P} --epsilon 4 -o {O}.gpkg", "--question", "nope"),
    ("collect {T} --design atp --points {P} --epsilon 4 -o {O}.gpkg", "--epsilon", "0"),
]


def _cli_params() -> list[Any]:
    return [
        pytest.param(line, option, value, id=f"{line.split()[0]} {option} {value}")
        for line, option, value in CLI_CASES
    ]


@pytest.mark.parametrize(("line", "option", "value"), _cli_params())
def test_the_cli_refuses_a_bad_option_value_in_one_line_naming_it(files, tmp_path, line, option, value):
    from geoldp.cli import main

    argv = [a.format(O=str(tmp_path / "out"), **files) for a in line.split()]
    if option in argv:  # replace the valid value
        argv[argv.index(option) + 1] = value
    else:
        argv += [option, value]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    text = err.getvalue()
    assert code in (1, 2), (code, text)
    assert "Traceback" not in text
    lines = text.strip().splitlines()
    errors = [ln for ln in lines if ln.startswith("geoldp: error: ")]
    assert len(errors) == 1 and errors[0] == lines[-1], text
    name = option.lstrip("-")
    assert option in errors[0] or _names_the_parameter(errors[0], name.replace("-", "_")), errors[0]
    assert list((tmp_path).glob("out*")) == []  # nothing written


def test_every_public_name_of_the_table_exists():
    for target, _ in CASES.values():
        obj: Any = geoldp
        for part in target.name.split(".")[1:]:
            obj = getattr(obj, part)
        assert callable(obj), target.name


def test_the_table_covers_the_release_and_planning_callables_of_the_package_root():
    covered = {target.name.split(".")[-1] for target, _ in CASES.values()}
    wanted = {"perturb", "report", "synthesize", "hybrid", "plan", "evaluate", "zone_grid", "combine"}
    wanted |= {"perturb_trajectories", "TP", "ATP", "PointEM", "BudgetAccountant", "PointSet"}
    assert wanted <= covered, wanted - covered
    assert all(name in geoldp.__all__ or name == "perturb" for name in wanted)
