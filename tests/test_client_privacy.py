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

import numpy as np
import pytest
from field_support import campaign

from geoldp import client
from geoldp.testing import EnumeratingSource, assert_ldp, exact_distribution, max_log_ratio

pytestmark = pytest.mark.filterwarnings("ignore:.*told from no data:geoldp.GeoLDPWarning")


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
