"""Campaign files: content-addressed, versioned, refused when anything else; built from a design."""

from __future__ import annotations

import json

import numpy as np
import pytest
from field_support import campaign, points, zones

from geoldp import _campaign_doc as doc
from geoldp.campaign import Campaign
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
        Campaign.create("ldptrace", epsilon=2.0, points=points(), zones=zones())
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
