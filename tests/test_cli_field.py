"""``geoldp campaign``, ``respond``, ``ingest``, ``answer`` and ``plan --campaign-out``, as commands."""

from __future__ import annotations

import json

import geopandas as gpd
import numpy as np
import pytest
from field_support import points, trajectory
from shapely.geometry import LineString

from geoldp import cli
from geoldp.field.campaign import Campaign

pytestmark = pytest.mark.filterwarnings("ignore:.*told from no data:geoldp.GeoLDPWarning")
pytest.importorskip("pyogrio")


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path):
    points().to_file(tmp_path / "P.gpkg")
    rng = np.random.default_rng(4)
    trips = gpd.GeoDataFrame(
        {"user": [f"u{i % 30}" for i in range(40)]},
        geometry=[LineString(trajectory(rng, 4)) for _ in range(40)],
        crs="EPSG:4326",
    )
    trips.to_file(tmp_path / "trips.gpkg")
    return tmp_path


@pytest.mark.parametrize("design", ["atp", "report:visited_zone"])
def test_a_whole_campaign_from_the_command_line(files, capsys, design):
    d = files
    code, out, err = run(
        ["campaign", "create", "--design", design, "--epsilon", "2", "--points", d / "P.gpkg",
         "--cell-km", "3",
         "-o", d / "c.json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert out.strip() == str(d / "c.json") and f"design {design}" in err
    cid = Campaign.read(d / "c.json").id
    code, out, _ = run(["campaign", "show", d / "c.json"], capsys)
    assert code == 0 and cid in out
    assert run(["campaign", "verify", d / "c.json"], capsys)[0] == 0
    code, out, err = run(
        ["respond", d / "c.json", d / "trips.gpkg", "--user-col", "user", "-o", d / "r.jsonl"], capsys
    )
    assert code == 0, err
    lines = (d / "r.jsonl").read_text().splitlines()
    assert len(lines) == 40 and json.loads(lines[0])["campaign"] == cid
    code, out, err = run(["ingest", d / "c.json", d / "r.jsonl", "--store", d / "s.gpkg"], capsys)
    assert code == 0, err
    assert "30 stored, 0 already stored, 10 over their user's budget" in out
    code, out, err = run(
        [
            "answer",
            "--store",
            d / "s.gpkg",
            "--campaign",
            cid[:8],
            "--question",
            "zone_visits",
            "-o",
            d / "a.gpkg",
        ],
        capsys,
    )
    assert code == 0, err
    layer = gpd.read_file(d / "a.gpkg")
    assert {"estimate", "lower", "upper", "supported"} <= set(layer.columns) and "30 reports" in err


def test_respond_warns_when_point_rows_look_like_the_fixes_of_longer_trips(files, capsys):
    # each row is one device's trip: GPS fixes without a trip id would each be reported at the full epsilon
    d = files
    assert run(["campaign", "create", "--design", "atp", "--epsilon", "2", "--points", d / "P.gpkg",
                "-o", d / "c.json"], capsys)[0] == 0  # fmt: skip
    xy = np.concatenate([trajectory(np.random.default_rng(5), 4) for _ in range(3)])
    fixes = gpd.GeoDataFrame(
        {"time": np.arange(len(xy)) * np.timedelta64(1, "m") + np.datetime64("2024-05-01T08:00")},
        geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]),
        crs="EPSG:4326",
    )
    fixes.to_file(d / "fixes.gpkg")
    code, _, err = run(["respond", d / "c.json", d / "fixes.gpkg", "-o", d / "r.jsonl"], capsys)
    assert code == 0, err
    assert (
        "PrivacyWarning" in err and "geoldp respond have no trajectory id" in err and "geoldp prepare" in err
    )
    fixes.drop(columns="time").iloc[:2].to_file(d / "check-ins.gpkg")  # nothing says they are fixes
    code, _, err = run(["respond", d / "c.json", d / "check-ins.gpkg", "-o", d / "r2.jsonl"], capsys)
    assert code == 0 and "warning" not in err, err


def test_a_pilot_campaign_feeds_the_planner_from_the_command_line(files, capsys):
    # a pilot answers no question: geoldp answer writes its reports as the PILOT.csv of geoldp plan --pilot
    d = files
    zones = ["--points", d / "P.gpkg", "--cell-km", "3"]
    create = ["campaign", "create", "--design", "pilot", "--epsilon", "2", *zones, "-o", d / "c.json"]
    code, _, err = run(create, capsys)
    assert code == 0, err
    assert (
        run(["respond", d / "c.json", d / "trips.gpkg", "--user-col", "user", "-o", d / "r.jsonl"], capsys)[0]
        == 0
    )
    assert run(["ingest", d / "c.json", d / "r.jsonl", "--store", d / "s.gpkg"], capsys)[0] == 0
    cid = Campaign.read(d / "c.json").id[:8]
    answer = ["answer", "--store", d / "s.gpkg", "--campaign", cid]
    code, _, err = run([*answer, "--question", "zone_visits", "-o", d / "p.csv"], capsys)
    assert code == 2 and "answers no question" in err
    code, _, err = run([*answer, "-o", d / "p.gpkg"], capsys)
    assert code == 2 and ".csv" in err
    code, out, err = run([*answer, "-o", d / "p.csv"], capsys)
    assert code == 0, err
    assert out.split() == [str(d / "p.csv"), str(d / "p.csv.ledger.json")] and "30 pilot reports" in err
    code, out, err = run(["plan", d / "P.gpkg", "--epsilon", "2", "--n", "30", "--pilot", d / "p.csv",
                          "--cell-km", "3", "--seed", "0"], capsys)  # fmt: skip
    assert code == 0, err
    assert "recommended:" in out


def test_refusals_are_one_line_with_the_right_status(files, capsys):
    d = files
    Campaign.create("tp", epsilon=2.0, points=points(), max_points=8).write(d / "c.json")
    code, _, err = run(
        [
            "campaign",
            "create",
            "--design",
            "tp",
            "--epsilon",
            "2",
            "--points",
            d / "P.gpkg",
            "-o",
            d / "c.json",
        ],
        capsys,
    )
    assert code == 1 and "already exists" in err and "--overwrite" in err and "Traceback" not in err
    code, _, err = run(["campaign", "create", "--design", "hybrid:tracs-d+report@0.5", "--epsilon", "2",
                        "--points", d / "P.gpkg",
                        "-o", d / "x.json"], capsys)  # fmt: skip
    assert code == 1 and "cannot be run as a campaign" in err and err.count("\n") == 1, err
    (d / "bad.json").write_text("{}")
    code, _, err = run(["campaign", "show", d / "bad.json"], capsys)
    assert code == 1 and "bad.json' is not a geoldp campaign" in err
    (d / "r.jsonl").write_text('{"not": "a record"}\n')
    code, out, err = run(["ingest", d / "c.json", d / "r.jsonl", "--store", d / "s.gpkg"], capsys)
    assert (
        code == 1 and f"refused: {d / 'r.jsonl'}:1: not a geoldp report record" in err and "1 refused" in out
    )
    code, _, err = run(["answer", "--store", d / "s.gpkg", "--campaign", "ffff", "-o", d / "a.gpkg"], capsys)
    assert code == 1 and "no campaign with the id 'ffff'" in err
    code, _, err = run(
        ["answer", "--store", d / "none.gpkg", "--campaign", "ffff", "-o", d / "a.gpkg"], capsys
    )
    assert code == 1 and "does not exist" in err
    long = gpd.GeoDataFrame(geometry=[LineString(trajectory(np.random.default_rng(1), 9))], crs="EPSG:4326")
    long.to_file(d / "long.gpkg")
    code, _, err = run(["respond", d / "c.json", d / "long.gpkg", "-o", d / "l.jsonl"], capsys)
    assert code == 1 and "row position 0 of TRIPS" in err and "at most 8" in err
    assert not (d / "l.jsonl").exists()  # nothing half-written


def test_plan_writes_the_recommended_designs_campaign(files, capsys):
    d = files
    # few users: no design beats the no-data baselines, so there is no campaign to write
    code, out, err = run(
        ["plan", d / "P.gpkg", "--epsilon", "2", "--n", "50", "--lengths", "2", "--cell-km", "3",
         "--seed", "1", "--campaign-out", d / "none.json"],
        capsys,
    )  # fmt: skip
    assert "no design beats" in out
    errors = [line for line in err.splitlines() if line.startswith("geoldp: error:")]
    assert code == 1 and len(errors) == 1 and "no campaign written" in errors[0], err
    assert not (d / "none.json").exists()
    code, out, err = run(
        ["plan", d / "P.gpkg", "--epsilon", "8", "--n", "20000", "--lengths", "2", "--cell-km", "3",
         "--seed", "1",
         "--campaign-out", d / "c.json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    c = Campaign.read(d / "c.json")
    recommended = out.split("recommended: ")[1].split()[0]
    assert c.design_name == recommended and str(d / "c.json") in out and c.epsilon == 8.0
    assert c.zones() is not None and len(c.zones()) > 0


def test_ldptrace_two_rounds_from_the_command_line(files, capsys):
    """Create, respond, ingest, next-round, respond, ingest, answer; each refusal one line, no traceback."""
    d = files
    create = ["campaign", "create", "--design", "ldptrace", "--epsilon", "4", "--points", d / "P.gpkg"]
    code, out, err = run([*create, "--cell-km", "3", "-o", d / "r1.json"], capsys)
    assert code == 0 and "LDPTrace round 1" in err, err
    r1 = Campaign.read(d / "r1.json")
    for rnd in (1, 2):
        if rnd == 2:
            code, out, err = run(
                ["campaign", "next-round", d / "r1.json", "--store", d / "s.gpkg", "-o", d / "r2.json"],
                capsys,
            )
            assert code == 0 and "LDPTrace round 2" in err and out.strip() == str(d / "r2.json"), err
        c = d / f"r{rnd}.json"
        code, _, err = run(["respond", c, d / "trips.gpkg", "--user-col", "user", "--seed", "1",
                            "-o", d / f"r{rnd}.jsonl"], capsys)  # fmt: skip
        assert code == 0, err
        code, out, err = run(["ingest", c, d / f"r{rnd}.jsonl", "--store", d / "s.gpkg"], capsys)
        assert code == 0 and "30 stored, 10 already stored, 0 over" in out, (out, err)  # 30 users
    r2 = Campaign.read(d / "r2.json")
    assert r2.document["parameters"]["round1"] == r1.id
    code, out, err = run(["answer", "--store", d / "s.gpkg", "--campaign", r2.id[:8], "--seed", "3",
                          "-o", d / "syn.gpkg"], capsys)  # fmt: skip
    assert code == 0 and "30 synthetic trajectories" in err, err
    syn = gpd.read_file(d / "syn.gpkg")
    assert len(syn) == 30 and (syn.geom_type == "LineString").all()
    code, out, err = run(["answer", "--store", d / "s.gpkg", "--campaign", r2.id[:8], "--question",
                          "zone_visits", "--n-synthetic", "100", "-o", d / "zv.gpkg"], capsys)  # fmt: skip
    assert code == 0 and "estimate" in gpd.read_file(d / "zv.gpkg").columns, err
    refusals = [
        (["answer", "--store", d / "s.gpkg", "--campaign", r1.id[:8], "-o", d / "x.gpkg"], "round 1"),
        (
            ["campaign", "next-round", d / "r2.json", "--store", d / "s.gpkg", "-o", d / "r3.json"],
            "first round",
        ),
        (["campaign", "next-round", d / "r1.json", "--store", d / "none.gpkg", "-o", d / "r3.json"], "exist"),
        (["ingest", d / "r2.json", d / "r2.jsonl", "--store", d / "other.gpkg"], "does not hold the round 1"),
        (["ingest", d / "r2.json", d / "r1.jsonl", "--store", d / "s.gpkg"], "refused"),
    ]
    for args, match in refusals:
        code, out, err = run(args, capsys)
        assert code == 1 and match in out + err and "Traceback" not in err, (args, out, err)
    code, _, err = run(["answer", "--store", d / "s.gpkg", "--campaign", r2.id[:8], "--n-synthetic", "0",
                        "-o", d / "y.gpkg"], capsys)  # fmt: skip
    assert code == 2 and "--n-synthetic" in err


def test_plan_campaign_out_writes_ldptraces_first_round(files, capsys):
    """When the planner recommends LDPTrace, --campaign-out writes its round 1 and says what comes next."""
    import argparse
    import io

    from geoldp import designs
    from geoldp.cli import field as cli_field

    d = files
    args = argparse.Namespace(campaign_out=str(d / "ldp.json"), overwrite=False, epsilon=4.0)
    err = io.StringIO()
    path = cli_field.campaign_from_plan(args, designs.design("ldptrace"), points(), None, err)
    c = Campaign.read(path)
    assert c.document["kind"] == "ldptrace" and c.document["parameters"]["round"] == 1
    assert c.document["parameters"]["total_epsilon"] == 4.0 and "campaign next-round" in err.getvalue()
