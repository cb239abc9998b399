"""LDPTrace in the field: its two campaigns, the device's OUE reports, ingest and the synthetic answer.

The device's randomiser is checked exactly (the probability of every bit it draws, the worst ratio of any
output's probability under two trajectories, the user's total over the two rounds as exact rationals), and
the model the collector builds from 2,000 seeded device records is compared with the central simulation
(:func:`geoldp.ldptrace.collect`) on the same trips, within the OUE noise of both.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from field_support import BOX, points, zones

from geoldp import _campaign_doc as doc
from geoldp import client, ldptrace
from geoldp._ldptrace_grid import round2_values
from geoldp.field.campaign import Campaign
from geoldp.field.ingest import answer, ingest, model_of
from geoldp.mechanisms.oracles import oue_probabilities
from geoldp.store import Store

pytestmark = pytest.mark.filterwarnings("ignore::geoldp.PrivacyWarning")

_2_53 = 2**53


def walk(rng: np.random.Generator, n: int = 8, step: float = 0.01) -> np.ndarray:
    """A random walk of n vertices inside the box (lon, lat)."""
    start = np.array([BOX[0], BOX[1]]) + rng.random(2) * (BOX[2] - BOX[0])
    xy = start + np.cumsum(rng.normal(0.0, step, size=(n, 2)), axis=0)
    return np.clip(xy, [BOX[0], BOX[1]], [BOX[2], BOX[3]])


def round1(epsilon: float = 4.0, name: str = "ldptrace", **kw) -> Campaign:
    return Campaign.create(name, epsilon=epsilon, points=points(), zones=zones(), **kw)


def write_records(path, campaign, trips, *, users=None, seed=0) -> None:
    c = client.Client(campaign)
    with open(path, "w", encoding="utf-8") as fh:
        for i, xy in enumerate(trips):
            user = f"u{i}" if users is None else users[i]
            fh.write(client.to_json_line(c.respond(xy, user=user, rng=[seed, i])) + "\n")


def make_round2(c1: Campaign, max_length: int, n1: int = 10) -> Campaign:
    """A round 2 of ``c1`` with a chosen L (as next_round makes it, but L not from reports): for tests."""
    split = ldptrace.field_split(c1.document["parameters"]["total_epsilon"], max_length)
    d_len = c1.document["parameters"]["length_domain"]
    par = {
        **c1.document["parameters"],
        "round": 2,
        "round1": c1.id,
        "max_length": max_length,
        "per_report": split["per_report"],
        "length_reports": n1,
        "length_sums": [n1 // 2] * d_len,
    }
    document = {**c1.document, "epsilon": split["round2"], "parameters": par}
    document["id"] = doc.campaign_id(document)
    return Campaign(document)


@pytest.fixture(scope="module")
def two_rounds(tmp_path_factory):
    """A whole collection: round 1 of 300 users ingested, round 2 made, answered and ingested."""
    d = tmp_path_factory.mktemp("ldp")
    rng = np.random.default_rng(11)
    trips = [walk(rng) for _ in range(300)]
    c1 = round1()
    c1.write(d / "r1.json")
    write_records(d / "r1.jsonl", c1, trips, seed=1)
    s1 = ingest(d / "r1.json", [d / "r1.jsonl"], store=d / "s.gpkg")
    c2 = c1.next_round(d / "s.gpkg")
    c2.write(d / "r2.json")
    write_records(d / "r2.jsonl", c2, trips, seed=2)
    s2 = ingest(d / "r2.json", [d / "r2.jsonl"], store=d / "s.gpkg")
    return {"dir": d, "c1": c1, "c2": c2, "trips": trips, "s1": s1, "s2": s2}


# ---- the stream ----------------------------------------------------------------------------------------


def test_vectorised_stream_gives_the_scalar_streams_words_and_uniforms():
    key = np.arange(8, dtype=np.uint32) * 0x9E3779B9
    a, b = client._Stream(key, 3), client._Stream(key, 3)
    for take in (0, 1, 5, 16, 33, 200):  # from any position in a block
        assert a.words(take).tolist() == [b.word() for _ in range(take)]
        assert a.uniforms(7).tolist() == [b.uniform() for _ in range(7)]
    blocks = client._chacha_blocks(key, 2**33 + 5, 2**32 - 1, 3)  # counters across the 32-bit boundary
    s = client._Stream(key, 2**33 + 5)
    s._counter = 2**32 - 1
    assert blocks.tolist() == [s.word() for _ in range(48)]


# ---- campaigns -----------------------------------------------------------------------------------------


def test_round1_campaign_holds_the_public_grid_and_a_tenth_of_epsilon(tmp_path):
    c = round1(4.0, "ldptrace:grid8", quantile=0.8)
    par = c.document["parameters"]
    assert c.document["kind"] == "ldptrace" and par["round"] == 1
    assert par["grid"] == {"bounds": list(points().total_bounds), "n": 8, "crs": "EPSG:4326"}
    assert par["length_domain"] == 64 and par["quantile"] == 0.8 and par["total_epsilon"] == 4.0
    assert Fraction(c.epsilon) <= Fraction(4.0) / 10 and c.epsilon == pytest.approx(0.4)
    assert c.user_total_epsilon == 4.0
    assert Campaign.read(c.write(tmp_path / "c.json")) == c
    c.verify()
    boxed = Campaign.create("ldptrace", epsilon=2.0, bounds=(116.0, 39.5, 117.0, 40.5), length_domain=20)
    assert boxed.document["parameters"]["grid"]["bounds"] == [116.0, 39.5, 117.0, 40.5]
    assert boxed.document["points"] is None and boxed.document["parameters"]["length_domain"] == 20


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({}, "pass points=P"),
        ({"bounds": (0, 0, 0, 1)}, "minx < maxx"),
        ({"bounds": (0, 0, 200, 1)}, "in degrees"),
        ({"bounds": (0, 0, 1, 1), "quantile": 0.0}, "'quantile'"),
        ({"bounds": (0, 0, 1, 1), "length_domain": 0}, "'length_domain'"),
        ({"bounds": (0, 0, 1, 1), "user_total_epsilon": 1.0}, "below 'epsilon'"),
    ],
)
def test_round1_refuses_bad_parameters(kw, match):
    with pytest.raises((TypeError, ValueError), match=match):
        Campaign.create("ldptrace", epsilon=2.0, **kw)


def test_round2_is_fixed_by_the_stored_round1_reports_only(two_rounds):
    c1, c2 = two_rounds["c1"], two_rounds["c2"]
    par = c2.document["parameters"]
    assert par["round"] == 2 and par["round1"] == c1.id and par["length_reports"] == 300
    # L is the quantile of the estimate from the sums the campaign holds: recomputed here, the same
    counts = (np.asarray(par["length_sums"]) - 300 * oue_probabilities(c1.epsilon)[1]) / (
        0.5 - oue_probabilities(c1.epsilon)[1]
    )
    assert par["max_length"] == ldptrace.length_cut(counts, par["length_domain"], par["quantile"])
    split = ldptrace.field_split(4.0, par["max_length"])
    assert (par["per_report"], c2.epsilon, par["length_epsilon"]) == (
        split["per_report"],
        split["round2"],
        split["length"],
    )
    c2.verify()
    assert Campaign.read(c2.write(two_rounds["dir"] / "again.json", overwrite=True)) == c2


def _edited(document: dict, path: list, value, *, reid: bool) -> dict:
    d = json.loads(json.dumps(document))
    node = d
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    if reid:
        d["id"] = doc.campaign_id(d)
    return d


def test_tampered_round2_campaigns_are_refused(two_rounds):
    d2 = two_rounds["c2"].document
    par = d2["parameters"]
    with pytest.raises(ValueError, match="does not match its id"):
        Campaign(_edited(d2, ["parameters", "max_length"], par["max_length"] - 1, reid=False))
    with pytest.raises(ValueError, match="add up to more than"):  # a larger per-report budget
        Campaign(_edited(d2, ["parameters", "per_report"], par["per_report"] * 1.5, reid=True))
    with pytest.raises(ValueError, match="unknown member"):
        Campaign(_edited(d2, ["parameters", "extra"], 1, reid=True))
    with pytest.raises(ValueError, match="length_sums"):
        Campaign(_edited(d2, ["parameters", "length_sums"], par["length_sums"][:-1], reid=True))
    with pytest.raises(ValueError, match="round 1 with members of round 2"):
        Campaign(_edited(d2, ["parameters", "round"], 1, reid=True))
    with pytest.raises(ValueError, match="add up to more than"):  # more reports at the same budget
        Campaign(_edited(d2, ["parameters", "max_length"], par["max_length"] + 1, reid=True))
    # consistent on its face (fewer reports), but L is not what its round-1 sums give: verify says so
    assert par["max_length"] > 1
    forged = Campaign(_edited(d2, ["parameters", "max_length"], par["max_length"] - 1, reid=True))
    with pytest.raises(ValueError, match="does not match"):
        forged.verify()
    with pytest.raises(ValueError, match="not the first round"):
        two_rounds["c2"].next_round(two_rounds["dir"] / "s.gpkg")


def test_next_round_needs_the_round1_reports(tmp_path):
    c = round1()
    with Store.open(tmp_path / "s.gpkg", total_epsilon=4.0) as st:
        with pytest.raises(ValueError, match="holds no round-1 reports"):
            c.next_round(st)
    with pytest.raises(ValueError, match="only that has a next round"):
        Campaign.create("atp", epsilon=2.0, points=points()).next_round(tmp_path / "s.gpkg")


# ---- the device ----------------------------------------------------------------------------------------


def test_device_cells_are_the_central_cells():
    c = client.Client(round1(name="ldptrace:grid7"))
    grid = c._grid
    rng = np.random.default_rng(3)
    trips = [walk(rng, int(rng.integers(1, 12)), 0.03) for _ in range(200)]
    xy = np.concatenate(trips)
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in trips])])
    cells, off = ldptrace.cell_sequences(xy[:, 0], xy[:, 1], offsets, grid)
    for i, t in enumerate(trips):
        assert c.ldptrace_cells(t[:, 0], t[:, 1]).tolist() == cells[off[i] : off[i + 1]].tolist()
        start, end, moves = round2_values(cells[off[i] : off[i + 1]], 5, grid)
        used = cells[off[i] : off[i + 1]][:5]
        assert (start, end) == (used[0], used[-1])
        assert (moves >= 0).sum() == len(used) - 1 and (moves[len(used) - 1 :] == -1).all()


def test_seeded_records_are_reproducible_and_unseeded_ones_are_not(two_rounds):
    xy = two_rounds["trips"][0]
    for c in (two_rounds["c1"], two_rounds["c2"]):
        a = client.respond(c, xy, user="u", rng=9)
        assert a == client.respond(c, xy, user="u", rng=9) and a["rng"] == "seeded"
        assert a["report"] != client.respond(c, xy, user="u", rng=10)["report"]
        b, b2 = client.respond(c, xy, user="u"), client.respond(c, xy, user="u")
        assert b["rng"] == "os-csprng" and b["record_id"] != b2["record_id"]
        doc.check_record(b, c.document, where="r")
        assert b["epsilon"] == c.epsilon
    assert set(a["report"]) == {"start", "end", "transitions"}
    assert len(a["report"]["transitions"]) == two_rounds["c2"].document["parameters"]["max_length"] - 1


# ---- privacy, exactly ----------------------------------------------------------------------------------


def _grid_probability(p: np.ndarray) -> list[Fraction]:
    """P(u < p) for u uniform on the 2⁻⁵³ grid of [0, 1): ceil(p · 2⁵³) / 2⁵³, exactly."""
    return [Fraction(math.ceil(Fraction(float(v)) * _2_53), _2_53) for v in p]


def _worst_ratio(pa: list[Fraction], pb: list[Fraction]) -> Fraction:
    """max over outputs of P(y | a) / P(y | b) for independent bits: the product of each bit's worst."""
    out = Fraction(1)
    for a, b in zip(pa, pb, strict=True):
        out *= max(a / b, (1 - a) / (1 - b))
    return out


@pytest.mark.parametrize("epsilon", [0.5, 4.0, 12.0])
def test_device_oue_bits_and_ratios_are_exactly_within_each_reports_budget(epsilon):
    c1 = round1(epsilon, "ldptrace:grid2", length_domain=4)
    c2 = make_round2(c1, 3)  # a round 2 of L = 3 over the same grid
    par = c2.document["parameters"]
    rng = np.random.default_rng(5)
    trips = [walk(rng, n, 0.05) for n in (1, 2, 3, 6, 9)]  # lengths 1.. cells, empty reports included
    total = Fraction(0)
    for c in (c1, c2):
        dev = client.Client(c)
        eps_r = c.epsilon if c is c1 else par["per_report"]
        q = oue_probabilities(eps_r)[1]
        assert q == 1.0 / (math.exp(eps_r) + 1.0) or abs(q - 1.0 / (math.exp(eps_r) + 1.0)) < 1e-16
        per_user = []
        for t in trips:
            values = dev.ldptrace_values(t[:, 0], t[:, 1])
            probs = dev.ldptrace_probabilities(values)
            for v, p in zip(values, probs, strict=True):
                expect = np.full(p.shape, q)
                if v >= 0:
                    expect[v] = 0.5
                assert np.array_equal(p, expect)  # 1/2 on the true bit, q on every other (all q if empty)
            per_user.append([_grid_probability(p) for p in probs])
        bound = Fraction(math.exp(eps_r)) * (1 + Fraction(1, 10**12))
        worst = Fraction(0)
        for a in per_user:
            for b in per_user:
                for ra, rb in zip(a, b, strict=True):
                    r = _worst_ratio(ra, rb)
                    assert r <= bound  # each report: e^ε′ at most
                    worst = max(worst, r)
        assert worst >= Fraction(math.exp(eps_r)) * (1 - Fraction(1, 10**9))  # and tight
        total += Fraction(eps_r) * len(per_user[0])
        assert Fraction(eps_r) * len(per_user[0]) <= Fraction(c.epsilon)  # the round within its charge
    assert total <= Fraction(c1.epsilon) + Fraction(c2.epsilon) <= Fraction(epsilon)  # both rounds: ε


def test_a_device_randomising_at_a_larger_epsilon_is_caught():
    c = client.Client(round1(2.0, "ldptrace:grid2", length_domain=4))
    t = 1.0 / math.exp(1.25 * c.epsilon)
    c._oue_q = t / (1.0 + t)  # the mutant: every report at 1.25 ε′
    a = [_grid_probability(p) for p in c.ldptrace_probabilities([0])]
    b = [_grid_probability(p) for p in c.ldptrace_probabilities([1])]
    assert _worst_ratio(a[0], b[0]) > Fraction(math.exp(c.epsilon))


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 1.7, 4.0, 9.3, 30.0])
@pytest.mark.parametrize("length", [1, 2, 7, 36, 255])
def test_the_two_rounds_cost_at_most_epsilon_exactly(epsilon, length):
    s = ldptrace.field_split(epsilon, length)
    assert (length + 1) * Fraction(s["per_report"]) <= Fraction(s["round2"])
    assert Fraction(s["length"]) + Fraction(s["round2"]) <= Fraction(epsilon)
    assert s["length"] == ldptrace.budget_split(epsilon, length)["length"]
    assert s["per_report"] == pytest.approx(ldptrace.budget_split(epsilon, length)["per_report"], rel=1e-14)


def test_the_device_draws_each_bit_from_the_stream_below_its_probability():
    c = client.Client(round1(2.0, "ldptrace:grid2", length_domain=4))

    class Fixed:
        def uniforms(self, n):
            return np.linspace(0.0, 0.999, n)

    xy = np.array([[BOX[0], BOX[1]], [BOX[2], BOX[3]]])
    probs = np.concatenate(c.ldptrace_probabilities(c.ldptrace_values(xy[:, 0], xy[:, 1])))
    bits = np.unpackbits(
        np.frombuffer(bytes.fromhex(c.ldptrace_report(xy[:, 0], xy[:, 1], Fixed())["length"]), np.uint8)
    )
    assert bits[:4].tolist() == (np.linspace(0.0, 0.999, 4) < probs).tolist()


# ---- ingest and answer ---------------------------------------------------------------------------------


def test_ingest_stores_one_record_per_user_per_round_and_charges_both_rounds(two_rounds):
    d, c1, c2 = two_rounds["dir"], two_rounds["c1"], two_rounds["c2"]
    assert two_rounds["s1"].stored == 300 and two_rounds["s2"].stored == 300
    with Store.open(d / "s.gpkg") as st:
        spent = st.spent(["u0", "u1"])
        assert spent["u0"] == Fraction(c1.epsilon) + Fraction(c2.epsilon) <= Fraction(4.0)
        assert st.verify() == {k: 0 for k in st.verify()}
    write_records(d / "again.jsonl", c2, two_rounds["trips"][:5], seed=7)  # new record ids, same users
    s = ingest(c2, [d / "again.jsonl"], store=d / "s.gpkg")
    assert (s.stored, s.duplicates, s.over_budget) == (0, 5, 0)


def test_ingest_refuses_a_user_over_budget_and_foreign_or_malformed_records(tmp_path, two_rounds):
    c1 = round1(4.0)
    other = Campaign.create(
        "report:visited_zone", epsilon=1.0, points=points(), zones=zones(), user_total_epsilon=4.0
    )
    xy = two_rounds["trips"][0]
    (tmp_path / "o.jsonl").write_text(client.to_json_line(client.respond(other, xy, user="a", rng=1)) + "\n")
    assert ingest(other, [tmp_path / "o.jsonl"], store=tmp_path / "s.gpkg").stored == 1  # a spent 1
    write_records(tmp_path / "r1.jsonl", c1, [xy, xy], users=["a", "b"], seed=1)
    assert ingest(c1, [tmp_path / "r1.jsonl"], store=tmp_path / "s.gpkg").stored == 2
    c2 = make_round2(c1, 3)
    write_records(tmp_path / "r2.jsonl", c2, [xy, xy], users=["a", "b"], seed=2)
    good = (tmp_path / "r2.jsonl").read_text().splitlines()
    rec = json.loads(good[1])
    bad = [
        {**rec, "user": "c", "report": {**rec["report"], "start": "FF" + rec["report"]["start"][2:]}},
        {**rec, "user": "d", "report": {**rec["report"], "transitions": rec["report"]["transitions"][1:]}},
        {**rec, "user": "e", "report": {**rec["report"], "end": rec["report"]["end"] + "00"}},
        {**rec, "user": "f", "report": {"length": "00"}},
        {**rec, "user": "g", "campaign": c1.id},
        {**rec, "user": "h", "epsilon": c1.epsilon},
    ]
    with open(tmp_path / "r2.jsonl", "a", encoding="utf-8") as fh:
        for r in bad:
            fh.write(json.dumps(r) + "\n")
    s = ingest(c2, [tmp_path / "r2.jsonl"], store=tmp_path / "s.gpkg")
    assert (s.stored, s.over_budget, len(s.refused)) == (1, 1, 6)  # a: 1 + 0.4 + 3.6 > 4
    assert "LDPTrace round 2 report" in s.refused[0].reason and "another campaign" in s.refused[4].reason
    for r in bad[:4]:  # the full check refuses what the quick check lets through to it
        with pytest.raises(ValueError, match="LDPTrace round 2 report"):
            doc.check_record(r, c2.document, where="x")


def test_round2_is_refused_without_its_round1_or_with_a_foreign_one(tmp_path, two_rounds):
    c2 = two_rounds["c2"]
    with pytest.raises(ValueError, match="does not hold the round 1"):
        ingest(c2, [two_rounds["dir"] / "r2.jsonl"], store=tmp_path / "empty.gpkg")
    assert not (tmp_path / "empty.gpkg").exists()
    # a round 1 of another grid registered under the id the round 2 names (a store written by hand)
    foreign = round1(4.0, "ldptrace:grid5")
    with Store.open(tmp_path / "f.gpkg", total_epsilon=4.0) as st:
        st.add_campaign(c2.document["parameters"]["round1"], doc.canonical(foreign.document).decode())
        with pytest.raises(ValueError, match="does not continue the round 1"):
            ingest(c2, [two_rounds["dir"] / "r2.jsonl"], store=st)


def test_answer_synthesises_from_the_stored_reports(two_rounds):
    d, c1, c2 = two_rounds["dir"], two_rounds["c1"], two_rounds["c2"]
    syn = answer(d / "s.gpkg", c2, rng=4)
    assert len(syn) == 300 and syn.crs.to_epsg() == 4326 and (syn.geom_type == "LineString").all()
    led = syn.ldp.ledger
    assert led.mechanism == "ldptrace" and led.epsilon == 4.0
    assert led.settings["max_length"] == c2.document["parameters"]["max_length"]
    assert led.settings["rng"] == "seeded" and "seed" not in json.dumps(led.settings).replace("seeded", "")
    x0, y0, x1, y1 = syn.total_bounds
    assert BOX[0] <= x0 and x1 <= BOX[2] + 1e-9 and BOX[1] <= y0 and y1 <= BOX[3] + 1e-9
    again = answer(d / "s.gpkg", c2.id[:10], rng=4)  # by an id prefix; seeded: the same draws
    assert again.geometry.equals(syn.geometry)
    assert len(answer(d / "s.gpkg", c2, n_synthetic=50)) == 50
    table = answer(d / "s.gpkg", c2, "zone_visits", rng=4)
    assert len(table) == len(zones()) and table.attrs["reports"] == 300
    with pytest.raises(ValueError, match="round 1"):
        answer(d / "s.gpkg", c1)


# ---- the model from device records = the central model, within OUE noise ------------------------------


def _oue_sd(true: np.ndarray, m: int, eps: float) -> np.ndarray:
    p, q = oue_probabilities(eps)
    return np.sqrt((true * p * (1 - p) + (m - true) * q * (1 - q)) / (p - q) ** 2)


@pytest.mark.slow  # 4,000 device records: about 10 s
def test_model_from_2000_device_records_matches_the_central_collect(tmp_path):
    """The device path and the central simulation estimate the same counts, within their OUE noise.

    Both estimates are unbiased for the same true counts with independent noise, so each difference,
    divided by the standard deviation of a difference (√2 times one estimate's, from the true counts),
    is about standard normal: none beyond 5, and their mean square near 1. L is fixed by the length
    reports; with a length domain of 4 and trips of 4 or more cells both paths find L = 4.
    """
    n_users, eps = 2000, 8.0
    c1 = round1(eps, length_domain=4)
    rng = np.random.default_rng(2026)
    trips = [walk(rng, 10, 0.025) for _ in range(n_users)]
    write_records(tmp_path / "r1.jsonl", c1, trips, seed=1)
    ingest(c1, [tmp_path / "r1.jsonl"], store=tmp_path / "s.gpkg")
    c2 = c1.next_round(tmp_path / "s.gpkg")
    write_records(tmp_path / "r2.jsonl", c2, trips, seed=2)
    ingest(c2, [tmp_path / "r2.jsonl"], store=tmp_path / "s.gpkg")
    with Store.open(tmp_path / "s.gpkg") as st:
        field = model_of(c2, [p for _, p, _ in st.reports(c2.id)])
    grid = field.grid
    xy = np.concatenate(trips)
    offsets = np.arange(0, 10 * n_users + 1, 10)
    cells, off = ldptrace.cell_sequences(xy[:, 0], xy[:, 1], offsets, grid)
    central = ldptrace.collect(cells, off, grid, eps, length_domain=4, rng=7)
    assert field.max_length == central.max_length == 4 and field.n_users == central.n_users == n_users
    # the true counts, for the variances
    lengths = np.diff(off)
    true_len = np.bincount(np.minimum(lengths, 4) - 1, minlength=4)
    values = [round2_values(cells[off[i] : off[i + 1]], 4, grid) for i in range(n_users)]
    true_start = np.bincount([v[0] for v in values], minlength=grid.size)
    true_end = np.bincount([v[1] for v in values], minlength=grid.size)
    moves = np.concatenate([v[2] for v in values])
    true_moves = np.bincount(moves[moves >= 0], minlength=8 * grid.size)  # empty reports: no true bit
    pr = field.split["per_report"]
    z = []
    for f, c, true, m, e in [
        (field.length_counts, central.length_counts, true_len, n_users, c1.epsilon),
        (field.start, central.start, true_start, n_users, pr),
        (field.end, central.end, true_end, n_users, pr),
    ]:
        z.append((f - c) / (np.sqrt(2.0) * _oue_sd(true, m, e)))
    inside = grid.neighbours().reshape(-1) >= 0  # moves off the grid are 0 in both
    fm, cm = field.transitions.reshape(-1)[inside], central.transitions.reshape(-1)[inside]
    z.append((fm - cm) / (np.sqrt(2.0) * _oue_sd(true_moves[inside], 3 * n_users, pr)))
    z_all = np.concatenate(z)
    assert np.abs(z_all).max() < 5.0
    assert 0.8 < float(np.mean(z_all**2)) < 1.2
    # and the estimates carry the signal: the lengths follow the true ones, the moves add up to the true total
    assert np.corrcoef(field.length_counts, true_len)[0, 1] > 0.9
    for part in z:  # no systematic difference in any kind of count: the mean z is about N(0, 1/k)
        assert abs(float(part.sum())) / math.sqrt(part.size) < 4.0
    total_sd = math.sqrt(float(np.sum(_oue_sd(true_moves[inside], 3 * n_users, pr) ** 2)))
    assert abs(float(fm.sum()) - float(true_moves.sum())) < 4.0 * total_sd
    print(f"max |z| {np.abs(z_all).max():.2f}, mean z² {np.mean(z_all**2):.3f} over {z_all.size} counts")


def test_the_quick_check_takes_device_records_and_writes_their_canonical_text(two_rounds):
    from geoldp.field import ingest as ingest_module

    for c in (two_rounds["c1"], two_rounds["c2"], make_round2(two_rounds["c1"], 1)):
        quick = ingest_module._quick_check(c.document)
        record = client.respond(c, two_rounds["trips"][3], user="q", rng=3)
        assert quick(record) == doc.canonical(record["report"]).decode()
        key = "length" if "length" in record["report"] else "start"
        edits = [
            {**record["report"], key: record["report"][key][:-2]},
            {**record["report"], key: record["report"][key].replace("0", "O")},
            {**record["report"], "extra": "00"},
        ]
        for payload in edits:
            bad = {**record, "report": payload}
            assert quick(bad) is None
            with pytest.raises(ValueError, match="LDPTrace round"):
                doc.check_record(bad, c.document, where="x")
    assert ingest_module.line_limit(two_rounds["c2"].document) >= ingest_module.MAX_LINE_BYTES


def test_an_unseeded_record_draws_its_key_and_id_from_the_os(monkeypatch, two_rounds):
    calls = []
    real = client.os.urandom
    monkeypatch.setattr(client.os, "urandom", lambda n: calls.append(n) or real(n))
    for c in (two_rounds["c1"], two_rounds["c2"]):
        calls.clear()
        client.respond(c, two_rounds["trips"][0], user="u")
        assert calls == [32, 16]  # the stream's key, then the record id
