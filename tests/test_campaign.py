"""Campaign files: content-addressed, versioned, refused when anything else; built from a design."""

from __future__ import annotations

import json

import numpy as np
import pytest
from field_support import campaign, points, zones

from geoldp import _campaign_doc as doc
from geoldp import client
from geoldp.field.campaign import Campaign
from geoldp.trajectory._fast import driver

pytestmark = pytest.mark.filterwarnings("ignore:.*told from no data:geoldp.GeoLDPWarning")


@pytest.mark.parametrize("name", ["atp", "tp", "pointem", "report:visited_zone", "report:od:eb"])
def test_write_read_round_trip_is_byte_identical(tmp_path, name):
    c = campaign(name)
    path = c.write(tmp_path / "c.json")
    again = Campaign.read(path)
    assert again == c and again.id == c.id == doc.campaign_id(c.document)
    assert again.to_bytes() == path.read_bytes()
    assert again.design().name == name
    assert again.ledger == {name: 2.0}


def test_the_id_is_the_content_same_configuration_same_id():
    a = Campaign.create("atp", epsilon=2.0, points=points(), zones=zones(), max_points=16)
    assert a.id == campaign("atp").id
    b = Campaign.create("atp", epsilon=2.5, points=points(), zones=zones(), max_points=16)
    assert b.id != a.id


def test_write_never_overwrites_by_surprise(tmp_path):
    path = campaign("tp").write(tmp_path / "c.json")
    with pytest.raises(ValueError, match="campaign file .* already exists.*overwrite=True"):
        campaign("atp").write(path)
    campaign("atp").write(path, overwrite=True)
    assert Campaign.read(path).design_name == "atp"


def _redigest(document: dict) -> None:
    document["id"] = doc.campaign_id(document)


def _edited(tmp_path, edit) -> str:
    document = json.loads(campaign("tp").to_bytes())
    edit(document)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    return str(path)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda d: d.update(version=2), "format version 2"),
        (lambda d: d.update(format="other"), "is not a geoldp campaign"),
        (lambda d: d.update(epsilon=20.0), "does not match its id"),
        (lambda d: d.update(extra=1), "unknown member"),
        (lambda d: d["points"].update(lon=d["points"]["lon"][:-1]), "does not match its id"),
        (lambda d: (d["points"].update(lon=d["points"]["lon"][:-1]), _redigest(d)), "values in 'points.lat'"),
        (lambda d: d.pop("ledger"), "lacks the member"),
    ],
)
def test_readers_refuse_anything_else_naming_the_file(tmp_path, edit, match):
    path = _edited(tmp_path, edit)
    with pytest.raises(ValueError, match=match) as info:
        Campaign.read(path)
    assert "bad.json" in str(info.value)


def test_a_consistent_forgery_is_refused_by_its_digests(tmp_path):
    def forge(d):
        d["points"]["lon"][0] += 1e-9  # P moved, digest and id recomputed: the points digest still fails
        d["id"] = doc.campaign_id(d)

    with pytest.raises(ValueError, match="do not match their digest"):
        Campaign.read(_edited(tmp_path, forge))


def test_not_json_and_missing_files(tmp_path):
    (tmp_path / "x.json").write_text("{nope")
    with pytest.raises(ValueError, match=r"'.*x\.json' is not a JSON campaign file"):
        Campaign.read(tmp_path / "x.json")
    (tmp_path / "nan.json").write_text('{"a": NaN}')
    with pytest.raises(ValueError, match="NaN"):
        Campaign.read(tmp_path / "nan.json")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Campaign.read(tmp_path / "none.json")


def test_create_refuses_designs_without_a_per_user_randomiser_and_bad_parameters():
    with pytest.raises(ValueError, match="cannot be run as a campaign"):
        Campaign.create("hybrid:tracs-d+report@0.5", epsilon=2.0, points=points(), zones=zones())
    with pytest.raises(ValueError, match="pass points=P"):
        Campaign.create("atp", epsilon=2.0)
    with pytest.raises(ValueError, match="pass zones"):
        Campaign.create("report:visited_zone", epsilon=2.0, points=points())
    with pytest.raises(ValueError, match="'epsilon'"):
        Campaign.create("atp", epsilon=-1.0, points=points())
    with pytest.raises(ValueError, match="below 'epsilon'"):
        Campaign.create("atp", epsilon=2.0, points=points(), user_total_epsilon=1.0)
    with pytest.raises(ValueError, match="max_points"):
        Campaign.create("atp", epsilon=2.0, points=points(), max_points=0)


def test_public_arrays_are_geoldps_and_verify_recomputes_them(tmp_path):
    c = campaign("atp")
    c.verify()
    assert c.document["client"]["region_tol"] == driver._REGION_TOL_PT
    assert c.document["points"]["diameter_m"] == c.points().diameter_m

    def forge(d):  # a smaller diameter (weaker privacy), consistently re-digested
        d["points"]["diameter_m"] /= 2
        d["id"] = doc.campaign_id(d)

    document = json.loads(c.to_bytes())
    forge(document)
    with pytest.raises(ValueError, match=r"\['points'\] differ"):
        Campaign(document).verify()


def test_zones_are_kept_in_wgs84_and_read_back():
    z = zones().to_crs(3857)
    c = Campaign.create("report:visited_zone", epsilon=2.0, points=points(), zones=z)
    back = c.zones()
    assert back.crs.to_epsg() == 4326 and len(back) == len(z)
    assert np.allclose(back.total_bounds, zones().total_bounds, atol=1e-9)


def test_every_length_up_to_max_points_has_its_stage_budgets():
    c = Campaign.create("atp", epsilon=2.0, points=points(), max_points=5)
    rows = c.document["client"]["lengths"]
    assert rows[0] is None and len(rows) == 6
    assert rows[1] == [2.0]  # one point: one EM at the whole budget
    assert all(len(r) == 2 and len(r[0]) == 7 for r in rows[2:])  # two copies, seven stage values each


@pytest.mark.parametrize(
    "name", ["tracs-d", "tracs-c", "hybrid:atp+report@0.5", "hybrid:atp+report:ivw@0.75"]
)
def test_tracs_and_hybrid_campaigns_round_trip_and_verify(tmp_path, name):
    c = campaign(name, 4.0)
    again = Campaign.read(c.write(tmp_path / "c.json"))
    assert again == c and again.design().name == name
    again.verify()
    assert sum(c.ledger.values()) <= 4.0


def test_every_design_the_planner_recommends_has_a_campaign():
    from geoldp import designs
    from geoldp.planner import DESIGNS

    for name in DESIGNS:
        for question in ("zone_visits", "od_flows"):
            des = designs.design(name, question=question)
            c = Campaign.create(des, epsilon=2.0, points=points(), zones=zones(), max_points=4)
            assert c.design() == des, (name, question)
            if name == "ldptrace":  # its first round: the length reports
                assert c.document["kind"] == "ldptrace" and c.document["parameters"]["round"] == 1


def _hybrid_record(c: Campaign) -> dict:
    return client.respond(c, np.array([[116.31, 39.91], [116.39, 39.99]]), user="u", rng=1)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda r: r["report"].pop("report"), "a hybrid report is"),
        (
            lambda r: r["report"]["trajectory"].update(points=[10**6]),
            r"trajectory part.*public point indices",
        ),
        (lambda r: r["report"]["report"].update(value=10**6), r"report part.*k-RR report"),
    ],
)
def test_a_hybrid_record_is_checked_part_by_part(edit, match):
    c = campaign("hybrid:atp+report@0.5", 2.0)
    record = _hybrid_record(c)
    assert doc.check_record(record, c.document, where="line 1") is record
    edit(record)
    with pytest.raises(ValueError, match=match):
        doc.check_record(record, c.document, where="line 1")


def test_a_hybrid_whose_parts_overspend_is_refused(tmp_path):
    c = campaign("hybrid:atp+report@0.5", 2.0)
    document = json.loads(c.to_bytes())
    document["parameters"]["report"]["epsilon"] = 2.0  # 2 + 2 > 2, consistently re-digested
    _redigest(document)
    with pytest.raises(ValueError, match="add up to more than its 'epsilon'"):
        Campaign(document)


def test_a_tracs_campaign_refuses_a_malformed_plane():
    document = json.loads(campaign("tracs-d", 4.0).to_bytes())
    document["client"]["plane"]["lat_0"] = 95.0
    _redigest(document)
    with pytest.raises(ValueError, match="malformed 'client.plane'"):
        Campaign(document)


def test_the_parts_of_a_hybrid_are_campaigns_of_their_own_kind():
    c = campaign("hybrid:atp+report@0.5", 2.0)
    traj, rep = c.part("trajectory"), c.part("report")
    assert (traj.epsilon, rep.epsilon) == (1.0, 1.0) and traj.id == rep.id == c.id
    assert traj.document["client"] == c.document["client"] and rep.document["parameters"]["oracle"] == "krr"
    record = client.respond(c, np.array([[116.31, 39.91], [116.39, 39.99]]), user="u", rng=1)
    for kind, part in (("trajectory", traj), ("report", rep)):
        doc._check_payload(record["report"][kind], part.document, "line 1")
    assert campaign("atp").part("trajectory") is campaign("atp")
    with pytest.raises(ValueError, match="'kind' parameter"):
        campaign("atp").part("report")
