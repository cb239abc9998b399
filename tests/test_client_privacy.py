"""Privacy of the per-user client's report designs, exactly (TESTING §0, §2).

The client draws a report through three primitives (an integer below k, a Bernoulli, a 32-bit word). With
:class:`geoldp.testing.EnumeratingSource` behind them, every random path of the client's own report code
is enumerated, so the exact output distribution of each private item set is known; across every pair of
item sets the log-ratio must stay within ε, and a client mutated to randomise at 1.25ε must fail. OLH's
32-bit seed is independent of the data, so its check holds for every fixed seed (a few are enumerated).
The trajectory designs run geoldp's compiled kernels, whose exact tests are those of the mechanisms
(``tests/trajectory``), plus a goodness-of-fit test of the client itself (``test_client_gof.py``).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from field_support import campaign

from geoldp import client
from geoldp.testing import EnumeratingSource, assert_ldp, exact_distribution, max_log_ratio

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*told from no data:geoldp.GeoLDPWarning"),
    pytest.mark.filterwarnings("ignore::geoldp.PrivacyWarning"),  # large budgets tested on purpose
]


class _Source:
    """The client's draw interface over an enumerating source (the OLH seed fixed: data-independent)."""

    def __init__(self, inner: EnumeratingSource, seed: int = 0) -> None:
        self.inner, self.seed = inner, seed

    def integers(self, k: int) -> int:
        return int(self.inner.integers(k))

    def bernoulli(self, p: float) -> bool:
        return bool(self.inner.bernoulli(p))

    def word(self) -> int:
        return self.seed


class _Small:
    """A report client over a tiny domain (an oracle the campaign would pick only for larger domains)."""

    def __init__(self, oracle: str, d: int, pad: int, epsilon: float) -> None:
        self._oracle, self._d, self._pad, self._base, self.epsilon = oracle, d, pad, d - (pad - 1), epsilon


def _matrix(report_client, sets, seed=0) -> np.ndarray:
    dists = []
    for items in sets:
        dists.append(
            exact_distribution(
                lambda x, rng: tuple(
                    sorted(client.Client.report_of(report_client, list(x), _Source(rng, seed)).items())
                ),
                tuple(items),
            )
        )
    outputs = sorted(set().union(*dists), key=repr)
    return np.array([[dist.get(y, 0.0) for y in outputs] for dist in dists])


def _subsets(k: int) -> list[tuple[int, ...]]:
    return [s for r in range(1, k + 1) for s in itertools.combinations(range(k), r)]


@pytest.mark.parametrize("eps", [2.0, 3.0, 4.0])  # k-RR over the 12 values (OUE below)
def test_krr_visited_zone_client_is_exactly_eps_ldp(eps):
    c = client.Client(campaign("report:visited_zone:padded", eps))
    assert c._oracle == "krr"
    sets = _subsets(c._n_zones + 1)[:40]
    ratio = assert_ldp(_matrix(c, sets), eps)
    assert ratio >= 0.5 * eps  # padding and sampling lose some of ε, never add


@pytest.mark.parametrize(("oracle", "d", "pad"), [("krr", 5, 1), ("oue", 5, 1), ("oue", 4, 2), ("olh", 6, 1)])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_every_oracle_of_the_client_is_exactly_eps_ldp(oracle, d, pad, eps):
    small = _Small(oracle, d, pad, eps)
    sets = _subsets(d - (pad - 1))
    for seed in (0, 1, 2**32 - 1) if oracle == "olh" else (0,):
        assert_ldp(_matrix(small, sets, seed), eps)
    if pad == 1 and oracle != "olh":  # one item per set: the oracle alone, tight
        assert max_log_ratio(_matrix(small, [(v,) for v in range(d)])) >= eps * (1 - 1e-9)


def test_a_client_randomising_at_a_larger_epsilon_is_caught(monkeypatch):
    eps = 2.0
    small = _Small("krr", 5, 1, eps)
    real = client._krr_lie
    monkeypatch.setattr(client, "_krr_lie", lambda k, e: real(k, 1.25 * e))
    with pytest.raises(AssertionError, match="exceeds epsilon"):
        assert_ldp(_matrix(small, [(v,) for v in range(5)]), eps)


# ---- TraCS-D and TraCS-C: the budgets the client hands its kernel, exactly ----------------------------


class _Stop(Exception):
    pass


class _Spy:
    """Stands for the compiled kernels: records what the client passes to its TraCS kernel, then stops."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def tracs_d_kernel(self, x, y, offsets, box, origin, eps_a, eps_b, *rest):
        self.calls.append(
            {"x": x.copy(), "y": y.copy(), "box": box, "origin": origin, "a": eps_a, "b": eps_b}
        )
        raise _Stop

    def tracs_c_kernel(self, x, y, offsets, box, eps_a, eps_b, *rest):
        self.calls.append({"x": x.copy(), "y": y.copy(), "box": box, "origin": None, "a": eps_a, "b": eps_b})
        raise _Stop


def _kernel_inputs(monkeypatch, c, xy) -> dict:
    spy = _Spy()
    monkeypatch.setattr(client, "_KERNELS", [(spy, None)])
    with pytest.raises(_Stop):
        c.respond(xy, user="u", rng=0)
    return spy.calls[0]


def _locations(c: client.Client) -> np.ndarray:
    """Vertices in, on and around the campaign's box (lon, lat): corners, edges, inside and outside."""
    x0, y0, x1, y1 = c.document["client"]["bounds"]
    mx, my = 0.5 * (x0 + x1), 0.5 * (y0 + y1)
    pts = [(x0, y0), (x1, y1), (x0, y1), (x1, y0), (x0, my), (mx, y1), (mx, my), (x0 + 1e-7, my)]
    pts += [(x0 - 0.05, y0 - 0.05), (x1 + 0.2, my), (mx + 0.01, my - 0.02)]
    return np.array(pts)


@pytest.mark.parametrize("eps", [1.0, 4.0, 20.0])
@pytest.mark.parametrize("n", [1, 3])
def test_tracs_d_client_location_is_exactly_within_its_budget(monkeypatch, eps, n):
    """The client's inputs (its own projection) and budgets, through the exact masses of the primitives.

    Per location: P[(θ′, v′) ∈ cell] over a 32 × 32 grid of the direction and normalised distance,
    for every location around the box and the references a location is released against (the origin,
    corners and edges of the planar box); the log-ratio stays within the location's budget, the n
    budgets add up to at most ε exactly, and a client spending a location's budget on each stage is
    caught.
    """
    from geoldp.mechanisms import PiecewiseCircular, PiecewiseLinear
    from geoldp.trajectory.tracs import direction_and_distance

    c = client.Client(campaign("tracs-d", eps))
    locs = _locations(c)
    seen = _kernel_inputs(monkeypatch, c, locs[:n])
    ea, eb = float(seen["a"][0]), float(seen["b"][0])
    assert [ea, eb] == c.document["client"]["lengths"][n]
    assert n * (Fraction(ea) + Fraction(eb)) <= Fraction(eps)
    box = tuple(float(v) for v in seen["box"])
    assert list(box) == c.document["client"]["planar_bounds"]
    x, y = client.aeqd_forward(locs[:, 0], locs[:, 1], *c._plane)
    x, y = np.clip(x, box[0], box[2]), np.clip(y, box[1], box[3])
    refs = [tuple(seen["origin"]), (box[0], box[1]), (box[2], 0.5 * (box[1] + box[3])), (x[2], y[2])]
    for stage_a, stage_b, budget, ok in ((ea, eb, ea + eb, True), (ea + eb, ea + eb, ea + eb, False)):
        circ, lin = PiecewiseCircular(epsilon=stage_a), PiecewiseLinear(epsilon=stage_b)
        for rx, ry in refs:
            rows = []
            for px, py in zip(x, y, strict=True):
                theta, v = direction_and_distance(px, py, rx, ry, *box)
                rows.append(np.outer(circ.probabilities(theta, 32), lin.probabilities(v, 32)).ravel())
            if ok:
                assert_ldp(np.array(rows), budget * (1 + 1e-12))
            else:
                with pytest.raises(AssertionError, match="exceeds epsilon"):
                    assert_ldp(np.array(rows), budget)
                break


@pytest.mark.parametrize("eps", [1.0, 4.0, 20.0])
def test_tracs_c_client_location_is_exactly_within_its_budget(monkeypatch, eps):
    from geoldp.mechanisms import PiecewiseLinear

    c = client.Client(campaign("tracs-c", eps))
    locs = _locations(c)
    seen = _kernel_inputs(monkeypatch, c, locs[:2])
    ea, eb = float(seen["a"][0]), float(seen["b"][0])
    assert [ea, eb] == c.document["client"]["lengths"][2] and 2 * (Fraction(ea) + Fraction(eb)) <= Fraction(
        eps
    )
    x0, y0, x1, y1 = (float(v) for v in seen["box"])
    x, y = client.aeqd_forward(locs[:, 0], locs[:, 1], *c._plane)
    assert np.array_equal(seen["x"], x[:2]) and np.array_equal(seen["y"], y[:2])
    u, v = np.clip((x - x0) / (x1 - x0), 0, 1), np.clip((y - y0) / (y1 - y0), 0, 1)
    la, lb = PiecewiseLinear(epsilon=ea), PiecewiseLinear(epsilon=eb)
    rows = [
        np.outer(la.probabilities(a, 32), lb.probabilities(b, 32)).ravel() for a, b in zip(u, v, strict=True)
    ]
    assert_ldp(np.array(rows), (ea + eb) * (1 + 1e-12))


# ---- hybrids: each part within its share, the shares within ε ----------------------------------------


@pytest.mark.parametrize(
    ("name", "eps"), [("hybrid:atp+report@0.5", 2.0), ("hybrid:tp+report:ivw@0.25", 4.0)]
)
def test_hybrid_client_parts_are_exactly_within_the_split(name, eps):
    from field_support import points, zones

    from geoldp.field.campaign import Campaign

    # over 2 x 2 zones: every item set of the report part is enumerated (the oracles themselves are
    # tested exactly above on their own domains)
    c = client.Client(Campaign.create(name, epsilon=eps, points=points(), zones=zones(2), max_points=16))
    traj, rep = c._parts["trajectory"], c._parts["report"]
    assert Fraction(traj.epsilon) + Fraction(rep.epsilon) <= Fraction(eps)
    assert sorted(c.document["ledger"].values()) == sorted([traj.epsilon, rep.epsilon])
    sets = _subsets(rep._n_zones + 1)
    assert len(sets) == 31
    ratio = assert_ldp(_matrix(rep, sets), rep.epsilon)
    assert ratio >= 0.3 * rep.epsilon
    # the trajectory part's stage budgets are its mechanism's at the part's ε (the kernels' exact tests)
    from geoldp.trajectory import engine

    mech = engine.resolve_mechanism(traj.design, traj.epsilon, {}, caller="test")
    assert mech.epsilon == traj.epsilon
    assert traj._lengths[3] == campaign(traj.design, traj.epsilon).document["client"]["lengths"][3]


# ---- the pilot: three k-RR reports, one of a visited coarse cell picked uniformly --------------------


class _PilotSource(_Source):
    """The enumerating source, with the pick of a visited cell enumerated over ``M`` equal parts of [0, 1)."""

    M = 12  # a multiple of every number of visited cells below (1 to 4): each cell gets an equal share

    def uniform(self) -> float:
        return (int(self.inner.integers(self.M)) + 0.5) / self.M


@pytest.mark.parametrize("eps", [0.5, 3.0])
def test_pilot_client_is_exactly_eps_ldp(eps):
    from field_support import points, zones

    from geoldp.designs import Pilot
    from geoldp.field.campaign import Campaign

    pilot = Pilot(length_edges=(2, 4), zone_edges=(1, 2, 3), shares=(0.25, 0.25, 0.5))
    c = client.Client(Campaign.create(pilot, epsilon=eps, points=points(), zones=zones()))
    assert c._coarse[2] <= 4
    x0, y0, x1, y1 = 116.30, 39.90, 116.40, 40.00
    trips = [
        [(x0 + 0.01, y0 + 0.01)],
        [(x1 - 0.01, y1 - 0.01), (x1 - 0.01, y1 - 0.02)],
        [(x0 + 0.01, y0 + 0.01), (x1 - 0.01, y1 - 0.01), (x0 + 0.01, y1 - 0.01), (x1 - 0.01, y0 + 0.01)],
        [(x0 - 1.0, y0 - 1.0), (x0 + 0.05, y0 + 0.05), (x1 - 0.02, y0 + 0.05)],
        [(x0 + 0.05, y0 + 0.05)] * 5,
    ]
    dists = []
    for trip in trips:
        lon, lat = np.array(trip, dtype=np.float64).T.copy()
        dists.append(
            exact_distribution(
                lambda x, rng, lon=lon, lat=lat: tuple(
                    sorted(c.pilot_report(lon, lat, _PilotSource(rng)).items())
                ),
                0,
            )
        )
    outputs = sorted(set().union(*dists))
    matrix = np.array([[d.get(y, 0.0) for y in outputs] for d in dists])
    assert_ldp(matrix, eps)
    split = c.document["parameters"]["split"]
    assert sum(Fraction(v) for v in split) <= Fraction(eps)


def test_a_pilot_client_randomising_at_twice_its_split_is_caught(monkeypatch):
    real = client.Client._prepare_pilot

    def doubled(self):
        real(self)
        split = self.document["parameters"]["split"]
        self._pilot_krr = [
            (k, client._krr_lie(k, 2 * e)) for (k, _), e in zip(self._pilot_krr, split, strict=True)
        ]

    monkeypatch.setattr(client.Client, "_prepare_pilot", doubled)
    with pytest.raises(AssertionError, match="exceeds epsilon"):
        test_pilot_client_is_exactly_eps_ldp(3.0)
