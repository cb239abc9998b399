"""Ingest: records checked against their campaign, each user charged once per record in one transaction.

Every test runs on SQLite and, where ``GEOLDP_TEST_POSTGRES_URL`` names a server, on PostgreSQL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import geopandas as gpd
import numpy as np
import pytest
from field_support import campaign, trajectory
from shapely.geometry import LineString

from geoldp import _campaign_doc as doc
from geoldp import client, designs, ledger_of
from geoldp.field.ingest import answer, ingest, release_of, stored_campaign
from geoldp.store import Report, Store

ROOT = Path(__file__).resolve().parents[1]
CLEAN = {
    "budget_mismatch": 0,
    "overspent": 0,
    "report_without_spend": 0,
    "spend_without_report": 0,
    "duplicate_reports": 0,
}
pytestmark = pytest.mark.filterwarnings("ignore:.*told from no data:geoldp.GeoLDPWarning")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(client.to_json_line(r) + "\n" for r in records))
    return path


def _records(c, users: int, per_user: int, seed: int = 0, min_points: int = 1) -> list[dict]:
    rng = np.random.default_rng(seed)
    device = client.Client(c)
    seeds = iter(np.random.SeedSequence(seed).spawn(users * per_user))
    return [
        device.respond(trajectory(rng, int(rng.integers(min_points, 6))), user=f"user-{u}", rng=next(seeds))
        for u in range(users)
        for _ in range(per_user)
    ]


@pytest.mark.parametrize("name", ["atp", "report:visited_zone"])
def test_ingest_charges_each_user_once_per_record(store_target, tmp_path, name):
    c = campaign(name, 2.0, 4.0)  # each user may send two reports
    recs = _records(c, users=10, per_user=3)
    # four records sent twice: user-0's first two and user-1's first are stored once, user-0's third is over
    f = _write(tmp_path / "a.jsonl", recs + recs[:4])
    summary = ingest(c, [f], store=store_target, batch=7)
    assert (summary.stored, summary.duplicates, summary.over_budget, summary.refused) == (20, 3, 11, [])
    again = ingest(c, [f], store=store_target)
    assert (again.stored, again.duplicates, again.over_budget) == (0, 23, 11)
    with Store.open(store_target) as store:
        assert store.verify() == CLEAN
        assert set(store.spent().values()) == {4}
        assert store.count("geoldp_reports") == 20
        assert stored_campaign(store, c.id[:8]) == c


def _bad_lines(c, other) -> list[tuple[str, str]]:
    good = client.respond(c, np.array([[116.35, 39.95]]), user="u", rng=1)

    def edit(**kw):
        return json.dumps({**good, **kw})

    return [
        ("{not json", "not a JSON report record"),
        ("[1, 2]", "not a report record"),
        (json.dumps({**good, "version": 2}), "not a geoldp report record of version 1"),
        (json.dumps({k: v for k, v in good.items() if k != "rng"}), r"missing \['rng'\]"),
        (edit(extra=1), r"unknown \['extra'\]"),
        (
            client.to_json_line(client.respond(other, np.array([[116.35, 39.95]]), user="u", rng=1)),
            "another campaign",
        ),
        (edit(design="tp"), "a record of design 'tp'"),
        (edit(epsilon=3.0), "at epsilon 3.0"),
        (edit(record_id="xyz"), "record_id"),
        (edit(user=""), "'user'"),
        (edit(report={"points": [0, 10_000]}), "indices of public points|public point indices"),
        (edit(report={"points": []}), "public point indices"),
        ('{"a": NaN}', "NaN"),
    ]


def test_malformed_and_foreign_records_are_refused_with_file_and_line(tmp_path):
    c, other = campaign("atp"), campaign("atp", 2.5)
    lines = _bad_lines(c, other)
    good = client.to_json_line(client.respond(c, np.array([[116.35, 39.95]]), user="v", rng=2))
    f = tmp_path / "mixed.jsonl"
    f.write_text(good + "\n\n" + "".join(line + "\n" for line, _ in lines))
    summary = ingest(c, [f], store=tmp_path / "s.gpkg")
    assert summary.stored == 1 and len(summary.refused) == len(lines)
    for refusal, (_, match), number in zip(summary.refused, lines, range(3, 3 + len(lines)), strict=True):
        assert refusal.file == str(f) and refusal.line == number
        assert pytest.importorskip("re").search(match, refusal.reason), (refusal, match)
        assert str(refusal).startswith(f"{f}:{number}: ")


@pytest.mark.parametrize(
    ("name", "payload", "match"),
    [
        ("report:visited_zone", {"value": 99}, "k-RR report"),
        ("report:od", {"bits": "00"}, "OUE report"),
        ("report:od", {"value": 1}, "OUE report"),
    ],
)
def test_report_payloads_outside_the_domain_are_refused(tmp_path, name, payload, match):
    c = campaign(name, 4.0 if name == "report:visited_zone" else 2.0)
    rec = {**client.respond(c, np.array([[116.35, 39.95]]), user="u", rng=1), "report": payload}
    with pytest.raises(ValueError, match=match):
        doc.check_record(rec, c.document, where="r.jsonl:1")


def test_ingest_refuses_a_store_for_another_total(tmp_path):
    Store.open(tmp_path / "s.gpkg", total_epsilon=9.0).close()
    f = _write(tmp_path / "a.jsonl", _records(campaign("tp"), 1, 1))
    with pytest.raises(ValueError, match="keeps a total of 9 per user, not 2"):
        ingest(campaign("tp"), [f], store=tmp_path / "s.gpkg")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ingest(campaign("tp"), [tmp_path / "none.jsonl"], store=tmp_path / "s.gpkg")


@pytest.mark.parametrize(
    ("name", "question"),
    [
        ("atp", "zone_visits"),
        ("report:visited_zone", "hotspots"),
        ("report:od", "od_flows"),
        ("hybrid:atp+report@0.5", "zone_visits"),
        ("hybrid:atp+report:ivw@0.25", "zone_visits"),
    ],
)
def test_answer_reads_the_stored_reports_through_the_design(tmp_path, name, question):
    c = campaign(name, 2.0)
    # one to five points per device: a one-point trajectory is a Point row among the LineStrings, which
    # the inverse-variance hybrid's model (geoldp.estimate) reads as a trajectory of length 1
    recs = _records(c, users=40, per_user=1, seed=3)
    if "ivw" in name:  # the case this covers is there
        assert min(len(r["report"]["trajectory"]["points"]) for r in recs) == 1
    store = tmp_path / "s.gpkg"
    ingest(c, [_write(tmp_path / "a.jsonl", recs)], store=store)
    table = answer(store, c.id[:10], question)
    st = Store.open(store)
    try:  # the store's order: a model-based answer (the inverse-variance hybrid) depends on the order
        payloads = [payload for _, payload, _ in st.reports(c.id)]
    finally:
        st.close()
    assert sorted(payloads) == sorted(doc.canonical(r["report"]).decode() for r in recs)
    released = release_of(c, payloads)
    expected = designs.design(name).answer(released, question, points=c.points(), zones=c.zones())
    assert table.attrs["reports"] == 40 and table.attrs["design"] == name
    np.testing.assert_array_equal(table["estimate"].to_numpy(), expected["estimate"].to_numpy())
    again = answer(store, c.id, question)  # unseeded analyses are reproducible
    np.testing.assert_array_equal(again["estimate"].to_numpy(), table["estimate"].to_numpy())
    assert list(table.index) == list(expected.index)
    with pytest.raises(ValueError, match="no campaign with the id"):
        answer(store, "ffff", question)


def test_a_campaign_whose_users_had_no_budget_left_says_why_it_has_no_answer(tmp_path):
    # one store keeps each user's total across campaigns: a second campaign to the same users stores nothing
    store = tmp_path / "s.gpkg"
    first, second = campaign("tp", 2.0), campaign("report:visited_zone", 2.0)
    assert ingest(first, [_write(tmp_path / "a.jsonl", _records(first, 5, 1))], store=store).stored == 5
    summary = ingest(second, [_write(tmp_path / "b.jsonl", _records(second, 5, 1))], store=store)
    assert (summary.stored, summary.over_budget) == (0, 5)
    with pytest.raises(ValueError, match="no reports of the campaign .* no budget left in this store"):
        answer(store, second, "zone_visits")


def test_a_pilot_campaign_answers_with_its_reports_for_the_planner(tmp_path):
    # a pilot answers no question: its answer is its reports, with the ledger the central pilot writes
    from geoldp.designs import Pilot

    c = campaign("pilot", 2.0)
    recs = _records(c, users=30, per_user=1, seed=4, min_points=2)
    store = tmp_path / "s.gpkg"
    ingest(c, [_write(tmp_path / "a.jsonl", recs)], store=store)
    with pytest.raises(ValueError, match="answer no question"):
        answer(store, c, "zone_visits")
    table = answer(store, c.id[:8])
    assert table.attrs["reports"] == 30
    assert sorted(map(tuple, table.to_numpy().tolist())) == sorted(
        tuple(r["report"][k] for k in table.columns) for r in recs
    )
    central = c.design().release(
        gpd.GeoDataFrame(geometry=[LineString(trajectory(np.random.default_rng(1), 3))], crs="EPSG:4326"),
        epsilon=2.0,
        zones=c.zones(),
        rng=0,
    )
    assert list(table.columns) == list(central.columns)
    field_led, central_led = ledger_of(table), ledger_of(central)
    assert (
        field_led.mechanism == central_led.mechanism == "pilot" and field_led.epsilon == central_led.epsilon
    )
    for key in ("split", "length_edges", "zone_edges", "coarse_cells", "zones_digest"):
        assert field_led.settings[key] == central_led.settings[key], key
    estimate = Pilot.of_reports(table).estimate(table, c.zones())  # what geoldp.plan(pilot=...) reads
    assert estimate.n == 30 and np.isclose(estimate.length_pmf.sum(), 1.0)


# ------------------------------------------------------------------------------------------------------
# processes


INGEST = """
import json, sys
from geoldp.field.ingest import ingest
s = ingest(sys.argv[1], sys.argv[3:], store=sys.argv[2], batch=int(sys.argv[2 + 0] and 50))
print(json.dumps([s.stored, s.duplicates, s.over_budget, len(s.refused)]))
"""


def test_concurrent_ingest_processes_never_overspend_nor_lose_a_record(store_target, tmp_path):
    c = campaign("report:visited_zone", 2.0, 4.0)
    path = c.write(tmp_path / "c.json")
    recs = _records(c, users=60, per_user=4, seed=5)  # 240 records; 120 fit the users' budgets
    files = []
    for k in range(4):  # each process sends its quarter and a quarter of another's: every record twice
        mine = recs[k::4] + recs[(k + 1) % 4 :: 4]
        files.append(str(_write(tmp_path / f"p{k}.jsonl", mine)))
    Store.open(store_target, total_epsilon=4.0).close()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", INGEST, str(path), store_target, f],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in files
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        outs.append(json.loads(out))
    stored = sum(o[0] for o in outs)
    with Store.open(store_target) as store:
        assert store.verify() == CLEAN
        assert max(store.spent().values()) == 4  # every budget filled, never passed
        assert store.count("geoldp_reports") == stored == 120  # none lost, none twice
        digests = {d for d, _, _ in store.reports(c.id)}
    assert digests <= {doc.record_digest(r) for r in recs}


KILLED = """
import sys
from geoldp.field.ingest import ingest
print("ready", flush=True)
ingest(sys.argv[1], [sys.argv[3]], store=sys.argv[2], batch=2)
"""


def test_kill_9_during_ingest_leaves_every_record_with_its_spend(store_target, tmp_path):
    c = campaign("report:visited_zone", 2.0, 1000.0)
    path = c.write(tmp_path / "c.json")
    template = _records(c, users=1, per_user=1, seed=6)[0]  # valid records, cheaply: new ids and users
    recs = [{**template, "record_id": f"{i:032x}", "user": f"user-{i % 100}"} for i in range(2000)]
    f = _write(tmp_path / "all.jsonl", recs)
    Store.open(store_target, total_epsilon=1000.0).close()
    partial: list[int] = []
    for trial, delay in enumerate(np.random.default_rng(38).uniform(0.0, 0.3, size=4)):
        with Store.open(store_target) as store:
            before = store.count("geoldp_reports")
        child = subprocess.Popen(
            [sys.executable, "-c", KILLED, str(path), store_target, str(f)],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 120
        with Store.open(store_target) as store:  # the child is writing: then kill it at a random moment
            while (
                store.count("geoldp_reports") == before
                and time.monotonic() < deadline
                and child.poll() is None
            ):
                time.sleep(0.01)
        time.sleep(float(delay))
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
        with Store.open(store_target) as store:
            assert store.verify() == CLEAN, trial
            partial.append(store.count("geoldp_reports"))
    assert any(0 < n < len(recs) for n in partial), partial  # some kill landed mid-ingest
    summary = ingest(c, [f], store=store_target)  # the rest goes in; what was in is not charged again
    with Store.open(store_target) as store:
        assert store.verify() == CLEAN
        assert store.count("geoldp_reports") == len(recs) == summary.stored + summary.duplicates
        assert set(store.spent().values()) == {40}


def _mutations(record: dict) -> list[dict]:
    """Records one edit away from a valid one: wrong types, values at and past every limit."""
    out = []
    for key, values in {
        "format": ["geoldp.reports", None],
        "version": [True, 1.0, 2, "1"],
        "campaign": ["0" * 64, None],
        "design": ["tp", None],
        "epsilon": [int(record["epsilon"]), record["epsilon"] + 1e-9, True, None],
        "record_id": ["A" * 32, "0" * 31, "0" * 33, 7],
        "user": ["", " ", "\t", "u" * 256, "u" * 257, 7, None],
        "rng": ["numpy", ["seeded"], None],
    }.items():
        out += [{**record, key: v} for v in values]
    out += [{k: v for k, v in record.items() if k != key} for key in record]  # each member missing
    out += [{**record, "extra": 1}, [record], "record", None]
    payload = record["report"]
    edits: list = [None, [], {}, {**payload, "extra": 1}]
    for key, value in payload.items():
        if isinstance(value, list):  # trajectory indices
            edits += [
                {key: []},
                {key: value + [True]},
                {key: value + [1.0]},
                {key: value + [-1]},
                {key: value + [199]},
                {key: value + [200]},
                {key: [0] * 16},
                {key: [0] * 17},
                {key: value + ["1"]},
            ]
        elif isinstance(value, str):  # OUE bits
            edits += [
                {key: value.upper()},
                {key: value[:-2]},
                {key: value + "00"},
                {key: value[:-2] + "ff"},
                {key: value[:-2] + "0f"},
                {key: value[:-2] + "f0"},
                {key: value[:-2] + "g0"},
            ]
        else:
            edits += [{**payload, key: v} for v in (True, 1.0, -1, 9, 10, 11, 2**32 - 1, 2**32, "1", None)]
    out += [{**record, "report": e} for e in edits]
    return out


@pytest.mark.parametrize(
    ("name", "oracle"),
    [("atp", None), ("report:visited_zone", None), ("report:od", None), ("report:visited_zone", "olh")],
)
def test_the_quick_check_accepts_only_what_the_full_check_accepts(name, oracle):
    from geoldp.field.ingest import _quick_check

    c = campaign(name, 2.0)
    document = c.document
    good = client.respond(c, np.array([[116.35, 39.95], [116.36, 39.97]]), user="u", rng=1)
    if oracle is not None:  # a campaign whose oracle is OLH: the document edited (the checks read it only)
        document = {**document, "parameters": {**document["parameters"], "oracle": oracle}}
        good = {**good, "report": {"seed": 12345, "value": 3}}
    quick = _quick_check(document)
    # the quick path is the one valid records take, and writes the canonical text of the payload
    assert quick(good) == doc.canonical(good["report"]).decode("utf-8")
    records = _mutations(good)
    accepted = 0
    for record in records:
        text = quick(record)
        try:
            doc.check_record(record, document, where="r.jsonl:1")
        except ValueError:
            assert text is None, record  # refused by the full check: never accepted by the quick one
            continue
        accepted += 1
        assert text in (None, doc.canonical(record["report"]).decode("utf-8")), record
    assert 0 < accepted < len(records)  # the edits hold valid records and invalid ones


def test_a_batch_refuses_each_record_as_records_taken_one_at_a_time(store_target, tmp_path):
    """A duplicate, an over-budget user and malformed lines inside one transaction's batch: the same
    outcomes, refusals (line and reason) and stored records as with one record per transaction."""
    c = campaign("report:visited_zone", 2.0, 4.0)  # two records per user
    recs = _records(c, users=6, per_user=3, seed=7)  # user-k's third record is over budget
    good = client.respond(c, np.array([[116.35, 39.95]]), user="v", rng=2)
    lines = [client.to_json_line(r) for r in recs[:8]]
    lines += [
        client.to_json_line(recs[0]),  # a duplicate of line 1 in the same batch
        "{not json",
        json.dumps({**good, "report": {"value": 99}}),  # outside the domain
        json.dumps({**good, "epsilon": 3.0}),
        "",  # blank: skipped, still counted as a line
    ]
    lines += [client.to_json_line(r) for r in recs[8:]]
    lines.append(json.dumps({**good, "user": " "}))
    f = tmp_path / "batch.jsonl"
    f.write_text("".join(line + "\n" for line in lines))
    results = []
    for k, batch in enumerate((1000, 1)):
        target = store_target if k == 0 else str(tmp_path / "one-by-one.gpkg")
        summary = ingest(c, [f], store=target, batch=batch)
        with Store.open(target) as store:
            assert store.verify() == CLEAN
            kept = sorted(d for d, _, _ in store.reports(c.id))
            spent = store.spent()
        refusals = [(r.line, r.reason) for r in summary.refused]
        results.append((summary.stored, summary.duplicates, summary.over_budget, refusals, kept, spent))
    assert results[0] == results[1]
    stored, duplicates, over, refusals, kept, spent = results[0]
    assert (stored, duplicates, over) == (12, 1, 6)
    assert [n for n, _ in refusals] == [10, 11, 12, 24]
    assert refusals[0][1].startswith("not a JSON report record (")
    assert (
        "k-RR report" in refusals[1][1] and "at epsilon 3.0" in refusals[2][1] and "'user'" in refusals[3][1]
    )
    for (n, reason), line in zip(refusals[1:], [lines[10], lines[11], lines[23]], strict=True):
        with pytest.raises(ValueError) as err:  # the reason is the full check's, without file and line
            doc.check_record(json.loads(line), c.document, where=f"{f}:{n}")
        assert str(err.value) == f"{f}:{n}: {reason}"
    assert kept == sorted({doc.record_digest(r) for r in recs} - {doc.record_digest(r) for r in recs[2::3]})
    assert set(spent.values()) == {4}


def test_the_store_checks_a_batch_exactly_at_the_total(store_target):
    """Budgets summed exactly in a batch: thirds of a total of 1 fill it; a float sum would pass it."""
    third = 1 / 3  # the float nearest 1/3 (a little below it): three of them are just below 1
    with Store.open(store_target, total_epsilon=1.0) as store:
        recs = [Report("a", f"d{i}", third, "{}", "{}") for i in range(4)]
        recs += [Report("b", "e0", 0.1, "{}", "{}"), Report("b", "e1", 0.9, "{}", "{}")]
        recs += [Report("b", "e2", 2.0**-60, "{}", "{}")]  # 0.1 + 0.9 (exactly) is above 1 already
        assert store.append_reports("c", recs) == ["stored"] * 3 + [
            "over budget",
            "stored",
            "over budget",
        ] + ["stored"]
        assert store.spent()["a"] == 3 * Fraction(third) and store.spent()["b"] == Fraction(0.1) + Fraction(
            2.0**-60
        )
        assert store.verify() == CLEAN
        for bad in (0.0, -1.0, float("nan"), float("inf")):
            with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
                store.append_reports("c", [Report("z", "z", bad, "{}", "{}")])
        assert store.count("geoldp_reports") == 5
