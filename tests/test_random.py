"""Randomness interface and backends (ALGORITHM §4; TESTING R1–R3; ChaCha20 against RFC 8439)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import scipy.stats

from geoldp._core.randomness import (
    ChaChaRandomSource,
    NumpyRandomSource,
    OSRandomSource,
    RandomSource,
    chacha_block,
    resolve_rng,
    stream_bernoulli,
    stream_categorical_cdf,
    stream_integers,
    stream_next_u32,
    stream_state,
    stream_uniform,
)
from geoldp.mechanisms import krr

CRIT = scipy.stats.chi2.isf(1e-6, 5)

RFC_KEY = np.arange(32, dtype=np.uint8).view("<u4").astype(np.uint32)
RFC_BLOCK = [
    0xE4E7F110,
    0x15593BD1,
    0x1FDD0F50,
    0xC47120A3,
    0xC7F4D1C7,
    0x0368C033,
    0x9AAA2204,
    0x4E6CD4C3,
    0x466482D2,
    0x09AA9F07,
    0x05D7C214,
    0xA2028BD9,
    0xD19C12B5,
    0xB94E16DE,
    0xE883D0CB,
    0x4E3C50A2,
]


class FixedUniform(RandomSource):
    """Returns scripted uniforms (tests of the categorical rule)."""

    policy = "test"

    def __init__(self, values):
        self.values = list(values)

    def uniform(self, size=None):
        if size is None:
            return self.values.pop(0)
        return np.array([self.values.pop(0) for _ in range(int(np.prod(size)))]).reshape(size)


def test_chacha_rfc8439_vector():
    # RFC 8439 §2.3.2: counter 1, nonce 00:00:00:09:00:00:00:4a:00:00:00:00 (words 0x09000000, 0x4a000000, 0)
    out = np.zeros(16, dtype=np.uint32)
    chacha_block(RFC_KEY, np.uint64((0x09000000 << 32) | 1), np.uint64(0x4A000000), out)
    assert out.tolist() == RFC_BLOCK


def test_stream_words_are_blocks():
    key = np.arange(8, dtype=np.uint32) * 7919
    buf, state = stream_state(42)
    words = [stream_next_u32(key, buf, state) for _ in range(40)]
    blocks = []
    for c in range(3):
        out = np.zeros(16, dtype=np.uint32)
        chacha_block(key, np.uint64(c), np.uint64(42), out)
        blocks.extend(out.tolist())
    assert words == blocks[:40]


def test_stream_uniform_construction_and_grid():
    key = np.ones(8, dtype=np.uint32)
    buf, state = stream_state(3)
    u = stream_uniform(key, buf, state)
    out = np.zeros(16, dtype=np.uint32)
    chacha_block(key, np.uint64(0), np.uint64(3), out)
    a, b = int(out[0]), int(out[1])
    assert u == ((a >> 5) * 2**26 + (b >> 6)) / 2**53
    src = ChaChaRandomSource(key, 5)
    us = src.uniform(20_000)
    assert np.all((us >= 0) & (us < 1))
    assert np.all(us * 2**53 == np.floor(us * 2**53))
    assert abs(us.mean() - 0.5) < 5 * np.sqrt(1 / 12 / us.size)


def test_stream_integers_unbiased_and_bernoulli():
    key = np.arange(8, dtype=np.uint32)
    buf, state = stream_state(9)
    draws = np.array([stream_integers(key, buf, state, 6) for _ in range(30_000)])
    counts = np.bincount(draws, minlength=6)
    assert counts.size == 6
    exp = draws.size / 6
    assert ((counts - exp) ** 2 / exp).sum() < CRIT
    assert stream_integers(key, buf, state, 1) == 0
    hits = sum(stream_bernoulli(key, buf, state, 0.25) for _ in range(20_000))
    assert abs(hits / 20_000 - 0.25) < 5 * np.sqrt(0.25 * 0.75 / 20_000)


def test_stream_categorical_guard():
    key = np.arange(8, dtype=np.uint32)
    buf, state = stream_state(0)
    cdf = np.cumsum([0.5, 0.0, 0.25, 0.0])  # sums to 0.75: u >= 0.75 falls to the guard
    draws = [stream_categorical_cdf(key, buf, state, cdf, 4) for _ in range(4000)]
    assert set(draws) == {0, 2}


def test_chacha_source_matches_stream_functions():
    key = np.arange(8, dtype=np.uint32) + 100
    src = ChaChaRandomSource(key, 17)
    buf, state = stream_state(17)
    assert src.uniform() == stream_uniform(key, buf, state)
    assert src.integers(1000) == stream_integers(key, buf, state, 1000)
    assert src.bernoulli(0.5) == stream_bernoulli(key, buf, state, 0.5)
    assert src.policy == "seeded"
    assert src.stream_key().shape == (8,)


def test_uniform_grid_and_range():
    for src in (OSRandomSource(buffer_words=64), NumpyRandomSource(np.random.default_rng(0))):
        u = src.uniform(10_000)
        assert u.shape == (10_000,)
        assert np.all((u >= 0) & (u < 1))
        assert np.all(u * 2**53 == np.floor(u * 2**53))
        assert isinstance(src.uniform(), float)
        assert src.uniform((2, 3)).shape == (2, 3)


@pytest.mark.parametrize("k", [2, 3, 6, 7, 1000, 2**40 + 3])
def test_integers_unbiased(k):
    for src in (OSRandomSource(), NumpyRandomSource(np.random.default_rng(1))):
        x = src.integers(k, size=60_000)
        assert x.dtype == np.int64
        assert x.min() >= 0 and x.max() < k
        # small k: every value is a bin; huge k: residues mod 6 (bias of k mod 6 is ~1e-12)
        counts = np.bincount(x, minlength=k) if k <= 1000 else np.bincount(x % 6, minlength=6)
        exp = x.size / counts.size
        stat = ((counts - exp) ** 2 / exp).sum()
        assert stat < scipy.stats.chi2.isf(1e-6, counts.size - 1)
    assert isinstance(OSRandomSource().integers(5), int)
    assert OSRandomSource().integers(1, size=3).tolist() == [0, 0, 0]


def test_integers_rejects_bad_k():
    with pytest.raises(ValueError, match="integers"):
        OSRandomSource().integers(0)


def test_bernoulli_is_uniform_less_than_p():
    src = FixedUniform([0.3, 0.3, 0.0])
    assert src.bernoulli(0.3) is False
    assert src.bernoulli(0.30000000000000004) is True
    assert src.bernoulli(0.0) is False


def test_categorical_inverse_cdf_rule():
    pmf = np.array([0.0, 0.25, 0.0, 0.5, 0.25])
    src = FixedUniform([0.0, 0.2499, 0.25, 0.75, 0.9999])
    assert [src.categorical(pmf) for _ in range(5)] == [1, 1, 3, 4, 4]
    # rounding guard: the cumulative sum ends below u -> last index with positive mass
    short = np.array([0.3, 0.3, 0.2, 0.0])
    assert FixedUniform([0.95]).categorical(short) == 2
    rows = np.array([[0.5, 0.5], [0.0, 1.0], [0.4, 0.4]])
    assert FixedUniform([0.6, 0.1, 0.99]).categorical(rows).tolist() == [1, 1, 1]


def test_categorical_distribution():
    pmf = np.array([0.1, 0.0, 0.6, 0.3])
    src = NumpyRandomSource(np.random.default_rng(3))
    draws = src.categorical(np.tile(pmf, (60_000, 1)))
    counts = np.bincount(draws, minlength=4)
    assert counts[1] == 0
    exp = pmf[[0, 2, 3]] * draws.size
    assert (((counts[[0, 2, 3]] - exp) ** 2) / exp).sum() < scipy.stats.chi2.isf(1e-6, 2)


def test_resolve_rng_types():
    assert isinstance(resolve_rng(None), OSRandomSource)
    assert resolve_rng(None).policy == "os-csprng"
    for seed in (
        0,
        np.int64(5),
        [1, 2, 3],
        np.array([4, 5], dtype=np.uint32),
        np.random.SeedSequence(3),
        np.random.PCG64(1),
        np.random.default_rng(2),
    ):
        src = resolve_rng(seed)
        assert isinstance(src, NumpyRandomSource)
        assert src.policy == "seeded"
    custom = FixedUniform([0.5])
    assert resolve_rng(custom) is custom
    for bad in (True, 1.5, "0", object(), [1.5], []):
        with pytest.raises(TypeError, match="'rng' parameter"):
            resolve_rng(bad)
    with pytest.raises(ValueError, match="'rng' parameter"):
        resolve_rng(-1)


def test_generator_is_shared_not_copied():
    g = np.random.default_rng(7)
    assert resolve_rng(g).generator is g


def test_stream_key():
    k1 = OSRandomSource().stream_key()
    assert k1.dtype == np.uint32 and k1.shape == (8,)
    assert not np.array_equal(k1, OSRandomSource().stream_key())
    g = np.random.default_rng(11)
    src = NumpyRandomSource(g)
    a, b = src.stream_key(), src.stream_key()
    assert a.dtype == np.uint32 and not np.array_equal(a, b)
    assert np.array_equal(NumpyRandomSource(np.random.default_rng(11)).stream_key(), a)


def test_r1_os_default_differs():
    x = np.arange(1000) % 1000
    y1 = krr(x, k=1000, epsilon=0.1)
    y2 = krr(x, k=1000, epsilon=0.1)
    assert not np.array_equal(y1, y2)


def test_r2_seeding():
    x = np.arange(500) % 10
    assert np.array_equal(krr(x, k=10, epsilon=1, rng=3), krr(x, k=10, epsilon=1, rng=3))
    assert np.array_equal(
        krr(x, k=10, epsilon=1, rng=np.random.SeedSequence(3)),
        krr(x, k=10, epsilon=1, rng=np.random.SeedSequence(3)),
    )
    assert np.array_equal(
        krr(x, k=10, epsilon=1, rng=np.random.PCG64(3)), krr(x, k=10, epsilon=1, rng=np.random.PCG64(3))
    )
    g = np.random.default_rng(3)
    assert not np.array_equal(krr(x, k=10, epsilon=1, rng=g), krr(x, k=10, epsilon=1, rng=g))
    with pytest.raises(TypeError, match="'rng'"):
        krr(x, k=10, epsilon=1, rng=True)


def test_r3_global_state_untouched():
    np_state = np.random.get_state()
    py_state = random.getstate()
    krr(np.arange(100) % 4, k=4, epsilon=1.0)
    krr(np.arange(100) % 4, k=4, epsilon=1.0, rng=5)
    OSRandomSource().uniform(10)
    after = np.random.get_state()
    assert np_state[0] == after[0] and np.array_equal(np_state[1], after[1]) and np_state[2:] == after[2:]
    assert random.getstate() == py_state
