"""The release ledger: one typed object, one reader and one writer of a frame's ledger."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pytest
import shapely

import geoldp
from geoldp._core.ledger import ReleaseLedger, attach, ledger_of, record_problem, require

SRC = Path(__file__).resolve().parents[1] / "src" / "geoldp"


@pytest.fixture(scope="module")
def release() -> gpd.GeoDataFrame:
    pois = geoldp.PointSet([0.0, 0.01, 0.02, 0.03], [0.0, 0.01, 0.0, 0.01])
    trips = gpd.GeoDataFrame(geometry=[shapely.LineString([(0, 0), (0.02, 0)])] * 6, crs="EPSG:4326")
    return trips.ldp.perturb(pois, mechanism="atp", epsilon=3.0, rng=4)


def test_the_record_round_trips_and_stays_json(release):
    led = ledger_of(release)
    assert isinstance(led, ReleaseLedger) and release.ldp.ledger == led
    assert led.mechanism == "atp" and led.epsilon == 3.0 and isinstance(led.release_id, str)
    record = led.record()
    assert json.loads(json.dumps(record)) == record  # the sidecar format: plain JSON
    assert ReleaseLedger.from_record(record) == led
    assert dict(release.attrs["geoldp"]) == record  # the frame keeps exactly the record


def test_replace_never_changes_the_original(release):
    led = ledger_of(release)
    other = led.replace(user_budget={"strategy": "split"}).with_settings(note="x")
    assert led.user_budget is None and "note" not in led.settings
    assert other.record()["user_budget"] == {"strategy": "split"} and other.settings["note"] == "x"


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ([1, 2], "not a JSON object"),
        ({"epsilon": 1.0}, "no 'mechanism'"),
        ({"mechanism": "tp", "epsilon": True}, "'epsilon'"),
        ({"mechanism": "tp", "epsilon": float("nan")}, "'epsilon'"),
        ({"mechanism": "tp", "epsilon": -1.0}, "'epsilon'"),
        ({"mechanism": "tp", "epsilon": 1.0, "options": [1]}, "'options'"),
        ({"mechanism": "tp", "epsilon": 1.0, "unprotected_columns": "a"}, "'unprotected_columns'"),
    ],
)
def test_a_record_that_is_not_a_ledger_is_named(record, problem):
    assert problem in str(record_problem(record))
    with pytest.raises(ValueError, match="is not a geoldp ledger"):
        ReleaseLedger.from_record(record, source="X")


def test_require_names_the_frame_and_the_fix(release):
    with pytest.raises(ValueError, match="The table passed to f carries no geoldp ledger"):
        require(pd.DataFrame({"a": [1]}), what="The table", caller="f")
    with pytest.raises(ValueError, match="is a 'atp' release; expected 'report'"):
        require(release, what="The table", caller="f", mechanism="report")
    assert require(release, what="x", caller="f", mechanism=("tp", "atp")).mechanism == "atp"


def test_attach_writes_a_copy_and_none_removes_it(release):
    frame = pd.DataFrame({"a": [1, 2]})
    led = ledger_of(release)
    attach(frame, led)
    assert ledger_of(frame) == led and ledger_of(frame) is not led
    attach(frame, None)
    assert ledger_of(frame) is None and frame.attrs == {}


def test_concat_of_two_releases_drops_the_ledger_with_a_warning(release):
    other = release.copy()
    attach(other, ledger_of(release).replace(release_id="another"))
    with pytest.warns(geoldp.GeoLDPWarning, match="drops the ledger"):
        both = pd.concat([release, other])
    assert ledger_of(both) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = pd.concat([release.iloc[:3], release.iloc[3:]])  # parts of one release keep it
    assert ledger_of(same) == ledger_of(release)


def test_only_the_ledger_module_touches_a_frames_ledger():
    # one reader and one writer: every other module goes through geoldp._core.ledger
    pattern = re.compile(r"""attrs(\[|\.get\(|\.pop\(|\.setdefault\()\s*["']geoldp["']""")
    offenders = [
        f"{path.relative_to(SRC)}:{n}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "ledger.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line) and "``" not in line and not line.lstrip().startswith(("#", ">>>"))
    ]
    assert offenders == []
